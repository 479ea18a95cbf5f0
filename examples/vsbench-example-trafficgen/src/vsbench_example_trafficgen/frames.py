"""Frame layout: Ethernet / IPv4 / UDP, and a marker in the payload so that the receiver
counts only its own frames of the current trial (never a stray ARP or the last trial's
stragglers)."""

from __future__ import annotations

import ipaddress
import struct

#: Payload starts with MAGIC, then the trial number (8 bytes).
MAGIC = b"TOYG"
MARKER_OFFSET = 14 + 20 + 8
MARKER_BYTES = len(MAGIC) + 8


def marker(trial: int) -> bytes:
    return MAGIC + struct.pack("!Q", trial)


def udp_frame(*, src_mac: str, dst_mac: str, src_ip: str, dst_ip: str, src_port: int, dst_port: int,
              size_bytes: int, trial: int) -> bytes:
    """One frame of ``size_bytes`` including the 4 B FCS the NIC (here: nobody) adds."""
    payload_len = max(MARKER_BYTES, size_bytes - 4 - MARKER_OFFSET)
    payload = marker(trial) + bytes(payload_len - MARKER_BYTES)
    udp = struct.pack("!HHHH", src_port, dst_port, 8 + payload_len, 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0x4000, 64, 17, 0,
                     ipaddress.IPv4Address(src_ip).packed, ipaddress.IPv4Address(dst_ip).packed)
    ip = ip[:10] + struct.pack("!H", _checksum(ip)) + ip[12:]
    return _mac(dst_mac) + _mac(src_mac) + b"\x08\x00" + ip + udp


def _mac(text: str) -> bytes:
    return bytes.fromhex(text.replace(":", ""))


def _checksum(header: bytes) -> int:
    total = sum(struct.unpack(f"!{len(header) // 2}H", header))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def flow_frames(ports: list[dict], fields: dict, flows: int, size_bytes: int, trial: int,
                reverse: bool) -> list[bytes]:
    """The frames of each flow of one direction: flow ``i`` adds ``i`` to the source and
    destination IPv4 addresses (``fields["vary"]`` as vsbench means it is not modelled
    beyond that); the reverse direction swaps sources and destinations."""
    tx, rx = (ports[1], ports[0]) if reverse else (ports[0], ports[1])
    src_ip, dst_ip = fields.get("src_ip", "10.0.0.1"), fields.get("dst_ip", "10.1.0.1")
    sport, dport = int(fields.get("src_port", 1024)), int(fields.get("dst_port", 1024))
    if reverse:
        src_ip, dst_ip, sport, dport = dst_ip, src_ip, dport, sport
    out = []
    for i in range(max(1, flows)):
        out.append(udp_frame(src_mac=tx["mac"], dst_mac=rx["mac"],
                             src_ip=str(ipaddress.IPv4Address(src_ip) + i),
                             dst_ip=str(ipaddress.IPv4Address(dst_ip) + i),
                             src_port=sport, dst_port=dport, size_bytes=size_bytes, trial=trial))
    return out
