"""Routed topologies: a router VNF between the generator's ports; the DUT routes (L3).

``phy_router_phy``: the embedded testbed's DUT namespace holds a router VNF (the ``vrouter``
plugin, or any VNF that declares :attr:`Vnf.routing`, selected with ``vnf.name``) instead
of a switch, between 2, 4 or 8 generator ports (``topology.port_pairs`` 1, 2, 4), and
``dut.router_instances: 2`` puts a second router beside it on ports of its own (the
Intel/Brocade vRouter report's two instances, section 1.2.6). The ``pvp`` family puts
routers behind a switch (:mod:`vsbench.deployment.pvp`) with the chain addressing below.

**phy_router_phy's addressing** (the report's variables are ``dut.routes``,
``dut.nexthops`` and ``dut.nexthop_mode``, each per router port): router port ``g`` (counted
over all instances, at most 16) faces generator port ``g``;

* its subnet is ``172.(16+g).0.0/16``: the router's address ``172.(16+g).255.254``, the
  next hops (or directly connected hosts) ``172.(16+g).0.1`` ... up to 32768 of them, each
  a permanent neighbour with generator port ``g``'s MAC, so nothing is ever ARPed;
* the prefixes routed out of it are a block of ``10.0.0.0/8``: ``10.0.0.0 + g x span``,
  span = 2^24 over the port count rounded up to a power of two (a /9 each for 2 ports,
  /10 for 4, /11 for 8, /12 for 16); ``dut.routes`` prefixes of it, ``/32`` when
  ``traffic.flows`` <= routes (flow k hits route k), wider otherwise so every flow has a
  route;
* ``dut.nexthop_mode`` says what the next hops are: ``ecmp`` (one multipath group of
  ``dut.nexthops`` per port, every route over all of them; at most 8191, the kernel's
  group size), ``per_route`` (route k via next hop k mod N alone -- the report's use
  cases 0 and 1: 1024 routes and 16 next hops per interface; needs routes >= next hops) or
  ``connected`` (the report's use case 2: no routes, the next hops are ``dut.nexthops``
  hosts on the port's subnet that the frames are addressed to, reached by the
  interface's own route; 1..32768 per interface);
* ``traffic.router_profile`` (0..5, the report's traffic profiles, section 4.3.4) says
  which ports each port sends to (:func:`profile_destinations`); the generator sends one
  stream per (port, destination port), host pairs: flow k from host k behind the sending
  port to host k behind (or on) the destination port, to the MAC of the router port it
  enters.

The report's sockets: its single-socket configuration has 4 router ports on socket 0, the
dual-socket one 8 (ports 0-3 on socket 0, 4-7 on socket 1); the "same socket" and
"cross socket" profiles differ in which ports exchange traffic. On a one-socket host the
two halves of 8 ports are on the same socket: the cross-socket profiles then differ from
the same-socket ones only in wiring, and the results say so (``topology.sockets``).

**Chains** (the pvp family; :func:`router_model`): the wires between generator port 0,
the routers in series and generator port 1 are segments ``0 .. V`` (V routers); segment
``s`` is ``198.18.s.0/24``; a router's port on its west segment ``s`` is ``198.18.s.254``,
on its east segment ``198.18.s.253``; towards the east ``dut.routes`` prefixes from
:data:`EAST_BASE`, towards the west as many from :data:`WEST_BASE`, each via one ECMP
group of ``dut.nexthops`` (at most 200: one /24 per segment) next hops ``198.18.s.1``
... on the segment, each with the MAC of whatever is on the other end -- a generator
port, or the next router's port; the generator sends host pairs from ``WEST_BASE + k``
to ``EAST_BASE + k`` (and back) to the first router's west and the last router's east
port.

No switch is built by ``phy_router_phy``: ``vswitch`` of the configuration is not used (nor
checked) and results say ``vswitch: none``.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import logging
import math
from dataclasses import dataclass
from typing import Any, ClassVar, Mapping, Sequence

from vsbench.deployment.base import Deployment, DeploymentError, Shape
from vsbench.deployment.ports import generator_ports_of
from vsbench.interfaces.traffic import FlowFields, GeneratorPort, PortStream, TrafficProfile
from vsbench.interfaces.vswitch import PortSpec, SwitchPort
from vsbench.system import naming, sysinfo
from vsbench.system.testbed import Testbed, add_namespace, create_testbed, move_port

log = logging.getLogger(__name__)

EAST_BASE = ipaddress.IPv4Address("10.0.0.0")
WEST_BASE = ipaddress.IPv4Address("10.128.0.0")
#: Each direction's prefixes must fit in its half of 10.0.0.0/8.
ADDRESS_SPAN = 1 << 23
#: Next hops per direction of a chain: one /24 per segment, the routers at .253 and .254.
MAX_NEXTHOPS = 200
#: Host numbers of a router's own ports on its west and east segments.
WEST_HOST, EAST_HOST = 254, 253
#: The largest chain the addressing supports (one /24 per segment in 198.18.0.0/16).
MAX_SEGMENT = 255


def route_prefixlen(routes: int, flows: int) -> int:
    """The prefix length at which ``routes`` consecutive prefixes cover ``flows`` hosts."""
    hosts = max(1, math.ceil(flows / routes))
    return 32 - (hosts - 1).bit_length()


def router_model(*, routes: int, nexthops: int, flows: int, ports: Sequence[str], peer_macs: Sequence[str],
                 segments: tuple[int, int] = (0, 1)) -> dict[str, Any]:
    """The router configuration (:mod:`vsbench.interfaces.router` JSON form) of one router
    whose port ``ports[0]`` is on segment ``segments[0]`` (west) and ``ports[1]`` on
    ``segments[1]`` (east); ``peer_macs[i]`` is the MAC on the far end of port i's segment."""
    if not 1 <= nexthops <= MAX_NEXTHOPS:
        raise DeploymentError(f"dut.nexthops must be from 1 to {MAX_NEXTHOPS}, got {nexthops}")
    if routes < 1:
        raise DeploymentError(f"dut.routes must be at least 1, got {routes}")
    if not all(0 <= s <= MAX_SEGMENT for s in segments):
        raise DeploymentError(f"a chain of routers longer than {MAX_SEGMENT} does not fit 198.18.0.0/16")
    plen = route_prefixlen(routes, flows)
    if routes << (32 - plen) > ADDRESS_SPAN:
        raise DeploymentError(f"dut.routes={routes} with traffic.flows={flows} does not fit in a /9 per direction")
    groups, ranges = [], []
    for side, base, name in ((1, EAST_BASE, "east"), (0, WEST_BASE, "west")):
        segment = segments[side]
        groups.append({"name": name, "nexthops": [
            {"via": f"198.18.{segment}.{1 + k}", "interface": ports[side], "mac": peer_macs[side]}
            for k in range(nexthops)]})
        ranges.append({"start": str(base), "prefixlen": plen, "count": routes, "group": name})
    return {
        "interfaces": [{"name": ports[0], "address": f"198.18.{segments[0]}.{WEST_HOST}/24"},
                       {"name": ports[1], "address": f"198.18.{segments[1]}.{EAST_HOST}/24"}],
        "nexthop_groups": groups,
        "route_ranges": ranges,
        "unrouted": "blackhole",
    }


@dataclass(frozen=True)
class RouterHop:
    """One router of a chain: its plugin, its (west, east) interface names and MACs."""

    vnf: Any
    ifaces: tuple[str, str]
    macs: tuple[str, str]


def configure_chain(config: dict[str, Any] | Any, hops: Sequence[RouterHop], gen_macs: tuple[str, str]) -> dict[str, Any]:
    """Configure routers in series between generator ports with MACs ``gen_macs`` (west,
    east) after the run's ``dut.routes`` / ``dut.nexthops`` / ``traffic.flows``; returns the
    first router's install figures (``routers``: how many were configured)."""
    dut = dict(config.get("dut") or {})
    flows = int((config.get("traffic") or {}).get("flows") or 1)
    routes, nexthops = int(dut.get("routes") or 1), int(dut.get("nexthops") or 1)
    figures: dict[str, Any] = {}
    for k, hop in enumerate(hops):
        west_peer = gen_macs[0] if k == 0 else hops[k - 1].macs[1]
        east_peer = gen_macs[1] if k == len(hops) - 1 else hops[k + 1].macs[0]
        model = router_model(routes=routes, nexthops=nexthops, flows=flows, ports=list(hop.ifaces),
                             peer_macs=[west_peer, east_peer], segments=(k, k + 1))
        done = dict(hop.vnf.configure_router(model) or {})
        log.info("router %d of %d (%s) routes %s <-> %s: %s", k + 1, len(hops), hop.vnf.name, *hop.ifaces, done)
        if k == 0:
            figures = done
    return {**figures, "routers": len(hops)}


def routed_profile(profile: TrafficProfile, west: tuple[str, str], east: tuple[str, str]) -> TrafficProfile:
    """Host pairs addressed to the routers: the forward direction from generator MAC
    ``west[0]`` to the first router's west port ``west[1]``, the reverse from ``east[0]`` to
    the last router's east port ``east[1]``, between the two route bases (module doc)."""
    vary = ("src_ip", "dst_ip")
    forward = dataclasses.replace(profile.fields, src_mac=west[0], dst_mac=west[1],
                                  src_ip=str(WEST_BASE), dst_ip=str(EAST_BASE), vary=vary)
    reverse = dataclasses.replace(profile.fields, src_mac=east[0], dst_mac=east[1],
                                  src_ip=str(EAST_BASE), dst_ip=str(WEST_BASE), vary=("dst_ip", "src_ip"))
    return dataclasses.replace(profile, fields=forward, reverse_fields=reverse)


# -- phy_router_phy: router ports, profiles, instances ------------------------------------------

#: Router ports per instance (2 x ``topology.port_pairs``).
ROUTER_PORT_COUNTS = (2, 4, 8)
#: Router instances side by side (``dut.router_instances``).
MAX_ROUTER_INSTANCES = 2
#: The report's router ports per CPU socket: 4 on one socket, 8 over two.
PORTS_PER_SOCKET = 4
#: Next hops (or connected hosts) per router port: the report's 32k per interface.
MAX_PORT_NEXTHOPS = 32768
#: Routes out of one router port.
MAX_PORT_ROUTES = 1 << 22
NEXTHOP_MODES = ("ecmp", "per_route", "connected")
#: The kernel's largest ECMP group (its member list is one netlink attribute of <= 64 KiB).
MAX_ECMP_GROUP = 8191
#: ``172.(16+g).0.0/16`` per router port g: 16 ports in 172.16.0.0/12.
PORT_SUBNET_BASE = ipaddress.IPv4Address("172.16.0.0")
ROUTE_SPACE = ipaddress.IPv4Address("10.0.0.0")
ROUTER_HOST = (255 << 8) | 254  # 172.x.255.254

#: The report's traffic profiles (section 4.3.4), in its words.
ROUTER_PROFILES: dict[int, str] = {
    0: "each port to one other port on its socket (1<->2, 3<->4, ...)",
    1: "each port to one port on the other socket (dual socket)",
    2: "each port to every other port on its socket",
    3: "each port to every port on the other socket (dual socket)",
    4: "each port to two ports on its socket and two on the other (50% cross the QPI; dual socket)",
    5: "each port to every other port (the general router case; dual socket)",
}
#: Profiles the report defines only for the dual-socket configuration (8 ports).
DUAL_SOCKET_PROFILES = (1, 3, 4, 5)


def profile_destinations(profile: int, ports: int) -> list[tuple[int, ...]]:
    """For each router port ``i`` (0-based: the report's interface i+1), the ports the
    traffic entering it is routed to under the report's traffic ``profile``.

    Ports ``0-3`` are the report's socket 0 and ``4-7`` socket 1 (2 ports: one socket of
    2). Profile 4 sends from port ``i`` (local index ``l`` on its socket) to the other pair
    of its socket (``l^2``, ``l^3``) and to its own pair's position on the other socket,
    so every port receives as much as it sends."""
    if ports not in ROUTER_PORT_COUNTS:
        raise DeploymentError(f"a router has {', '.join(map(str, ROUTER_PORT_COUNTS))} ports here "
                              f"(topology.port_pairs 1, 2 or 4), not {ports}")
    if profile not in ROUTER_PROFILES:
        raise DeploymentError(f"traffic.router_profile must be 0..5 (the report's traffic profiles), not {profile}")
    sockets = max(1, ports // PORTS_PER_SOCKET)
    if profile in DUAL_SOCKET_PROFILES and sockets < 2:
        raise DeploymentError(f"traffic.router_profile {profile} ({ROUTER_PROFILES[profile]}) needs the report's "
                              f"8 router ports (topology.port_pairs: 4), not {ports}")
    per_socket = ports // sockets
    out = []
    for i in range(ports):
        socket_, local = divmod(i, per_socket)
        own = [socket_ * per_socket + j for j in range(per_socket)]
        other = [(1 - socket_) * per_socket + j for j in range(per_socket)] if sockets == 2 else []
        if profile == 0:
            dests = [i ^ 1]
        elif profile == 1:
            dests = [other[local]]
        elif profile == 2:
            dests = [j for j in own if j != i]
        elif profile == 3:
            dests = other
        elif profile == 4:
            dests = [own[local ^ 2], own[local ^ 3], other[local & ~1], other[local | 1]]
        else:
            dests = [j for j in range(ports) if j != i]
        out.append(tuple(dests))
    return out


def port_span(total_ports: int) -> int:
    """Addresses of 10.0.0.0/8 routed out of each router port (a power of two)."""
    return (1 << 24) >> max(1, (total_ports - 1).bit_length())


def route_block(g: int, total_ports: int) -> ipaddress.IPv4Address:
    """First address of the prefixes routed out of router port ``g``."""
    return ROUTE_SPACE + g * port_span(total_ports)


def port_host(g: int, h: int) -> ipaddress.IPv4Address:
    """Address ``h`` of router port ``g``'s subnet (next hop / connected host ``h``, 1-based)."""
    return PORT_SUBNET_BASE + (g << 16) + h


@dataclass(frozen=True)
class RouterPort:
    """One router port: its number over all instances (``g``), its interface, its MAC and
    the MAC of the generator port it faces."""

    g: int
    iface: str
    mac: str
    peer_mac: str


@dataclass(frozen=True)
class RouterPlan:
    """What ``dut.*``/``traffic.*`` ask of the routers, checked (:func:`router_plan`)."""

    routes: int
    nexthops: int
    mode: str
    flows: int
    profile: int
    ports_per_instance: int
    instances: int

    @property
    def total_ports(self) -> int:
        return self.ports_per_instance * self.instances

    @property
    def prefixlen(self) -> int:
        return route_prefixlen(self.routes, self.flows)


def router_plan(config: Any) -> RouterPlan:
    """The routers' plan from the configuration; one-line :class:`DeploymentError` for
    anything the addressing cannot hold."""
    dut = dict(config.get("dut") or {})
    traffic = dict(config.get("traffic") or {})
    pairs = int((config.get("topology") or {}).get("port_pairs") or 1)
    ports = 2 * pairs
    if ports not in ROUTER_PORT_COUNTS:
        raise DeploymentError(f"topology.port_pairs must be 1, 2 or 4 for phy_router_phy (a router with 2, 4 or 8 "
                              f"ports), not {pairs}")
    instances = int(dut.get("router_instances") or 1)
    if not 1 <= instances <= MAX_ROUTER_INSTANCES:
        raise DeploymentError(f"dut.router_instances must be 1 or 2, not {instances}")
    mode = str(dut.get("nexthop_mode") or "ecmp")
    if mode not in NEXTHOP_MODES:
        raise DeploymentError(f"dut.nexthop_mode must be one of {', '.join(NEXTHOP_MODES)}, not {mode!r}")
    routes, nexthops = int(dut.get("routes") or 1), int(dut.get("nexthops") or 1)
    flows = int(traffic.get("flows") or 1)
    profile = int(traffic.get("router_profile") or 0)
    profile_destinations(profile, ports)  # refuses what the port count cannot do
    if not 1 <= nexthops <= MAX_PORT_NEXTHOPS:
        raise DeploymentError(f"dut.nexthops must be from 1 to {MAX_PORT_NEXTHOPS} per router port, got {nexthops}")
    if mode == "ecmp" and nexthops > MAX_ECMP_GROUP:
        raise DeploymentError(f"dut.nexthops={nexthops} in one ECMP group: the kernel's next-hop group holds at most "
                              f"{MAX_ECMP_GROUP} (its member list is one netlink attribute of at most 64 KiB); "
                              "dut.nexthop_mode per_route or connected models more next hops per interface")
    if mode == "per_route" and routes < nexthops:
        raise DeploymentError(f"dut.nexthop_mode per_route gives route k next hop k mod N: dut.routes ({routes}) must "
                              f"be at least dut.nexthops ({nexthops}) so every next hop carries routes")
    if mode == "connected":
        if routes > 1:
            raise DeploymentError(f"dut.nexthop_mode connected routes to the next hops themselves (the report's use "
                                  f"case 2, no routes): dut.routes must be 1 (or null), not {routes}")
        if flows > nexthops:
            raise DeploymentError(f"dut.nexthop_mode connected addresses flow k to next hop k: traffic.flows ({flows}) "
                                  f"must not exceed dut.nexthops ({nexthops})")
    if not 1 <= routes <= MAX_PORT_ROUTES:
        raise DeploymentError(f"dut.routes must be from 1 to {MAX_PORT_ROUTES} per router port, got {routes}")
    total = ports * instances
    plan = RouterPlan(routes, nexthops, mode, flows, profile, ports, instances)
    if mode != "connected" and routes << (32 - plan.prefixlen) > port_span(total):
        raise DeploymentError(f"dut.routes={routes} with traffic.flows={flows} does not fit in the "
                              f"/{32 - (port_span(total).bit_length() - 1)} routed out of each of {total} router ports")
    return plan


def port_router_model(plan: RouterPlan, ports: Sequence[RouterPort]) -> dict[str, Any]:
    """The configuration (:mod:`vsbench.interfaces.router` JSON form) of one router whose
    ports are ``ports`` (module doc: subnets, next hops, route blocks per port)."""
    interfaces, groups, ranges, arp = [], [], [], []
    for p in ports:
        interfaces.append({"name": p.iface, "address": f"{port_host(p.g, ROUTER_HOST)}/16"})
        hops = {"start": str(port_host(p.g, 1)), "count": plan.nexthops, "interface": p.iface, "mac": p.peer_mac}
        if plan.mode == "connected":
            arp.append(hops)
            continue
        name = f"port{p.g}"
        groups.append({"name": name, "use": "per_route" if plan.mode == "per_route" else "ecmp",
                       "nexthop_range": hops})
        ranges.append({"start": str(route_block(p.g, plan.total_ports)), "prefixlen": plan.prefixlen,
                       "count": plan.routes, "group": name})
    model: dict[str, Any] = {"interfaces": interfaces, "unrouted": "blackhole"}
    if groups:
        model["nexthop_groups"] = groups
        model["route_ranges"] = ranges
    if arp:
        model["static_arp"] = arp
    return model


def host_base(plan: RouterPlan, g: int) -> ipaddress.IPv4Address:
    """Host 0 of the host pairs behind (or, connected, on) router port ``g``."""
    return port_host(g, 1) if plan.mode == "connected" else route_block(g, plan.total_ports)


def router_streams(plan: RouterPlan, fields: FlowFields, ports: Sequence[RouterPort], *,
                   bidirectional: bool = True) -> tuple[PortStream, ...]:
    """The streams of ``plan.profile`` over ``ports`` (every instance's, in order): per
    router port, one stream to each of its destination ports, from the generator port's
    MAC to the router port's, host k behind the source to host k behind the destination.
    Unidirectional (profile 0 only): the even ports send, the odd ones receive."""
    per = plan.ports_per_instance
    destinations = profile_destinations(plan.profile, per)
    if not bidirectional and plan.profile != 0:
        raise DeploymentError(f"traffic.router_profile {plan.profile} sends from every port: it needs "
                              "traffic.bidirectional: true")
    streams = []
    for p in ports:
        instance, local = divmod(p.g, per)
        if not bidirectional and local % 2:
            continue
        for d in destinations[local]:
            j = instance * per + d
            streams.append(PortStream(tx_port=p.g, rx_port=j, fields=dataclasses.replace(
                fields, src_mac=p.peer_mac, dst_mac=p.mac, src_ip=str(host_base(plan, p.g)),
                dst_ip=str(host_base(plan, j)), vary=("src_ip", "dst_ip"))))
    return tuple(streams)


def host_sockets() -> int:
    """CPU sockets (physical packages) of this host."""
    return max(1, len(sysinfo.cpu_packages()))


class PhyRouterPhy(Deployment):
    name: ClassVar[str] = "phy_router_phy"
    description: ClassVar[str] = ("PHY-router-PHY: 2, 4 or 8 ports routed by a router VNF (or two routers side by "
                                  "side), traffic profiles 0-5")
    switching_operations = 1
    generator_port_count = 2
    topology: ClassVar[str] = "PHY-router-PHY"
    requires_vnf: ClassVar[bool] = True
    uses_vswitch: ClassVar[bool] = False
    topology_keys: ClassVar[tuple[str, ...]] = ("port_pairs",)

    testbed: Testbed | None = None
    vnf: Any = None
    vnfs: list[Any] = []
    router_figures: dict[str, Any] = {}
    plan: RouterPlan | None = None
    router_ports: list[RouterPort] = []
    instance_figures: list[dict[str, Any]] = []

    def describe(self) -> dict[str, Any]:
        doc: dict[str, Any] = {**super().describe(), "vnf_count": len(self.vnfs) or 1,
                               "router": dict(self.router_figures) or None}
        plan = self.plan
        if plan is not None:
            sockets = host_sockets()
            doc.update({
                "router_ports": plan.ports_per_instance,
                "router_instances": plan.instances,
                "nexthop_mode": plan.mode,
                "router_profile": {"profile": plan.profile, "description": ROUTER_PROFILES[plan.profile],
                                   "destinations": [list(d) for d in
                                                    profile_destinations(plan.profile, plan.ports_per_instance)]},
                "instances": [{"instance": k, "generator_ports": [p.g for p in self.router_ports
                                                                  if p.g // plan.ports_per_instance == k],
                               **(self.instance_figures[k] if k < len(self.instance_figures) else {})}
                              for k in range(plan.instances)],
                "sockets": {"host": sockets, "note": self.socket_note(sockets)},
            })
        return doc

    @classmethod
    def shape(cls, config: Mapping[str, Any]) -> Shape:
        """Every router port of every instance faces a generator port: 2 x
        ``topology.port_pairs`` x ``dut.router_instances`` of them."""
        cls.topology_settings(config)
        return Shape(router_plan(config).total_ports, cls.switching_operations)

    @classmethod
    def check_config(cls, config: Mapping[str, Any], vnf: Any = None) -> None:
        router_plan(config)

    def notes(self) -> list[str]:
        note = self.socket_note(host_sockets())
        return [note] if note else []

    def socket_note(self, sockets: int) -> str | None:
        """What the report's sockets are here (None when nothing needs saying)."""
        plan = self.plan
        if plan is None:
            return None
        notes = []
        if plan.instances > 1 and sockets < 2:
            notes.append(f"one socket: both instances on socket 0 (the report runs one per socket); they share "
                         f"this host's {sockets} socket and its CPUs")
        if plan.ports_per_instance == 8 and sockets < 2:
            notes.append("one socket: router ports 0-3 and 4-7 (the report's sockets 0 and 1) are on the same "
                         "socket, so cross-socket traffic profiles differ from same-socket ones only in wiring")
        return "; ".join(notes) or None

    def build(self) -> list[GeneratorPort]:
        caps = self.generator.capabilities()
        if not caps.needs_testbed:
            raise DeploymentError("phy_router_phy runs on the embedded testbed only "
                                  f"({self.generator.name or 'this generator'} brings its own ports)")
        if self.make_vnf is None:
            raise DeploymentError("phy_router_phy needs a router VNF (vnf.name: vrouter)")
        plan = router_plan(self.config)
        if not caps.port_streams:
            raise DeploymentError(f"phy_router_phy sends port-to-port streams (traffic profiles); trafficgen "
                                  f"{self.generator.name or '?'} does not take them (capabilities().port_streams)")
        if caps.ports < plan.total_ports:
            raise DeploymentError(f"phy_router_phy needs {plan.total_ports} generator ports "
                                  f"({plan.instances} x {plan.ports_per_instance} router ports); "
                                  f"{self.generator.name or 'the generator'} has {caps.ports}")
        self.plan = plan
        link_bps = float((self.config.get("testbed") or {}).get("link_gbps") or 0) * 1e9 or None
        self.testbed = create_testbed(self.run_id, plan.total_ports, self.resources)
        gen_ports = generator_ports_of(self.testbed, link_bps)
        links = self.testbed.links
        self.router_ports = [RouterPort(g=l.index, iface=l.dut_iface, mac=l.dut_mac, peer_mac=l.tg_mac) for l in links]
        vnfs, figures = [], []
        for k in range(plan.instances):
            mine = self.router_ports[k * plan.ports_per_instance:(k + 1) * plan.ports_per_instance]
            netns = self.testbed.dut_netns
            if k > 0:  # its own namespace (its own routing table), its ports moved there
                netns = naming.netns_name(self.run_id, f"vnf{k}")
                add_namespace(netns, self.resources)
                for p in mine:
                    move_port(self.testbed.dut_netns, p.iface, netns)
            vnf = self.make_vnf(netns)
            if not getattr(vnf, "routing", False):
                raise DeploymentError(f"vnf {vnf.name or type(vnf).__name__} does not route: phy_router_phy needs "
                                      "a router VNF (--vnf vrouter)")
            ports = [SwitchPort(name=p.iface, number=i, spec=PortSpec(kind="physical", name=p.iface, iface=p.iface))
                     for i, p in enumerate(mine)]
            self.resources.register(f"vnf {vnf.name} {k}", vnf.stop)
            vnf.start(ports)
            vnfs.append(vnf)
            self.vnfs = list(vnfs)  # the runner reads their counters per trial and puts them in the CPU plan
            if k == 0:
                self.vnf = vnf
            done = dict(vnf.configure_router(port_router_model(plan, mine)) or {})
            log.info("router %d of %d (%s) on %s: %s", k + 1, plan.instances, vnf.name,
                     ", ".join(p.iface for p in mine), done)
            figures.append(done)
        self.instance_figures = figures
        self.router_figures = {**figures[0], "routers": plan.instances}
        return gen_ports

    def profile(self, profile: TrafficProfile) -> TrafficProfile:
        """Host pairs addressed to the routers as ``traffic.router_profile`` says (one
        stream per port and destination port; see the module doc)."""
        if self.testbed is None or self.plan is None:
            return profile
        streams = router_streams(self.plan, profile.fields, self.router_ports, bidirectional=profile.bidirectional)
        return dataclasses.replace(profile, streams=streams)
