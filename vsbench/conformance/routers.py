"""How the kit gets a routing VNF (``Vnf.routing``, the vrouter) to forward its frames: as
``phy_router_phy`` does, one route each way between the kit's two ports, the generator
ports as next hops, and frames between the two route bases addressed to the router's
ports. ``vsbench conformance --vnf NAME`` uses both for a VNF that routes."""

from __future__ import annotations

import dataclasses
from typing import Any

from vsbench.deployment.routed import EAST_BASE, WEST_BASE, router_model
from vsbench.interfaces.traffic import FlowFields

#: Flow 0 from the west route base to the east one, as phy_router_phy sends it.
ROUTED_FIELDS = dataclasses.replace(FlowFields(), src_ip=str(WEST_BASE), dst_ip=str(EAST_BASE))


def route_to_the_kit(vnf: Any, kit: Any) -> None:
    """A ``VnfTarget.prepare``: the router configuration phy_router_phy gives, between
    the kit's two ports (``kit`` a :class:`~vsbench.conformance.bench.KitTestbed`)."""
    links = kit.testbed.links
    vnf.configure_router(router_model(routes=1, nexthops=1, flows=1, ports=[link.dut_iface for link in links],
                                      peer_macs=[link.tg_mac for link in links]))
