"""Parse what a MoonGen run of ``vsbench-trial.lua`` prints, and its histogram CSV.

MoonGen colours its output with ANSI escapes (libmoon ``stats.lua`` wraps the direction in
``ESC[..m``), so every line is stripped of them first. Lines used:

* libmoon final counter lines, e.g.
  ``[Device: id=0] TX: 0.50 (StdDev 0.00) Mpps, 256 (StdDev 0) Mbit/s (336 Mbit/s with
  framing), total 500000 packets with 32000000 bytes (incl. CRC)``
* our script's ``[REPORT] Device 0->1: Tx frames: n Rx frames: m frame loss: k`` (device
  counters minus latency probes) and ``[REPORT] Latency probes: sent a received b``;
* ``histogram:print`` -- ``[Latency] Samples: N, Average: X ns, StdDev: Y ns, Quartiles:
  a/b/c ns``;
* the histogram file written by ``histogram:save``: ``latency_ns,count`` per line, no header.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_NUM = r"(-?[0-9.]+(?:e[-+]?\d+)?|-?nan|-?inf)"
FINAL_RE = re.compile(
    r"^\[(?P<dev>[^\]]+)\]\s+(?P<dir>TX|RX):\s+" + _NUM + r"\s+\(StdDev\s+" + _NUM + r"\)\s+Mpps,"
    r".*?total\s+(?P<pkts>\d+)\s+packets\s+with\s+(?P<bytes>\d+)\s+bytes"
)
REPORT_RE = re.compile(
    r"^\[REPORT\]\s*Device\s+(?P<tx>\d+)\s*->\s*(?P<rx>\d+):\s+Tx frames:\s+(?P<txf>-?\d+)\s+"
    r"Rx frames:\s+(?P<rxf>-?\d+)"
)
PROBES_RE = re.compile(r"^\[REPORT\]\s*Latency probes:\s+sent\s+(\d+)\s+received\s+(\d+)")
HIST_RE = re.compile(
    r"Samples:\s+(\d+),\s+Average:\s+" + _NUM + r"\s+ns,\s+StdDev:\s+" + _NUM + r"\s+ns"
)
FATAL_RE = re.compile(r"\[(FATAL|ERROR)\]")
ERROR_HINT_RE = re.compile(r"error|cannot|failed|not found", re.IGNORECASE)


class MoonGenOutputError(ValueError):
    """The output lacks what a finished trial prints."""


def strip_ansi(text: str) -> str:
    return ANSI_RE.sub("", text)


@dataclass(frozen=True)
class ReportLine:
    tx_dev: int
    rx_dev: int
    tx_frames: int
    rx_frames: int


@dataclass
class TrialOutput:
    reports: list[ReportLine] = field(default_factory=list)
    device_totals: dict[str, int] = field(default_factory=dict)  # "Device: id=0 TX" -> packets
    probes_sent: int | None = None
    probes_received: int | None = None
    latency_samples: int | None = None
    latency_mean_ns: float | None = None


def _num(text: str) -> float | None:
    value = float(text)
    return None if math.isnan(value) or math.isinf(value) else value


def parse_output(text: str) -> TrialOutput:
    out = TrialOutput()
    for raw in strip_ansi(text).replace("\r", "").splitlines():
        line = raw.strip()
        if m := REPORT_RE.match(line):
            out.reports.append(ReportLine(int(m["tx"]), int(m["rx"]), int(m["txf"]), int(m["rxf"])))
        elif m := PROBES_RE.match(line):
            out.probes_sent, out.probes_received = int(m.group(1)), int(m.group(2))
        elif m := FINAL_RE.match(line):
            out.device_totals[f"{m['dev']} {m['dir']}"] = int(m["pkts"])
        elif m := HIST_RE.search(line):
            out.latency_samples = int(m.group(1))
            out.latency_mean_ns = _num(m.group(2))
    return out


def require_reports(out: TrialOutput, directions: int) -> None:
    if len(out.reports) < directions:
        raise MoonGenOutputError(
            f"expected {directions} [REPORT] Device lines, found {len(out.reports)}"
        )


def last_error_line(text: str) -> str:
    """The most telling line of a failed run, for a one-line error."""
    lines = [l.strip() for l in strip_ansi(text).replace("\r", "").splitlines() if l.strip()]
    lines = [l for l in lines if not l.startswith("$ ")]
    for pattern in (FATAL_RE, ERROR_HINT_RE):
        for line in reversed(lines):
            if pattern.search(line) and not line.startswith(("stack traceback", "[C]")):
                return line[:300]
    return lines[-1][:300] if lines else "no output"


def parse_histogram_csv(text: str) -> tuple[list[int], list[int]]:
    """``latency_ns,count`` lines -> sorted (latency_ns, count) lists, rounded to whole ns."""
    merged: dict[int, int] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        parts = line.split(",")
        try:
            latency, count = float(parts[0]), int(float(parts[1]))
        except (IndexError, ValueError):
            raise MoonGenOutputError(f"histogram line {n}: expected latency_ns,count: {line!r}") from None
        key = int(round(latency))
        merged[key] = merged.get(key, 0) + count
    keys = sorted(merged)
    return keys, [merged[k] for k in keys]
