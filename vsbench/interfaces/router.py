"""A router's declarative configuration: a small, vendor-neutral, Vyatta-style model.

The Intel/Brocade vRouter report generated its router configurations from a vendor-neutral
description (interfaces, routes, next hops) and rendered them into the router's own syntax.
This is that description, as part of the plugin contract: a deployment (``phy_router_phy``,
the ``pvp`` family with a routing VNF) builds it in its JSON form and hands it to
:meth:`vsbench.interfaces.Vnf.configure_router`; a router plugin (the built-in ``vrouter``,
or a vendor's) renders it to its data plane.

A router is interfaces with addresses, next-hop groups (one next hop, or several for
ECMP), static routes pointing at a group, and a default action for unrouted traffic. Big
tables are described as *route ranges* (``count`` consecutive prefixes of one length from
``start``), so a million-route configuration is a few lines, not a million objects; the
renderer expands a range straight into netlink messages.

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
                "type": "object", "additionalProperties": False, "required": ["name", "nexthops"],
                "properties": {
                    "name": {"type": "string", "minLength": 1},
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
class NextHopGroup:
    name: str
    nexthops: tuple[NextHop, ...]

    @property
    def ecmp(self) -> bool:
        return len(self.nexthops) > 1


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

    @property
    def route_count(self) -> int:
        return sum(r.count for r in self.ranges)

    @property
    def nexthop_count(self) -> int:
        return sum(len(g.nexthops) for g in self.nexthop_groups)

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
    interfaces = []
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
        hops = []
        for hop in entry["nexthops"]:
            via = _address(hop["via"], f"group {entry['name']}")
            iface = by_name.get(hop["interface"])
            if iface is None:
                raise ModelError(f"group {entry['name']}: next hop {via} on unconfigured interface {hop['interface']}")
            if via not in iface.address.network:
                raise ModelError(f"group {entry['name']}: next hop {via} is not in {iface.name}'s subnet {iface.address.network}")
            hops.append(NextHop(via, hop["interface"], hop.get("mac"), int(hop.get("weight", 1))))
        groups.append(NextHopGroup(entry["name"], tuple(hops)))
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
    return RouterConfig(tuple(interfaces), tuple(groups), tuple(ranges), str(data.get("unrouted", "blackhole")))


def to_config_boot(config: RouterConfig, *, max_routes: int = 16) -> str:
    """The configuration in Vyatta ``config.boot`` syntax (ranges longer than
    ``max_routes`` are abbreviated with a comment saying how many routes follow)."""
    lines = ["interfaces {"]
    for i in config.interfaces:
        lines += [f"    dataplane {i.name} {{", f"        address {i.address.with_prefixlen}", "    }"]
    lines += ["}", "protocols {", "    static {"]
    for r in config.ranges:
        hops = config.group(r.group).nexthops
        dsts = r.destinations()
        for k, dst in enumerate(dsts[:max_routes]):
            prefix = f"{ipaddress.IPv4Address(int(dst))}/{r.prefixlen}"
            lines.append(f"        route {prefix} {{")
            lines += [f"            next-hop {h.via} {{ }}" for h in hops]
            lines.append("        }")
        if len(dsts) > max_routes:
            lines.append(f"        /* ... {len(dsts) - max_routes} more /{r.prefixlen} routes via group {r.group} */")
    if config.unrouted == "blackhole":
        lines.append("        route 0.0.0.0/0 { blackhole { } }")
    lines += ["    }", "}"]
    return "\n".join(lines) + "\n"
