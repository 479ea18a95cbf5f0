"""The PVP family: PHY-vSwitch-VNF-vSwitch-PHY and its chains, built from plugin instances.

* ``pvp``  -- PHY-VM-PHY of the ONP report: generator port 0 -> switch -> VNF -> switch ->
  port 1, and back; 2 switch passes, 1 VNF.
* ``pvvp`` -- PHY-VM-VM-PHY: two VNFs in series; 3 switch passes, 2 VNFs.
* ``pvpv`` -- two VNFs in parallel, each between its own pair of generator ports (0<->1
  through VNF 0, 2<->3 through VNF 1); each frame makes 2 switch passes and 1 VNF.
* ``pvp_multiport`` -- two pairs of generator ports through one VNF with four ports (its
  0<->1 and 2<->3): the multi-port PVP; 2 switch passes, 1 VNF.

Those are the defaults of one class, :class:`VnfChain`, whose shape the ``topology``
section sets (null keeps the deployment's own): ``topology.lanes`` parallel lanes, each
between its own pair of generator ports (``2k <-> 2k+1``), ``topology.vnfs_per_lane`` VNFs
in series in each, or ``topology.lane_vnfs`` one count per lane for lanes of different
lengths (``[1, 2]``: a PHY-VNF-PHY lane beside a PHY-VNF-VNF-PHY one, the VM-to-VM traffic
of ONP 2.1's 40 Gbps scenario 2). A frame of a lane with ``n`` VNFs crosses ``n + 1``
bridges; with lanes of different lengths :attr:`Deployment.switching_operations` is the
mean over the lanes, each lane being offered the same load. The shape lives in instance
attributes (``lanes``, ``vnfs_per_lane``, ``shared_vnfs``, :meth:`VnfChain.lane_lengths`),
read when the deployment is built.

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

Several VNFs on veth ends each get a namespace of their own (``vsb-<run>-vnf<k>``, their
ends moved into it): DPDK's ``net_af_packet`` fanout groups are per namespace and two
processes' can collide (:meth:`VnfChain._vnf_namespaces`).

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
from typing import Any, ClassVar, Mapping, Sequence

from vsbench.deployment.base import Deployment, DeploymentError, Shape
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


def chain_name(lengths: Sequence[int], shared: bool = False) -> str:
    """The shape in the seed reports' words: ``PHY-VNF-VNF-PHY``, ``2 x PHY-VNF-PHY in
    parallel``, ``PHY-VNF-PHY + PHY-VNF-VNF-PHY in parallel``, ``2 x PHY-VNF-PHY through
    one VNF``."""
    def chain(n: int) -> str:
        return "PHY-" + "VNF-" * n + "PHY"
    if len(lengths) == 1:
        return chain(lengths[0])
    if shared:
        return f"{len(lengths)} x {chain(lengths[0])} through {'one VNF' if lengths[0] == 1 else f'{lengths[0]} VNFs'}"
    if len(set(lengths)) == 1:
        return f"{len(lengths)} x {chain(lengths[0])} in parallel"
    return " + ".join(chain(n) for n in lengths) + " in parallel"


def mean_switching_operations(lengths: Sequence[int]) -> int | float:
    """Bridges a frame crosses (VNFs + 1), averaged over lanes offered the same load; an
    integer when every lane is as long."""
    total = sum(n + 1 for n in lengths)
    return total // len(lengths) if total % len(lengths) == 0 else total / len(lengths)


def _count(value: Any, key: str, deployment: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise DeploymentError(f"topology.{key} must be an integer >= 1 for {deployment}, got {value!r}")
    return value


class VnfChain(Deployment):
    """``lanes`` independent pairs of generator ports, each through ``vnfs_per_lane`` VNFs
    in series (or one count per lane: :meth:`lane_lengths`). Subclasses set the defaults;
    the ``topology`` section overrides them (module doc), and instances hold the result."""

    lanes: int = 1
    vnfs_per_lane: int = 1
    #: Every lane goes through the same VNF(s), each lane on its own pair of the VNF's
    #: ports (a VNF with 2 x lanes ports), instead of each lane having its own VNFs.
    shared_vnfs: bool = False
    topology: ClassVar[str] = ""
    requires_vnf: ClassVar[bool] = True
    topology_keys: ClassVar[tuple[str, ...]] = ("lanes", "vnfs_per_lane", "lane_vnfs")

    testbed: Testbed | None = None

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.lanes, self.vnfs_per_lane, self._lane_vnfs = self.chain_shape(self.config)
        self.vnfs: list[Vnf] = []
        self.paths: list[TrafficPath] = []
        self._derive()
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
    def chain_shape(cls, config: Any) -> tuple[int, int, tuple[int, ...] | None]:
        """``(lanes, vnfs_per_lane, lane_vnfs)`` as ``config``'s ``topology`` section asks
        (the class's own where it says null); ``lane_vnfs`` is None when every lane has
        ``vnfs_per_lane`` VNFs, else one count per lane (``vnfs_per_lane`` is then the
        longest). Raises :class:`DeploymentError` naming the key."""
        settings = cls.topology_settings(config)
        lanes, per_lane, mixed = settings["lanes"], settings["vnfs_per_lane"], settings["lane_vnfs"]
        lanes = cls.lanes if lanes is None else _count(lanes, "lanes", cls.name)
        per_lane = None if per_lane is None else _count(per_lane, "vnfs_per_lane", cls.name)
        if mixed is None:
            return lanes, cls.vnfs_per_lane if per_lane is None else per_lane, None
        if not isinstance(mixed, (list, tuple)) or not mixed:
            raise DeploymentError(f"topology.lane_vnfs must be a list of VNF counts, one per lane, got {mixed!r}")
        counts = tuple(_count(n, "lane_vnfs", cls.name) for n in mixed)
        if settings["lanes"] is not None and lanes != len(counts):
            raise DeploymentError(f"topology.lane_vnfs has {len(counts)} lanes but topology.lanes is {lanes}")
        if per_lane is not None:
            raise DeploymentError("set topology.vnfs_per_lane (every lane alike) or topology.lane_vnfs "
                                  "(one count per lane), not both")
        if len(set(counts)) == 1:
            return len(counts), counts[0], None
        if cls.shared_vnfs:
            raise DeploymentError(f"{cls.name}: every lane crosses the same VNFs, so topology.lane_vnfs "
                                  f"{list(counts)} cannot differ between lanes")
        return len(counts), max(counts), counts

    @classmethod
    def shape(cls, config: Any) -> Shape:
        lanes, per_lane, mixed = cls.chain_shape(config)
        return Shape(2 * lanes, mean_switching_operations(mixed or (per_lane,) * lanes))

    def lane_lengths(self) -> tuple[int, ...]:
        """VNFs in series in each lane."""
        if self._lane_vnfs is not None and len(self._lane_vnfs) == self.lanes:
            return self._lane_vnfs
        return (self.vnfs_per_lane,) * self.lanes

    def _derive(self) -> None:
        """What follows from the shape attributes: ports, switching operations, paths
        (again at :meth:`build`, should a subclass have set the attributes after this)."""
        lengths = self.lane_lengths()
        self.generator_port_count = 2 * self.lanes
        self.switching_operations = mean_switching_operations(lengths)
        self.paths = chain_paths([(2 * lane, 2 * lane + 1) for lane in range(self.lanes)],
                                 lengths, shared=self.shared_vnfs)

    def vnf_count(self) -> int:
        return self.vnfs_per_lane if self.shared_vnfs else sum(self.lane_lengths())

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

    def _vnf_of(self, lane: int, i: int) -> int:
        """The number of the ``i``-th VNF in series on ``lane``."""
        return i if self.shared_vnfs else sum(self.lane_lengths()[:lane]) + i

    def topology_name(self) -> str:
        """The class's own ``topology`` for its default shape, else the configured one's."""
        lengths = self.lane_lengths()
        default = (type(self).lanes, (type(self).vnfs_per_lane,) * type(self).lanes)
        if self.topology and (self.lanes, lengths) == default:
            return self.topology
        return chain_name(lengths, self.shared_vnfs)

    def describe(self) -> dict[str, Any]:
        """What results.json records about the topology."""
        lengths = self.lane_lengths()
        return {"topology": self.topology_name(), "vnf_count": self.vnf_count(), "lanes": self.lanes,
                "port_pairs": self.lanes,
                "vnfs_per_lane": self.vnfs_per_lane,
                **({"lane_vnfs": list(lengths)} if len(set(lengths)) > 1 else {}),
                "shared_vnfs": self.shared_vnfs, "switching_operations": self.switching_operations,
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
        self.check_generator_ports(caps)
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

    def _vnf_namespaces(self, dut_netns: str | None, routing: bool) -> list[str]:
        """One namespace per VNF (registered for removal): a routing VNF's kernel is its own
        (module doc), and VNFs on veth ends each get theirs when there are several, because
        DPDK's net_af_packet names its PACKET_FANOUT group after its pid XOR the interface
        index, and groups are per namespace: two processes' ports can draw the same number
        there, and the second's port then fails to come up (seen: a pvp lane that carried
        nothing). Refused where routers cannot be addressed or wired."""
        if dut_netns is None:
            raise DeploymentError(f"{self.name}: a routing VNF gets veth ports into a namespace of its own, "
                                  "which exists only on the embedded testbed")
        if routing and self.lanes != 1:
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
        self._derive()
        lengths = self.lane_lengths()
        gen_ports, phy_specs, dut_netns = self._generator_ports()
        vswitch = self.make_vswitch(dut_netns)
        self.vswitch = vswitch
        self.resources.register(f"vswitch {vswitch.name}", vswitch.stop)
        vswitch.start()
        first = self.make_vnf(dut_netns)
        routing = bool(getattr(first, "routing", False))
        self.check_config(self.config, first)  # the preflight did too, with the VNF's class
        limit = getattr(first, "max_port_pairs", None)
        if self.shared_vnfs and limit is not None and limit < self.lanes:
            raise DeploymentError(f"{self.name}: every lane crosses the same VNF, and vnf {first.name} forwards "
                                  f"{limit} port pair(s), not {self.lanes} (use --vnf testpmd, or pvp with "
                                  "topology.lanes for a VNF per lane)")
        kind = self._port_kind(first, dut_netns)
        self.vnf_port_kind = kind
        vnf_namespaces: list[str | None] = [None] * self.vnf_count()
        if routing or (kind == "veth" and self.vnf_count() > 1):
            vnf_namespaces = self._vnf_namespaces(dut_netns, routing)
            vnfs = [self.make_vnf(ns) for ns in vnf_namespaces]  # ``first`` never started: nothing to undo
        else:
            vnfs = [first] + [self.make_vnf(dut_netns) for _ in range(self.vnf_count() - 1)]
        self.vnfs = vnfs
        vnf_ports: list[list[SwitchPort]] = [[] for _ in vnfs]
        segments: list[tuple[str, SwitchPort, SwitchPort]] = []
        first = 0  # interface number of the next VNF port: unique over all VNF ports
        for lane in range(self.lanes):
            a, b = 2 * lane, 2 * lane + 1
            bridge = self._bridge()
            previous = vswitch.add_port(bridge, phy_specs[a])
            for i in range(lengths[lane]):
                number = self._vnf_of(lane, i)
                vnf = vnfs[number]
                server = bool(vnf.vhost_user_server())
                # the VNF's port 2k faces generator port a, 2k+1 faces b (paths of measurement.stages)
                specs = [self._vnf_port_spec(kind, first + j, server, dut_netns,
                                             gen_ports[a if j == 0 else b].mac, vnf_namespaces[number])
                         for j in (0, 1)]
                first += 2
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
    switching_operations = 2
    generator_port_count = 2
    lanes = 1
    vnfs_per_lane = 1


class Pvvp(VnfChain):
    name: ClassVar[str] = "pvvp"
    description: ClassVar[str] = "PHY-vSwitch-VNF-vSwitch-VNF-vSwitch-PHY: two VNFs in series"
    topology: ClassVar[str] = "PHY-VNF-VNF-PHY"
    switching_operations = 3
    generator_port_count = 2
    lanes = 1
    vnfs_per_lane = 2


class Pvpv(VnfChain):
    name: ClassVar[str] = "pvpv"
    description: ClassVar[str] = "two PVP lanes in parallel: ports 0<->1 through VNF 0, 2<->3 through VNF 1"
    topology: ClassVar[str] = "2 x PHY-VNF-PHY in parallel"
    switching_operations = 2
    generator_port_count = 4
    lanes = 2
    vnfs_per_lane = 1


class PvpMultiport(VnfChain):
    """The multi-port PVP of VSPERF's bonding-style tests and ONP's 4-port switching: two
    pairs of generator ports through one VNF with four ports (0<->1, 2<->3)."""

    name: ClassVar[str] = "pvp_multiport"
    description: ClassVar[str] = "PHY-vSwitch-VNF-vSwitch-PHY on two port pairs through one 4-port VNF"
    topology: ClassVar[str] = "2 x PHY-VNF-PHY through one VNF"
    switching_operations = 2
    generator_port_count = 4
    lanes = 2
    vnfs_per_lane = 1
    shared_vnfs = True
