"""A run's figures in VSPERF's result CSV layout, so dashboards fed by VSPERF keep working.

VSPERF wrote one ``result_<i>_<test>_<deployment>.csv`` per test, one row per frame size,
with the keys of its ``ResultsConstants`` as columns (``throughput_rx_fps``,
``min_latency_ns``, ...), values as text and ``Unknown`` where a figure was missing. This
module writes the canonical subset those files always had (type, id, packet size,
deployment, the six rate fields, three latencies, frame loss) plus ``vswitch`` and, for
back-to-back tests, ``b2b_frames``. Rates are of frames (L2 bits: the frame's bytes x 8);
``throughput_rx_fps`` is the testcase's primary goal (NDR for a search). A latency that
vsbench measured in a trial not sent as asked is written ``Unknown``: results.csv and the
report keep it, flagged, but a dashboard has no column for the flag.

Pure: results.json's model in, file names and texts out.
"""

from __future__ import annotations

import csv
import io
import re
from typing import Any

from vsbench.results.model import FrameSizeResult, RunResults, TestResult

UNKNOWN = "Unknown"

#: VSPERF's column order: ``get_traffic_constants()``'s canonical subset, then vswitch.
COLUMNS: tuple[str, ...] = (
    "type", "id", "packet_size", "deployment", "vswitch",
    "tx_rate_fps", "throughput_rx_fps", "tx_rate_mbps", "throughput_rx_mbps",
    "tx_rate_percent", "throughput_rx_percent",
    "min_latency_ns", "max_latency_ns", "avg_latency_ns", "frame_loss_percent",
)
B2B_COLUMNS: tuple[str, ...] = ("b2b_frames",)


def _text(value: Any) -> str:
    if value is None:
        return UNKNOWN
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _latency_usable(fs: FrameSizeResult) -> bool:
    point = fs.primary
    if point is None or point.latency is None:
        return False
    trial = fs.latency_trial_of(point)
    return trial is None or trial.valid


def row(test: TestResult, fs: FrameSizeResult) -> dict[str, str]:
    """VSPERF's row of one testcase x frame size."""
    point = fs.primary
    tx_fps = None if point is None else (point.tx_fps if point.tx_fps is not None else point.offered_load_fps)
    nominal = fs.nominal_line_rate_fps
    latency = point.latency if point is not None and _latency_usable(fs) else None
    values: dict[str, Any] = {
        "type": test.traffic_type,
        "id": test.label,
        "packet_size": fs.frame_size_bytes,
        "deployment": test.deployment,
        "vswitch": test.vswitch,
        "tx_rate_fps": tx_fps,
        "throughput_rx_fps": None if point is None else point.throughput_fps,
        "tx_rate_mbps": None if tx_fps is None else tx_fps * fs.frame_size_bytes * 8 / 1e6,
        "throughput_rx_mbps": None if point is None else point.throughput_l2_mbps,
        "tx_rate_percent": None if tx_fps is None or not nominal else 100.0 * tx_fps / nominal,
        "throughput_rx_percent": None if point is None else point.line_rate_percent,
        "min_latency_ns": None if latency is None else latency.min_ns,
        "max_latency_ns": None if latency is None else latency.max_ns,
        "avg_latency_ns": None if latency is None else latency.avg_ns,
        "frame_loss_percent": None if point is None or point.loss_ratio is None else 100.0 * point.loss_ratio,
    }
    if fs.back2back is not None:
        values["b2b_frames"] = fs.back2back.frames_avg
    return {column: _text(values.get(column)) for column in COLUMNS + B2B_COLUMNS if column in values}


def file_name(test: TestResult) -> str:
    """``result_<i>_<test>_<deployment>.csv`` as VSPERF named it (i counts from 0)."""
    safe = re.sub(r"[^A-Za-z0-9_.=,-]+", "_", test.label)
    return f"result_{test.plan_index}_{safe}_{test.deployment or 'none'}.csv"


def files(results: RunResults) -> dict[str, str]:
    """Every test's CSV text by file name; a test without a frame size writes no file."""
    texts: dict[str, str] = {}
    for test in results.tests:
        rows = [row(test, fs) for fs in sorted(test.frame_sizes, key=lambda f: f.frame_size_bytes)]
        if not rows:
            continue
        columns = [c for c in COLUMNS + B2B_COLUMNS if any(c in r for r in rows)]
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n", restval=UNKNOWN)
        writer.writeheader()
        writer.writerows(rows)
        texts[file_name(test)] = buffer.getvalue()
    return texts
