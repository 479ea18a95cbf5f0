"""phy_router_phy: generator port 0 -> router -> port 1, and back; the DUT routes (L3).

The embedded testbed's DUT namespace holds a router VNF (the ``vrouter`` plugin, selected
with ``vnf.name``) instead of a switch: its two ports get addresses, and frames are
forwarded by longest-prefix match over a route table the deployment describes from
``dut.routes`` and ``dut.nexthops`` (the Intel/Brocade vRouter report's variables):

* port ``i`` of the router is ``198.18.i.254/24``; generator port ``i`` is ``198.18.i.1``;
* towards port 1 ("east") ``dut.routes`` prefixes from :data:`EAST_BASE`, towards port 0
  ("west") as many from :data:`WEST_BASE`, each via one next-hop group of
  ``dut.nexthops`` next hops (``198.18.j.1`` ... ``198.18.j.N``, ECMP when N > 1), each a
  permanent neighbour with the generator port's MAC (nothing is ever ARPed);
* the generator sends host pairs: flow ``k`` of the forward direction goes from
  ``WEST_BASE + k`` to ``EAST_BASE + k`` (the reverse direction the other way), to the
  router port's MAC. With ``F`` flows and ``R`` routes the prefixes are ``/32`` when
  ``F <= R`` (flow k hits route k) and wide enough for ``ceil(F/R)`` hosts otherwise, so
  every flow has a route and the routes are hit evenly; the route-scaling testcase links
  ``traffic.flows`` to ``dut.routes`` so every route carries traffic.

No switch is built: ``vswitch`` of the configuration is not used by this deployment.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import logging
import math
from typing import Any, ClassVar

from vsbench.deployment.base import Deployment, DeploymentError
from vsbench.deployment.ports import generator_ports_of
from vsbench.interfaces.traffic import FlowFields, GeneratorPort, TrafficProfile
from vsbench.interfaces.vswitch import PortSpec, SwitchPort
from vsbench.system.testbed import Testbed, create_testbed

log = logging.getLogger(__name__)

EAST_BASE = ipaddress.IPv4Address("10.0.0.0")
WEST_BASE = ipaddress.IPv4Address("10.128.0.0")
#: Each direction's prefixes must fit in its half of 10.0.0.0/8.
ADDRESS_SPAN = 1 << 23
MAX_NEXTHOPS = 200
ROUTER_HOST = 254


def route_prefixlen(routes: int, flows: int) -> int:
    """The prefix length at which ``routes`` consecutive prefixes cover ``flows`` hosts."""
    hosts = max(1, math.ceil(flows / routes))
    return 32 - (hosts - 1).bit_length()


def router_model(*, routes: int, nexthops: int, flows: int, ports: list[str], peer_macs: list[str]) -> dict[str, Any]:
    """The vrouter configuration (model JSON form) of this deployment."""
    if not 1 <= nexthops <= MAX_NEXTHOPS:
        raise DeploymentError(f"dut.nexthops must be from 1 to {MAX_NEXTHOPS}, got {nexthops}")
    if routes < 1:
        raise DeploymentError(f"dut.routes must be at least 1, got {routes}")
    plen = route_prefixlen(routes, flows)
    if routes << (32 - plen) > ADDRESS_SPAN:
        raise DeploymentError(f"dut.routes={routes} with traffic.flows={flows} does not fit in a /9 per direction")
    groups, ranges = [], []
    for towards, base in ((1, EAST_BASE), (0, WEST_BASE)):
        name = "east" if towards == 1 else "west"
        groups.append({"name": name, "nexthops": [
            {"via": f"198.18.{towards}.{1 + k}", "interface": ports[towards], "mac": peer_macs[towards]}
            for k in range(nexthops)]})
        ranges.append({"start": str(base), "prefixlen": plen, "count": routes, "group": name})
    return {
        "interfaces": [{"name": port, "address": f"198.18.{i}.{ROUTER_HOST}/24"} for i, port in enumerate(ports)],
        "nexthop_groups": groups,
        "route_ranges": ranges,
        "unrouted": "blackhole",
    }


class PhyRouterPhy(Deployment):
    name: ClassVar[str] = "phy_router_phy"
    description: ClassVar[str] = "PHY-router-PHY: two ports routed by a router VNF in the DUT namespace"
    switching_operations: ClassVar[int] = 1
    generator_port_count: ClassVar[int] = 2
    topology: ClassVar[str] = "PHY-router-PHY"

    testbed: Testbed | None = None
    vnf: Any = None

    def _dut(self) -> dict[str, Any]:
        return dict(self.config.get("dut") or {})

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "vnf_count": 1}

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
        if not hasattr(vnf, "apply"):
            raise DeploymentError(f"vnf {vnf.name or type(vnf).__name__} cannot route: phy_router_phy needs "
                                  "a VNF with a router configuration (vnf.name: vrouter)")
        self.vnf = vnf
        ports = [SwitchPort(name=l.dut_iface, number=i, spec=PortSpec(kind="physical", name=l.dut_iface,
                                                                       iface=l.dut_iface))
                 for i, l in enumerate(self.testbed.links)]
        self.resources.register(f"vnf {vnf.name}", vnf.stop)
        vnf.start(ports)
        dut = self._dut()
        flows = int((self.config.get("traffic") or {}).get("flows") or 1)
        model = router_model(routes=int(dut.get("routes") or 1), nexthops=int(dut.get("nexthops") or 1),
                             flows=flows, ports=[p.name for p in ports],
                             peer_macs=[l.tg_mac for l in self.testbed.links])
        figures = vnf.apply(model)
        log.info("phy_router_phy: %s routes %s <-> %s: %s", vnf.name, ports[0].name, ports[1].name, figures)
        return gen_ports

    def profile(self, profile: TrafficProfile) -> TrafficProfile:
        """Host pairs addressed to the router: each direction to the MAC of the router
        port it enters, between the two route bases (see the module doc)."""
        if self.testbed is None:
            return profile
        a, b = self.testbed.links[0], self.testbed.links[1]
        vary = ("src_ip", "dst_ip")
        forward = dataclasses.replace(profile.fields, src_mac=a.tg_mac, dst_mac=a.dut_mac,
                                      src_ip=str(WEST_BASE), dst_ip=str(EAST_BASE), vary=vary)
        reverse = dataclasses.replace(profile.fields, src_mac=b.tg_mac, dst_mac=b.dut_mac,
                                      src_ip=str(EAST_BASE), dst_ip=str(WEST_BASE), vary=("dst_ip", "src_ip"))
        return dataclasses.replace(profile, fields=forward, reverse_fields=reverse)
