"""Parsers for the text OvS tools print, into JSON-able numbers. Pure functions.

Formats as printed by OvS 3.1 (captured samples in tests/data/ovs/). Unknown lines are
skipped rather than fatal: a newer OvS adding a counter must not break a run.
"""

from __future__ import annotations

import re
from typing import Any

_NUMBER = re.compile(r"^-?\d+(?:\.\d+)?$")


def _key(label: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", label.strip().lower()).strip("_")


def _number(text: str) -> int | float | None:
    if text in ("?", ""):
        return None
    if not _NUMBER.match(text):
        return None
    return float(text) if "." in text else int(text)


# --------------------------------------------------------------------------- pmd-stats-show

#: Counters that add up across threads (the rest are ratios and averages).
PMD_ADDITIVE = (
    "packets_received", "packet_recirculations", "phwol_hits", "mfex_opt_hits",
    "simple_match_hits", "emc_hits", "smc_hits", "megaflow_hits",
    "miss_with_success_upcall", "miss_with_failed_upcall", "idle_cycles", "processing_cycles",
)


def parse_pmd_stats(text: str) -> dict[str, Any]:
    """``ovs-appctl dpif-netdev/pmd-stats-show`` ->
    ``{"threads": [{"thread": "pmd", "numa_id": 0, "core_id": 1, "emc_hits": ...}, ...],
    "totals": {...}}``.

    ``idle cycles: N (88.15%)`` gives ``idle_cycles`` and ``idle_cycles_pct``;
    ``avg cycles per packet: 25494.67 (a/b)`` gives ``avg_cycles_per_packet``. ``totals``
    sums the additive counters over every thread and recomputes the PMD averages
    (cycles per packet over PMD threads only; the main thread's cycles are not counted).
    """
    threads: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line.strip():
            continue
        head = re.match(r"^pmd thread numa_id (-?\d+) core_id (-?\d+):$", line.strip())
        if head:
            current = {"thread": "pmd", "numa_id": int(head.group(1)), "core_id": int(head.group(2))}
            threads.append(current)
            continue
        if line.strip() == "main thread:":
            current = {"thread": "main"}
            threads.append(current)
            continue
        if current is None or ":" not in line:
            continue
        label, _, value = line.strip().partition(":")
        parts = value.split()
        if not parts:
            continue
        number = _number(parts[0])
        if number is None:
            continue
        key = _key(label)
        current[key] = number
        if len(parts) > 1:
            pct = re.match(r"^\((-?\d+(?:\.\d+)?)%\)$", parts[1])
            if pct:
                current[f"{key}_pct"] = float(pct.group(1))
    totals: dict[str, Any] = {k: sum(t.get(k, 0) for t in threads) for k in PMD_ADDITIVE}
    pmds = [t for t in threads if t["thread"] == "pmd"]
    pmd_pkts = sum(t.get("packets_received", 0) for t in pmds)
    pmd_proc = sum(t.get("processing_cycles", 0) for t in pmds)
    pmd_all = pmd_proc + sum(t.get("idle_cycles", 0) for t in pmds)
    totals["pmd_threads"] = len(pmds)
    totals["avg_cycles_per_packet"] = pmd_all / pmd_pkts if pmd_pkts else None
    totals["avg_processing_cycles_per_packet"] = pmd_proc / pmd_pkts if pmd_pkts else None
    lookups = totals["emc_hits"] + totals["smc_hits"] + totals["megaflow_hits"]
    totals["upcalls"] = totals["miss_with_success_upcall"] + totals["miss_with_failed_upcall"]
    totals["emc_hit_ratio"] = totals["emc_hits"] / lookups if lookups else None
    return {"threads": threads, "totals": totals}


def pmd_stats_delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """What happened between two :func:`parse_pmd_stats` results (one trial): the additive
    totals subtracted, the ratios recomputed from the differences. Counters cleared in
    between (``pmd-stats-clear``) would go negative; then the ``after`` totals are the
    trial's."""
    b, a = before.get("totals") or {}, after.get("totals") or {}
    diff = {k: a.get(k, 0) - b.get(k, 0) for k in PMD_ADDITIVE}
    if any(v < 0 for v in diff.values()):
        diff = {k: a.get(k, 0) for k in PMD_ADDITIVE}
    out: dict[str, Any] = dict(diff)
    lookups = diff["simple_match_hits"] + diff["emc_hits"] + diff["smc_hits"] + diff["megaflow_hits"]
    out["upcalls"] = diff["miss_with_success_upcall"] + diff["miss_with_failed_upcall"]
    out["emc_hit_ratio"] = diff["emc_hits"] / lookups if lookups else None
    out["megaflow_hit_ratio"] = diff["megaflow_hits"] / lookups if lookups else None
    # PMD threads only (the main thread's cycles are not busy-polling); all cycles over
    # packets is the cost per packet at this load, processing cycles the cost without idling
    pmd_before = {(t.get("numa_id"), t.get("core_id")): t for t in before.get("threads", []) if t["thread"] == "pmd"}
    pkts = proc = idle = 0
    for t in after.get("threads", []):
        if t["thread"] != "pmd":
            continue
        old = pmd_before.get((t.get("numa_id"), t.get("core_id")), {})
        pkts += t.get("packets_received", 0) - old.get("packets_received", 0)
        proc += t.get("processing_cycles", 0) - old.get("processing_cycles", 0)
        idle += t.get("idle_cycles", 0) - old.get("idle_cycles", 0)
    out["pmd_threads"] = a.get("pmd_threads", 0)
    out["avg_cycles_per_packet"] = (proc + idle) / pkts if pkts > 0 else None
    out["avg_processing_cycles_per_packet"] = proc / pkts if pkts > 0 else None
    out["processing_cycles_pct"] = 100.0 * proc / (proc + idle) if proc + idle > 0 else None
    return out


# --------------------------------------------------------------------------- dump-ports

_DIRECTION_KEYS = {"pkts": "packets", "bytes": "bytes", "drop": "dropped", "errs": "errors",
                   "frame": "frame_errors", "over": "overruns", "crc": "crc_errors",
                   "coll": "collisions"}


def parse_dump_ports(text: str) -> dict[str, dict[str, Any]]:
    """``ovs-ofctl dump-ports BRIDGE`` -> ``{"1": {"rx_packets": ..., "tx_dropped": ...,
    "duration_s": ...}, "LOCAL": {...}}``. Counters the port does not keep (``?``) are None."""
    ports: dict[str, dict[str, Any]] = {}
    current: dict[str, Any] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        m = re.match(r'^port\s+"?([^":]+)"?:\s*(rx|tx)\s+(.*)$', line)
        if m:
            current = ports.setdefault(m.group(1).strip(), {})
            _direction(current, m.group(2), m.group(3))
            continue
        m = re.match(r"^(rx|tx)\s+(pkts=.*)$", line)
        if m and current is not None:
            _direction(current, m.group(1), m.group(2))
            continue
        m = re.match(r"^duration=(\d+(?:\.\d+)?)s$", line)
        if m and current is not None:
            current["duration_s"] = float(m.group(1))
    return ports


def _direction(port: dict[str, Any], direction: str, fields: str) -> None:
    for item in fields.split(","):
        name, _, value = item.strip().partition("=")
        if name in _DIRECTION_KEYS:
            port[f"{direction}_{_DIRECTION_KEYS[name]}"] = _number(value)


# --------------------------------------------------------------------------- meter-stats


def parse_meter_stats(text: str) -> dict[str, dict[str, Any]]:
    """``ovs-ofctl -O OpenFlow13 meter-stats BRIDGE`` -> ``{"1": {"flow_count": 2,
    "packet_in_count": ..., "byte_in_count": ..., "duration_s": ..., "bands":
    [{"packet_count": dropped, "byte_count": ...}]}}``. A drop band's packet_count is
    what the meter dropped."""
    meters: dict[str, dict[str, Any]] = {}
    current: dict[str, Any] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("meter:"):
            fields = dict(re.findall(r"(\w+):(\S+)", line))
            current = {"bands": []}
            meters[fields.pop("meter")] = current
            for name, value in fields.items():
                if name == "duration":
                    current["duration_s"] = float(value.rstrip("s"))
                elif name != "bands":
                    current[name] = _number(value)
            continue
        band = re.match(r"^(\d+):\s*(.*)$", line)
        if band and current is not None:
            current["bands"].append({k: _number(v) for k, v in re.findall(r"(\w+):(\S+)", band.group(2))})
    return meters


# --------------------------------------------------------------------------- version


def parse_version(text: str) -> dict[str, str]:
    """``ovs-vswitchd --version`` -> ``{"ovs": "3.1.0", "dpdk": "22.11.11"}`` (no ``dpdk``
    key for a build without DPDK)."""
    versions: dict[str, str] = {}
    m = re.search(r"\(Open vSwitch\)\s+(\S+)", text)
    if m:
        versions["ovs"] = m.group(1)
    m = re.search(r"^DPDK\s+(\S+)", text, re.MULTILINE)
    if m:
        versions["dpdk"] = m.group(1)
    return versions


# --------------------------------------------------------------------------- implementations


def parse_implementations(text: str) -> list[str]:
    """The names ``dpif-netdev/subtable-lookup-info-get``, ``dpif-impl-get`` or
    ``miniflow-parser-get`` list under their ``Available ... implementations:`` line, e.g.
    ``["autovalidator", "generic"]`` from ``  generic (Use count: 0, Priority: 1)``."""
    names = []
    for line in text.splitlines():
        m = re.match(r"^\s+([A-Za-z0-9_]+)\b", line)
        if m:
            names.append(m.group(1))
    return names


def parse_implementation_listing(text: str) -> dict[str, dict[str, Any]]:
    """The lines of a ``-get`` listing with what each says, by implementation name:

    * ``subtable-lookup-info-get``: ``{"generic": {"use_count": 2, "priority": 1}}`` (how
      many dpcls subtables use it now, and its priority: the highest one a subtable's
      shape admits is chosen when the subtable is created);
    * ``dpif-impl-get``: ``{"dpif_scalar": {"pmds": [1]}}`` (the PMD cores running it);
    * ``miniflow-parser-get``: ``{"study": {"available": True, "pmds": [1]}}`` (usable on
      this CPU, and the PMD cores running it).

    ``pmds: none`` gives ``[]``. Lines of another shape are skipped."""
    out: dict[str, dict[str, Any]] = {}
    for line in text.splitlines():
        m = re.match(r"^\s+([A-Za-z0-9_]+)\s*\((.*)\)\s*$", line)
        if not m:
            continue
        name, inside = m.group(1), m.group(2)
        entry: dict[str, Any] = {}
        count = re.search(r"Use count:\s*(-?\d+)", inside)
        if count:
            entry["use_count"] = int(count.group(1))
        prio = re.search(r"Priority:\s*(-?\d+)", inside)
        if prio:
            entry["priority"] = int(prio.group(1))
        available = re.search(r"available:\s*(True|False)", inside)
        if available:
            entry["available"] = available.group(1) == "True"
        pmds = re.search(r"pmds:\s*([0-9,]+|none)", inside)
        if pmds:
            entry["pmds"] = [] if pmds.group(1) == "none" else [int(c) for c in pmds.group(1).split(",") if c]
        out[name] = entry
    return out


#: ``VIRTIO_F_RING_PACKED``: the virtio 1.1 packed virtqueue layout (feature bit 34).
VIRTIO_F_RING_PACKED_BIT = 34
#: ``VIRTIO_F_VERSION_1`` (bit 32) and ``VIRTIO_NET_F_MQ`` (bit 22).
VIRTIO_F_VERSION_1_BIT = 32
VIRTIO_NET_F_MQ_BIT = 22


def vhost_status(status: dict[str, str]) -> dict[str, Any]:
    """What a vhost-user Interface's ``status`` column says about the negotiated device:
    ``{"connected": True, "features": "0x...", "packed_ring": True, "virtio_1": True,
    "multiqueue": False, "queue_pairs": 1}`` (``features`` are what the driver and OvS's
    vhost library agreed on, ``num_of_vrings`` counts RX and TX rings). Keys whose source
    is absent (a port nothing connected to yet) are left out, ``connected`` is always there."""
    out: dict[str, Any] = {"connected": status.get("status") == "connected"}
    features = status.get("features")
    if features:
        try:
            bits = int(features, 16)
        except ValueError:
            bits = None
        if bits is not None:
            out["features"] = features
            out["packed_ring"] = bool(bits >> VIRTIO_F_RING_PACKED_BIT & 1)
            out["virtio_1"] = bool(bits >> VIRTIO_F_VERSION_1_BIT & 1)
            out["multiqueue"] = bool(bits >> VIRTIO_NET_F_MQ_BIT & 1)
    rings = status.get("num_of_vrings")
    if rings and rings.isdigit():
        out["queue_pairs"] = int(rings) // 2
    return out


def parse_ovsdb_map(text: str) -> dict[str, str]:
    """``{features="0x0000000150008000", mode=server, status=connected}`` (an OVSDB map as
    ``ovs-vsctl get`` prints it) -> a dict of strings."""
    body = text.strip()
    if body.startswith("{") and body.endswith("}"):
        body = body[1:-1]
    out: dict[str, str] = {}
    for m in re.finditer(r'([A-Za-z0-9_-]+)=("(?:[^"\\]|\\.)*"|[^,]*)', body):
        value = m.group(2).strip()
        if value.startswith('"') and value.endswith('"'):
            value = value[1:-1].replace('\\"', '"').replace("\\\\", "\\")
        out[m.group(1)] = value
    return out


_UPCALL_FLOWS = re.compile(r"flows\s*:\s*\(current (\d+)\)\s*\(avg (\d+)\)\s*\(max (\d+)\)\s*\(limit (\d+)\)")
_UPCALL_OFFLOADED = re.compile(r"offloaded flows\s*:\s*(\d+)")
_UPCALL_DUMP = re.compile(r"dump duration\s*:\s*(\d+)ms")


def parse_upcall_show(text: str) -> dict[str, dict[str, int]]:
    """``ovs-appctl upcall/show`` -> per datapath ``{"flows_current", "flows_avg",
    "flows_max", "flows_limit", "offloaded_flows", "dump_duration_ms"}``.

    ``flows_current`` counts the datapath flows in the kernel datapath; ``offloaded_flows``
    those the TC flow API holds (OvS-TC); their sum is every datapath flow.
    """
    out: dict[str, dict[str, int]] = {}
    current: dict[str, int] | None = None
    for raw in text.splitlines():
        line = raw.rstrip()
        if line and not line[0].isspace() and line.endswith(":"):
            current = {}
            out[line[:-1]] = current
        elif current is not None:
            if m := _UPCALL_FLOWS.search(line):
                current.update(flows_current=int(m[1]), flows_avg=int(m[2]),
                               flows_max=int(m[3]), flows_limit=int(m[4]))
            elif m := _UPCALL_OFFLOADED.search(line):
                current["offloaded_flows"] = int(m[1])
            elif m := _UPCALL_DUMP.search(line):
                current["dump_duration_ms"] = int(m[1])
    return out
