"""The switch's efficiency figures of one reported point, as report.html and the console say them.

Every throughput point of results.json carries what the switch spent at the trial it was
measured in (``efficiency``: CPU seconds, cores, frames per second per core) and the
switch's datapath counters over that trial (``datapath``, as the switch plugin reported
them). The Netronome OVS-TC report compares solutions by exactly these: cores consumed and
Mpps per core, cache behaviour (OvS-DPDK's EMC/SMC/megaflow hits and upcalls; the kernel
datapath's hit/missed/lost lookups) and, for OVS-TC, how many flows were in TC.

Pure functions over the JSON form of a point (results.json, or ``RunResults.to_json()``);
they only pick and phrase what is there and never compute a figure the files do not hold,
beyond ratios of two of their numbers.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

DASH = "–"

#: OvS-DPDK PMD counters shown, in lookup order (``datapath.pmd``), with their labels. The
#: simple-match cache (OvS >= 2.17) takes every frame of a bridge whose flows match on the
#: in_port alone -- plain p2p forwarding -- before the EMC is looked at.
PMD_COUNTERS = (("simple_match_hits", "simple-match hits"), ("emc_hits", "EMC hits"), ("smc_hits", "SMC hits"), ("megaflow_hits", "megaflow hits"),
                ("upcalls", "upcalls"))
#: Kernel datapath lookups (``ovs-dpctl show``): hit a datapath flow, missed (upcall), lost.
KERNEL_COUNTERS = (("lookups_hit", "hit"), ("lookups_missed", "missed"), ("lookups_lost", "lost"))


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _count(value: Any) -> str:
    number = _number(value)
    return DASH if number is None else f"{number:,.0f}"


def switch_cores(point: Mapping[str, Any]) -> float | None:
    """Cores the switch consumed at the point's trial (1.0 = one core busy), or None."""
    return _number(_mapping(point.get("efficiency")).get("switch_cores"))


def fps_per_core(point: Mapping[str, Any]) -> float | None:
    """Frames per second forwarded per core the switch consumed, or None."""
    return _number(_mapping(point.get("efficiency")).get("fps_per_core"))


def cpu_source(point: Mapping[str, Any]) -> str | None:
    """Where the switch's CPU time was read (``threads``, ``softirq+threads`` ...)."""
    source = _mapping(point.get("efficiency")).get("cpu_source")
    return str(source) if source else None


def cpu_owner(point: Mapping[str, Any]) -> str:
    """Whose CPU the point's efficiency figures are: ``VNF`` in a topology without a
    switch (the router is the DUT; ``cpu_source`` starts with ``vnf``), else ``Switch``."""
    source = cpu_source(point) or ""
    return "VNF" if source.startswith("vnf") else "Switch"


def oversubscribed(point: Mapping[str, Any]) -> bool:
    """True when a busy-polling thread of the switch did not get its CPU in that trial."""
    return bool(_mapping(point.get("efficiency")).get("oversubscribed"))


def datapath_kind(point: Mapping[str, Any]) -> str | None:
    """``userspace`` (OvS-DPDK PMDs), ``kernel``, ``kernel+tc`` ... or None."""
    kind = _mapping(point.get("datapath")).get("kind")
    return str(kind) if kind else None


def pmd_counters(point: Mapping[str, Any]) -> dict[str, float] | None:
    """Simple-match/EMC/SMC/megaflow hits and upcalls of the PMD threads over the trial, or None."""
    pmd = _mapping(_mapping(point.get("datapath")).get("pmd"))
    if not pmd:
        return None
    out = {key: _number(pmd.get(key)) for key, _ in PMD_COUNTERS}
    return {k: v for k, v in out.items() if v is not None} or None


def kernel_counters(point: Mapping[str, Any]) -> dict[str, float] | None:
    """Kernel datapath lookups hit/missed/lost over the trial, or None."""
    datapath = _mapping(point.get("datapath"))
    out = {key: _number(datapath.get(key)) for key, _ in KERNEL_COUNTERS}
    out = {k: v for k, v in out.items() if v is not None}
    return out or None


def offload(point: Mapping[str, Any]) -> dict[str, Any] | None:
    """What was in TC at the trial's end (OVS-TC): offloaded and datapath flow counts."""
    off = _mapping(_mapping(point.get("datapath")).get("offload"))
    offloaded = _number(off.get("offloaded_flows"))
    if offloaded is None:
        return None
    total = _number(off.get("datapath_flows"))
    if total is None:
        total = offloaded + (_number(off.get("kernel_flows")) or 0.0)
    return {"offloaded_flows": int(offloaded), "datapath_flows": int(total), "tc_policy": off.get("tc_policy")}


def rules_installed(point: Mapping[str, Any]) -> int | None:
    value = _number(_mapping(point.get("datapath")).get("rules_installed"))
    return None if value is None else int(value)


def has_figures(point: Mapping[str, Any]) -> bool:
    """True when the point carries any efficiency or datapath figure."""
    return bool(_mapping(point.get("efficiency")) or _mapping(point.get("datapath")))


# -- phrasing ---------------------------------------------------------------------------------


def fmt_cores(value: float | None) -> str:
    return DASH if value is None else f"{value:.2f}"


def fmt_mpps(value_fps: float | None) -> str:
    return DASH if value_fps is None else f"{value_fps / 1e6:.3f}"


def cpu_text(point: Mapping[str, Any]) -> str | None:
    """``0.50 cores (threads), 0.463 Mpps per core`` or None when the switch said nothing."""
    cores = switch_cores(point)
    if cores is None:
        return None
    source = cpu_source(point)
    text = f"{fmt_cores(cores)} cores" + (f" ({source})" if source else "")
    per_core = fps_per_core(point)
    if per_core is not None:
        text += f", {fmt_mpps(per_core)} Mpps per core"
    if oversubscribed(point):
        text += " (CPU oversubscribed: a busy-polling thread did not get its CPU)"
    return text


def pmd_text(point: Mapping[str, Any]) -> str | None:
    """``PMD: EMC hits 460,592, SMC hits 0, megaflow hits 0, upcalls 0``."""
    counters = pmd_counters(point)
    if counters is None:
        return None
    return "PMD: " + ", ".join(f"{label} {_count(counters[key])}" for key, label in PMD_COUNTERS if key in counters)


def kernel_text(point: Mapping[str, Any]) -> str | None:
    """``kernel datapath lookups: hit 1,200, missed 64, lost 0``."""
    counters = kernel_counters(point)
    if counters is None:
        return None
    return "kernel datapath lookups: " + ", ".join(
        f"{label} {_count(counters[key])}" for key, label in KERNEL_COUNTERS if key in counters)


def offload_text(point: Mapping[str, Any]) -> str | None:
    """``120 of 128 flows offloaded to TC (tc-policy skip_hw)``."""
    off = offload(point)
    if off is None:
        return None
    policy = f" (tc-policy {off['tc_policy']})" if off.get("tc_policy") else ""
    return f"{off['offloaded_flows']:,} of {off['datapath_flows']:,} flows offloaded to TC{policy}"


def flow_limit_text(point: Mapping[str, Any]) -> str | None:
    """``flow limit 13,000 flows: 486,693 upcalls not installed (slow path)`` when the
    datapath's flow limit turned flows away during the trial (OvS: ``flow_limit_hits``)."""
    datapath = _mapping(point.get("datapath"))
    hits, limit = _number(datapath.get("flow_limit_hits")), _number(datapath.get("flows_limit"))
    if not hits:
        return None
    at = f" {_count(limit)} flows" if limit is not None else ""
    return f"flow limit{at}: {_count(hits)} upcalls not installed (slow path)"


def datapath_text(point: Mapping[str, Any]) -> str | None:
    """Every datapath figure of the point in one phrase (PMD, kernel lookups, offload,
    the flow limit when it turned flows away)."""
    parts = [t for t in (pmd_text(point), kernel_text(point), offload_text(point), flow_limit_text(point)) if t]
    return "; ".join(parts) or None


def point_text(point: Mapping[str, Any]) -> str | None:
    """The CPU and datapath figures of a point in one line, or None when it has none."""
    parts = [t for t in (cpu_text(point), datapath_text(point)) if t]
    return "; ".join(parts) or None
