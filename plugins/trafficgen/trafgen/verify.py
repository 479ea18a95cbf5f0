"""What a bulk frame must look like when it arrives, and classic BPF that counts the ones
that do not (encapsulated profiles).

Through an overlay the DUT rewrites every frame: it adds or removes the VXLAN headers. A
frame counted as received only because a port's ``rx_packets`` grew could carry a wrong
VNI, wrong outer addresses or a mangled inner frame, so for an encapsulated profile each
receiving port gets a packet socket whose filter accepts -- counts, in the kernel's
``PACKET_STATISTICS`` -- every vsbench bulk frame that is *not* exactly as expected:

* the checks (:class:`ExpectedFrame`) are built from the frame the generator sent in that
  direction, as the DUT must deliver it: the inner Ethernet addresses and type, IPv4
  version/length and protocol, the inner IP addresses and UDP ports (each within its flow
  range when it varies), the bulk magic and the direction byte; for a frame arriving on the
  tunnel link also the outer Ethernet and IPv4 addresses, the UDP destination port, the
  VXLAN flags and VNI (the outer UDP source port is the VTEP's own choice and not checked);
* a frame is vsbench's when the bulk magic sits where the expected form has its payload,
  or where the *other* form (plain for encapsulated, encapsulated for plain) has it -- so a
  frame the DUT failed to decapsulate (or to encapsulate) is counted as wrong, not as a
  stranger's.

:func:`foreign_program` is the matching "neither ours nor a probe" filter over both
payload offsets. Pure functions; the sockets are :mod:`.foreign`'s.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Sequence

from vsbench.interfaces.modification import FrameModification
from vsbench.interfaces.traffic import VXLAN_OVERHEAD_BYTES, FlowFields, TunnelFields

from vsbench_plugins.trafficgen.trafgen.flows import FlowPlan, base_value
from vsbench_plugins.trafficgen.trafgen.frames import (
    DIRECTION_BYTE_OFFSET,
    ETH_HEADER_BYTES,
    IP_TTL,
    IPV4_HEADER_BYTES,
    OUTER_IP_OFFSET,
    OUTER_UDP_OFFSET,
    UDP_HEADER_BYTES,
    VXLAN_FLAGS,
    VXLAN_OFFSET,
)
from vsbench_plugins.trafficgen.trafgen_probe import BULK_MAGIC, MAGIC

#: Payload offset of a plain IPv4/UDP frame and of the same frame inside VXLAN.
PLAIN_PAYLOAD_OFFSET = ETH_HEADER_BYTES + IPV4_HEADER_BYTES + UDP_HEADER_BYTES
ENCAPSULATED_PAYLOAD_OFFSET = PLAIN_PAYLOAD_OFFSET + VXLAN_OVERHEAD_BYTES
#: Bytes of a wrong frame kept for the trial's record (and the snap length of the socket).
SAMPLE_BYTES = 160

# classic BPF opcodes
LD_W, LD_H, LD_B = 0x20, 0x28, 0x30
JEQ, JGT, JGE = 0x15, 0x25, 0x35
RET = 0x06
_LOAD = {4: LD_W, 2: LD_H, 1: LD_B}

Insn = tuple[int, int, int, int]


#: Classic BPF ancillary data (linux/filter.h): loads at SKF_AD_OFF + code read the
#: packet's metadata, not its bytes. The kernel moves a frame's outer VLAN tag into that
#: metadata before any packet socket sees the frame, so a tag is checked there.
SKF_AD_OFF = -0x1000
SKF_AD_VLAN_TAG = 44
SKF_AD_VLAN_TAG_PRESENT = 48
VLAN_TPIDS = (0x8100, 0x88A8)


@dataclass(frozen=True)
class Check:
    """``width`` bytes at ``offset`` must hold a value from ``low`` to ``high``; with
    ``ancillary`` (``SKF_AD_VLAN_TAG``, ``SKF_AD_VLAN_TAG_PRESENT``) the value is that
    piece of the packet's metadata instead (``offset`` unused)."""

    offset: int
    width: int
    low: int
    high: int
    what: str
    ancillary: int | None = None


@dataclass(frozen=True)
class ExpectedFrame:
    """How a correct bulk frame of one direction arrives at its receiving port."""

    payload_offset: int
    checks: tuple[Check, ...]
    encapsulated: bool
    #: Where else a bulk frame of this direction may carry its payload when the DUT got it
    #: wrong (a frame modification that moves the payload: the unmodified frame's offset);
    #: None: the other of plain and encapsulated.
    alt_payload_offset: int | None = None

    @property
    def other_payload_offset(self) -> int:
        if self.alt_payload_offset is not None:
            return self.alt_payload_offset
        return PLAIN_PAYLOAD_OFFSET if self.encapsulated else ENCAPSULATED_PAYLOAD_OFFSET

    def verdict(self, frame: bytes) -> str | None:
        """Why ``frame`` is not as expected (the first check it fails), None when it is;
        the same decision as the BPF program, for the record of a wrong frame. ``frame``
        is as on the wire: an outer VLAN tag in it is read as the metadata the kernel
        would have moved it to."""
        tci: int | None = None
        if len(frame) >= 18 and int.from_bytes(frame[12:14], "big") in VLAN_TPIDS:
            tci = int.from_bytes(frame[14:16], "big")
            frame = frame[:12] + frame[16:]
        for c in self.checks:
            if c.ancillary is not None:
                value = (0 if tci is None else 1) if c.ancillary == SKF_AD_VLAN_TAG_PRESENT else (tci or 0)
                if not c.low <= value <= c.high:
                    want = f"{c.low:#x}" if c.low == c.high else f"{c.low:#x}..{c.high:#x}"
                    return f"{c.what} is {value:#x}, expected {want}"
                continue
            if c.offset + c.width > len(frame):
                return f"{c.what}: frame too short ({len(frame)} B)"
            value = int.from_bytes(frame[c.offset:c.offset + c.width], "big")
            if not c.low <= value <= c.high:
                want = f"{c.low:#x}" if c.low == c.high else f"{c.low:#x}..{c.high:#x}"
                return f"{c.what} is {value:#x}, expected {want}"
        return None


def _mac_checks(offset: int, mac: str, what: str) -> list[Check]:
    value = int(mac.replace(":", ""), 16)
    return [Check(offset, 4, value >> 16, value >> 16, what), Check(offset + 4, 2, value & 0xFFFF, value & 0xFFFF, what)]


def _ip(value: str) -> int:
    return int(ipaddress.IPv4Address(value))


def inner_checks(fields: FlowFields, plan: FlowPlan, direction: int, base: int = 0) -> list[Check]:
    """Checks of the plain frame of ``fields`` (flows of ``plan``) starting at ``base``."""
    ip = base + ETH_HEADER_BYTES
    udp = ip + IPV4_HEADER_BYTES
    payload = udp + UDP_HEADER_BYTES
    checks = [*_mac_checks(base, fields.dst_mac, "inner destination MAC"),
              *_mac_checks(base + 6, fields.src_mac, "inner source MAC"),
              Check(base + 12, 2, 0x0800, 0x0800, "inner EtherType"),
              Check(ip, 1, 0x45, 0x45, "inner IPv4 version/IHL"),
              Check(ip + 9, 1, 17, 17, "inner IP protocol")]
    for name, offset, width in (("src_ip", ip + 12, 4), ("dst_ip", ip + 16, 4),
                                ("src_port", udp, 2), ("dst_port", udp + 2, 2)):
        low = base_value(fields, name) if name in ("src_ip", "dst_ip") else int(getattr(fields, name))
        checks.append(Check(offset, width, low, low + plan.period(name) - 1, f"inner {name}"))
    checks.append(Check(payload, 2, BULK_MAGIC, BULK_MAGIC, "bulk magic"))
    checks.append(Check(payload + DIRECTION_BYTE_OFFSET, 1, direction, direction, "direction byte"))
    return checks


def outer_checks(tunnel: TunnelFields) -> list[Check]:
    """Checks of the VXLAN headers the DUT's VTEP puts on a frame to the generator."""
    vni = int(tunnel.vni) << 8
    return [*_mac_checks(0, tunnel.generator_mac, "outer destination MAC"),
            *_mac_checks(6, tunnel.dut_mac, "outer source MAC"),
            Check(12, 2, 0x0800, 0x0800, "outer EtherType"),
            Check(OUTER_IP_OFFSET, 1, 0x45, 0x45, "outer IPv4 version/IHL"),
            Check(OUTER_IP_OFFSET + 9, 1, 17, 17, "outer IP protocol"),
            Check(OUTER_IP_OFFSET + 12, 4, _ip(tunnel.dut_ip), _ip(tunnel.dut_ip), "outer source IP"),
            Check(OUTER_IP_OFFSET + 16, 4, _ip(tunnel.generator_ip), _ip(tunnel.generator_ip), "outer destination IP"),
            Check(OUTER_UDP_OFFSET + 2, 2, int(tunnel.udp_port), int(tunnel.udp_port), "outer UDP port"),
            Check(VXLAN_OFFSET, 1, VXLAN_FLAGS, VXLAN_FLAGS, "VXLAN flags"),
            Check(VXLAN_OFFSET + 4, 4, vni, vni, "VNI")]


def expected_frame(fields: FlowFields, plan: FlowPlan, direction: int, tunnel: TunnelFields | None) -> ExpectedFrame:
    """The frame of ``direction`` as its receiving port must see it: plain, or inside
    VXLAN from the DUT's VTEP when ``tunnel`` is given (the port is the tunnel's)."""
    if tunnel is None:
        return ExpectedFrame(PLAIN_PAYLOAD_OFFSET, tuple(inner_checks(fields, plan, direction)), False)
    checks = outer_checks(tunnel) + inner_checks(fields, plan, direction, base=VXLAN_OVERHEAD_BYTES)
    return ExpectedFrame(ENCAPSULATED_PAYLOAD_OFFSET, tuple(checks), True)


def _field_checks(fields: FlowFields, plan: FlowPlan, name: str, offset: int, width: int,
                  rewritten: str | int | None, what: str) -> list[Check]:
    """``name`` at ``offset``: within its flow range as sent, or exactly ``rewritten``."""
    if rewritten is not None:
        value = _ip(str(rewritten)) if name.endswith("_ip") else int(rewritten)
        return [Check(offset, width, value, value, f"{what} (rewritten)")]
    low = base_value(fields, name)
    return [Check(offset, width, low, low + plan.period(name) - 1, what)]


def _mac_field_checks(fields: FlowFields, plan: FlowPlan, name: str, offset: int,
                      rewritten: str | None, what: str) -> list[Check]:
    """A MAC: exactly ``rewritten``, or as sent (its low 4 bytes within the flow range
    when it varies)."""
    if rewritten is not None:
        return _mac_checks(offset, rewritten, f"{what} (rewritten)")
    value = int(str(getattr(fields, name)).replace(":", ""), 16)
    low = base_value(fields, name)
    return [Check(offset, 2, value >> 32, value >> 32, what),
            Check(offset + 2, 4, low, low + plan.period(name) - 1, what)]


def modified_checks(fields: FlowFields, plan: FlowPlan, direction: int, mod: FrameModification) -> list[Check]:
    """Checks of the frame of ``fields`` (flows of ``plan``) as it must arrive after the
    DUT applied ``mod``, as a receiving packet socket sees it (an outer VLAN tag in the
    metadata, :data:`SKF_AD_VLAN_TAG`). Besides the fields the kind changes, the tag's
    presence is always checked, and the TOS and TTL bytes where the kind sets them."""
    kind = mod.kind
    checks = [*_mac_field_checks(fields, plan, "dst_mac", 0, mod.dst_mac, "destination MAC"),
              *_mac_field_checks(fields, plan, "src_mac", 6, mod.src_mac, "source MAC")]
    tagged = kind in ("vlan_push", "vlan_rewrite")
    checks.append(Check(0, 4, int(tagged), int(tagged), "VLAN tag present", ancillary=SKF_AD_VLAN_TAG_PRESENT))
    if tagged:
        vid = mod.vlan_id if mod.vlan_id is not None else int(fields.vlan_id or 0)
        pcp = mod.vlan_pcp if mod.vlan_pcp is not None else (0 if kind == "vlan_push" else int(fields.vlan_pcp))
        tci = (int(pcp) << 13) | int(vid)
        checks.append(Check(0, 4, tci, tci, "VLAN TCI (PCP, VID)", ancillary=SKF_AD_VLAN_TAG))
    ip = ETH_HEADER_BYTES + mod.l3_shift_bytes
    if kind == "mpls_push":
        label = int(mod.mpls_label or 0) << 12
        checks += [Check(12, 2, 0x8847, 0x8847, "EtherType (MPLS)"),
                   Check(ETH_HEADER_BYTES, 4, label, label | 0xFFF, "MPLS label")]
    else:
        checks.append(Check(12, 2, 0x0800, 0x0800, "EtherType"))
    checks.append(Check(ip, 1, 0x45, 0x45, "IPv4 version/IHL"))
    if kind == "dscp":
        tos = int(mod.dscp or 0) << 2
        checks.append(Check(ip + 1, 1, tos, tos, "IPv4 TOS (DSCP)"))
    if kind in ("ttl_set", "ttl_decrement"):
        ttl = int(mod.ttl) if kind == "ttl_set" else IP_TTL - 1  # type: ignore[arg-type]
        checks.append(Check(ip + 8, 1, ttl, ttl, "IPv4 TTL"))
    checks.append(Check(ip + 9, 1, 17, 17, "IP protocol"))
    udp = ip + IPV4_HEADER_BYTES
    checks += _field_checks(fields, plan, "src_ip", ip + 12, 4, mod.src_ip, "source IP")
    checks += _field_checks(fields, plan, "dst_ip", ip + 16, 4, mod.dst_ip, "destination IP")
    checks += _field_checks(fields, plan, "src_port", udp, 2, mod.src_port, "UDP source port")
    checks += _field_checks(fields, plan, "dst_port", udp + 2, 2, mod.dst_port, "UDP destination port")
    payload = udp + UDP_HEADER_BYTES
    checks.append(Check(payload, 2, BULK_MAGIC, BULK_MAGIC, "bulk magic"))
    checks.append(Check(payload + DIRECTION_BYTE_OFFSET, 1, direction, direction, "direction byte"))
    return checks


def modified_frame(fields: FlowFields, plan: FlowPlan, direction: int, mod: FrameModification,
                   sent: bytes) -> ExpectedFrame:
    """The frame of ``direction`` as it must arrive after ``mod``. Refuses a modification
    the receiver could not tell from no modification: ``sent`` (flow 0's frame as sent,
    wire form) must fail the checks, or an unmodified path would pass for a modifying one."""
    payload = PLAIN_PAYLOAD_OFFSET + mod.l3_shift_bytes
    alt = PLAIN_PAYLOAD_OFFSET if mod.l3_shift_bytes else PLAIN_PAYLOAD_OFFSET + 4
    expected = ExpectedFrame(payload, tuple(modified_checks(fields, plan, direction, mod)), False, alt)
    if expected.verdict(sent) is None:
        raise ValueError(f"frame modification {mod.describe()} leaves direction {direction}'s frames as they "
                         "are sent: the receiver could not tell a modified frame from an unmodified one")
    return expected


LD_LEN = 0x80  # BPF_LD | BPF_W | BPF_LEN: the frame's length

#: An instruction before assembly: (code, k, jump if true, jump if false), a jump being
#: None (the next instruction) or a label.
Step = tuple[int, int, "str | None", "str | None"]


def _assemble(steps: list[Step | str]) -> list[Insn]:
    """Resolve labels (strings in ``steps`` mark the next instruction) into cBPF's
    relative jumps."""
    labels: dict[str, int] = {}
    program: list[Step] = []
    for step in steps:
        if isinstance(step, str):
            labels[step] = len(program)
        else:
            program.append(step)
    out: list[Insn] = []
    for pc, (code, k, jt, jf) in enumerate(program):
        def rel(target: str | None) -> int:
            if target is None:
                return 0
            distance = labels[target] - pc - 1
            if not 0 <= distance <= 255:
                raise ValueError("BPF program too long for its jumps")
            return distance
        out.append((code, rel(jt), rel(jf), k))
    return out


def _magic_at(offset: int, magics: Sequence[int], found: str, missing: str) -> list[Step]:
    """Jump to ``found`` when one of ``magics`` is at ``offset`` (the frame long enough
    to hold it), else to ``missing``. A load past a frame's end would end the program."""
    steps: list[Step] = [(LD_LEN, 0, None, None), (JGE, offset + 3, None, missing), (LD_H, offset, None, None)]
    for magic in magics[:-1]:
        steps.append((JEQ, magic, found, None))
    steps.append((JEQ, magics[-1], found, missing))
    return steps


def wrong_frame_program(expected: ExpectedFrame, snap_bytes: int = SAMPLE_BYTES) -> list[Insn]:
    """Accept (``snap_bytes`` of it) a bulk frame that fails a check of ``expected``;
    reject right frames, probes and anything that is not vsbench's."""
    steps: list[Step | str] = [
        *_magic_at(expected.payload_offset, [BULK_MAGIC], "check", "other"),
        "other",
        *_magic_at(expected.other_payload_offset, [BULK_MAGIC], "accept", "reject"),
        "check",
    ]
    for c in expected.checks:
        if c.ancillary is not None:
            steps.append((LD_W, (SKF_AD_OFF + c.ancillary) & 0xFFFFFFFF, None, None))
        else:
            steps.append((_LOAD[c.width], c.offset, None, None))
        if c.low == c.high:
            steps.append((JEQ, c.low, None, "accept"))
        else:
            steps.append((JGE, c.low, None, "accept"))
            steps.append((JGT, c.high, "accept", None))
    steps += [(RET, 0, None, None), "accept", (RET, snap_bytes, None, None), "reject", (RET, 0, None, None)]
    return _assemble(steps)


def foreign_program(payload_offsets: Sequence[int], snap_bytes: int = 64) -> list[Insn]:
    """Accept what carries neither the bulk nor the probe magic at any of
    ``payload_offsets`` (a DUT's own chatter); reject vsbench's frames."""
    steps: list[Step | str] = []
    for i, offset in enumerate(payload_offsets):
        steps += [*_magic_at(offset, [BULK_MAGIC, MAGIC], "reject", f"next{i}"), f"next{i}"]
    steps += [(RET, snap_bytes, None, None), "reject", (RET, 0, None, None)]
    return _assemble(steps)
