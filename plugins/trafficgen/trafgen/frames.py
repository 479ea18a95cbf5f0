"""Frame templates built with scapy: the bytes every bulk frame and probe starts from.

A template is Ether / [Dot1Q] / IPv4 / UDP / payload, exactly ``frame_size - 4`` bytes long
(software writes no FCS). Header fields the profile does not set are fixed here, once, so
the trafgen configuration (which copies them from the template) and the tests (which
compare trafgen's output with these templates) agree byte for byte: TTL 64, IP id 0, no
IP options, DSCP 0, UDP checksum computed.

An encapsulated template (:func:`vxlan_template`) is that frame inside VXLAN: outer
Ether / IPv4 / UDP (checksum 0) / VXLAN, then the inner frame without its FCS, 50 B more.
Its ``ip_offset`` is the *inner* IPv4 header's, where the flow fields vary: every
consumer (the trafgen configuration, the pacer, the probe stream) varies and checksums
the inner headers, and the outer ones stay constant (an outer UDP checksum of 0 covers
nothing).
"""

from __future__ import annotations

from dataclasses import dataclass

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Dot1Q, Ether
from scapy.packet import Raw

from vsbench.interfaces.traffic import FCS_BYTES, VXLAN_OVERHEAD_BYTES, FlowFields, TunnelFields
from vsbench_plugins.trafficgen.trafgen_probe import BULK_MAGIC, PROBE_HEADER_BYTES

#: UDP payload every bulk frame starts with: it marks vsbench's own frames. A byte with
#: the direction (0: port 0 -> 1, 1: port 1 -> 0) follows, then zeros.
BULK_PAYLOAD = BULK_MAGIC.to_bytes(2, "big")
#: Offset of the direction byte in the UDP payload.
DIRECTION_BYTE_OFFSET = 2

ETH_HEADER_BYTES = 14
VLAN_TAG_BYTES = 4
IPV4_HEADER_BYTES = 20
UDP_HEADER_BYTES = 8
IP_TTL = 64
IP_ID = 0


class FrameError(ValueError):
    """A frame cannot be built as asked; one line for the user."""


@dataclass(frozen=True)
class Template:
    """One frame's bytes and where its IPv4 header starts (the inner one in a tunnel).

    ``outer_bytes`` is how many bytes of tunnel headers come before the inner frame (0
    for a plain frame)."""

    data: bytes
    ip_offset: int
    outer_bytes: int = 0

    @property
    def encapsulated(self) -> bool:
        return self.outer_bytes > 0

    @property
    def inner(self) -> "Template":
        """The frame inside the tunnel (the template itself when plain)."""
        if not self.outer_bytes:
            return self
        return Template(self.data[self.outer_bytes:], self.ip_offset - self.outer_bytes)

    @property
    def frame_size_bytes(self) -> int:
        """Size of the frame on the wire, FCS included."""
        return len(self.data) + FCS_BYTES

    @property
    def payload_offset(self) -> int:
        return self.ip_offset + IPV4_HEADER_BYTES + UDP_HEADER_BYTES

    @property
    def packet(self) -> Ether:
        return Ether(self.data)


def header_bytes(fields: FlowFields) -> int:
    """Bytes of all headers before the UDP payload."""
    vlan = VLAN_TAG_BYTES if fields.vlan_id is not None else 0
    return ETH_HEADER_BYTES + vlan + IPV4_HEADER_BYTES + UDP_HEADER_BYTES


def min_frame_size(fields: FlowFields, payload_bytes: int = 0) -> int:
    """Smallest frame size (incl. FCS) that holds the headers and ``payload_bytes``."""
    return header_bytes(fields) + payload_bytes + FCS_BYTES


def check_fields(fields: FlowFields) -> None:
    if fields.l4_proto.lower() != "udp":
        raise FrameError(f"trafgen sends UDP bulk traffic; l4_proto {fields.l4_proto!r} is not supported")
    if fields.vlan_id is not None and not 0 <= int(fields.vlan_id) <= 4095:
        raise FrameError(f"vlan_id must be 0..4095, got {fields.vlan_id}")
    if not 0 <= int(fields.vlan_pcp) <= 7:
        raise FrameError(f"vlan_pcp must be 0..7, got {fields.vlan_pcp}")
    for name in ("src_port", "dst_port"):
        if not 0 <= int(getattr(fields, name)) <= 65535:
            raise FrameError(f"{name} must be 0..65535, got {getattr(fields, name)}")


def build_template(fields: FlowFields, frame_size_bytes: int, payload: bytes = b"") -> Template:
    """The frame of ``fields`` at ``frame_size_bytes`` (incl. FCS), payload zero-padded."""
    check_fields(fields)
    wire_len = frame_size_bytes - FCS_BYTES
    room = wire_len - header_bytes(fields)
    if room < len(payload):
        raise FrameError(
            f"a {frame_size_bytes} B frame is too small: it needs at least "
            f"{min_frame_size(fields, len(payload))} B with these headers"
        )
    eth = Ether(src=fields.src_mac, dst=fields.dst_mac)
    if fields.vlan_id is not None:
        l2 = eth / Dot1Q(vlan=int(fields.vlan_id), prio=int(fields.vlan_pcp))
        ip_offset = ETH_HEADER_BYTES + VLAN_TAG_BYTES
    else:
        l2 = eth
        ip_offset = ETH_HEADER_BYTES
    pkt = (
        l2
        / IP(src=fields.src_ip, dst=fields.dst_ip, ttl=IP_TTL, id=IP_ID, flags=0, tos=0)
        / UDP(sport=int(fields.src_port), dport=int(fields.dst_port))
        / Raw(payload + bytes(room - len(payload)))
    )
    data = bytes(pkt)
    if len(data) != wire_len:  # pragma: no cover - scapy would have to change its layout
        raise FrameError(f"built a {len(data)} B frame instead of {wire_len} B")
    return Template(data, ip_offset)


def bulk_template(fields: FlowFields, frame_size_bytes: int, direction: int = 0) -> Template:
    """A bulk frame: :data:`BULK_PAYLOAD`, the direction byte, then zeros. Refuses a size too
    small for a probe (the probe stream reuses flow 0's frame), which no frame of 64 B or
    more is."""
    if not 0 <= direction <= 255:
        raise FrameError(f"direction must be 0..255, got {direction}")
    build_template(fields, frame_size_bytes, bytes(PROBE_HEADER_BYTES))
    return build_template(fields, frame_size_bytes, BULK_PAYLOAD + bytes([direction]))


#: VXLAN header: flags (I bit set), 3 reserved bytes, VNI (3 bytes), 1 reserved byte.
VXLAN_FLAGS = 0x08
VXLAN_HEADER_BYTES = 8
OUTER_IP_OFFSET = ETH_HEADER_BYTES
OUTER_UDP_OFFSET = ETH_HEADER_BYTES + IPV4_HEADER_BYTES
VXLAN_OFFSET = OUTER_UDP_OFFSET + UDP_HEADER_BYTES


def vxlan_header(vni: int) -> bytes:
    if not 0 <= int(vni) < 1 << 24:
        raise FrameError(f"a VXLAN VNI is 0..16777215, got {vni}")
    return bytes([VXLAN_FLAGS, 0, 0, 0]) + int(vni).to_bytes(3, "big") + b"\0"


def outer_headers(src_mac: str, dst_mac: str, src_ip: str, dst_ip: str, source_port: int,
                  udp_port: int, vni: int, inner_len: int) -> bytes:
    """The 50 B in front of an inner frame of ``inner_len`` bytes (no FCS): Ether, IPv4
    (TTL 64, id 0, DF clear, checksum computed), UDP with checksum 0, VXLAN."""
    for name, port in (("source_port", source_port), ("udp_port", udp_port)):
        if not 0 <= int(port) <= 65535:
            raise FrameError(f"tunnel {name} must be 0..65535, got {port}")
    tail = UDP(sport=int(source_port), dport=int(udp_port), chksum=0) / Raw(vxlan_header(vni) + bytes(inner_len))
    pkt = Ether(src=src_mac, dst=dst_mac) / IP(src=src_ip, dst=dst_ip, ttl=IP_TTL, id=IP_ID, flags=0, tos=0) / tail
    data = bytes(pkt)
    return data[:VXLAN_OFFSET + VXLAN_HEADER_BYTES]


def encapsulate(inner: Template, tunnel: TunnelFields) -> Template:
    """``inner`` inside VXLAN as the generator sends it into the tunnel (outer addresses
    generator -> DUT)."""
    if inner.encapsulated:
        raise FrameError("the template is already encapsulated")
    head = outer_headers(tunnel.generator_mac, tunnel.dut_mac, tunnel.generator_ip, tunnel.dut_ip,
                         tunnel.source_port, tunnel.udp_port, tunnel.vni, len(inner.data))
    assert len(head) == VXLAN_OVERHEAD_BYTES
    return Template(head + inner.data, inner.ip_offset + VXLAN_OVERHEAD_BYTES, VXLAN_OVERHEAD_BYTES)


def check_encapsulated_fields(fields: FlowFields) -> None:
    """What the flows of an encapsulated profile may vary: the inner IPv4 addresses and
    ports. A varying inner MAC is refused (the senders count MACs at the outer frame's
    offsets), and so is an inner VLAN tag (the receive checks read the inner frame at
    fixed offsets)."""
    macs = [name for name in fields.vary if name.endswith("_mac")]
    if macs:
        raise FrameError(f"with VXLAN encapsulation only inner IP addresses and ports vary; "
                         f"not {', '.join(macs)}")
    if fields.vlan_id is not None:
        raise FrameError("VXLAN encapsulation of VLAN-tagged frames is not supported (traffic.fields.vlan_id)")


def vxlan_template(fields: FlowFields, frame_size_bytes: int, tunnel: TunnelFields, direction: int = 0) -> Template:
    """A bulk frame of ``frame_size_bytes`` (the inner size) inside VXLAN, 50 B longer."""
    check_encapsulated_fields(fields)
    return encapsulate(bulk_template(fields, frame_size_bytes, direction), tunnel)
