"""Flow files and meters: forwarding is written to a file and installed in one bundle.

Whatever the number of rules, ovs-ofctl runs once (``--bundle add-flows FILE``): the rule
set is applied atomically and the install time is one process, not one per rule.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Iterable

#: Priority of the port-to-port flows ``connect`` installs (rule sets may go above/below).
FORWARD_PRIORITY = 10
#: Meter id of the reference-DUT meter on the forwarding path.
FORWARD_METER_ID = 1


def port_to_port_flows(
    a_port: int, b_port: int, *, meter_id: int | None = None,
    priority: int = FORWARD_PRIORITY, table: int = 0, match: str = "", modify: str = "",
) -> list[str]:
    """Flows sending everything from OpenFlow port ``a_port`` to ``b_port`` and back,
    through meter ``meter_id`` first when given (OpenFlow 1.3 meter instruction). With a
    frame modification (:mod:`.modify`) each flow also matches ``match`` and applies the
    ``modify`` actions before its output."""
    meter = f"meter:{meter_id}," if meter_id is not None else ""
    head = f"{match}," if match else ""
    actions = f"{modify}," if modify else ""
    return [
        f"table={table},priority={priority},{head}in_port={a_port},actions={meter}{actions}output:{b_port}",
        f"table={table},priority={priority},{head}in_port={b_port},actions={meter}{actions}output:{a_port}",
    ]


def hub_flows(hub_port: int, spokes: Iterable[tuple[int, str]], *, meter_id: int | None = None,
              priority: int = FORWARD_PRIORITY, table: int = 0) -> list[str]:
    """Flows of N spokes and one hub (``connect_many``): everything from a spoke to the
    hub; from the hub, a frame to a spoke's endpoint MAC to that spoke (``spokes``: pairs
    of OpenFlow port and MAC). A frame from the hub to any other MAC matches nothing and
    is dropped: nothing is flooded."""
    meter = f"meter:{meter_id}," if meter_id is not None else ""
    lines = []
    for port, mac in spokes:
        lines.append(f"table={table},priority={priority},in_port={port},actions={meter}output:{hub_port}")
        lines.append(f"table={table},priority={priority},in_port={hub_port},dl_dst={mac.lower()},"
                     f"actions={meter}output:{port}")
    return lines


def meter_burst_pkts(rate_pps: int, burst_ms: float) -> int:
    """Bucket size holding ``burst_ms`` of traffic at ``rate_pps`` (at least one 32-frame
    batch, so a DPDK burst is never cut by a bucket smaller than itself)."""
    return max(32, math.ceil(rate_pps * burst_ms / 1000.0))


def meter_band_rate_pps(capacity_pps: int, burst_pkts: int, window_s: float | None) -> int:
    """Band rate of a meter whose ``window_s``-second capacity is ``capacity_pps``.

    A token bucket passes ``rate x T + burst`` frames in a T-second trial that starts with
    a full bucket, so a plain meter at ``capacity_pps`` lets a short trial through above
    that rate (a 10 ms bucket adds 0.5% to a 2-s trial) and the search rightly measures it.
    A reference DUT must never forward more than its stated capacity, so with a window the
    band rate is lowered by the bucket spread over the window: no trial of ``window_s`` or
    longer can then pass more than ``capacity_pps`` x its duration. Without a window the band
    rate is the capacity (a plain meter).
    """
    if window_s is None:
        return int(capacity_pps)
    if window_s <= 0:
        raise ValueError(f"meter window must be positive, got {window_s}")
    rate = math.floor(capacity_pps - burst_pkts / window_s)
    if rate < 1:
        raise ValueError(
            f"a bucket of {burst_pkts} frames spread over {window_s:g} s leaves no rate under "
            f"{capacity_pps} frames/s; use a longer window or a smaller bucket")
    return rate


def meter_spec(meter_id: int, rate_pps: int, burst_pkts: int) -> str:
    """``ovs-ofctl add-meter`` argument: a packets/s meter whose single band drops what
    exceeds ``rate_pps``, with an explicit bucket of ``burst_pkts`` packets.

    Without an explicit burst OvS sizes the bucket at one second of traffic, so a short
    trial passes up to twice the rate: the reference DUT would not have the capacity it
    claims.
    """
    if rate_pps <= 0:
        raise ValueError(f"meter rate must be positive, got {rate_pps}")
    return (
        f"meter={meter_id},pktps,burst,stats,"
        f"band=type=drop,rate={int(rate_pps)},burst_size={int(burst_pkts)}"
    )


def write_flow_file(path: Path, flows: Iterable[str]) -> int:
    """Write one flow per line; return how many."""
    count = 0
    with open(path, "w", encoding="utf-8") as handle:
        for flow in flows:
            handle.write(flow.rstrip("\n") + "\n")
            count += 1
    return count


def count_rules(path: Path) -> int:
    """Rules in an ovs-ofctl flow file: lines that are neither blank nor ``#`` comments."""
    count = 0
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            stripped = line.strip()
            if stripped and not stripped.startswith("#"):
                count += 1
    return count


def add_meter_to_rules(src: Path, dst: Path, meter_id: int) -> int:
    """Copy flow file ``src`` to ``dst`` with ``meter:<id>,`` first in every rule's
    actions (rules already naming a meter are left alone); return the rule count."""
    count = 0
    with open(src, encoding="utf-8") as inp, open(dst, "w", encoding="utf-8") as out:
        for line in inp:
            stripped = line.strip()
            if not stripped or stripped.startswith("#"):
                continue
            head, sep, actions = stripped.partition("actions=")
            if sep and not actions.startswith("meter:"):
                stripped = f"{head}actions=meter:{meter_id},{actions}"
            out.write(stripped + "\n")
            count += 1
    return count
