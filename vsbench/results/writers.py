"""Writers of the files a run leaves: results.json, results.csv, config.yaml, sysinfo.json.

Every file is written whole to a temporary name, fsync-ed and renamed over the old one, so
a reader (or a run killed mid-write) only ever sees a complete previous or new version. The
runner rewrites results.json and results.csv after every frame size, so a killed run keeps
the results of every frame size it finished.

``results.csv`` has one row per testcase x frame size and the fixed column order
:data:`CSV_COLUMNS` (documented there); scripts may address columns by position. The row
carries the frame size's *primary* point: its first search goal (NDR by default) or its
fixed-rate point. Every goal is in results.json.
"""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path
from typing import Any, Iterable, Mapping

import yaml

from vsbench.results import schema
from vsbench.results.model import FrameSizeResult, ReportedPoint, RunResults, TestResult
from vsbench.system import private_files, yaml_text

RUN_CONFIG_SCHEMA_ID = "vsbench.run-config/1"

#: The columns of results.csv, in order. Units are in the names; empty cells are unknown.
#:
#: ``run_id``, ``testcase`` (testcase name), ``label`` (name plus matrix variant),
#: ``traffic_type``, ``deployment``, ``vswitch``, ``trafficgen``, ``frame_size_bytes``
#: (incl. FCS), ``flows`` (per direction), ``directions`` (1 or 2), ``goal`` (goal name or
#: ``continuous``), ``goal_loss_ratio``, ``throughput_fps`` (aggregate over directions),
#: ``throughput_l1_mbps``, ``throughput_l2_mbps``, ``line_rate_percent`` (of the aggregate
#: line rate of the sending ports, at the speed ``link_speed_source`` names), ``offered_load_fps``, ``tx_fps``,
#: ``rx_fps``, ``loss_ratio`` (of the trial at the reported point), ``lower_bound_fps``,
#: ``upper_bound_fps``, ``regular`` (search converged normally), ``latency_min_ns``,
#: ``latency_avg_ns``, ``latency_max_ns``, ``latency_samples``, ``trial_count``,
#: ``trial_seconds`` (sum of intended durations), ``switching_operations`` (of the
#: deployment, ONP 2.1 section 5.2), ``valid`` (the reported trial passed the validity
#: rules), ``status``, ``notes`` (``; ``-separated); appended later:
#: ``conditional_throughput_fps`` (of the primary goal), ``pdr_throughput_fps``,
#: ``pdr_lower_bound_fps``, ``pdr_upper_bound_fps``, ``pdr_loss_ratio`` (of the goal named
#: PDR, when the search had one), ``latency_p50_ns``, ``latency_p99_ns`` (primary goal's
#: latency trial; empty when too few samples back the percentile), ``search_mode``,
#: ``max_load_fps`` (after any generator-limited lowering), ``generator_limited`` (the
#: generator, not the DUT, bounded the row: max_load was lowered to what the generator
#: delivered, or the goal sits at the generator's ceiling -- ``at_generator_ceiling``),
#: ``effective_seconds`` (wall time of the frame size's trials), ``switch_cores`` (CPU
#: the switch consumed at the primary point's trial, in cores) and ``fps_per_core``
#: (frames/s received per core the switch consumed there), ``b2b_frames_avg``, ``b2b_implied_buffer_time_s``, ``b2b_corrected_buffer_time_s``
#: (back2back, RFC 9004), ``burst_rate_fps`` (back2back and burst: the mean rate the valid
#: bursts went out at), ``sweep_steps`` (load_sweep: steps measured; every step is in
#: results.json), ``generator_floor_min_ns``, ``generator_floor_p50_ns``,
#: ``generator_floor_p99_ns`` (the generator's own latency on a direct loop without the DUT
#: at this frame size; empty when not measured), ``vnf`` (the VNF plugin; empty without
#: one), ``switched_fps`` (throughput_fps x switching_operations, ONP 2.1 section 5.2: the
#: figure comparable across p2p, pvp, pvvp), ``cpu_oversubscribed`` (more busy pollers
#: than CPUs, or one starved: the figure measures contention), ``switch_lost_frames`` and
#: ``vnf_lost_frames`` (frames lost in the switch passes / in the VNFs at the primary
#: point's trial, from the VNFs' own counters), ``outer_frame_size_bytes`` (an overlay's
#: frame size on the tunnel link; ``frame_size_bytes`` is the inner frame's) and
#: ``rx_wrong_frames`` (frames of the frame size's trials that arrived other than the DUT
#: should have delivered them; empty when the generator does not verify), ``tcp_gbps``,
#: ``tcp_retransmits``, ``tcp_cores_per_gbps`` (traffic type tcp: goodput, retransmitted
#: segments, endpoint and switch CPU per Gbit/s of the reported run); the caveats
#: results.json carries on the row's point, so a script reading only the CSV sees them:
#: ``at_generator_ceiling`` (the goal is the generator's measured ceiling and the DUT
#: forwarded all of it: a lower bound of the DUT's throughput), ``lower_bound_provisional``
#: (the search's budget ran out; the figure is an earlier stage's), ``sending_caveat``
#: (``disturbed`` or ``late``: the reported trial was not sent as asked, yet the search
#: measured by it), ``latency_valid`` (false: the latency figures come from a trial the
#: generator did not send as asked, so they are not the latency at this load; empty
#: without latency) and ``latency_invalid_reason`` (why); ``link_speed_source`` (what
#: ``line_rate_percent`` is against: ``port``, the sending ports' own link speed, or
#: ``nominal``, ``testbed.link_gbps`` where a port has none, as on a veth); a frame mix
#: (IMIX): ``frame_mix`` (its name; ``frame_size_bytes`` is then its mean rounded),
#: ``mean_frame_size_bytes`` (what the bit rates are at), ``mix_sizes`` (``64:7/570:4/1518:1``,
#: size:weight) and ``mix_throughput_fps`` (``64:700/570:400/1518:100``, each size's fps
#: at the row's throughput); RFC 2889
#: (``rfc2889_*`` traffic types): ``forwarding_rate_fps`` (FRMOL) and
#: ``max_forwarding_rate_fps`` (MFR), ``learning_rate_addresses_per_s``,
#: ``caching_capacity_addresses`` and ``flooded_frames`` (test frames flooded to the monitor
#: port at the lowest failing value of the address search).
CSV_COLUMNS: tuple[str, ...] = (
    "run_id",
    "testcase",
    "label",
    "traffic_type",
    "deployment",
    "vswitch",
    "trafficgen",
    "frame_size_bytes",
    "flows",
    "directions",
    "goal",
    "goal_loss_ratio",
    "throughput_fps",
    "throughput_l1_mbps",
    "throughput_l2_mbps",
    "line_rate_percent",
    "offered_load_fps",
    "tx_fps",
    "rx_fps",
    "loss_ratio",
    "lower_bound_fps",
    "upper_bound_fps",
    "regular",
    "latency_min_ns",
    "latency_avg_ns",
    "latency_max_ns",
    "latency_samples",
    "trial_count",
    "trial_seconds",
    "switching_operations",
    "valid",
    "status",
    "notes",
    # -- appended (keep the order above stable) --
    "conditional_throughput_fps",
    "pdr_throughput_fps",
    "pdr_lower_bound_fps",
    "pdr_upper_bound_fps",
    "pdr_loss_ratio",
    "latency_p50_ns",
    "latency_p99_ns",
    "search_mode",
    "max_load_fps",
    "generator_limited",
    "effective_seconds",
    "switch_cores",
    "fps_per_core",
    "b2b_frames_avg",
    "b2b_implied_buffer_time_s",
    "b2b_corrected_buffer_time_s",
    "burst_rate_fps",
    "sweep_steps",
    "generator_floor_min_ns",
    "generator_floor_p50_ns",
    "generator_floor_p99_ns",
    "vnf",
    "switched_fps",
    "cpu_oversubscribed",
    "switch_lost_frames",
    "vnf_lost_frames",
    "outer_frame_size_bytes",
    "rx_wrong_frames",
    "tcp_gbps",
    "tcp_retransmits",
    "tcp_cores_per_gbps",
    "at_generator_ceiling",
    "lower_bound_provisional",
    "sending_caveat",
    "latency_valid",
    "latency_invalid_reason",
    "link_speed_source",
    "frame_mix",
    "mean_frame_size_bytes",
    "mix_sizes",
    "mix_throughput_fps",
    "forwarding_rate_fps",
    "max_forwarding_rate_fps",
    "learning_rate_addresses_per_s",
    "caching_capacity_addresses",
    "flooded_frames",
)


def write_atomic(path: Path, data: str) -> None:
    """Replace ``path`` with ``data`` so readers never see a partial file.

    The rename replaces whatever is at ``path`` (a planted symlink included) instead of
    writing through it, and the temporary file is created fresh (:func:`private_files.create_fresh`),
    so a link at its predictable name is not followed either."""
    path = Path(path)
    private_files.make_dirs(path.parent)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with open(private_files.create_fresh(tmp), "w", encoding="utf-8", newline="") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_results_json(path: Path, results: RunResults) -> dict[str, Any]:
    """Validate and write ``results.json``; return the document written."""
    doc = results.to_json()
    schema.validate(doc, "results.schema.json")
    write_atomic(path, json.dumps(doc, indent=2, allow_nan=False) + "\n")
    return doc


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)  # shortest exact round-trip form: no precision lost to rounding
    return str(value)


def csv_row(run_id: str, test: TestResult, fs: FrameSizeResult) -> dict[str, str]:
    """The results.csv row of one testcase x frame size (primary point)."""
    point = fs.primary or ReportedPoint(name="")
    latency = point.latency
    notes = list(test.notes) + list(fs.notes)
    if fs.error:
        notes.append(fs.error)
    values: dict[str, Any] = {
        "run_id": run_id,
        "testcase": test.testcase,
        "label": test.label,
        "traffic_type": test.traffic_type,
        "deployment": test.deployment,
        "vswitch": test.vswitch,
        "trafficgen": test.trafficgen,
        "frame_size_bytes": fs.frame_size_bytes,
        "flows": test.flows,
        "directions": 2 if test.bidirectional else 1,
        "goal": point.name,
        "goal_loss_ratio": point.goal_loss_ratio,
        "throughput_fps": point.throughput_fps,
        "throughput_l1_mbps": point.throughput_l1_mbps,
        "throughput_l2_mbps": point.throughput_l2_mbps,
        "line_rate_percent": point.line_rate_percent,
        "offered_load_fps": point.offered_load_fps,
        "tx_fps": point.tx_fps,
        "rx_fps": point.rx_fps,
        "loss_ratio": point.loss_ratio,
        "lower_bound_fps": point.lower_bound_fps,
        "upper_bound_fps": point.upper_bound_fps,
        "regular": point.regular,
        "latency_min_ns": None if latency is None else latency.min_ns,
        "latency_avg_ns": None if latency is None else latency.avg_ns,
        "latency_max_ns": None if latency is None else latency.max_ns,
        "latency_samples": None if latency is None else latency.samples,
        "trial_count": fs.trial_count,
        "trial_seconds": fs.trial_seconds,
        "switching_operations": test.switching_operations,
        "valid": point.valid,
        "status": fs.status,
        "notes": "; ".join(notes),
        # older results name no source: their line rate was testbed.link_gbps's
        "link_speed_source": fs.link_speed_source or ("nominal" if fs.nominal_line_rate_fps else None),
    }
    pdr = next((p for p in fs.points if p.name == "PDR"), None)
    percentiles = (point.latency_summary or {}).get("percentiles_ns") or {}
    values.update({
        "conditional_throughput_fps": point.conditional_throughput_fps,
        "pdr_throughput_fps": None if pdr is None else pdr.throughput_fps,
        "pdr_lower_bound_fps": None if pdr is None else pdr.lower_bound_fps,
        "pdr_upper_bound_fps": None if pdr is None else pdr.upper_bound_fps,
        "pdr_loss_ratio": None if pdr is None else pdr.loss_ratio,
        "latency_p50_ns": percentiles.get("p50"),
        "latency_p99_ns": percentiles.get("p99"),
        "search_mode": fs.search_mode,
        "max_load_fps": fs.max_load_fps,
        "generator_limited": fs.generator_limited or point.at_generator_ceiling,
        "effective_seconds": fs.effective_seconds,
        "switch_cores": (point.efficiency or {}).get("switch_cores"),
        "fps_per_core": (point.efficiency or {}).get("fps_per_core"),
    })
    floor = fs.generator_floor
    if floor is not None and floor.measured:
        values.update({"generator_floor_min_ns": floor.min_ns, "generator_floor_p50_ns": floor.p50_ns,
                       "generator_floor_p99_ns": floor.p99_ns})
    b2b = fs.back2back
    if b2b is not None:
        values.update({"b2b_frames_avg": b2b.frames_avg, "b2b_implied_buffer_time_s": b2b.implied_buffer_time_s,
                       "b2b_corrected_buffer_time_s": b2b.corrected_buffer_time_s})
    rates = [(b.tx_frames, b.send_time_s) for b in fs.bursts if b.valid and b.send_time_s and b.tx_frames > 0]
    if rates:
        values["burst_rate_fps"] = sum(n for n, _ in rates) / sum(t for _, t in rates)
    if fs.sweep:
        values["sweep_steps"] = len(fs.sweep)
    lost = (point.vnf or {}).get("lost_frames") or {}
    values.update({"vnf": test.vnf if test.vnf not in ("", "none") else None,
                   "switched_fps": point.switched_fps, "cpu_oversubscribed": point.cpu_oversubscribed,
                   "switch_lost_frames": lost.get("switch"), "vnf_lost_frames": lost.get("vnf"),
                   "outer_frame_size_bytes": fs.outer_frame_size_bytes, "rx_wrong_frames": fs.rx_wrong_frames})
    values.update({"at_generator_ceiling": point.at_generator_ceiling if fs.points else None,
                   "lower_bound_provisional": point.lower_bound_provisional if fs.points else None,
                   "sending_caveat": point.sending_caveat})
    if latency is not None:
        latency_trial = fs.latency_trial_of(point)
        values["latency_valid"] = latency_trial is None or latency_trial.valid
        if latency_trial is not None and not latency_trial.valid:
            values["latency_invalid_reason"] = latency_trial.invalid_reason or "not sent as asked"
    if fs.rfc2889 is not None:  # RFC 2889: frames/s, addresses/s, addresses, frames
        r = fs.rfc2889
        values.update({"forwarding_rate_fps": r.forwarding_rate_fps, "max_forwarding_rate_fps": r.max_forwarding_rate_fps,
                       "learning_rate_addresses_per_s": r.learning_rate_addresses_per_s,
                       "caching_capacity_addresses": r.caching_capacity_addresses, "flooded_frames": r.flooded_frames})
    if fs.tcp is not None:
        values.update({"tcp_gbps": fs.tcp.gbps, "tcp_retransmits": fs.tcp.retransmits,
                       "tcp_cores_per_gbps": fs.tcp.cores_per_gbps})
    if fs.frame_mix:
        mix = fs.frame_mix
        values.update({"frame_mix": mix["name"], "mean_frame_size_bytes": mix["mean_frame_size_bytes"],
                       "mix_sizes": "/".join(f"{s}:{w}" for s, w in zip(mix["sizes_bytes"], mix["weights"]))})
        if fs.points and point.per_size and all(r.get("throughput_fps") is not None for r in point.per_size):
            values["mix_throughput_fps"] = "/".join(f"{r['frame_size_bytes']}:{r['throughput_fps']:.0f}"
                                                    for r in point.per_size)
    return {column: _cell(values.get(column)) for column in CSV_COLUMNS}


def results_csv_text(results: RunResults) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(CSV_COLUMNS), lineterminator="\n")
    writer.writeheader()
    for test in results.tests:
        for fs in test.frame_sizes:
            writer.writerow(csv_row(results.run_id, test, fs))
    return buffer.getvalue()


def write_results_csv(path: Path, results: RunResults) -> None:
    write_atomic(path, results_csv_text(results))


def run_config_document(run_id: str, plans: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The config.yaml document: every plan with its resolved configuration, in run order.

    ``plans`` yields mappings with ``name``, ``label``, ``variant`` and ``config``.
    """
    doc = {
        "schema": RUN_CONFIG_SCHEMA_ID,
        "run_id": run_id,
        "plans": [
            {
                "index": index,
                "name": p["name"],
                "label": p["label"],
                "variant": dict(p.get("variant") or {}),
                "config": p["config"],
            }
            for index, p in enumerate(plans)
        ],
    }
    schema.validate(doc, "run_config.schema.json")
    return doc


def write_config_yaml(path: Path, document: Mapping[str, Any]) -> None:
    text = "# The fully resolved configuration of every plan this run executed.\n" + yaml.safe_dump(
        dict(document), sort_keys=False, default_flow_style=False, allow_unicode=True
    )
    write_atomic(path, text)


def read_config_yaml(path: Path) -> dict[str, Any]:
    with open(path, encoding="utf-8") as f:
        doc = yaml_text.safe_load(f)
    schema.validate(doc, "run_config.schema.json")
    return doc


def write_sysinfo_json(path: Path, sysinfo: Mapping[str, Any]) -> None:
    schema.validate(dict(sysinfo), "sysinfo.schema.json")
    write_atomic(path, json.dumps(sysinfo, indent=2, allow_nan=False) + "\n")
