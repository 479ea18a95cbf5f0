"""The trafgen packet configuration of one direction, written from a scapy template.

Every constant header field is copied from the template; every varying field gets a
trafgen runtime counter ``dinc(min, max)`` whose ``min`` is the field's value in the
template (flow 0) and whose range is the field's period in the :class:`FlowPlan`. trafgen
recomputes the IPv4 and UDP checksums whenever a counter changed a field, so every frame on
the wire has valid checksums (the unit tests check that against scapy).

trafgen counts over at most the last 4 bytes of a field and writes 0 into the bytes before
them, so a varying MAC address is written twice: first its full value, then the counter
(``sa=02:00:00:00:00:01, sa=dinc(1, 1000)``), which keeps the first two bytes.

One ``cpu(A-B): { ... }`` block for the CPUs the direction runs on: trafgen forks one worker
per CPU up to the highest, pins worker N to CPU N, and gives the packet to workers A..B; a
worker without a packet exits at once. Each worker walks the whole flow set on its own.
The CPUs must be contiguous: with separate ``cpu(0): {...} cpu(1): {...}`` blocks and
``-n``, trafgen 0.6.8's workers spin forever waiting for each other (and ignore SIGTERM).
"""

from __future__ import annotations

from typing import Sequence

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Dot1Q, Ether

from vsbench_plugins.trafficgen.trafgen.flows import FlowPlan, base_value
from vsbench_plugins.trafficgen.trafgen.frames import Template

from vsbench.interfaces.traffic import FlowFields


def _counter(fields: FlowFields, plan: FlowPlan, name: str) -> str:
    """``, <field>=dinc(min, max)`` when ``name`` varies under ``plan``, else ``""``."""
    period = plan.period(name)
    if period <= 1:
        return ""
    start = base_value(fields, name)
    key = {"src_ip": "sa", "dst_ip": "da", "src_mac": "sa", "dst_mac": "da",
           "src_port": "sp", "dst_port": "dp"}[name]
    return f", {key}=dinc({start}, {start + period - 1})"


def _payload(data: bytes) -> str:
    """The payload as trafgen bytes, runs of one value folded into ``fill()``."""
    parts = []
    i = 0
    while i < len(data):
        j = i
        while j < len(data) and data[j] == data[i]:
            j += 1
        run = j - i
        if run >= 4:
            parts.append(f"fill(0x{data[i]:02x}, {run})")
        else:
            parts.extend(f"0x{b:02x}" for b in data[i:j])
        i = j
    return ", ".join(parts)


#: Offset of each flow field's varying part from the (inner) IPv4 header, and its width.
_IP_FIELDS = {"src_ip": (12, 4), "dst_ip": (16, 4), "src_port": (20, 2), "dst_port": (22, 2)}


def raw_packet_body(template: Template, fields: FlowFields, plan: FlowPlan) -> str:
    """An encapsulated packet in trafgen's raw byte syntax.

    trafgen 0.6.8 hangs on header functions (``eth()``, ``ipv4()``) after raw bytes, so a
    frame inside a tunnel is written byte by byte: its inner IPv4 and UDP checksums are
    ``csumip``/``csumudp`` (recomputed on every frame) and each varying field is a one-byte
    counter ``dinc(lo, hi)`` on its last byte. A flow plan that needs more than that last
    byte is refused (the pacer engine has no such limit). trafgen advances a raw counter
    before the first frame, so frame ``k`` carries flow ``k + 1`` of the cycle: the same
    flows, equally often."""
    data = bytearray(template.data)
    ip = template.ip_offset
    special: dict[int, str] = {ip + 10: f"csumip({ip}, {ip + 19})", ip + 26: f"csumudp({ip}, {ip + 20})"}
    skip = {ip + 11, ip + 27}
    for name, period in plan.periods:
        if period <= 1:
            continue
        if name not in _IP_FIELDS:
            raise ValueError(f"the trafgen engine cannot vary {name} inside a tunnel")
        offset, width = _IP_FIELDS[name]
        low = base_value(fields, name) & 0xFF
        if low + period - 1 > 0xFF:
            raise ValueError(f"the trafgen engine varies only the last byte of {name} inside a tunnel "
                             f"({0x100 - low} values from this base, {period} asked); use engine: pacer")
        special[ip + offset + width - 1] = f"dinc({low}, {low + period - 1})"
    parts: list[str] = []
    i = 0
    while i < len(data):
        if i in special:
            parts.append(special[i])
            i += 1
            continue
        if i in skip:
            i += 1
            continue
        j = i
        while j < len(data) and data[j] == data[i] and j not in special and j not in skip:
            j += 1
        if j - i >= 4:
            parts.append(f"fill(0x{data[i]:02x}, {j - i})")
            i = j
        else:
            parts.append(f"0x{data[i]:02x}")
            i += 1
    return ", ".join(parts)


def packet_body(template: Template, fields: FlowFields, plan: FlowPlan) -> str:
    """The header and payload functions of one packet (without braces); an encapsulated
    one in raw syntax (:func:`raw_packet_body`)."""
    if template.encapsulated:
        return raw_packet_body(template, fields, plan)
    pkt = Ether(template.data)
    eth = pkt[Ether]
    lines = [
        f"eth(da={eth.dst}{_counter(fields, plan, 'dst_mac')}, "
        f"sa={eth.src}{_counter(fields, plan, 'src_mac')})"
    ]
    if Dot1Q in pkt:
        tag = pkt[Dot1Q]
        lines.append(f"vlan(id={tag.vlan}, pcp={tag.prio}, dei={tag.dei}, 1q)")
    ip = pkt[IP]
    if ip.ihl != 5:
        raise ValueError("templates carry no IP options")
    flags = ""
    if int(ip.flags) & 0x2:
        flags += ", df"
    if int(ip.flags) & 0x1:
        flags += ", mf"
    lines.append(
        f"ipv4(ver=4, ihl=5, tos={ip.tos}, id={ip.id}, ttl={ip.ttl}, frag={ip.frag}{flags}, "
        f"prot={ip.proto}, sa={ip.src}{_counter(fields, plan, 'src_ip')}, "
        f"da={ip.dst}{_counter(fields, plan, 'dst_ip')})"
    )
    udp = pkt[UDP]
    lines.append(
        f"udp(sp={udp.sport}{_counter(fields, plan, 'src_port')}, "
        f"dp={udp.dport}{_counter(fields, plan, 'dst_port')})"
    )
    payload = bytes(udp.payload)
    if payload:
        lines.append(_payload(payload))
    return ",\n  ".join(lines)


def cpu_range(cpus: Sequence[int]) -> str:
    """``[2, 3, 4]`` -> ``"2-4"``; refuses CPUs that are not one contiguous run."""
    ordered = sorted(set(int(c) for c in cpus))
    if ordered != list(range(ordered[0], ordered[-1] + 1)):
        raise ValueError(f"trafgen needs contiguous CPUs per direction, got {ordered}")
    return str(ordered[0]) if len(ordered) == 1 else f"{ordered[0]}-{ordered[-1]}"


def render(template: Template, fields: FlowFields, plan: FlowPlan, cpus: Sequence[int] | None,
           comment: str = "") -> str:
    """A complete trafgen configuration: one packet pinned to ``cpus`` (or unpinned)."""
    return render_packets([(template, fields, plan)], cpus, comment)


def render_packets(packets: Sequence[tuple[Template, FlowFields, FlowPlan]], cpus: Sequence[int] | None,
                   comment: str = "") -> str:
    """Several packets in one configuration; trafgen sends them in turn (round robin), so
    each gets an equal share of ``-n``, and each keeps its own counters (its own flows).

    The burst pattern (a plan whose ``run`` is R > 1) writes each packet R times, the
    copies in turn with the other packets': every copy has its own counters, all starting
    at flow 0, and each advances once per R frames of its packet, so the packet's frames
    ``0..R-1`` carry flow 0, ``R..2R-1`` flow 1, and so on -- R consecutive frames of one
    flow on its port (a trial's frame count that is no multiple of R ends within a run)."""
    head = "".join(f"# {line}\n" for line in comment.splitlines()) if comment else ""
    prefix = f"cpu({cpu_range(cpus)}): " if cpus else ""
    runs = max((max(1, int(p.run)) for _, _, p in packets), default=1)
    if any(max(1, int(p.run)) != runs for _, _, p in packets):
        raise ValueError("the packets of one trafgen configuration need the same burst run")
    bodies = [packet_body(t, f, p) for t, f, p in packets]
    blocks = [f"{prefix}{{\n  {body}\n}}\n" for _ in range(runs) for body in bodies]
    return head + "".join(blocks)
