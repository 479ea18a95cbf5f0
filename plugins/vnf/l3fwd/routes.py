"""l3fwd's forwarding tables generated from the traffic profile's flows (pure, no I/O).

A frame entering VNF port 0 (the forward direction of the profile) must leave on port 1,
and a frame of the reverse direction entering port 1 must leave on port 0. The generator
varies each field of ``fields.vary`` over ``flows`` consecutive values from the field's
base (the contract of :class:`~vsbench.interfaces.FlowFields`), so:

* **LPM** (``lookup: lpm``): the destination addresses of each direction form one range;
  the fewest CIDR prefixes that cover it exactly route it to its exit port. The two
  directions' ranges must not overlap (l3fwd routes by destination only).
* **Exact match** (``lookup: em``): one 5-tuple rule per flow and direction. Flows advance
  every varying field in lock step (flow k: base + k in each), which is how the embedded
  generator counts them; a field too narrow to count through all flows cannot be matched
  exactly and is refused (use LPM).

A destination l3fwd has no route for is sent back out of the port it came in on: wrong
tables show as loss, never as silent success. l3fwd insists on an IPv6 table too; it gets
one route in the documentation prefix ``2001:db8::/32``, which no profile sends.
"""

from __future__ import annotations

import dataclasses
import ipaddress
from dataclasses import dataclass
from typing import Iterable, Sequence

from vsbench.interfaces import FlowFields, TrafficProfile

#: l3fwd's LPM tables hold at most this many rules (IPV4_L3FWD_LPM_MAX_RULES).
LPM_MAX_RULES = 1024
#: l3fwd's exact-match tables hold this many entries (L3FWD_HASH_ENTRIES on 64-bit).
EM_MAX_RULES = 4 * 1024 * 1024
IPV6_PLACEHOLDER = "R2001:db8::/32 0"
PROTOCOLS = {"udp": 17, "tcp": 6}
_SWAP = {"src_ip": "dst_ip", "dst_ip": "src_ip", "src_port": "dst_port", "dst_port": "src_port",
         "src_mac": "dst_mac", "dst_mac": "src_mac"}
_L34 = ("src_ip", "dst_ip", "src_port", "dst_port")


class RouteError(ValueError):
    """The profile's flows cannot be routed as asked; one line for the user."""


@dataclass(frozen=True)
class Tables:
    """l3fwd's rule files (``--rule_ipv4``/``--rule_ipv6``) as lines, and a summary."""

    lookup: str
    ipv4: tuple[str, ...]
    ipv6: tuple[str, ...] = (IPV6_PLACEHOLDER,)

    @property
    def rules(self) -> int:
        return len(self.ipv4)

    def ipv4_text(self) -> str:
        return "\n".join(self.ipv4) + "\n"

    def ipv6_text(self) -> str:
        return "\n".join(self.ipv6) + "\n"


def swapped(fields: FlowFields) -> FlowFields:
    """The reverse direction's fields: sources and destinations exchanged."""
    values = {name: getattr(fields, other) for name, other in _SWAP.items()}
    vary = tuple(_SWAP.get(v, v) for v in fields.vary)
    return dataclasses.replace(fields, **values, vary=vary)


def directions(profile: TrafficProfile) -> list[tuple[FlowFields, int, int]]:
    """``(fields, entry port, exit port)`` of each direction within one port pair."""
    found = [(profile.fields, 0, 1)]
    if profile.bidirectional:
        found.append((profile.reverse_fields or swapped(profile.fields), 1, 0))
    return found


def _ip(value: str, what: str) -> int:
    try:
        return int(ipaddress.IPv4Address(value))
    except ipaddress.AddressValueError:
        raise RouteError(f"l3fwd routes IPv4: {what} {value!r} is not an IPv4 address") from None


def address_range(fields: FlowFields, name: str, flows: int) -> tuple[int, int]:
    """First and last value of address field ``name`` over ``flows`` flows."""
    first = _ip(getattr(fields, name), name)
    if name not in fields.vary or flows <= 1:
        return first, first
    last = first + flows - 1
    if last > 0xFFFFFFFF:
        raise RouteError(f"{flows} flows from {name} {getattr(fields, name)} run past 255.255.255.255")
    return first, last


def cidrs(first: int, last: int) -> list[ipaddress.IPv4Network]:
    return list(ipaddress.summarize_address_range(ipaddress.IPv4Address(first), ipaddress.IPv4Address(last)))


def lpm_tables(profile: TrafficProfile) -> Tables:
    """Destination prefixes per direction -> exit port (see the module doc)."""
    spans = [(address_range(fields, "dst_ip", profile.flows), exit_port)
             for fields, _, exit_port in directions(profile)]
    if len(spans) == 2:
        (a_first, a_last), (b_first, b_last) = spans[0][0], spans[1][0]
        if a_first <= b_last and b_first <= a_last:
            raise RouteError(
                "the two directions' destination addresses overlap "
                f"({ipaddress.IPv4Address(a_first)}-{ipaddress.IPv4Address(a_last)} and "
                f"{ipaddress.IPv4Address(b_first)}-{ipaddress.IPv4Address(b_last)}): l3fwd routes by "
                "destination only, so it cannot send them to different ports")
    lines = []
    for (first, last), exit_port in spans:
        lines += [f"R{net} {exit_port}" for net in cidrs(first, last)]
    if len(lines) > LPM_MAX_RULES:
        raise RouteError(f"{len(lines)} LPM routes exceed l3fwd's {LPM_MAX_RULES}")
    return Tables("lpm", tuple(lines))


def _values(fields: FlowFields, name: str, flows: int) -> list[int] | None:
    """The values of a varying L3/L4 field over the flows (None: constant)."""
    if name not in fields.vary or flows <= 1:
        return None
    if name.endswith("_ip"):
        first, last = address_range(fields, name, flows)
        return list(range(first, last + 1))
    first = int(getattr(fields, name))
    if first + flows - 1 > 0xFFFF:
        raise RouteError(f"exact match needs {name} to count through all {flows} flows from {first}, "
                         "past 65535; vary an address instead or use lookup lpm")
    return list(range(first, first + flows))


def em_rules_of(fields: FlowFields, flows: int, exit_port: int) -> Iterable[str]:
    """One rule line per distinct 5-tuple of one direction (flows in lock step)."""
    proto = PROTOCOLS.get(str(fields.l4_proto).lower())
    if proto is None:
        raise RouteError(f"exact match knows udp and tcp, not {fields.l4_proto!r}")
    columns = {name: _values(fields, name, flows) for name in _L34}
    base = {"src_ip": _ip(fields.src_ip, "src_ip"), "dst_ip": _ip(fields.dst_ip, "dst_ip"),
            "src_port": int(fields.src_port), "dst_port": int(fields.dst_port)}
    count = flows if any(v is not None for v in columns.values()) else 1
    seen = set()
    for k in range(count):
        key = tuple(base[n] if columns[n] is None else columns[n][k] for n in _L34)
        if key in seen:
            continue
        seen.add(key)
        src, dst, sport, dport = key
        yield (f"R{ipaddress.IPv4Address(dst)} {ipaddress.IPv4Address(src)} {dport} {sport} "
               f"{proto} {exit_port}")


def em_tables(profile: TrafficProfile) -> Tables:
    """One exact-match rule per flow and direction (see the module doc)."""
    lines: list[str] = []
    seen: dict[str, int] = {}
    for fields, _, exit_port in directions(profile):
        for line in em_rules_of(fields, profile.flows, exit_port):
            key = line.rsplit(" ", 1)[0]
            if key in seen and seen[key] != exit_port:
                raise RouteError(f"a flow of both directions has the same 5-tuple ({key[1:]}): "
                                 "exact match cannot send it to two ports")
            if key not in seen:
                seen[key] = exit_port
                lines.append(line)
    if len(lines) > EM_MAX_RULES:
        raise RouteError(f"{len(lines)} exact-match rules exceed l3fwd's {EM_MAX_RULES}")
    return Tables("em", tuple(lines), ("R2001:db8::1 2001:db8::2 9 9 17 0",))


def tables_for(profile: TrafficProfile, lookup: str) -> Tables:
    if lookup == "lpm":
        return lpm_tables(profile)
    if lookup == "em":
        return em_tables(profile)
    raise RouteError(f"lookup must be lpm or em, not {lookup!r}")


def port_mask(ports: Sequence[int]) -> str:
    mask = 0
    for port in ports:
        mask |= 1 << port
    return hex(mask)
