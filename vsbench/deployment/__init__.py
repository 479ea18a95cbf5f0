"""Topologies built from plugin instances: clean (integration steps build it), p2p, p2p_learning (RFC 2889), op2p
(VXLAN overlay), phy_router_phy, phy_vnf_phy, pvp, pvvp,
pvpv, pvp_vxlan (pvp behind VXLAN tunnel endpoints), v2v.

Deployments are part of the core (a topology is not a plugin); :func:`get` maps the
testcase's ``deployment`` name to its class.
"""

from __future__ import annotations

from vsbench.deployment.base import Deployment, DeploymentError, Shape, VSwitchFactory
from vsbench.deployment.clean import Clean
from vsbench.deployment.op2p import Op2p
from vsbench.deployment.p2p import P2P
from vsbench.deployment.learning import P2pLearning
from vsbench.deployment.phy_vnf import PhyVnfPhy
from vsbench.deployment.pvp import Pvp, PvpMultiport, Pvpv, Pvvp, VnfChain
from vsbench.deployment.pvp_vxlan import PvpVxlan
from vsbench.deployment.routed import PhyRouterPhy
from vsbench.deployment.v2v import V2v

DEPLOYMENTS: dict[str, type[Deployment]] = {cls.name: cls for cls in (P2P, Op2p, PhyRouterPhy, PhyVnfPhy, Pvp, Pvvp, Pvpv,
                                                                      PvpMultiport, PvpVxlan, V2v, P2pLearning, Clean)}


class UnknownDeploymentError(DeploymentError):
    """The testcase names a deployment vsbench does not have."""


def get(name: str) -> type[Deployment]:
    try:
        return DEPLOYMENTS[name]
    except KeyError:
        known = ", ".join(sorted(DEPLOYMENTS))
        raise UnknownDeploymentError(f"unknown deployment {name!r}; available: {known}") from None


__all__ = ["DEPLOYMENTS", "Deployment", "DeploymentError", "Shape", "UnknownDeploymentError", "VSwitchFactory", "VnfChain",
           "get"]
