"""What a vendor tells the conformance suite about the generator it wants checked."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from vsbench.interfaces.plugin import RunParameters
from vsbench.interfaces.traffic import GeneratorPort, TrafficProfile
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
