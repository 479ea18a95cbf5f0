"""What a test's "% of line rate" is against, in words a reader of a table needs.

The runner takes the line rate from the sending ports' own link speed where every one has
a speed (a NIC, a TRex or IxNetwork port) and from ``testbed.link_gbps`` where any has
none (a veth): results.json's frame sizes say which (``link_speed_source``). A table's
"% line rate" column then reads very differently -- 95 % of a real 10 Gb/s port is
near the wire's limit, 95 % of a nominal 10 Gb/s on a veth is only a convention -- so the
column's heading and a note say which it was.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

PORT = "port"


def _measured(frame_sizes: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [fs for fs in frame_sizes if fs.get("nominal_line_rate_fps")]


def from_ports(frame_sizes: Iterable[Mapping[str, Any]]) -> bool:
    """True when every frame size with a line rate had it from its ports' own speeds."""
    measured = _measured(frame_sizes)
    return bool(measured) and all(fs.get("link_speed_source") == PORT for fs in measured)


def _gbps(bps: float) -> str:
    return f"{bps / 1e9:g} Gb/s"


def describe(frame_sizes: Iterable[Mapping[str, Any]], link_gbps: float | None) -> str:
    """One phrase: ``the ports' own link speed, 2 x 25 Gb/s (ethtool (ice, ...))`` or
    ``nominal: 10 Gb/s per port (testbed.link_gbps); veth0 is a veth interface ...``."""
    measured = _measured(frame_sizes)
    if measured and all(fs.get("link_speed_source") == PORT for fs in measured):
        speeds = sorted({tuple(fs.get("link_speeds_bps") or ()) for fs in measured})
        shown = "; ".join(" + ".join(_gbps(b) for b in s) for s in speeds)
        reasons = sorted({fs.get("link_speed_reason") or "" for fs in measured} - {""})
        return f"the ports' own link speed, {shown}" + (f" ({'; '.join(reasons)})" if reasons else "")
    configured = f"{link_gbps:g} Gb/s per port" if link_gbps is not None else "the configured speed"
    text = f"nominal: {configured} (testbed.link_gbps)"
    reasons = sorted({fs.get("link_speed_reason") or "" for fs in measured
                      if fs.get("link_speed_source") != PORT} - {""})
    return text + (f"; {reasons[0]}" if reasons else "")
