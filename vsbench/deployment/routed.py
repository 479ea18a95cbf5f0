"""Routed topologies: a router VNF between the generator's ports; the DUT routes (L3).

``phy_router_phy``: the embedded testbed's DUT namespace holds a router VNF (the ``vrouter``
plugin, or any VNF that declares :attr:`Vnf.routing`, selected with ``vnf.name``) instead
of a switch, between generator ports 0 and 1. The ``pvp`` family puts routers behind a
switch the same way (:mod:`vsbench.deployment.pvp`), with the addressing of this module.

Addressing (the Intel/Brocade vRouter report's variables are ``dut.routes`` and
``dut.nexthops``):

* the wires between generator port 0, the routers in series and generator port 1 are
  segments ``0 .. V`` (V routers); segment ``s`` is ``198.18.s.0/24``; a router's port
  on its west segment ``s`` is ``198.18.s.254``, on its east segment ``198.18.s.253``;
  generator port ``i`` is ``198.18.i.1``;
* towards the east ``dut.routes`` prefixes from :data:`EAST_BASE`, towards the west as
  many from :data:`WEST_BASE`, each via one next-hop group of ``dut.nexthops`` next hops
  ``198.18.s.1`` ... ``198.18.s.N`` on the segment (ECMP when N > 1), each a permanent
  neighbour with the MAC of whatever is on the other end of that segment -- a generator
  port, or the next router's port -- so nothing is ever ARPed;
* the generator sends host pairs: flow ``k`` of the forward direction goes from
  ``WEST_BASE + k`` to ``EAST_BASE + k`` (the reverse direction the other way), to the
  MAC of the router port it enters. With ``F`` flows and ``R`` routes the prefixes are
  ``/32`` when ``F <= R`` (flow k hits route k) and wide enough for ``ceil(F/R)`` hosts
  otherwise, so every flow has a route and the routes are hit evenly; the route-scaling
  testcase links ``traffic.flows`` to ``dut.routes`` so every route carries traffic.

No switch is built by ``phy_router_phy``: ``vswitch`` of the configuration is not used (nor
checked) and results say ``vswitch: none``.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import logging
import math
from dataclasses import dataclass
from typing import Any, ClassVar, Sequence

from vsbench.deployment.base import Deployment, DeploymentError
from vsbench.deployment.ports import generator_ports_of
from vsbench.interfaces.traffic import GeneratorPort, TrafficProfile
from vsbench.interfaces.vswitch import PortSpec, SwitchPort
from vsbench.system.testbed import Testbed, create_testbed

log = logging.getLogger(__name__)

EAST_BASE = ipaddress.IPv4Address("10.0.0.0")
WEST_BASE = ipaddress.IPv4Address("10.128.0.0")
#: Each direction's prefixes must fit in its half of 10.0.0.0/8.
ADDRESS_SPAN = 1 << 23
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


class PhyRouterPhy(Deployment):
    name: ClassVar[str] = "phy_router_phy"
    description: ClassVar[str] = "PHY-router-PHY: two ports routed by a router VNF in the DUT namespace"
    switching_operations: ClassVar[int] = 1
    generator_port_count: ClassVar[int] = 2
    topology: ClassVar[str] = "PHY-router-PHY"
    requires_vnf: ClassVar[bool] = True
    uses_vswitch: ClassVar[bool] = False

    testbed: Testbed | None = None
    vnf: Any = None
    vnfs: list[Any] = []
    router_figures: dict[str, Any] = {}

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "vnf_count": 1, "router": dict(self.router_figures) or None}

    def build(self) -> list[GeneratorPort]:
        caps = self.generator.capabilities()
        if not caps.needs_testbed:
            raise DeploymentError("phy_router_phy runs on the embedded testbed only "
                                  f"({self.generator.name or 'this generator'} brings its own ports)")
        if self.make_vnf is None:
            raise DeploymentError("phy_router_phy needs a router VNF (vnf.name: vrouter)")
        link_bps = float((self.config.get("testbed") or {}).get("link_gbps") or 0) * 1e9 or None
        self.testbed = create_testbed(self.run_id, self.generator_port_count, self.resources)
        gen_ports = generator_ports_of(self.testbed, link_bps)
        vnf = self.make_vnf(self.testbed.dut_netns)
        if not getattr(vnf, "routing", False):
            raise DeploymentError(f"vnf {vnf.name or type(vnf).__name__} does not route: phy_router_phy needs "
                                  "a router VNF (--vnf vrouter)")
        self.vnf = vnf
        self.vnfs = [vnf]  # the runner reads its counters per trial and puts it in the CPU plan
        ports = [SwitchPort(name=l.dut_iface, number=i, spec=PortSpec(kind="physical", name=l.dut_iface,
                                                                       iface=l.dut_iface))
                 for i, l in enumerate(self.testbed.links)]
        self.resources.register(f"vnf {vnf.name}", vnf.stop)
        vnf.start(ports)
        a, b = self.testbed.links
        hop = RouterHop(vnf, (ports[0].name, ports[1].name), (a.dut_mac, b.dut_mac))
        self.router_figures = configure_chain(self.config, [hop], (a.tg_mac, b.tg_mac))
        return gen_ports

    def profile(self, profile: TrafficProfile) -> TrafficProfile:
        """Host pairs addressed to the router: each direction to the MAC of the router
        port it enters, between the two route bases (see the module doc)."""
        if self.testbed is None:
            return profile
        a, b = self.testbed.links[0], self.testbed.links[1]
        return routed_profile(profile, (a.tg_mac, a.dut_mac), (b.tg_mac, b.dut_mac))
