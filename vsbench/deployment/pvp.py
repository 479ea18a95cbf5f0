"""The PVP family: PHY-vSwitch-VNF-vSwitch-PHY and its chains, built from plugin instances.

* ``pvp``  -- PHY-VM-PHY of the ONP report: generator port 0 -> switch -> VNF -> switch ->
  port 1, and back; 2 switch passes, 1 VNF.
* ``pvvp`` -- PHY-VM-VM-PHY: two VNFs in series; 3 switch passes, 2 VNFs.
* ``pvpv`` -- two VNFs in parallel, each between its own pair of generator ports (0<->1
  through VNF 0, 2<->3 through VNF 1); each frame makes 2 switch passes and 1 VNF.
* ``pvp_multiport`` -- two pairs of generator ports through one VNF with four ports (its
  0<->1 and 2<->3): the multi-port PVP; 2 switch passes, 1 VNF.

Every hop between two neighbours is one bridge with exactly two ports and one
:meth:`VSwitch.connect` (``vsb<run>br<k>``): a learning switch (the Linux bridge) then can
never short-cut a VNF by a MAC it learned on the far side, and on OvS each pass is the
same port-to-port forwarding p2p measures. The switching-operation count of ONP 2.1
section 5.2 is the number of bridges a frame crosses.

The VNF's ports: **vhost-user** when the switch declares ``supports_vhost_user`` and the VNF
accepts ``vhostuser`` ports (OvS-DPDK and testpmd: ``net_virtio_user``; the socket is the
switch's, or the VNF's when :meth:`Vnf.vhost_user_server` says so), else **a veth pair per
VNF port** inside the DUT namespace -- one end enslaved to the switch, the other handed to
the VNF (testpmd on ``net_af_packet``) -- when the VNF accepts ``physical`` ports.

A **routing VNF** (:attr:`Vnf.routing`: the ``vrouter``, whose kernel forwards) gets a
network namespace of its own, ``vsb-<run>-vnf<k>`` (as a VM has its own kernel: routers in
series must not share one routing table, nor a router the switch's namespace), and its
veth ends are moved into it; it is configured after it started with the addressing of
:mod:`vsbench.deployment.routed` (routers in series are chained segment by segment, each
next hop the neighbouring router's port) and the generator's frames are addressed to the
first router's west port and the last router's east port. One lane only (``pvp``,
``pvvp``): parallel lanes would need per-lane addressing that one traffic profile
cannot carry.

The deployment keeps each direction's path (:attr:`VnfChain.paths`) so the trial runner can
cross-check the VNFs' port counters with the generator's and attribute loss to a stage.
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar, Mapping

from vsbench.deployment.base import Deployment, DeploymentError
from vsbench.deployment.p2p import dut_port_specs, generator_ports_from_settings
from vsbench.deployment.ports import generator_ports_of
from vsbench.deployment.routed import RouterHop, configure_chain, routed_profile
from vsbench.interfaces.traffic import GeneratorPort, TrafficProfile
from vsbench.interfaces.vnf import Vnf
from vsbench.interfaces.vswitch import PortSpec, SwitchPort
from vsbench.measurement.stages import TrafficPath, chain_paths
from vsbench.system import naming
from vsbench.system.testbed import (
    DUT_ROLE,
    Testbed,
    add_internal_pair,
    add_namespace,
    create_testbed,
    move_port,
    port_mac,
)

log = logging.getLogger(__name__)

#: Role letters of the VNF-side veth ends and the switch-side ones (interface names).
VNF_END_ROLE, SWITCH_END_ROLE, VHOST_ROLE = "v", "s", "u"
#: MACs of the veth ends: DUT-role MACs numbered above the testbed's own ports.
SWITCH_END_MAC_BASE, VNF_END_MAC_BASE = 0x40, 0x80
#: Namespace role of a routing VNF's own namespace (``vsb-<run>-vnf<k>``).
VNF_NETNS_ROLE = "vnf"


class VnfChain(Deployment):
    """``lanes`` independent pairs of generator ports, each through ``vnfs_per_lane`` VNFs
    in series; subclasses set the two numbers."""

    lanes: ClassVar[int] = 1
    vnfs_per_lane: ClassVar[int] = 1
    #: Every lane goes through the same VNF(s), each lane on its own pair of the VNF's
    #: ports (a VNF with 2 x lanes ports), instead of each lane having its own VNFs.
    shared_vnfs: ClassVar[bool] = False
    topology: ClassVar[str] = ""
    requires_vnf: ClassVar[bool] = True

    testbed: Testbed | None = None

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.vnfs: list[Vnf] = []
        self.paths: list[TrafficPath] = chain_paths(
            [(2 * lane, 2 * lane + 1) for lane in range(self.lanes)], self.vnfs_per_lane, shared=self.shared_vnfs)
        #: ``vhostuser`` or ``veth``: how the VNFs are attached (set by :meth:`build`).
        self.vnf_port_kind: str | None = None
        self._bridges = 0
        #: Routers (routing VNFs) in series, west to east, and the generator ports' MACs
        #: at the two ends; empty for forwarding VNFs.
        self.router_hops: list[RouterHop] = []
        self._end_macs: tuple[str, str] | None = None
        #: What configuring the routers cost (results.json's ``topology.router``).
        self.router_figures: dict[str, Any] = {}

    @classmethod
    def check_config(cls, config: Mapping[str, Any], vnf: Any = None) -> None:
        """A chain of routing VNFs has two ports each: phy_router_phy's router settings
        (profiles, next-hop modes, instances) are refused rather than ignored."""
        if not getattr(vnf, "routing", False):
            return
        dut = config.get("dut") or {}
        for key, value, default in (("traffic.router_profile", (config.get("traffic") or {}).get("router_profile"), 0),
                                    ("dut.nexthop_mode", dut.get("nexthop_mode"), "ecmp"),
                                    ("dut.router_instances", dut.get("router_instances"), 1)):
            if value not in (None, default):
                raise DeploymentError(f"{cls.name}: {key} {value} is phy_router_phy's (a router between the "
                                      f"generator's ports); a chain of routers behind a switch has two ports each")

    @classmethod
    def vnf_count(cls) -> int:
        return cls.vnfs_per_lane if cls.shared_vnfs else cls.lanes * cls.vnfs_per_lane

    def _vnf_of(self, lane: int, i: int) -> int:
        """The number of the ``i``-th VNF in series on ``lane``."""
        return i if self.shared_vnfs else lane * self.vnfs_per_lane + i

    def describe(self) -> dict[str, Any]:
        """What results.json records about the topology."""
        return {"topology": self.topology, "vnf_count": self.vnf_count(), "lanes": self.lanes,
                "vnfs_per_lane": self.vnfs_per_lane, "shared_vnfs": self.shared_vnfs, "switching_operations": self.switching_operations,
                "vnf_port_kind": self.vnf_port_kind, "paths": [p.to_dict() for p in self.paths],
                **({"router": dict(self.router_figures)} if self.router_figures else {})}

    def profile(self, profile: TrafficProfile) -> TrafficProfile:
        """The profile as sent, and every VNF told about it first (:meth:`Vnf.configure`:
        l3fwd builds its routes from the flows). Through routers the host pairs are
        addressed to the first router's west port and the last one's east port
        (:func:`routed_profile`); otherwise the profile is unchanged. Each lane sends the
        same profile, and VNFs in series see the same addresses."""
        if self.router_hops and self._end_macs is not None:
            profile = routed_profile(profile, (self._end_macs[0], self.router_hops[0].macs[0]),
                                     (self._end_macs[1], self.router_hops[-1].macs[1]))
        for vnf in self.vnfs:
            vnf.configure(profile)
        return profile

    # -- building ---------------------------------------------------------------------------

    def _generator_ports(self) -> tuple[list[GeneratorPort], list[PortSpec], str | None]:
        caps = self.generator.capabilities()
        if caps.ports < self.generator_port_count:
            raise DeploymentError(f"{self.name} needs {self.generator_port_count} generator ports; "
                                  f"{self.generator.name or 'the generator'} has {caps.ports}")
        link_bps = float((self.config.get("testbed") or {}).get("link_gbps") or 0) * 1e9 or None
        if caps.needs_testbed:
            self.testbed = create_testbed(self.run_id, self.generator_port_count, self.resources)
            specs = [PortSpec(kind="physical", name=link.dut_iface, iface=link.dut_iface)
                     for link in self.testbed.links]
            return generator_ports_of(self.testbed, link_bps), specs, self.testbed.dut_netns
        gen_ports = generator_ports_from_settings(self.generator.settings, self.generator_port_count, link_bps)
        return gen_ports, dut_port_specs(self.config, self.run_id, self.generator_port_count), None

    def _port_kind(self, vnf: Vnf, dut_netns: str | None) -> str:
        switch_vhost = bool(getattr(self.vswitch, "supports_vhost_user", False))
        kinds = tuple(getattr(vnf, "port_kinds", ()) or ())
        if getattr(vnf, "routing", False):  # its ports go into its namespace: kernel interfaces only
            if "physical" not in kinds:
                raise DeploymentError(f"{self.name}: routing vnf {vnf.name} takes no kernel interfaces; "
                                      "a router is wired with veth pairs into its own namespace")
            return "veth"
        if switch_vhost and "vhostuser" in kinds:
            return "vhostuser"
        if "physical" in kinds:
            if dut_netns is None:
                raise DeploymentError(f"{self.name}: vswitch {self.vswitch.name} has no vhost-user ports and veth "  # type: ignore[union-attr]
                                      "pairs to the VNF exist only on the embedded testbed")
            return "veth"
        raise DeploymentError(f"{self.name}: vnf {vnf.name} attaches to {', '.join(kinds) or 'no'} ports and "
                              f"vswitch {self.vswitch.name} offers "  # type: ignore[union-attr]
                              f"{'vhost-user and ' if switch_vhost else ''}kernel interfaces")

    def _vnf_port_spec(self, kind: str, index: int, vnf_server: bool, dut_netns: str | None,
                       peer_mac: str | None, vnf_netns: str | None = None) -> tuple[PortSpec, PortSpec]:
        """(the switch's port spec, the VNF's port spec) of VNF port number ``index``
        (counted over all VNFs). For veth the pair is created here, its removal registered;
        with ``vnf_netns`` (a routing VNF's own namespace) the VNF's end is moved there."""
        options = {"peer_mac": peer_mac} if peer_mac else {}
        if kind == "vhostuser":
            spec = PortSpec(kind="vhostuser", name=naming.iface_name(self.run_id, VHOST_ROLE, index),
                            options={"vhost_server": "vnf" if vnf_server else "switch", **options})
            return spec, spec
        switch_end = naming.iface_name(self.run_id, SWITCH_END_ROLE, index)
        vnf_end = naming.iface_name(self.run_id, VNF_END_ROLE, index)
        vnf_mac = port_mac(self.run_id, DUT_ROLE, VNF_END_MAC_BASE + index)
        options["vnf_mac"] = vnf_mac
        add_internal_pair(dut_netns, (switch_end, vnf_end),  # type: ignore[arg-type]
                          (port_mac(self.run_id, DUT_ROLE, SWITCH_END_MAC_BASE + index), vnf_mac),
                          self.resources)
        if vnf_netns is not None:
            move_port(dut_netns, vnf_end, vnf_netns)  # type: ignore[arg-type]
        return (PortSpec(kind="physical", name=switch_end, iface=switch_end),
                PortSpec(kind="physical", name=vnf_end, iface=vnf_end, options=options))

    def _router_namespaces(self, dut_netns: str | None) -> list[str]:
        """One namespace per routing VNF (registered for removal); refused where routers
        cannot be addressed or wired (module doc)."""
        if dut_netns is None:
            raise DeploymentError(f"{self.name}: a routing VNF gets veth ports into a namespace of its own, "
                                  "which exists only on the embedded testbed")
        if self.lanes != 1:
            raise DeploymentError(f"{self.name}: a routing VNF runs in one lane only (pvp, pvvp): "
                                  f"{self.lanes} lanes would need addressing per lane")
        names = [naming.netns_name(self.run_id, f"{VNF_NETNS_ROLE}{k}") for k in range(self.vnf_count())]
        for name in names:
            add_namespace(name, self.resources)
        return names

    def _bridge(self) -> str:
        bridge = naming.iface_name(self.run_id, "br", self._bridges)
        self._bridges += 1
        self.vswitch.add_bridge(bridge)  # type: ignore[union-attr]
        return bridge

    def build(self) -> list[GeneratorPort]:
        if self.make_vnf is None:
            raise DeploymentError(f"{self.name} needs a VNF (--vnf testpmd)")
        gen_ports, phy_specs, dut_netns = self._generator_ports()
        vswitch = self.make_vswitch(dut_netns)
        self.vswitch = vswitch
        self.resources.register(f"vswitch {vswitch.name}", vswitch.stop)
        vswitch.start()
        first = self.make_vnf(dut_netns)
        routing = bool(getattr(first, "routing", False))
        self.check_config(self.config, first)  # the preflight did too, with the VNF's class
        vnf_namespaces: list[str | None] = [None] * self.vnf_count()
        if routing:
            vnf_namespaces = self._router_namespaces(dut_netns)
            vnfs = [self.make_vnf(ns) for ns in vnf_namespaces]  # ``first`` never started: nothing to undo
        else:
            vnfs = [first] + [self.make_vnf(dut_netns) for _ in range(self.vnf_count() - 1)]
        self.vnfs = vnfs
        kind = self._port_kind(vnfs[0], dut_netns)
        self.vnf_port_kind = kind
        vnf_ports: list[list[SwitchPort]] = [[] for _ in vnfs]
        segments: list[tuple[str, SwitchPort, SwitchPort]] = []
        for lane in range(self.lanes):
            a, b = 2 * lane, 2 * lane + 1
            bridge = self._bridge()
            previous = vswitch.add_port(bridge, phy_specs[a])
            for i in range(self.vnfs_per_lane):
                number = self._vnf_of(lane, i)
                vnf = vnfs[number]
                server = bool(vnf.vhost_user_server())
                # the VNF's port 2k faces generator port a, 2k+1 faces b (paths of measurement.stages)
                first = 2 * (lane * self.vnfs_per_lane + i)  # interface numbers: unique over all VNF ports
                specs = [self._vnf_port_spec(kind, first + j, server, dut_netns,
                                             gen_ports[a if j == 0 else b].mac, vnf_namespaces[number])
                         for j in (0, 1)]
                inbound = vswitch.add_port(bridge, specs[0][0])
                segments.append((bridge, previous, inbound))
                bridge = self._bridge()
                outbound = vswitch.add_port(bridge, specs[1][0])
                previous = outbound
                vnf_ports[number] += [_for_vnf(inbound, specs[0][1]), _for_vnf(outbound, specs[1][1])]
            last = vswitch.add_port(bridge, phy_specs[b])
            segments.append((bridge, previous, last))
        for bridge, x, y in segments:
            vswitch.connect(bridge, x, y)
        for number, (vnf, ports) in enumerate(zip(vnfs, vnf_ports)):
            self.resources.register(f"vnf {vnf.name} {number}", vnf.stop)
            vnf.start(ports)
        if routing:
            self.router_hops = [RouterHop(vnf, (ports[0].name, ports[1].name),
                                          tuple(p.spec.options.get("vnf_mac") for p in ports[:2]))  # type: ignore[arg-type]
                                for vnf, ports in zip(vnfs, vnf_ports)]
            self._end_macs = (str(gen_ports[0].mac), str(gen_ports[1].mac))
            self.router_figures = configure_chain(self.config, self.router_hops, self._end_macs)
        log.info("%s: %s, %d VNF(s) of %s on %s ports, %d bridges", self.name, vswitch.name, len(vnfs),
                 vnfs[0].name, kind, self._bridges)
        return gen_ports


def _for_vnf(port: SwitchPort, vnf_spec: PortSpec) -> SwitchPort:
    """The port as the VNF sees it: the switch's port (its vhost-user socket path filled in
    by the switch) or, for veth, the VNF's own end of the pair."""
    if port.spec.kind == "vhostuser":
        return port
    return SwitchPort(name=vnf_spec.name, number=port.number, spec=vnf_spec)


class Pvp(VnfChain):
    name: ClassVar[str] = "pvp"
    description: ClassVar[str] = "PHY-vSwitch-VNF-vSwitch-PHY: one VNF between two switch passes"
    topology: ClassVar[str] = "PHY-VNF-PHY"
    switching_operations: ClassVar[int] = 2
    generator_port_count: ClassVar[int] = 2
    lanes: ClassVar[int] = 1
    vnfs_per_lane: ClassVar[int] = 1


class Pvvp(VnfChain):
    name: ClassVar[str] = "pvvp"
    description: ClassVar[str] = "PHY-vSwitch-VNF-vSwitch-VNF-vSwitch-PHY: two VNFs in series"
    topology: ClassVar[str] = "PHY-VNF-VNF-PHY"
    switching_operations: ClassVar[int] = 3
    generator_port_count: ClassVar[int] = 2
    lanes: ClassVar[int] = 1
    vnfs_per_lane: ClassVar[int] = 2


class Pvpv(VnfChain):
    name: ClassVar[str] = "pvpv"
    description: ClassVar[str] = "two PVP lanes in parallel: ports 0<->1 through VNF 0, 2<->3 through VNF 1"
    topology: ClassVar[str] = "2 x PHY-VNF-PHY in parallel"
    switching_operations: ClassVar[int] = 2
    generator_port_count: ClassVar[int] = 4
    lanes: ClassVar[int] = 2
    vnfs_per_lane: ClassVar[int] = 1


class PvpMultiport(VnfChain):
    """The multi-port PVP of VSPERF's bonding-style tests and ONP's 4-port switching: two
    pairs of generator ports through one VNF with four ports (0<->1, 2<->3)."""

    name: ClassVar[str] = "pvp_multiport"
    description: ClassVar[str] = "PHY-vSwitch-VNF-vSwitch-PHY on two port pairs through one 4-port VNF"
    topology: ClassVar[str] = "2 x PHY-VNF-PHY through one VNF"
    switching_operations: ClassVar[int] = 2
    generator_port_count: ClassVar[int] = 4
    lanes: ClassVar[int] = 2
    vnfs_per_lane: ClassVar[int] = 1
    shared_vnfs: ClassVar[bool] = True
