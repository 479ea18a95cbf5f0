"""TRex stateless streams built from a TrafficProfile: packet template, field engine, rate.

A frame of ``frame_size_bytes`` on the wire is a template of ``frame_size_bytes - 4``
(TRex, like every software generator, does not write the FCS). Flows are made by TRex's
field engine (``vm``): one ``flow_var`` per varying header field, all stepping through
``0 .. flows-1`` in lock step and written into the packet with the field's base value as
``add_value``, so flow *i* carries base+i in every varying field and each flow gets
1/flows of the frames. The reverse direction of a bidirectional profile swaps source and
destination fields (so its flows are the forward flows, mirrored).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Dot1Q, Ether
from scapy.layers.vxlan import VXLAN
from scapy.packet import Packet, Raw

from vsbench.interfaces.traffic import FCS_BYTES, FlowFields, TrafficProfile

#: Stream ``flags``: bit 0 = source MAC from the packet, bits 1-2 = destination MAC mode
#: (1 = from the packet). Without them TRex rewrites both MACs from its port config.
FLAGS_MACS_FROM_PACKET = 1 | (1 << 1)
#: A latency stream carries TRex's 16-byte signature in its payload.
LATENCY_PAYLOAD_BYTES = 16
VXLAN_PORT = 4789

_SWAP = {"src_mac": "dst_mac", "dst_mac": "src_mac", "src_ip": "dst_ip", "dst_ip": "src_ip",
         "src_port": "dst_port", "dst_port": "src_port"}
VARIABLE_FIELDS = tuple(_SWAP)


class ProfileError(ValueError):
    """The profile cannot be expressed as TRex streams; one line for the user."""


@dataclass(frozen=True)
class FieldSlot:
    """Where a header field sits in the template and how wide the written var is."""

    offset: int
    size: int  # bytes of the flow var written (a MAC varies in its low 4 bytes)
    base: int  # the value of those bytes in the template


@dataclass(frozen=True)
class Template:
    packet: bytes
    slots: dict[str, FieldSlot]  # field name as written in *this* direction's frames
    ip_offset: int  # of the (inner) IPv4 header
    l4_offset: int
    l4_type: int  # TRex fix_checksum_hw: 11 UDP, 13 TCP

    @property
    def frame_size_bytes(self) -> int:
        return len(self.packet) + FCS_BYTES


@dataclass(frozen=True)
class VxlanOuter:
    """Outer headers when the profile asks for VXLAN encapsulation."""

    src_mac: str = "02:00:00:00:10:01"
    dst_mac: str = "02:00:00:00:10:02"
    src_ip: str = "192.168.100.1"
    dst_ip: str = "192.168.100.2"
    vni: int = 100


def _direction_fields(fields: FlowFields, direction: int) -> dict[str, Any]:
    values = {name: getattr(fields, name) for name in VARIABLE_FIELDS}
    if direction == 0:
        return values
    return {name: values[_SWAP[name]] for name in VARIABLE_FIELDS}


def _headers(fields: FlowFields, direction: int) -> Packet:
    v = _direction_fields(fields, direction)
    l2: Packet = Ether(src=v["src_mac"], dst=v["dst_mac"])
    if fields.vlan_id is not None:
        l2 = l2 / Dot1Q(vlan=fields.vlan_id, prio=fields.vlan_pcp)
    proto = fields.l4_proto.lower()
    if proto == "udp":
        l4: Packet = UDP(sport=v["src_port"], dport=v["dst_port"], chksum=0)
    elif proto == "tcp":
        l4 = TCP(sport=v["src_port"], dport=v["dst_port"], flags="A")
    else:
        raise ProfileError(f"l4_proto {fields.l4_proto!r} is not supported by the trex plugin (udp, tcp)")
    return l2 / IP(src=v["src_ip"], dst=v["dst_ip"]) / l4


def _innermost_offset(pkt: Packet, layer: type) -> int:
    """Offset of the last ``layer`` in ``pkt`` (the traffic's own, inside any tunnel)."""
    nb, found = 1, None
    while (candidate := pkt.getlayer(layer, nb=nb)) is not None:
        found, nb = candidate, nb + 1
    if found is None:
        raise ProfileError(f"internal: no {layer.__name__} layer in the template")
    return len(pkt) - len(found)


def _stack(profile: TrafficProfile, direction: int, vxlan: VxlanOuter | None) -> Packet:
    """The header stack of ``direction``, inside a VXLAN tunnel when asked."""
    inner = _headers(profile.fields, direction)
    if profile.encapsulation == "vxlan":
        outer = vxlan or VxlanOuter()
        src, dst = (outer.src_ip, outer.dst_ip) if direction == 0 else (outer.dst_ip, outer.src_ip)
        smac, dmac = (outer.src_mac, outer.dst_mac) if direction == 0 else (outer.dst_mac, outer.src_mac)
        return (Ether(src=smac, dst=dmac) / IP(src=src, dst=dst)
                / UDP(sport=VXLAN_PORT, dport=VXLAN_PORT, chksum=0) / VXLAN(vni=outer.vni) / inner)
    if profile.encapsulation not in (None, "none"):
        raise ProfileError(f"encapsulation {profile.encapsulation!r} is not supported by the trex plugin")
    return inner


def header_length(profile: TrafficProfile, vxlan: VxlanOuter | None = None) -> int:
    """Bytes of headers in the profile's frames (both directions have the same)."""
    return len(bytes(_stack(profile, 0, vxlan)))


def build_template(profile: TrafficProfile, direction: int, *, min_payload_bytes: int = 0,
                   vxlan: VxlanOuter | None = None) -> Template:
    """The packet of ``direction`` (0: port 0 -> 1, 1: reverse) padded to the frame size."""
    pkt = _stack(profile, direction, vxlan)
    header_len = len(bytes(pkt))
    wanted = profile.frame_size_bytes - FCS_BYTES
    if wanted < header_len + min_payload_bytes:
        need = header_len + min_payload_bytes + FCS_BYTES
        raise ProfileError(
            f"frame size {profile.frame_size_bytes} B is too small for this profile's headers "
            f"(needs at least {need} B)"
        )
    pkt = pkt / Raw(load=bytes(wanted - header_len))
    raw = bytes(pkt)
    built = pkt.__class__(raw)  # re-dissect so lengths and checksums are final

    l2_off = _innermost_offset(built, Ether)
    ip_off = _innermost_offset(built, IP)
    l4_layer = TCP if profile.fields.l4_proto.lower() == "tcp" else UDP
    l4_off = _innermost_offset(built, l4_layer)
    slots = {
        "dst_mac": FieldSlot(l2_off + 2, 4, int.from_bytes(raw[l2_off + 2 : l2_off + 6], "big")),
        "src_mac": FieldSlot(l2_off + 8, 4, int.from_bytes(raw[l2_off + 8 : l2_off + 12], "big")),
        "src_ip": FieldSlot(ip_off + 12, 4, int.from_bytes(raw[ip_off + 12 : ip_off + 16], "big")),
        "dst_ip": FieldSlot(ip_off + 16, 4, int.from_bytes(raw[ip_off + 16 : ip_off + 20], "big")),
        "src_port": FieldSlot(l4_off, 2, int.from_bytes(raw[l4_off : l4_off + 2], "big")),
        "dst_port": FieldSlot(l4_off + 2, 2, int.from_bytes(raw[l4_off + 2 : l4_off + 4], "big")),
    }
    return Template(raw, slots, ip_off, l4_off, 13 if l4_layer is TCP else 11)


def _as_int32(value: int, size: int) -> int:
    """TRex parses ``add_value`` as a signed 32-bit int and adds modulo the field width,
    so a base above 2**31 is sent as its negative equivalent."""
    value %= 1 << (8 * size)
    return value - (1 << 32) if value >= 1 << 31 else value


def flow_vm(profile: TrafficProfile, template: Template, direction: int) -> dict[str, Any]:
    """Field-engine program that cycles ``profile.flows`` flows over the varying fields."""
    instructions: list[dict[str, Any]] = []
    flows = profile.flows
    if flows > 1:
        varied = list(dict.fromkeys(profile.fields.vary))
        unknown = [f for f in varied if f not in _SWAP]
        if unknown or not varied:
            raise ProfileError(
                f"cannot vary {', '.join(unknown) or 'nothing'} to make {flows} flows "
                f"(choose from {', '.join(VARIABLE_FIELDS)})"
            )
        for name in varied:
            written = name if direction == 0 else _SWAP[name]
            slot = template.slots[written]
            if flows > 1 << (8 * slot.size):
                raise ProfileError(f"{flows} flows do not fit in {name} ({8 * slot.size} bits vary)")
            var = f"flow_{name}"
            instructions.append({
                "type": "flow_var", "name": var, "size": slot.size, "op": "inc",
                "init_value": 0, "min_value": 0, "max_value": flows - 1, "step": 1,
                "split_to_cores": True,
            })
            instructions.append({
                "type": "write_flow_var", "name": var, "pkt_offset": slot.offset,
                "add_value": _as_int32(slot.base, slot.size), "is_big_endian": True,
            })
        touches_l4 = any(n.endswith("_port") for n in varied)
        touches_ip = any(n.endswith("_ip") for n in varied)
        if template.l4_type == 13 and (touches_l4 or touches_ip):
            # TCP's checksum covers the pseudo-header: let TRex fix IP and TCP together.
            instructions.append({
                "type": "fix_checksum_hw", "l2_len": template.ip_offset,
                "l3_len": template.l4_offset - template.ip_offset, "l4_type": 13,
            })
        elif touches_ip:
            instructions.append({"type": "fix_checksum_ipv4", "pkt_offset": template.ip_offset})
    return {"instructions": instructions, "split_by_var": ""}


def stream_mode(pps: float, total_pkts: int | None = None) -> dict[str, Any]:
    """The stream's ``mode``: continuous, or a single burst of ``total_pkts`` frames at
    ``pps`` after which the stream stops by itself (STLTXSingleBurst's JSON)."""
    rate = {"type": "pps", "value": float(pps)}
    if total_pkts is None:
        return {"type": "continuous", "rate": rate}
    return {"type": "single_burst", "rate": rate, "total_pkts": int(total_pkts)}


def stream_json(packet: bytes, *, pps: float, vm: dict[str, Any] | None = None,
                flow_stats: dict[str, Any] | None = None,
                total_pkts: int | None = None) -> dict[str, Any]:
    """One stream as ``add_stream`` expects it (trex_stl_streams.py fields): continuous,
    or a single burst when ``total_pkts`` is given."""
    return {
        "enabled": True,
        "self_start": True,
        "start_paused": False,
        "isg": 0.0,
        "flags": FLAGS_MACS_FROM_PACKET,
        "action_count": 0,
        "next_stream_id": -1,
        "packet": {"binary": base64.b64encode(packet).decode(), "meta": ""},
        "mode": stream_mode(pps, total_pkts),
        "vm": vm or {"instructions": [], "split_by_var": ""},
        "flow_stats": flow_stats or {"enabled": False},
    }


def latency_flow_stats(pg_id: int) -> dict[str, Any]:
    return {"enabled": True, "rule_type": "latency", "stream_id": pg_id}


def counting_flow_stats(pg_id: int) -> dict[str, Any]:
    return {"enabled": True, "rule_type": "stats", "stream_id": pg_id}

