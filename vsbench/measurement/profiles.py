"""Build the :class:`TrafficProfile` a generator is configured with from the config.

The ``traffic`` section of the resolved configuration (conf/10_traffic.yaml) describes the
whole sweep; a profile is one point of it (one frame size). Keeping the translation here
means every generator sees the same profile for the same config, and the nominal line rate
used for "% of line rate" and for the search's upper limit is computed in one place.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from vsbench.interfaces.frame_mix import FrameMix, FrameMixError, named_mixes
from vsbench.interfaces.modification import FrameModification
from vsbench.interfaces.traffic import (
    MAX_FRAME_SIZE_BYTES,
    MIN_FRAME_SIZE_BYTES,
    FlowFields,
    PortStream,
    TrafficProfile,
    line_rate_fps,
)
from vsbench.system.link_speed import LinkSpeed

_FIELD_NAMES = tuple(f.name for f in FlowFields.__dataclass_fields__.values())
VARIABLE_FIELDS = ("src_ip", "dst_ip", "src_port", "dst_port", "src_mac", "dst_mac")


class ProfileError(ValueError):
    """The traffic section cannot be turned into a profile; the message is one line."""


def flow_fields(fields: Mapping[str, Any] | None) -> FlowFields:
    """:class:`FlowFields` from ``traffic.fields``; missing keys keep their defaults."""
    fields = dict(fields or {})
    unknown = sorted(set(fields) - set(_FIELD_NAMES))
    if unknown:
        raise ProfileError(f"unknown traffic.fields key(s): {', '.join(unknown)}")
    vary = fields.get("vary")
    if vary is not None:
        if isinstance(vary, str):
            vary = [vary]
        bad = [v for v in vary if v not in VARIABLE_FIELDS]
        if bad:
            raise ProfileError(
                f"traffic.fields.vary: cannot vary {', '.join(map(str, bad))} "
                f"(choose from {', '.join(VARIABLE_FIELDS)})"
            )
        fields["vary"] = tuple(vary)
    for key in ("src_ip", "dst_ip", "src_mac", "dst_mac", "l4_proto"):
        if key in fields and fields[key] is not None:
            fields[key] = str(fields[key])
    return FlowFields(**fields)


def build_profile(traffic: Mapping[str, Any], frame_size_bytes: int,
                  frame_modification: FrameModification | None = None) -> TrafficProfile:
    """The profile for one frame size of the ``traffic`` config section (a mix's
    representative size gives the mix's profile: :func:`frame_entries`), whose frames the
    DUT modifies as ``frame_modification`` says (``dut.frame_modification``)."""
    mix = mix_of(traffic, int(frame_size_bytes))
    sizes = mix.sizes_bytes if mix is not None else (int(frame_size_bytes),)
    for size in sizes:
        if not MIN_FRAME_SIZE_BYTES <= int(size) <= MAX_FRAME_SIZE_BYTES:
            where = f" (in frame mix {mix.name})" if mix is not None else ""
            raise ProfileError(
                f"frame size {size} B{where} outside {MIN_FRAME_SIZE_BYTES}..{MAX_FRAME_SIZE_BYTES} B"
            )
    flows = traffic.get("flows")
    flows = 1 if flows is None else int(flows)
    if flows < 1:
        raise ProfileError(f"traffic.flows must be >= 1, got {flows}")
    return TrafficProfile(
        frame_size_bytes=int(frame_size_bytes),
        flows=flows,
        bidirectional=bool(traffic.get("bidirectional", True)),
        fields=flow_fields(traffic.get("fields")),
        encapsulation=traffic.get("encapsulation"),
        frame_mix=mix,
        frame_modification=frame_modification,
    )


def frame_entries(traffic: Mapping[str, Any]) -> list[int | FrameMix]:
    """The ``traffic.frame_sizes`` entries in order: a size in bytes, or a mix named by a
    word (``imix``, or a name of ``traffic.frame_mixes``, any case). Two entries filed under
    one integer size (a mix whose mean rounds to a size also listed) are refused: results
    are keyed by it."""
    sizes = traffic.get("frame_sizes") or []
    if isinstance(sizes, (int, str)):
        sizes = [sizes]
    if not sizes:
        raise ProfileError("traffic.frame_sizes is empty")
    try:
        mixes = named_mixes(traffic.get("frame_mixes"))
    except FrameMixError as exc:
        raise ProfileError(str(exc)) from None
    out: list[int | FrameMix] = []
    for entry in sizes:
        if isinstance(entry, bool):
            raise ProfileError(f"traffic.frame_sizes: {entry!r} is neither a frame size nor a mix name")
        if isinstance(entry, str) and not entry.strip().isdigit():
            mix = mixes.get(entry.strip().lower())
            if mix is None:
                known = ", ".join(sorted(mixes))
                raise ProfileError(f"traffic.frame_sizes: {entry!r} is neither a frame size nor a frame mix "
                                   f"(mixes: {known}; define others in traffic.frame_mixes)")
            out.append(mix)
        else:
            out.append(int(entry))
    keys = [e.representative_bytes if isinstance(e, FrameMix) else e for e in out]
    for i, key in enumerate(keys):
        if key in keys[:i]:
            what = [e.name if isinstance(e, FrameMix) else f"{e} B" for e, k in zip(out, keys) if k == key]
            raise ProfileError(f"traffic.frame_sizes: {' and '.join(what)} are both filed under {key} B "
                               "(a mix is filed under its mean size, rounded); list one of them")
    return out


def frame_sizes(traffic: Mapping[str, Any]) -> list[int]:
    """The frame sizes to sweep, in the order the config lists them (a mix as its
    representative size)."""
    return [e.representative_bytes if isinstance(e, FrameMix) else e for e in frame_entries(traffic)]


def mix_of(traffic: Mapping[str, Any], frame_size_bytes: int) -> FrameMix | None:
    """The mix ``traffic.frame_sizes`` files under ``frame_size_bytes``, None for a plain size."""
    listed = traffic.get("frame_sizes")
    listed = [listed] if isinstance(listed, (int, str)) else list(listed or [])
    if not any(isinstance(e, str) and not e.strip().isdigit() for e in listed):
        return None
    for entry in frame_entries(traffic):
        if isinstance(entry, FrameMix) and entry.representative_bytes == int(frame_size_bytes):
            return entry
    return None


def link_bps(config: Mapping[str, Any]) -> float:
    """Nominal speed of one link in bits/s (L1), from ``testbed.link_gbps``."""
    gbps = (config.get("testbed") or {}).get("link_gbps")
    if not gbps or float(gbps) <= 0:
        raise ProfileError("testbed.link_gbps must be a positive number")
    return float(gbps) * 1e9


def nominal_line_rate_fps(config: Mapping[str, Any], profile: TrafficProfile) -> float:
    """Aggregate nominal line rate over the generator ports that send (frames/s).

    Loads are aggregate over directions, so a bidirectional profile on two 10G links has
    twice the line rate of one link; a profile of port-to-port streams has the line rate of
    every port that sends (p2p on two port pairs, :func:`on_port_pairs`: 4 links; a
    router's 4 ports: 4 links).
    """
    return line_rate_fps(link_bps(config), profile.mean_frame_size_bytes) * profile.sending_ports


#: ``LineRate.link_speed_source``: every sending port's own speed, or ``testbed.link_gbps``.
PORT_SPEED = "port"
NOMINAL_SPEED = "nominal"


@dataclass(frozen=True)
class LineRate:
    """The aggregate line rate of the sending ports and what it rests on.

    ``link_speed_source`` is :data:`PORT_SPEED` when every sending port reported a speed
    of its own (``link_speeds_bps``, one per sending port in index order), else
    :data:`NOMINAL_SPEED`: ``testbed.link_gbps`` on each, with ``reason`` saying why."""

    fps: float
    link_speed_source: str
    link_speeds_bps: tuple[float, ...]
    reason: str


def line_rate(config: Mapping[str, Any], profile: TrafficProfile, port_speeds: Sequence[LinkSpeed]) -> LineRate:
    """The line rate "% of line rate" and the search's upper limit are against: the sum of
    every sending port's line rate at its own speed where each has one (``port_speeds``,
    by port index, from ``TrafficGenerator.port_speeds``), else nominal."""
    senders = profile.sending_port_indexes
    speeds = [port_speeds[i] if i < len(port_speeds) else None for i in senders]
    if speeds and all(s is not None and s.speed_bps for s in speeds):
        bps = tuple(float(s.speed_bps) for s in speeds)
        return LineRate(fps=sum(line_rate_fps(b, profile.mean_frame_size_bytes) for b in bps),
                        link_speed_source=PORT_SPEED, link_speeds_bps=bps,
                        reason="; ".join(sorted({s.source for s in speeds})))
    unknown = [s.source for s in speeds if s is not None and not s.speed_bps]
    reason = unknown[0] if unknown else "the generator reports no port speed"
    nominal = link_bps(config)
    return LineRate(fps=nominal_line_rate_fps(config, profile), link_speed_source=NOMINAL_SPEED,
                    link_speeds_bps=tuple(nominal for _ in senders), reason=reason)


def reverse_fields(fields: FlowFields) -> FlowFields:
    """The reverse direction's fields: sources and destinations exchanged, ``vary`` too."""
    swap = {"src_ip": "dst_ip", "dst_ip": "src_ip", "src_port": "dst_port", "dst_port": "src_port",
            "src_mac": "dst_mac", "dst_mac": "src_mac"}
    return dataclasses.replace(
        fields, src_mac=fields.dst_mac, dst_mac=fields.src_mac, src_ip=fields.dst_ip, dst_ip=fields.src_ip,
        src_port=fields.dst_port, dst_port=fields.src_port, vary=tuple(swap.get(n, n) for n in fields.vary))


def on_port_pairs(profile: TrafficProfile, port_pairs: int) -> TrafficProfile:
    """``profile`` as sent on ``port_pairs`` pairs of generator ports ``2k <-> 2k+1`` (p2p
    and phy_vnf_phy with ``topology.port_pairs``, the lanes of the pvp family): every
    pair's directions as port-to-port streams (:class:`PortStream`), in the order
    ``0 -> 1, 1 -> 0, 2 -> 3, 3 -> 2, ...`` (the backward ones only when bidirectional),
    each pair with the same fields. So a frame of one pair that comes out of another pair's
    port is counted delivered wrong, not received, and ``directions`` / ``sending_ports``
    are every pair's. One pair, or a profile that has streams already (a router's traffic
    profile), is returned unchanged. An encapsulated profile keeps its tunnel links: each
    port sends and receives one stream, so the generator can tell them apart by port."""
    if port_pairs <= 1 or profile.streams is not None:
        return profile
    backward = profile.reverse_fields or reverse_fields(profile.fields)
    streams: list[PortStream] = []
    for pair in range(port_pairs):
        a, b = 2 * pair, 2 * pair + 1
        streams.append(PortStream(tx_port=a, rx_port=b, fields=profile.fields))
        if profile.bidirectional:
            streams.append(PortStream(tx_port=b, rx_port=a, fields=backward))
    return dataclasses.replace(profile, streams=tuple(streams))
