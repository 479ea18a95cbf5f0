"""``phy_vnf_phy``: a forwarding VNF straight on the generator's links, no switch.

The baseline of ONP 2.1 section 7.1 (DPDK l3fwd on the host's ports, no vSwitch; seed id
000/T7-2) and what VSPERF ran with ``--vswitch none`` (its ``PKTFWD``, host testpmd,
between the physical ports): the embedded testbed's DUT ends of the veth pairs are handed
to the VNF (l3fwd or testpmd on ``net_af_packet``) inside the DUT namespace, and nothing
else forwards. ``vswitch`` is neither loaded nor checked; results say ``vswitch: none``
and 0 switching operations.

``topology.port_pairs: N`` uses 2N generator ports, pairs ``2k <-> 2k+1``. A VNF that
forwards any number of pairs in one process (testpmd: ``--port-topology=paired``) gets
all 2N ports, so its ``cores`` serve every port as the report's single l3fwd did; a VNF
that forwards fewer (:attr:`Vnf.max_port_pairs`: l3fwd routes by destination only, and
every pair carries the same flows) runs one instance per group of pairs, each with its
own lcores (``vnf.l3fwd.lcore_cpus`` places them) and in a namespace of its own
(``vsb-<run>-vnf<k>``, its links' DUT ends moved there: DPDK's ``net_af_packet`` fanout
groups are per namespace, and two processes' can collide).

On a lab's cables (``testbed.generator_ifaces`` and ``testbed.dut_ports: [{pci: ...}]``)
the VNF drives the PCI NICs (testpmd: ``bind_driver`` binds them for the run) and the
embedded generator is lent the NICs cabled to them (:mod:`vsbench.system.cabled_testbed`).

A routing VNF (the vrouter) is refused: ``phy_router_phy`` is its deployment (it needs
addresses and routes, which this one does not give).
"""

from __future__ import annotations

import logging
import math
from typing import Any, ClassVar, Mapping

from vsbench.deployment.base import Deployment, DeploymentError, Shape
from vsbench.deployment.p2p import cabled_ifaces, dut_port_specs, port_pairs_of
from vsbench.deployment.ports import generator_ports_of
from vsbench.interfaces.traffic import GeneratorPort, TrafficProfile
from vsbench.interfaces.vnf import Vnf
from vsbench.interfaces.vswitch import PortSpec, SwitchPort
from vsbench.measurement.stages import TrafficPath
from vsbench.system import naming
from vsbench.system.cabled_testbed import create_cabled_testbed
from vsbench.system.testbed import Testbed, TestbedLink, add_namespace, create_testbed, move_port

log = logging.getLogger(__name__)

#: Namespace role of a VNF instance's own namespace (``vsb-<run>-vnf<k>``), as in pvp.
VNF_NETNS_ROLE = "vnf"


class PhyVnfPhy(Deployment):
    name: ClassVar[str] = "phy_vnf_phy"
    description: ClassVar[str] = "PHY-VNF-PHY without a switch: a forwarding VNF on the generator's links"
    switching_operations = 0
    generator_port_count = 2
    topology: ClassVar[str] = "PHY-VNF-PHY (no vSwitch)"
    requires_vnf: ClassVar[bool] = True
    uses_vswitch: ClassVar[bool] = False
    topology_keys: ClassVar[tuple[str, ...]] = ("port_pairs",)

    testbed: Testbed | None = None

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.vnfs: list[Vnf] = []
        #: Port pairs each VNF instance forwards (set by :meth:`build`).
        self.pairs_per_vnf = 0
        #: No switch stages to attribute loss to: the trial runner leaves the directions
        #: unattributed and records each VNF's own counters.
        self.paths: list[TrafficPath] = []

    @classmethod
    def shape(cls, config: Mapping[str, Any]) -> Shape:
        cls.topology_settings(config)
        return Shape(2 * port_pairs_of(config, cls.name), 0)

    def describe(self) -> dict[str, Any]:
        pairs = self.generator_port_count // 2
        return {"topology": self.topology, "vnf_count": len(self.vnfs), "port_pairs": pairs,
                "switching_operations": 0, "vnf_port_kind": "physical", "pairs_per_vnf": self.pairs_per_vnf}

    def profile(self, profile: TrafficProfile) -> TrafficProfile:
        """The profile unchanged; every VNF told about it first (l3fwd's routes)."""
        for vnf in self.vnfs:
            vnf.configure(profile)
        return profile

    def _links_of(self, number: int) -> tuple[TestbedLink, ...]:
        """The testbed links VNF instance ``number`` forwards between."""
        assert self.testbed is not None
        return self.testbed.links[2 * number * self.pairs_per_vnf:2 * (number + 1) * self.pairs_per_vnf]

    def build(self) -> list[GeneratorPort]:
        caps = self.generator.capabilities()
        if not caps.needs_testbed:
            raise DeploymentError(f"{self.name} runs on the embedded testbed only "
                                  f"({self.generator.name or 'this generator'} brings its own ports)")
        if self.make_vnf is None:
            raise DeploymentError(f"{self.name} needs a forwarding VNF (--vnf l3fwd or --vnf testpmd)")
        self.check_generator_ports(caps)
        link_bps = float((self.config.get("testbed") or {}).get("link_gbps") or 0) * 1e9 or None
        pairs = self.generator_port_count // 2
        cabled = bool(cabled_ifaces(self.config))
        if cabled:
            # a lab's cables: the generator on lent NICs, the VNF on the PCI NICs at their other ends
            specs = dut_port_specs(self.config, self.run_id, self.generator_port_count, required=True)
            self.testbed = create_cabled_testbed(self.run_id, cabled_ifaces(self.config, self.generator_port_count),
                                                 self.resources)
            vnf_netns = None  # PCI devices belong to no namespace; the VNF runs in the host's
        else:
            self.testbed = create_testbed(self.run_id, self.generator_port_count, self.resources)
            specs = [PortSpec(kind="physical", name=link.dut_iface, iface=link.dut_iface) for link in self.testbed.links]
            vnf_netns = self.testbed.dut_netns
        gen_ports = generator_ports_of(self.testbed, link_bps)
        first = self.make_vnf(vnf_netns)
        name = first.name or type(first).__name__
        if getattr(first, "routing", False):
            raise DeploymentError(f"vnf {name} routes: its deployment is phy_router_phy (addresses and routes)")
        if "physical" not in tuple(getattr(first, "port_kinds", ()) or ()):
            raise DeploymentError(f"vnf {name} takes no kernel interfaces; {self.name} hands it the testbed's links")
        if cabled and not getattr(first, "pci_ports", False):
            raise DeploymentError(f"vnf {name} cannot drive PCI ports (testbed.dut_ports pci); testpmd can")
        limit = getattr(first, "max_port_pairs", None)
        self.pairs_per_vnf = pairs if limit is None else max(1, min(int(limit), pairs))
        instances = math.ceil(pairs / self.pairs_per_vnf)
        if instances == 1:
            vnfs = [first]
        elif cabled:
            vnfs = [self.make_vnf(None) for _ in range(instances)]  # ``first`` never started
        else:
            # each its own namespace, its links' DUT ends moved there: net_af_packet's fanout
            # groups are per namespace and two processes' can collide (pvp._vnf_namespaces)
            namespaces = [naming.netns_name(self.run_id, f"{VNF_NETNS_ROLE}{k}") for k in range(instances)]
            for k, namespace in enumerate(namespaces):
                add_namespace(namespace, self.resources)
                for link in self._links_of(k):
                    move_port(self.testbed.dut_netns, link.dut_iface, namespace)
            vnfs = [self.make_vnf(namespace) for namespace in namespaces]  # ``first`` never started
        self.vnfs = vnfs  # the runner reads their counters per trial and puts them in the CPU plan
        for number, vnf in enumerate(vnfs):
            mine = self._links_of(number)
            ports = []
            for i, link in enumerate(mine):
                spec = specs[link.index]
                # peer_mac: the generator port each faces (l3fwd addresses what leaves it
                # there); vnf_mac: the MAC the link's DUT end already has (a PCI NIC: its own)
                options = {"peer_mac": link.tg_mac, **({"vnf_mac": link.dut_mac} if link.dut_mac else {})}
                ports.append(SwitchPort(name=spec.name, number=i, spec=PortSpec(
                    kind="physical", name=spec.name, iface=spec.iface, pci=spec.pci, options=options)))
            self.resources.register(f"vnf {vnf.name} {number}", vnf.stop)
            vnf.start(ports)
            log.info("%s: %s %d forwards %s", self.name, name, number, ", ".join(p.name for p in ports))
        return gen_ports


#: ``vswitch.name`` that asks for no switch at all (``--vswitch none``, as in VSPERF).
NO_VSWITCH = "none"
#: What forwards between the ports when ``--vswitch none`` runs a p2p testcase and no VNF
#: is chosen: testpmd, VSPERF's default ``PKTFWD``.
DEFAULT_FORWARDER = "testpmd"


def without_vswitch(deployment: type[Deployment], vnf: str | None) -> tuple[str, str | None]:
    """The ``(deployment, vnf.name)`` a plan with ``vswitch.name: none`` runs, as VSPERF's
    ``--vswitch none`` did: a p2p testcase becomes ``phy_vnf_phy`` with the chosen VNF (or
    testpmd) forwarding between the ports; a deployment without a switch stays as it is;
    one that needs a switch (pvp..., op2p) is refused -- VSPERF ran PVP without a switch by
    PCI passthrough to a VM, which vsbench does not do."""
    from vsbench.deployment.p2p import P2P

    if not deployment.uses_vswitch:
        return deployment.name, vnf
    if deployment is P2P:
        return PhyVnfPhy.name, vnf if vnf not in (None, "", "none") else DEFAULT_FORWARDER
    raise DeploymentError(f"--vswitch none: deployment {deployment.name} needs a switch (VSPERF ran it with PCI "
                          "passthrough to a VM, which vsbench does not do); a p2p testcase runs without one, "
                          f"its ports handed to a forwarding VNF ({PhyVnfPhy.name})")
