"""Rule sets for flow and rule scaling tests, generated to a file in ovs-ofctl syntax.

The Netronome OVS-TC report (seed report 4) measures forwarding against N rules that each
match a source and a destination IPv4 address, one rule per flow of the offered traffic.
For that to hold, rule *i* must match exactly what the generator puts in flow *i*. The
arithmetic is the one every generator implements for :class:`FlowFields` with
``flows=N``: flow *i* carries ``base + i`` in every field listed in ``vary`` (addresses as
32-bit integers) and the base in the others; the reverse direction of a bidirectional
profile swaps source and destination. :func:`flow_addresses` is that arithmetic, once.

Two templates (``dut.rule_template``):

``src_dst_ip``
    ``dut.rules`` rules per direction, ``in_port=P,ip,nw_src=S_i,nw_dst=D_i,actions=output:Q``
    for i in 0..N-1. The rules are the whole forwarding path: a frame no rule matches is
    dropped, so a flow set larger than the rule set shows up as loss (and is refused here).
``in_out``
    one rule per direction, ``in_port=P,actions=output:Q`` (the "simple in/out rules"
    of the report's flow-scalability test).

Pure generation: no switch is contacted. The file is installed in one transaction by the
switch plugin (``VSwitch.install_rules``, e.g. ``ovs-ofctl --bundle add-flows``), never one
process per rule. Part of the plugin contract: a switch is given the run's
:class:`RuleSetSpec` in ``context.run.rule_set`` and writes it with :func:`write_rule_file`
(the runner builds the spec from ``dut.rules`` with
:func:`vsbench.measurement.rules.rule_set_from_config`).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

from vsbench.interfaces.traffic import FlowFields

TEMPLATES = ("src_dst_ip", "in_out")
#: Priority of generated rules: above the port-to-port flows a switch's ``connect`` uses.
RULE_PRIORITY = 100
#: Largest rule set we generate (the report's largest is 1M; 16M leaves room, and keeps a
#: typo such as an extra zero from writing a multi-gigabyte file).
MAX_RULES = 1 << 24
_IPV4_MAX = (1 << 32) - 1


class RuleSetError(ValueError):
    """The rule set cannot be generated as configured; the message is one line."""


@dataclass(frozen=True)
class Direction:
    """One forwarding direction: frames entering OpenFlow port ``in_port`` leave on
    ``out_port``. ``reverse`` marks the profile's reverse direction (fields swapped)."""

    in_port: int
    out_port: int
    reverse: bool = False


@dataclass(frozen=True)
class RuleSetSpec:
    """What to generate: ``rules`` per direction of ``template`` for traffic ``fields``.

    ``flows`` is the offered flow count per direction, kept to check coverage.
    """

    template: str
    rules: int
    fields: FlowFields = FlowFields()
    flows: int = 1
    bidirectional: bool = True

    def __post_init__(self) -> None:
        if self.template not in TEMPLATES:
            raise RuleSetError(f"dut.rule_template must be one of {', '.join(TEMPLATES)}, got {self.template!r}")
        if isinstance(self.rules, bool) or not isinstance(self.rules, int) or not 1 <= self.rules <= MAX_RULES:
            raise RuleSetError(f"dut.rules must be an integer from 1 to {MAX_RULES}, got {self.rules!r}")
        if self.template == "in_out" and self.rules != 1:
            raise RuleSetError("dut.rule_template in_out has one rule per direction; leave dut.rules unset")
        if self.template == "src_dst_ip":
            if not {"src_ip", "dst_ip"} & set(self.fields.vary):
                raise RuleSetError("src_dst_ip rules need traffic.fields.vary to include src_ip or dst_ip")
            if self.flows > self.rules:
                raise RuleSetError(
                    f"traffic.flows={self.flows} exceeds dut.rules={self.rules}: flows without a rule "
                    "would be dropped (the rule set is 1:1 with flows)"
                )
            for name in ("src_ip", "dst_ip"):
                base = int(ipaddress.IPv4Address(getattr(self.fields, name)))
                if name in self.fields.vary and base + self.rules - 1 > _IPV4_MAX:
                    raise RuleSetError(f"{self.rules} rules overflow the IPv4 range from {name} {getattr(self.fields, name)}")

    @property
    def directions(self) -> int:
        return 2 if self.bidirectional else 1

    @property
    def total_rules(self) -> int:
        """Lines in the generated file (rules per direction x directions)."""
        return self.rules * self.directions


def ipv4_add(base: str, offset: int) -> str:
    """``base + offset`` as a dotted IPv4 address (carrying across octets)."""
    value = int(ipaddress.IPv4Address(base)) + offset
    if not 0 <= value <= _IPV4_MAX:
        raise RuleSetError(f"{base} + {offset} is outside the IPv4 range")
    return _dotted(value)


def _dotted(value: int) -> str:
    return f"{value >> 24}.{(value >> 16) & 255}.{(value >> 8) & 255}.{value & 255}"


def flow_addresses(fields: FlowFields, index: int, *, reverse: bool = False) -> tuple[str, str]:
    """(source, destination) IPv4 of flow ``index``, as the generator sends it.

    Each field in ``fields.vary`` is ``base + index``; the reverse direction swaps the
    source and destination of the forward flow.
    """
    src = ipv4_add(fields.src_ip, index if "src_ip" in fields.vary else 0)
    dst = ipv4_add(fields.dst_ip, index if "dst_ip" in fields.vary else 0)
    return (dst, src) if reverse else (src, dst)


def default_directions(a_port: int, b_port: int, bidirectional: bool) -> list[Direction]:
    """Port ``a`` -> ``b`` forward, and ``b`` -> ``a`` reverse when bidirectional."""
    out = [Direction(a_port, b_port)]
    if bidirectional:
        out.append(Direction(b_port, a_port, reverse=True))
    return out


def rule_lines(spec: RuleSetSpec, directions: Sequence[Direction], *, match: str = "",
               modify: str = "") -> Iterator[str]:
    """The rules of ``spec`` for ``directions``, one ovs-ofctl flow per item. ``match``
    and ``modify`` (a frame modification's prerequisites and actions, e.g. ``ip`` and
    ``dec_ttl``) go into every rule's match and before its output."""
    if len(directions) != spec.directions:
        raise RuleSetError(f"{spec.directions} direction(s) expected, got {len(directions)}")
    extra = f"{match}," if match else ""
    before = f"{modify}," if modify else ""
    if spec.template == "in_out":
        for d in directions:
            yield f"priority={RULE_PRIORITY},{extra}in_port={d.in_port},actions={before}output:{d.out_port}"
        return
    # nw_src/nw_dst need an IPv4 match; "udp" is one already
    l3 = extra if match in ("ip", "udp") else f"ip,{extra}"
    src_base = int(ipaddress.IPv4Address(spec.fields.src_ip))
    dst_base = int(ipaddress.IPv4Address(spec.fields.dst_ip))
    src_step = 1 if "src_ip" in spec.fields.vary else 0
    dst_step = 1 if "dst_ip" in spec.fields.vary else 0
    for d in directions:
        head = f"priority={RULE_PRIORITY},{l3}in_port={d.in_port},nw_src="
        tail = f",actions={before}output:{d.out_port}"
        for i in range(spec.rules):
            src = src_base + i * src_step
            dst = dst_base + i * dst_step
            if d.reverse:
                src, dst = dst, src
            yield f"{head}{_dotted(src)},nw_dst={_dotted(dst)}{tail}"


def write_rule_file(path: Path, spec: RuleSetSpec, directions: Sequence[Direction], *,
                    match: str = "", modify: str = "") -> int:
    """Write the rule set to ``path`` (one flow per line); return how many rules."""
    count = 0
    buffer: list[str] = []
    with open(path, "w", encoding="ascii") as handle:
        for line in rule_lines(spec, directions, match=match, modify=modify):
            buffer.append(line)
            if len(buffer) >= 65536:
                handle.write("\n".join(buffer) + "\n")
                count += len(buffer)
                buffer.clear()
        if buffer:
            handle.write("\n".join(buffer) + "\n")
            count += len(buffer)
    return count
