"""The virtual switch contract: a private switch instance, its ports and its rules.

A switch plugin starts *its own* instance (never the system's), adds bridges and ports,
installs forwarding in bulk, and reports its version, statistics and the threads whose CPU
time it consumes. A deployment (p2p, pvp, ...) wires it to generator ports and VNFs.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Collection, Literal, Sequence

from vsbench.interfaces.plugin import Plugin, PluginError

PortKind = Literal["physical", "vhostuser", "tunnel", "tap"]


@dataclass(frozen=True)
class PortSpec:
    """A port to add to a bridge.

    ``physical``: ``iface`` is a testbed interface (in the DUT netns) or, with ``pci``
    set, a NIC given in the config. ``vhostuser``: ``socket_path`` is where the switch
    creates (server mode) the vhost-user socket. ``tunnel``: a tunnel endpoint (VTEP) on the
    bridge, whose encapsulated frames leave and arrive through the underlay interface
    ``iface`` (or NIC ``pci``); ``options`` carry the tunnel ``type`` (``vxlan``), ``key``
    (the VNI), ``local_ip``/``local_mac`` (the VTEP's own underlay address, which the
    switch takes on), ``prefixlen`` (of the underlay subnet), ``remote_ip``/``remote_mac``
    (the far VTEP, a static neighbour: nothing is ARPed) and ``dst_port`` (UDP). How the
    underlay is built is the switch's business (OvS-DPDK: a bridge of its own holding the
    underlay port and the VTEP address; the Linux bridge: a vxlan device over ``iface``).
    ``tap``: a kernel tap device named ``name`` that the switch creates (in the DUT
    namespace) and whose other side it serves itself, as it would serve a guest's virtio
    NIC; the returned port's ``spec.iface`` names the kernel interface a local endpoint
    (a TCP endpoint in a namespace of its own) takes over in the guest's place.
    """

    kind: PortKind
    name: str
    iface: str | None = None
    pci: str | None = None
    socket_path: Path | None = None
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SwitchPort:
    """A port the switch created: its name and its OpenFlow port number (or ifindex)."""

    name: str
    number: int
    spec: PortSpec


class SwitchCannot(PluginError):
    """The switch has no such operation or port kind: an integration testcase asking for
    it is skipped with this reason, not failed."""


@dataclass(frozen=True)
class FlowSpec:
    """One forwarding entry an integration step adds (:meth:`VSwitch.add_flow`).

    ``match`` holds only the closed set of fields in :data:`FLOW_MATCH_FIELDS`:
    ``in_port`` (a :class:`SwitchPort` number), ``eth_dst``/``eth_src`` (MACs) and
    ``eth_type`` (an integer). ``output`` is the port frames go to; None drops them.
    Each switch maps it to its own kind of entry (OvS: an OpenFlow flow; the Linux
    bridge: a static FDB entry, which matches ``eth_dst`` only) and refuses with a
    :class:`PluginError` what its table cannot express.
    """

    match: dict[str, Any]
    output: SwitchPort | None = None
    priority: int = 100


#: The match fields a :class:`FlowSpec` may carry.
FLOW_MATCH_FIELDS = ("in_port", "eth_dst", "eth_src", "eth_type")


@dataclass(frozen=True)
class SwitchThread:
    """A thread whose CPU time counts as the switch's (PMD, handler, revalidator, ...)."""

    pid: int
    tid: int
    name: str


class VSwitch(Plugin):
    """A switch plugin.

    ``supports_rule_sets`` declares whether the switch installs an OpenFlow rule set
    (``dut.rules``: ``context.run.rule_set``, written to a file by
    :func:`vsbench.interfaces.rules.write_rule_file`) as its forwarding path through
    :meth:`install_rules`. The preflight refuses a plan with ``dut.rules`` on a
    switch that does not declare it, before anything is created: a switch that forwarded
    without the rules would report plain forwarding under a rule-scaling name. A plugin
    that does not say is taken not to support rule sets.

    ``supports_meters`` declares that the switch puts a ``dut.meter_pps`` packet-rate meter
    (``context.run.meter_pps``) on its forwarding path (the reference DUT of known capacity); a plan asking for one on
    a switch that does not declare it is refused the same way.

    ``tunnel_types`` lists the tunnel encapsulations the switch terminates (see
    :class:`PortSpec` for a tunnel port's options).

    ``supports_vhost_user`` declares that :meth:`add_port` accepts ``vhostuser`` ports and
    returns them with ``spec.socket_path`` set (a VNF attaches there); with ``spec.options
    ["vhost_server"] == "vnf"`` the switch connects as a client to a socket the VNF creates.
    A deployment gives a switch that does not declare it veth pairs to the VNF instead.

    ``supports_tap_ports`` declares that :meth:`add_port` accepts ``tap`` ports (see
    :class:`PortSpec`): where a guest would attach, a kernel endpoint can. A deployment
    gives a switch that does not declare it a veth pair per endpoint instead.
    """

    kind: ClassVar[str] = "vswitch"
    supports_rule_sets: ClassVar[bool] = False
    supports_meters: ClassVar[bool] = False
    supports_vhost_user: ClassVar[bool] = False
    supports_tap_ports: ClassVar[bool] = False
    #: Tunnel types :meth:`add_port` accepts as ``tunnel`` ports (``("vxlan",)``); the
    #: preflight refuses an overlay deployment (op2p) on a switch that does not list its
    #: encapsulation.
    tunnel_types: ClassVar[tuple[str, ...]] = ()
    #: Forwards by MAC learning on request (:meth:`connect_learning`, :meth:`flush_learned`):
    #: RFC 2889's address caching and learning tests need it; the preflight refuses them
    #: on a switch that does not declare it.
    supports_learning: ClassVar[bool] = False
    #: Frame modification kinds (:data:`vsbench.interfaces.modification.KINDS`) the switch
    #: puts on its forwarding path when ``context.run.frame_modification`` asks; the
    #: preflight refuses the others with :meth:`modification_refusal`'s reason.
    frame_modifications: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def modification_refusal(cls, modification: Any) -> str | None:
        """Why this switch cannot apply ``modification`` (a
        :class:`~vsbench.interfaces.modification.FrameModification`), one clause, or None
        when it can. Default: the kinds of :attr:`frame_modifications`; a switch that can do
        a kind only with some parameters overrides this to say which."""
        if modification.kind in cls.frame_modifications:
            return None
        can = ", ".join(cls.frame_modifications) or "none"
        return f"it does not modify frames by {modification.kind} (kinds it does: {can})"

    def plan_ports(self, kinds: Collection[str]) -> None:
        """Told before :meth:`start` which port kinds the topology will add, for what a
        switch must configure before it starts (OvS-DPDK's userspace TSO, which tap ports
        need for offloaded frames, is read once at start-up). Optional; default: nothing."""

    @abc.abstractmethod
    def start(self) -> None:
        """Start a private instance. Register its teardown with the context first."""

    @abc.abstractmethod
    def add_bridge(self, name: str) -> None: ...

    @abc.abstractmethod
    def add_port(self, bridge: str, spec: PortSpec) -> SwitchPort: ...

    @abc.abstractmethod
    def connect(self, bridge: str, a: SwitchPort, b: SwitchPort) -> None:
        """Forward everything arriving on ``a`` to ``b`` and on ``b`` to ``a``."""

    def connect_many(self, bridge: str, hub: SwitchPort, spokes: Sequence[tuple[SwitchPort, str]]) -> None:
        """Forward everything arriving on a spoke to ``hub``, and what arrives on ``hub``
        to the spoke whose endpoint has the frame's destination MAC (``spokes``: pairs of
        port and that MAC): N clients and one server. Default: one spoke is
        :meth:`connect`; a switch that forwards by MAC learning needs nothing more, others
        override it."""
        if len(spokes) == 1:
            self.connect(bridge, spokes[0][0], hub)
            return
        raise PluginError(f"{self.name or type(self).__name__} cannot forward {len(spokes)} ports to one")

    def connect_learning(self, bridge: str, ports: Sequence[SwitchPort], *, aging_time_s: int,
                         table_size: int | None = None) -> None:
        """Forward between ``ports`` by MAC learning, as an Ethernet switch does: learn each
        frame's source address on its input port, send a frame to a learned address out of
        that port only, flood one to an unknown address to every other port. Learned
        addresses stay ``aging_time_s`` seconds; ``table_size`` (None: the switch's default)
        is how many it may hold, where the switch has such a limit. Only on a switch that
        declares :attr:`supports_learning`."""
        raise PluginError(f"{self.name or type(self).__name__} does not forward by MAC learning")

    def flush_learned(self, bridge: str) -> None:
        """Forget every address learned on ``bridge`` (RFC 2889: each iteration starts
        from an empty address table)."""
        raise PluginError(f"{self.name or type(self).__name__} does not forward by MAC learning")

    def install_rules(self, bridge: str, rules_file: Path) -> int:
        """Install the rules in ``rules_file`` in one transaction; return how many.

        Switches without a rule table raise :class:`PluginError` (and leave
        :attr:`supports_rule_sets` False).
        """
        raise PluginError(f"{self.name} does not support rule sets")

    # -- optional: what integration testcases (deployment: clean) drive step by step --
    # A switch that cannot do one raises PluginError saying so (the defaults below); the
    # integration runner then skips the testcase with that reason.

    #: Virtual port kinds :meth:`add_port` accepts on their own, with nothing attached
    #: (an integration step's ``kind: vport`` takes the first).
    vport_kinds: ClassVar[tuple[str, ...]] = ()

    def bridge_name(self, bridge: str) -> str:
        """The switch's own name (a device's) for the bridge the caller calls ``bridge``."""
        return bridge

    def delete_bridge(self, name: str) -> None:
        """Remove bridge ``name`` and every port in it."""
        raise SwitchCannot(f"{self.name or type(self).__name__} cannot delete a bridge")

    def delete_port(self, bridge: str, port: SwitchPort) -> None:
        """Remove ``port`` from ``bridge`` (a device the switch created is deleted; a
        testbed interface is released, not deleted)."""
        raise SwitchCannot(f"{self.name or type(self).__name__} cannot delete a port")

    def add_flow(self, bridge: str, flow: FlowSpec) -> None:
        """Add one forwarding entry (see :class:`FlowSpec`)."""
        raise SwitchCannot(f"{self.name or type(self).__name__} cannot add a flow")

    def delete_flow(self, bridge: str, flow: FlowSpec) -> None:
        """Remove the entry :meth:`add_flow` added for ``flow`` (and only that one)."""
        raise SwitchCannot(f"{self.name or type(self).__name__} cannot delete a flow")

    def dump_flows(self, bridge: str) -> str:
        """The bridge's forwarding entries as the switch's own tool prints them (one per
        line, without packet counters), for a step's pattern check."""
        raise SwitchCannot(f"{self.name or type(self).__name__} cannot dump its flows")

    def dump_state(self) -> str:
        """Bridges and ports as the switch's own tool prints them (``ovs-vsctl show``...)."""
        raise SwitchCannot(f"{self.name or type(self).__name__} cannot dump its state")

    def port_counters(self, bridge: str, port: SwitchPort) -> dict[str, int]:
        """Cumulative ``rx_packets``, ``tx_packets``, ``rx_dropped``, ``tx_dropped`` of ``port``."""
        raise SwitchCannot(f"{self.name or type(self).__name__} cannot read port counters")

    def stats(self) -> dict[str, Any]:
        """Datapath statistics (cache hits, upcalls, offloaded flows...), JSON-able."""
        return {}

    def threads(self) -> list[SwitchThread]:
        """Threads whose CPU time is the switch's cost (empty for kernel datapaths)."""
        return []

    def max_frame_bytes(self) -> int | None:
        """Largest Ethernet frame (FCS included) the switch forwards as built, or None when
        it does not say. The runner skips larger frame sizes with a note instead of
        measuring a switch that drops (or hangs on) every frame."""
        return None

    def carries_offloaded_frames(self) -> bool:
        """Whether the switch forwards what a kernel endpoint leaves to its NIC: TCP
        segments larger than the MTU (TSO) and checksums not yet filled in. A kernel
        datapath moves the buffer with that work still marked on it; a switch that reads
        frames as bytes from a packet socket (DPDK's af_packet PMD) truncates the large
        segments and forwards the unfinished checksums, which the receiving stack drops.
        Across such a switch TCP endpoints must segment and checksum in software (the
        runner turns their tx checksumming off and skips TSO-on plans)."""
        return True

    def offloaded_frames_note(self) -> str:
        """Why :meth:`carries_offloaded_frames` is False as built, one clause for the
        runner's notes ("reads frames as bytes from packet sockets"); empty: unsaid."""
        return ""

    def setting_not_in_effect(self) -> str | None:
        """Why a setting this switch was asked for cannot take effect on the ports as built
        (OvS-DPDK's userspace TSO on af_packet ports, which offer no offload), one clause;
        None: every setting is in effect. The runner then skips the plan's frame sizes with
        this reason -- a feature-matrix variant says why it has no figure -- rather than
        measure the switch without the feature under the feature's name."""
        return None

    def trial_begin(self) -> None:
        """Take the 'before' sample of one trial, just before traffic starts: the CPU time
        of the switch's threads (or softirq time, for a kernel datapath) and its datapath
        counters. Optional; the default samples nothing."""

    def trial_end(self) -> dict[str, Any]:
        """What the trial since :meth:`trial_begin` cost the switch, JSON-able; ``{}`` when
        the switch does not say (the default). Recorded as the trial's ``switch`` in
        trials.jsonl. Keys the core reads (all optional):

        - ``cpu_s``: CPU seconds the switch consumed (its threads for a userspace datapath,
          softirq time for a kernel one), ``cpu_source`` says which;
        - ``elapsed_s``: wall seconds between the two samples;
        - ``datapath``: per-trial deltas of the datapath's counters (cache hits, upcalls,
          lookups, offloaded flows), reported beside the point measured at this trial;
        - ``warnings``: ``[{"code", "message", "cpus", "oversubscribed"}]``, e.g. a
          busy-polling thread that did not get its CPU (the trial measured contention).
        """
        return {}

    @abc.abstractmethod
    def stop(self) -> None:
        """Stop the instance and remove what it created. Idempotent."""
