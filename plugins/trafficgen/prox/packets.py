"""The UDP/IPv4 frame PROX generates, and the ``set value``/``set random`` commands that
make a traffic profile out of the config's template packet.

PROX overwrites template bytes per generated packet: ``set value <core> <task> <offset>
<value> <len>`` writes a fixed value (``len`` <= 4 bytes), ``set random <core> <task>
<offset> <mask> <len>`` a random value whose mask is a string of ``0``/``1``/``X`` bits (``X``
random). Flows are therefore made from random bits: ``N`` flows need ``N = 2**k``, the ``k``
bits split over the fields the profile varies, so the ``N`` combinations are uniformly
likely. Offsets below are for an untagged Ethernet/IPv4/UDP frame.
"""

from __future__ import annotations

import ipaddress
import struct

from vsbench.interfaces.plugin import PluginError
from vsbench.interfaces.traffic import FlowFields, TrafficProfile

ETH_LEN, IP_LEN, UDP_LEN = 14, 20, 8
#: Latency fields PROX writes into the payload (``lat pos``, ``accuracy pos``, ``packet id
#: pos``, ``signature pos`` in the config); all fit in a 60 B (64 B frame) packet.
LAT_POS, ACCURACY_POS, PACKET_ID_POS, SIGNATURE_POS = 42, 46, 50, 56
SIGNATURE = 0x76736231  # "vsb1"

# field -> (offset of the varied bytes, length in bytes of the varied part)
_VARY_OFFSETS = {
    "dst_mac": (2, 4),  # low 4 bytes of the destination MAC
    "src_mac": (8, 4),
    "src_ip": (26, 4),
    "dst_ip": (30, 4),
    "src_port": (34, 2),
    "dst_port": (36, 2),
}


def _mac_bytes(mac: str) -> bytes:
    try:
        raw = bytes(int(part, 16) for part in mac.split(":"))
    except ValueError:
        raw = b""
    if len(raw) != 6:
        raise PluginError(f"prox: bad MAC address {mac!r}")
    return raw


def _ip_bytes(ip: str) -> bytes:
    try:
        return ipaddress.IPv4Address(ip).packed
    except ValueError:
        raise PluginError(f"prox: bad IPv4 address {ip!r}") from None


def _checksum(data: bytes) -> int:
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def reversed_fields(f: FlowFields) -> FlowFields:
    """The fields of the reverse direction: sources and destinations swapped."""
    from dataclasses import replace

    return replace(
        f, src_mac=f.dst_mac, dst_mac=f.src_mac, src_ip=f.dst_ip, dst_ip=f.src_ip,
        src_port=f.dst_port, dst_port=f.src_port,
    )


def template_packet(fields: FlowFields, frame_size_bytes: int = 64) -> bytes:
    """The template frame without FCS (``frame_size_bytes - 4`` bytes, at least 60)."""
    size = max(frame_size_bytes - 4, 60)
    ip_total = size - ETH_LEN
    eth = _mac_bytes(fields.dst_mac) + _mac_bytes(fields.src_mac) + b"\x08\x00"
    ip_hdr = struct.pack(
        "!BBHHHBBH4s4s", 0x45, 0, ip_total, 1, 0, 64, 17, 0,
        _ip_bytes(fields.src_ip), _ip_bytes(fields.dst_ip),
    )
    ip_hdr = ip_hdr[:10] + struct.pack("!H", _checksum(ip_hdr)) + ip_hdr[12:]
    udp = struct.pack("!HHHH", fields.src_port, fields.dst_port, ip_total - IP_LEN, 0)
    frame = eth + ip_hdr + udp
    return frame + bytes(size - len(frame))


def hex_bytes(data: bytes) -> str:
    """PROX ``pkt inline=`` syntax: space-separated hex bytes."""
    return " ".join(f"{b:02x}" for b in data)


def flow_bits(flows: int) -> int:
    """``k`` with ``flows == 2**k``; PluginError otherwise."""
    if flows < 1 or flows & (flows - 1):
        raise PluginError(
            f"prox: {flows} flows cannot be made with PROX random bit masks; use a power of two"
        )
    return flows.bit_length() - 1


def _split_bits(k: int, vary: tuple[str, ...]) -> dict[str, int]:
    """Spread ``k`` random bits over the varied fields as evenly as their sizes allow."""
    caps = {name: _VARY_OFFSETS[name][1] * 8 for name in vary}
    out = {name: 0 for name in vary}
    remaining = k
    while remaining:
        open_fields = [n for n in vary if out[n] < caps[n]]
        if not open_fields:
            raise PluginError(f"prox: {2**k} flows exceed what fields {', '.join(vary)} can vary")
        for name in open_fields:
            if remaining == 0:
                break
            out[name] += 1
            remaining -= 1
    return out


def profile_commands(
    profile: TrafficProfile, fields: FlowFields, cores: list[int], task: int
) -> list[str]:
    """Commands making ``cores`` generate ``profile`` with header ``fields``."""
    if profile.encapsulation:
        raise PluginError(f"prox: encapsulation {profile.encapsulation!r} is not supported")
    if fields.vlan_id is not None:
        raise PluginError("prox: VLAN-tagged profiles are not supported by the shipped template")
    if fields.l4_proto != "udp":
        raise PluginError(f"prox: only UDP profiles are supported, not {fields.l4_proto!r}")
    unknown = [v for v in fields.vary if v not in _VARY_OFFSETS]
    if unknown:
        raise PluginError(f"prox: cannot vary {', '.join(unknown)}")
    size = profile.frame_size_bytes
    pkt = template_packet(fields, size)
    core_list = ",".join(str(c) for c in cores)
    cmds = [f"pkt_size {core_list} {task} {size - 4}"]

    def set_value(offset: int, data: bytes) -> None:
        cmds.append(f"set value {core_list} {task} {offset} {int.from_bytes(data, 'big')} {len(data)}")

    # Whole header as fixed values, 4 bytes at a time (set value takes at most 4 bytes).
    header_len = ETH_LEN + IP_LEN + UDP_LEN
    for offset in range(0, header_len, 4):
        set_value(offset, pkt[offset : min(offset + 4, header_len)])
    k = flow_bits(profile.flows)
    if k:
        vary = fields.vary or ("src_ip",)
        for name, bits in _split_bits(k, tuple(vary)).items():
            if not bits:
                continue
            offset, length = _VARY_OFFSETS[name]
            fixed = format(int.from_bytes(pkt[offset : offset + length], "big"), f"0{length * 8}b")
            mask = fixed[: length * 8 - bits] + "X" * bits
            cmds.append(f"set random {core_list} {task} {offset} {mask} {length}")
    return cmds
