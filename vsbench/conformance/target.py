"""What a vendor tells the conformance kit about the plugin it wants checked: a generator
and the DUT it reaches (ConformanceTarget), a switch (VSwitchTarget), a VNF (VnfTarget)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from vsbench.interfaces.plugin import RunParameters
from vsbench.interfaces.traffic import FlowFields, GeneratorPort, TrafficProfile
from vsbench.interfaces.trafficgen import TrafficGenerator


@dataclass
class ConformanceTarget:
    """A configured generator plugin and the device under test it measures.

    ``plugin`` is the class (as the entry point loads it) and ``settings`` its settings
    section; the suite instantiates it with a fresh :class:`PluginContext` per test, exactly
    like the runner does. ``dut_capacity_fps`` is the aggregate frames/s (all directions) the
    modelled DUT forwards without loss; above it, the excess must show as loss.

    Optional parts switch on further checks:

    * ``generator_limit_fps`` -- aggregate rate the generator itself cannot exceed in this
      setup (e.g. the fake's per-core limit); a trial asked for more must come back with the
      frames really sent, so the engine can mark it invalid.
    * ``unreachable_settings`` + ``unreachable_address`` -- settings pointing where nothing
      answers; :meth:`TrafficGenerator.start` (or the first trial) must raise a one-line
      ``PluginError`` naming ``name`` and ``unreachable_address``.
    * ``dut_latency_ns`` -- (low, high) bounds of the modelled latency at half capacity, in ns;
      catches µs/cycles reported as ns.
    * ``leak_check`` -- extra callable returning descriptions of anything the generator left
      behind (e.g. a remote session); the suite already checks processes and sockets.
    """

    name: str
    plugin: type[TrafficGenerator]
    settings: Mapping[str, Any]
    dut_capacity_fps: float
    ports: Sequence[GeneratorPort] = (
        GeneratorPort(index=0, iface="0"),
        GeneratorPort(index=1, iface="1"),
    )
    profile: TrafficProfile = field(default_factory=lambda: TrafficProfile(frame_size_bytes=64))
    trial_duration_s: float = 1.0
    #: Relative tolerance of "frames sent ~ load x duration" and "received ~ capacity x duration".
    rate_tolerance: float = 0.05
    #: Loss ratio accepted below capacity (0 for a modelled DUT; a real testbed may need more).
    loss_tolerance: float = 0.0
    generator_limit_fps: float | None = None
    unreachable_settings: Mapping[str, Any] | None = None
    unreachable_address: str | None = None
    dut_latency_ns: tuple[float, float] | None = None
    #: What the plugin is given as ``context.run`` (drain time, probe rate, flow fields).
    run: RunParameters = field(default_factory=RunParameters)
    leak_check: Callable[[], list[str]] | None = None


@dataclass
class VSwitchTarget:
    """A vSwitch plugin to check on the kit's own testbed (two veth pairs into a DUT
    namespace, as every run on the embedded testbed has).

    ``plugin`` is the class (as its entry point loads it), ``settings`` its settings
    section (the defaults of its schema fill the rest, as in a run). The kit starts the
    switch in the DUT namespace, wires a bridge between the two ports, pushes frames
    through both ways and takes it down again, twice (by ``stop()``, and by the run's
    teardown alone).

    * ``rules`` -- rules per direction for the bulk rule-set check of a switch that
      declares ``supports_rule_sets`` (installed in one transaction, timed);
    * ``max_install_s`` -- longest a bulk install of ``rules`` may take; a switch that
      runs one process per rule (VSPERF's defect) takes minutes;
    * ``fields`` -- the header fields of the check's frames (flow 0 of a profile);
    * ``leak_check`` -- extra callable returning descriptions of anything left behind
      that the kit cannot see (a remote session, hugepages).
    """

    name: str
    plugin: type
    settings: Mapping[str, Any] = field(default_factory=dict)
    run: RunParameters = field(default_factory=RunParameters)
    rules: int = 20_000
    max_install_s: float = 20.0
    fields: FlowFields = field(default_factory=FlowFields)
    min_delivery: float = 0.99
    leak_check: Callable[[], list[str]] | None = None


@dataclass
class VnfTarget:
    """A VNF plugin to check on the kit's testbed: started between the DUT ends of two
    veth pairs (ports 0 and 1), it must forward frames of flow 0 of ``fields`` both ways.

    ``prepare(vnf, testbed)`` runs after ``start()`` for a VNF that needs more than its
    settings to forward (a router given routes to the testbed's addresses); the testbed is
    a :class:`vsbench.conformance.bench.KitTestbed`. ``forwards=False`` declares a VNF that
    does not forward at all (the ``none`` placeholder): the traffic checks are skipped.
    ``to_port_mac`` addresses the frames to the VNF port's MAC (a router's); otherwise to
    the generator port they should reach (what a forwarder passes as it is).
    """

    name: str
    plugin: type
    settings: Mapping[str, Any] = field(default_factory=dict)
    run: RunParameters = field(default_factory=RunParameters)
    fields: FlowFields = field(default_factory=FlowFields)
    prepare: Callable[[Any, Any], None] | None = None
    forwards: bool = True
    to_port_mac: bool = True
    min_delivery: float = 0.99
    leak_check: Callable[[], list[str]] | None = None
