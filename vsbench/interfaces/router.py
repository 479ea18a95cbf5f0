"""A router's declarative configuration: a small, vendor-neutral, Vyatta-style model.

The Intel/Brocade vRouter report generated its router configurations from a vendor-neutral
description (interfaces, routes, next hops) and rendered them into the router's own syntax.
This is that description, as part of the plugin contract: a deployment (``phy_router_phy``,
the ``pvp`` family with a routing VNF) builds it in its JSON form and hands it to
:meth:`vsbench.interfaces.Vnf.configure_router`; a router plugin (the built-in ``vrouter``,
or a vendor's) renders it to its data plane.

A router is interfaces with addresses, next-hop groups (one next hop, or several for
ECMP), static routes pointing at a group, static ARP entries, and a default action for
unrouted traffic. Big tables are described as *ranges* -- a route range is ``count``
consecutive prefixes of one length from ``start``, a next-hop range (in a group) or an
ARP range ``count`` consecutive addresses from ``start`` on one interface -- so a
million-route or 32k-next-hop configuration is a few lines, not a million objects; the
renderer expands a range straight into netlink messages.

How a group's next hops serve the routes that point at it (``use``): ``ecmp`` (default)
spreads every route over all of them (one multipath group); ``per_route`` gives route
``k`` of a range the group's next hop ``k mod N`` alone -- the Intel/Brocade report's
configurations, where 16 next hops per interface each carry 1/16 of the routes.

:func:`parse` turns the JSON form (the plugin's settings, or what a deployment hands to
``VRouter.apply``) into frozen dataclasses, after the JSON schema :data:`MODEL_SCHEMA`;
:func:`to_config_boot` prints the same configuration in Vyatta's ``config.boot`` syntax,
written next to the run's logs so the configuration a figure was measured with is on
record in the syntax the seed report (Intel/Brocade 5600 vRouter) used. Pure: no I/O.

Part of the plugin contract (:data:`vsbench.interfaces.API_VERSION`).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

_MAC = "^([0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}$"
_IFNAME = {"type": "string", "minLength": 1, "maxLength": 15}
#: ``count`` consecutive IPv4 addresses from ``start`` on ``interface``, each resolved to
#: ``mac`` by a static neighbour entry (no ARP).
_ADDRESS_RANGE = {
    "type": "object", "additionalProperties": False, "required": ["start", "count", "interface"],
    "properties": {"start": {"type": "string"}, "count": {"type": "integer", "minimum": 1, "maximum": 1 << 20},
                   "interface": _IFNAME,
                   "mac": {"type": "string", "pattern": _MAC, "description": "static neighbour entries (no ARP)"}},
}

#: JSON schema of the model (draft 2020-12); a router plugin's ``settings_schema`` may embed it.
MODEL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "interfaces": {
            "type": "array",
            "items": {
                "type": "object", "additionalProperties": False, "required": ["name", "address"],
                "properties": {"name": _IFNAME,
                               "address": {"type": "string", "description": "IPv4 address/prefix length"},
                               "description": {"type": "string"}},
            },
        },
        "nexthop_groups": {
            "type": "array",
            "items": {
                "type": "object", "additionalProperties": False, "required": ["name"],
                "properties": {
                    "name": {"type": "string", "minLength": 1},
                    "use": {"enum": ["ecmp", "per_route"], "default": "ecmp",
                            "description": "ecmp: every route over all next hops; per_route: route k of a "
                                           "range via next hop k mod N alone"},
                    "nexthop_range": {**_ADDRESS_RANGE, "description": "next hops: consecutive addresses "
                                                                       "(after the listed ones)"},
                    "nexthops": {
                        "type": "array", "minItems": 1, "maxItems": 1024,
                        "items": {
                            "type": "object", "additionalProperties": False, "required": ["via", "interface"],
                            "properties": {"via": {"type": "string"}, "interface": _IFNAME,
                                           "mac": {"type": "string", "pattern": _MAC,
                                                   "description": "static neighbour entry (no ARP)"},
                                           "weight": {"type": "integer", "minimum": 1, "maximum": 256}},
                        },
                    },
                },
            },
        },
        "routes": {
            "type": "array",
            "items": {
                "type": "object", "additionalProperties": False, "required": ["prefix", "group"],
                "properties": {"prefix": {"type": "string"}, "group": {"type": "string"}},
            },
        },
        "route_ranges": {
            "type": "array",
            "items": {
                "type": "object", "additionalProperties": False,
                "required": ["start", "prefixlen", "count", "group"],
                "properties": {"start": {"type": "string"},
                               "prefixlen": {"type": "integer", "minimum": 1, "maximum": 32},
                               "count": {"type": "integer", "minimum": 1, "maximum": 16777216},
                               "group": {"type": "string"}},
            },
        },
        "static_arp": {"type": "array", "items": _ADDRESS_RANGE,
                       "description": "hosts on an interface's subnet, reached by its connected route: "
                                      "static neighbour entries, no route"},
        "unrouted": {"enum": ["blackhole", "none"], "default": "blackhole",
                     "description": "what happens to traffic no route matches: a silent blackhole "
                                    "default route (no ICMP error frames back into the counters)"},
    },
}


class ModelError(ValueError):
    """The router configuration is inconsistent; ``str()`` is one line."""


@dataclass(frozen=True)
class Interface:
    name: str
    address: ipaddress.IPv4Interface


@dataclass(frozen=True)
class NextHop:
    via: ipaddress.IPv4Address
    interface: str
    mac: str | None = None
    weight: int = 1


@dataclass(frozen=True)
class AddressRange:
    """``count`` consecutive addresses from ``start`` on ``interface`` (resolved to ``mac``)."""

    start: ipaddress.IPv4Address
    count: int
    interface: str
    mac: str | None = None

    def addresses(self) -> np.ndarray:
        """Every address, as host-order integers."""
        return (np.arange(self.count, dtype=np.uint64) + int(self.start)).astype(np.uint32)

    def address(self, k: int) -> ipaddress.IPv4Address:
        return ipaddress.IPv4Address(int(self.start) + k)


#: How a group's next hops serve its routes (module doc).
USE_ECMP, USE_PER_ROUTE = "ecmp", "per_route"


@dataclass(frozen=True)
class NextHopGroup:
    """Next hops: the listed ones (``nexthops``), then the range's (``hop_range``)."""

    name: str
    nexthops: tuple[NextHop, ...]
    hop_range: AddressRange | None = None
    use: str = USE_ECMP

    @property
    def size(self) -> int:
        return len(self.nexthops) + (self.hop_range.count if self.hop_range else 0)

    @property
    def ecmp(self) -> bool:
        """One multipath group object serves the routes (more than one next hop, ``ecmp``)."""
        return self.use == USE_ECMP and self.size > 1

    def hop(self, k: int) -> NextHop:
        """Next hop ``k`` (0-based) of the group."""
        if k < len(self.nexthops):
            return self.nexthops[k]
        r = self.hop_range
        assert r is not None and 0 <= k - len(self.nexthops) < r.count, (self.name, k)
        return NextHop(r.address(k - len(self.nexthops)), r.interface, r.mac)


@dataclass(frozen=True)
class RouteRange:
    """``count`` consecutive prefixes of length ``prefixlen`` starting at ``start``."""

    start: ipaddress.IPv4Address
    prefixlen: int
    count: int
    group: str

    def destinations(self) -> np.ndarray:
        """The network address of every prefix, as host-order integers."""
        step = 1 << (32 - self.prefixlen)
        base = int(self.start)
        return (np.arange(self.count, dtype=np.uint64) * step + base).astype(np.uint32)


@dataclass(frozen=True)
class RouterConfig:
    interfaces: tuple[Interface, ...] = ()
    nexthop_groups: tuple[NextHopGroup, ...] = ()
    ranges: tuple[RouteRange, ...] = ()
    unrouted: str = "blackhole"
    static_arp: tuple[AddressRange, ...] = ()

    @property
    def route_count(self) -> int:
        return sum(r.count for r in self.ranges)

    @property
    def nexthop_count(self) -> int:
        return sum(g.size for g in self.nexthop_groups)

    @property
    def static_arp_count(self) -> int:
        return sum(a.count for a in self.static_arp)

    def group(self, name: str) -> NextHopGroup:
        for g in self.nexthop_groups:
            if g.name == name:
                return g
        raise ModelError(f"no next-hop group {name!r}")


def _address(text: str, what: str) -> ipaddress.IPv4Address:
    try:
        return ipaddress.IPv4Address(text)
    except ValueError:
        raise ModelError(f"{what}: {text!r} is not an IPv4 address") from None


def parse(data: Mapping[str, Any] | None) -> RouterConfig:
    """The model from its JSON form (already schema-checked); consistency checks here:
    every next hop on a configured interface and inside its subnet, every route's group
    defined, prefixes aligned, ranges inside the IPv4 space."""
    data = data or {}
    interfaces: list[Interface] = []
    for entry in data.get("interfaces") or []:
        try:
            iface = ipaddress.IPv4Interface(entry["address"])
        except ValueError:
            raise ModelError(f"interface {entry['name']}: {entry['address']!r} is not address/prefixlen") from None
        interfaces.append(Interface(entry["name"], iface))
    by_name = {i.name: i for i in interfaces}
    if len(by_name) != len(interfaces):
        raise ModelError("an interface is configured twice")
    groups = []
    for entry in data.get("nexthop_groups") or []:
        what = f"group {entry['name']}"
        hops = []
        for hop in entry.get("nexthops") or []:
            via = _address(hop["via"], what)
            _on_subnet(by_name, what, via, via, hop["interface"])
            hops.append(NextHop(via, hop["interface"], hop.get("mac"), int(hop.get("weight", 1))))
        hop_range = _address_range(entry.get("nexthop_range"), by_name, what)
        if not hops and hop_range is None:
            raise ModelError(f"{what} has no next hop (nexthops or nexthop_range)")
        use = str(entry.get("use") or USE_ECMP)
        if use not in (USE_ECMP, USE_PER_ROUTE):
            raise ModelError(f"{what}: use must be {USE_ECMP} or {USE_PER_ROUTE}, not {use!r}")
        groups.append(NextHopGroup(entry["name"], tuple(hops), hop_range, use))
    names = {g.name for g in groups}
    if len(names) != len(groups):
        raise ModelError("a next-hop group is defined twice")
    ranges = []
    for entry in data.get("routes") or []:
        try:
            net = ipaddress.IPv4Network(entry["prefix"])
        except ValueError:
            raise ModelError(f"route {entry['prefix']!r} is not an aligned IPv4 prefix") from None
        ranges.append(RouteRange(net.network_address, net.prefixlen, 1, entry["group"]))
    for entry in data.get("route_ranges") or []:
        start = _address(entry["start"], "route range")
        plen, count = int(entry["prefixlen"]), int(entry["count"])
        step = 1 << (32 - plen)
        if int(start) % step:
            raise ModelError(f"route range start {start} is not aligned to /{plen}")
        if int(start) + count * step > 1 << 32:
            raise ModelError(f"route range {start}/{plen} x {count} runs past 255.255.255.255")
        ranges.append(RouteRange(start, plen, count, entry["group"]))
    for r in ranges:
        if r.group not in names:
            raise ModelError(f"route {r.start}/{r.prefixlen} uses undefined next-hop group {r.group!r}")
    arp = tuple(_address_range(entry, by_name, "static arp") for entry in data.get("static_arp") or [])
    return RouterConfig(tuple(interfaces), tuple(groups), tuple(ranges), str(data.get("unrouted", "blackhole")),
                        arp)  # type: ignore[arg-type]


def _on_subnet(by_name: Mapping[str, Interface], what: str, first: ipaddress.IPv4Address,
               last: ipaddress.IPv4Address, interface: str) -> None:
    """Addresses ``first`` .. ``last`` are on ``interface``'s subnet, and not its own address."""
    iface = by_name.get(interface)
    if iface is None:
        raise ModelError(f"{what}: next hop {first} on unconfigured interface {interface}")
    net = iface.address.network
    for address in (first, last):
        if address not in net or address in (net.network_address, net.broadcast_address):
            raise ModelError(f"{what}: next hop {address} is not in {iface.name}'s subnet {net}")
    if first <= iface.address.ip <= last:
        raise ModelError(f"{what}: the range {first}..{last} holds {iface.name}'s own address {iface.address.ip}")


def _address_range(entry: Mapping[str, Any] | None, by_name: Mapping[str, Interface], what: str
                   ) -> AddressRange | None:
    if not entry:
        return None
    start = _address(entry["start"], what)
    count = int(entry["count"])
    if int(start) + count > 1 << 32:
        raise ModelError(f"{what}: {count} addresses from {start} run past 255.255.255.255")
    _on_subnet(by_name, what, start, ipaddress.IPv4Address(int(start) + count - 1), entry["interface"])
    return AddressRange(start, count, entry["interface"], entry.get("mac"))


def to_config_boot(config: RouterConfig, *, max_routes: int = 16) -> str:
    """The configuration in Vyatta ``config.boot`` syntax (ranges longer than
    ``max_routes`` -- routes, a route's ECMP next hops, ARP entries -- are abbreviated
    with a comment saying how many follow)."""
    lines = ["interfaces {"]
    for i in config.interfaces:
        lines += [f"    dataplane {i.name} {{", f"        address {i.address.with_prefixlen}", "    }"]
    lines += ["}", "protocols {", "    static {"]
    for arp in config.static_arp:
        for k in range(min(arp.count, max_routes)):
            lines.append(f"        arp {arp.address(k)} {{ hwaddr {arp.mac or 'unresolved'} }}")
        if arp.count > max_routes:
            lines.append(f"        /* ... {arp.count - max_routes} more static ARP entries on {arp.interface} */")
    for r in config.ranges:
        group = config.group(r.group)
        dsts = r.destinations()
        for k, dst in enumerate(dsts[:max_routes]):
            prefix = f"{ipaddress.IPv4Address(int(dst))}/{r.prefixlen}"
            lines.append(f"        route {prefix} {{")
            if group.use == USE_PER_ROUTE:
                lines.append(f"            next-hop {group.hop(k % group.size).via} {{ }}")
            else:
                lines += [f"            next-hop {group.hop(j).via} {{ }}" for j in range(min(group.size, max_routes))]
                if group.size > max_routes:
                    lines.append(f"            /* ... {group.size - max_routes} more next hops of group {r.group} */")
            lines.append("        }")
        if len(dsts) > max_routes:
            how = f", route k via next hop k mod {group.size}" if group.use == USE_PER_ROUTE else ""
            lines.append(f"        /* ... {len(dsts) - max_routes} more /{r.prefixlen} routes via group {r.group}{how} */")
    if config.unrouted == "blackhole":
        lines.append("        route 0.0.0.0/0 { blackhole { } }")
    lines += ["    }", "}"]
    return "\n".join(lines) + "\n"
