"""The figures a suite table can show, read from results.json (pure: dicts in, numbers out).

A cell is one metric of one *row source*: a test (plan) of results.json, one of its frame
sizes and, for a load sweep, one step. Names carry their unit, as everywhere in vsbench:

* a search goal's point: ``<goal>_fps``, ``_mpps``, ``_l1_mbps``, ``_l1_gbps``, ``_l2_mbps``,
  ``_line_rate_percent``, ``_switched_mpps`` (throughput x switching operations, ONP 2.1
  section 5.2) -- ``ndr_l1_mbps`` is the NDR point's L1 rate; the goal is the point's name
  (NDR, PDR, or a goal a suite defines) in lower case;
* latency at the table's goal point (a sweep step: at that step): ``latency_min_ns``,
  ``latency_avg_ns``, ``latency_max_ns``, ``latency_p99_ns``;
* the switch's cost at the goal point: ``switch_cores``, ``mpps_per_core``; the topology's
  ``switching_operations``;
* a load-sweep step: ``offered_percent``, ``offered_fps``, ``rx_fps``, ``output_percent``
  (received over the sweep's 100 %), ``drop_percent``;
* a TCP workload: ``tcp_gbps``, ``retransmits``, ``cores_used``, ``cores_per_gbps``,
  ``rtt_mean_us``;
* computed across a table's rows (:mod:`vsbench.suite.tables`): ``gain_percent``, ``ratio``
  and ``overhead_percent`` (the loss against the baseline, ONP 2.1's VXLAN overhead) against
  the table's ``gain`` baseline.
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping

Doc = Mapping[str, Any]


@dataclass(frozen=True)
class Source:
    """Where a row's figures come from: a test of results.json, one of its frame sizes,
    and for a load sweep one step of it."""

    test: Doc
    frame_size: Doc | None = None
    step: Doc | None = None


@dataclass(frozen=True)
class Metric:
    name: str
    label: str
    unit: str
    digits: int = 0


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _scaled(value: Any, factor: float) -> float | None:
    number = _num(value)
    return None if number is None else number * factor


#: ``<goal>_<quantity>``: quantity -> (label, unit, digits, point field, factor).
GOAL_QUANTITIES: dict[str, tuple[str, str, int, str, float]] = {
    "fps": ("frame rate", "frames/s", 0, "throughput_fps", 1.0),
    "mpps": ("frame rate", "Mpps", 3, "throughput_fps", 1e-6),
    "l1_mbps": ("L1 rate", "Mbit/s", 0, "throughput_l1_mbps", 1.0),
    "l1_gbps": ("L1 rate", "Gbit/s", 2, "throughput_l1_mbps", 1e-3),
    "l2_mbps": ("L2 rate", "Mbit/s", 0, "throughput_l2_mbps", 1.0),
    "line_rate_percent": ("line rate", "%", 1, "line_rate_percent", 1.0),
    "switched_mpps": ("switched frames (x switching ops)", "Mpps", 3, "switched_fps", 1e-6),
    "switched_fps": ("switched frames (x switching ops)", "frames/s", 0, "switched_fps", 1.0),
}
GOAL_PATTERN = re.compile(r"^([a-z][a-z0-9]*)_(" + "|".join(sorted(GOAL_QUANTITIES, key=len, reverse=True)) + r")$")

FIXED: dict[str, Metric] = {m.name: m for m in (
    Metric("latency_min_ns", "latency min", "ns"),
    Metric("latency_avg_ns", "latency avg", "ns"),
    Metric("latency_max_ns", "latency max", "ns"),
    Metric("latency_p99_ns", "latency p99", "ns"),
    Metric("switch_cores", "switch CPU", "cores", 2),
    Metric("mpps_per_core", "frame rate per switch core", "Mpps/core", 3),
    Metric("switching_operations", "switching operations", "per frame"),
    Metric("offered_percent", "offered load", "% of 100 %", 2),
    Metric("offered_fps", "offered load", "frames/s"),
    Metric("rx_fps", "output rate", "frames/s"),
    Metric("output_percent", "output rate", "% of 100 %", 2),
    Metric("drop_percent", "packet drop", "%", 3),
    Metric("tcp_gbps", "TCP goodput", "Gbit/s", 2),
    Metric("retransmits", "retransmits", "segments"),
    Metric("cores_used", "CPU (endpoints + switch)", "cores", 2),
    Metric("cores_per_gbps", "CPU per Gbit/s", "cores/(Gbit/s)", 3),
    Metric("rtt_mean_us", "RTT mean", "us", 1),
    Metric("gain_percent", "gain", "%", 1),
    Metric("ratio", "ratio", "x", 3),
    Metric("overhead_percent", "overhead (loss against the baseline)", "%", 1),
)}
#: Computed across rows by the table, not read from one source.
DERIVED = ("gain_percent", "ratio", "overhead_percent")


def known(name: str) -> bool:
    return name in FIXED or GOAL_PATTERN.match(name) is not None


def hint(name: str) -> str:
    names = sorted(FIXED) + [f"ndr_{q}" for q in GOAL_QUANTITIES] + [f"pdr_{q}" for q in GOAL_QUANTITIES]
    close = difflib.get_close_matches(name, names, n=2)
    return f"did you mean {' or '.join(close)}?" if close else f"known: {', '.join(names)}"


def describe(name: str) -> Metric:
    if name in FIXED:
        return FIXED[name]
    match = GOAL_PATTERN.match(name)
    if match is None:
        raise KeyError(name)
    goal, quantity = match.groups()
    label, unit, digits, _, _ = GOAL_QUANTITIES[quantity]
    return Metric(name, f"{goal.upper()} {label}", unit, digits)


def goal_point(fs: Doc | None, goal: str) -> Doc | None:
    """The frame size's point of ``goal`` (case-insensitive), else None."""
    for point in (fs or {}).get("points") or ():
        if isinstance(point, Mapping) and str(point.get("name", "")).lower() == goal.lower():
            return point
    return None


def _latency(source: Source, goal: str) -> Doc:
    if source.step is not None:
        return source.step.get("latency") or {}
    point = goal_point(source.frame_size, goal) or {}
    return point.get("latency") or {}


def _p99(source: Source, goal: str) -> float | None:
    point = goal_point(source.frame_size, goal) or {}
    summary = point.get("latency_summary") or {}
    return _num((summary.get("percentiles_ns") or {}).get("p99"))


def _sweep_reference(source: Source) -> float | None:
    return _num((source.frame_size or {}).get("sweep_reference_fps"))


def _tcp(source: Source) -> Doc:
    return (source.frame_size or {}).get("tcp") or {}


def _efficiency(source: Source, goal: str) -> Doc:
    return (goal_point(source.frame_size, goal) or {}).get("efficiency") or {}


READERS: dict[str, Callable[[Source, str], float | None]] = {
    "latency_min_ns": lambda s, g: _num(_latency(s, g).get("min_ns")),
    "latency_avg_ns": lambda s, g: _num(_latency(s, g).get("avg_ns")),
    "latency_max_ns": lambda s, g: _num(_latency(s, g).get("max_ns")),
    "latency_p99_ns": _p99,
    "switch_cores": lambda s, g: _num(_efficiency(s, g).get("switch_cores")),
    "mpps_per_core": lambda s, g: _scaled(_efficiency(s, g).get("fps_per_core"), 1e-6),
    "switching_operations": lambda s, g: _num(s.test.get("switching_operations")),
    "offered_percent": lambda s, g: _num((s.step or {}).get("percent")),
    "offered_fps": lambda s, g: _num((s.step or {}).get("offered_load_fps")),
    "rx_fps": lambda s, g: _num((s.step or {}).get("rx_fps")),
    "output_percent": lambda s, g: (None if s.step is None or not _sweep_reference(s) or _num(s.step.get("rx_fps")) is None
                                    else 100.0 * float(s.step["rx_fps"]) / float(_sweep_reference(s))),  # type: ignore[arg-type]
    "drop_percent": lambda s, g: _scaled((s.step or {}).get("loss_ratio"), 100.0),
    "tcp_gbps": lambda s, g: _num(_tcp(s).get("gbps")),
    "retransmits": lambda s, g: _num(_tcp(s).get("retransmits")),
    "cores_used": lambda s, g: _num(_tcp(s).get("cores")),
    "cores_per_gbps": lambda s, g: _num(_tcp(s).get("cores_per_gbps")),
    "rtt_mean_us": lambda s, g: _num(_tcp(s).get("rtt_mean_us")),
}


def value(name: str, source: Source, goal: str = "NDR") -> float | None:
    """Metric ``name`` of ``source`` (None where the source has no such figure). A goal
    metric names its own goal; the others read the table's ``goal`` point."""
    if name in READERS:
        return READERS[name](source, goal)
    match = GOAL_PATTERN.match(name)
    if match is None:
        return None
    own_goal, quantity = match.groups()
    _, _, _, field, factor = GOAL_QUANTITIES[quantity]
    point = goal_point(source.frame_size, own_goal)
    return None if point is None else _scaled(point.get(field), factor)


def caveats(source: Source, goal: str = "NDR") -> list[str]:
    """Short words for what qualifies a row's figures (shown beside them)."""
    words = []
    test, fs = source.test, source.frame_size or {}
    point = goal_point(fs, goal) or {}
    if point.get("at_generator_ceiling"):
        words.append("at generator ceiling (a lower bound of the DUT)")
    if point.get("lower_bound_provisional"):
        words.append("provisional (search budget ran out)")
    if test.get("cpu_oversubscribed") or point.get("cpu_oversubscribed"):
        words.append("CPU oversubscribed")
    if fs.get("generator_limited") and not point.get("at_generator_ceiling"):
        words.append("generator-limited")
    if point.get("sending_caveat"):
        words.append(f"trial sent {point['sending_caveat']}")
    if source.step is not None and source.step.get("valid") is False:
        words.append("step's trial invalid")
    return words
