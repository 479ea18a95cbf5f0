"""The traffic generator contract: run one trial at an offered load, report what happened.

A generator does not search, does not decide what is loss and does not compute statistics:
the measurement engine does all of that once, for every generator (DESIGN.md principle 2).
A vendor implementing a generator reads this module and ``vsbench_plugins.trafficgen.trafgen``.

Life cycle, driven by the runner::

    gen = GeneratorClass(context)          # cheap; no connection yet
    gen.start()                            # connect / launch; register teardown in context
    gen.configure(profile, ports)          # once per frame size / flow count
    result = gen.run_trial(load, duration, latency=False)   # many times
    floor = gen.measure_latency_floor(duration)   # once per profile, if capabilities().latency_floor
    gen.stop()                             # also registered as teardown by start()
"""

from __future__ import annotations

import abc
from typing import ClassVar, Sequence

from vsbench.interfaces.plugin import Plugin, PluginError
from vsbench.interfaces.tcp import TcpResult, TcpSpec
from vsbench.interfaces.traffic import (
    GeneratorCapabilities,
    GeneratorPort,
    TrafficProfile,
    TrialResult,
)
from vsbench.system.link_speed import LinkSpeed


class TrafficGenerator(Plugin):
    """Abstract traffic generator. Loads are aggregate frames/s over all directions."""

    kind: ClassVar[str] = "trafficgen"
    #: How the flows may follow each other on the wire (``traffic.fields.pattern``):
    #: ``scatter``, a new flow every frame, is what every generator does; one that can send
    #: runs of frames of one flow (``burst``) lists it too. A run asking for a pattern its
    #: generator does not list is refused before anything is built.
    flow_patterns: ClassVar[tuple[str, ...]] = ("scatter",)
    #: True when the generator can send a profile's ``frame_mix`` (IMIX) with some of its
    #: settings; the preflight refuses a mix for a generator that leaves this False, and
    #: the runner asks :meth:`capabilities` (``frame_mix``) before it configures one.
    supports_frame_mix: ClassVar[bool] = False

    @abc.abstractmethod
    def capabilities(self) -> GeneratorCapabilities:
        """What this generator can do with its current settings."""

    @abc.abstractmethod
    def start(self) -> None:
        """Connect to (or launch) the generator. Register the undo with the context."""

    @abc.abstractmethod
    def configure(self, profile: TrafficProfile, ports: Sequence[GeneratorPort]) -> None:
        """Prepare streams for ``profile`` between ``ports`` (port 0 -> 1, and 1 -> 0 if
        the profile is bidirectional). Called before the first trial of each profile."""

    @abc.abstractmethod
    def run_trial(
        self, load_fps: float, duration_s: float, *, latency: bool = False
    ) -> TrialResult:
        """Send ``load_fps`` (aggregate, split evenly over directions) for ``duration_s``,
        wait for the drain, then read counters. With ``latency=True`` also run the
        latency probe stream and return its records or histogram.

        Counters are read only after traffic has stopped and in-flight frames have drained.
        A trial the generator could not deliver as asked is still returned (with its
        counters); the engine marks it invalid. Raise :class:`PluginError` only when the
        generator itself failed (connection lost, protocol error).
        """

    def stop(self) -> None:
        """Release ports, disconnect, stop what :meth:`start` started. Idempotent."""

    def port_speeds(self) -> Sequence[LinkSpeed]:
        """The link speed of each port :meth:`configure` was given, in that order.

        "% of line rate" is against these where every sending port has one (a NIC's
        negotiated speed, a TRex or IxNetwork port's reported speed); where any has none
        (``LinkSpeed.speed_bps`` None: a veth, a port whose speed the generator cannot
        tell) the line rate is the nominal ``testbed.link_gbps`` and reports say so.
        Called after :meth:`configure`; the default knows no port's speed.
        """
        return ()

    def measure_latency_floor(self, duration_s: float) -> TrialResult:
        """The generator's own one-way latency, with the DUT out of the path.

        Send the latency probe stream of the configured profile for ``duration_s`` over a
        direct loop -- a cable or veth pair from one of the generator's own ports to another,
        never through the DUT -- and return it as a probes-only trial: ``intended_load_fps``
        0, no bulk frames, ``probes`` (or ``latency_histogram``) set. The engine reports it
        beside every latency figure of this profile, so a reader can tell the DUT's share
        from the generator's. Say what the loop was in ``generator_stats["loop"]``.

        Only called when :meth:`capabilities` says ``latency_floor``; a generator that has no
        such path leaves both alone and the floor is reported as not measured.
        """
        raise PluginError(f"{self.name or type(self).__name__} cannot measure its latency without the DUT")

    #: Encapsulations :meth:`configure` builds for a profile with ``encapsulation`` and
    #: ``tunnel`` set (``("vxlan",)``): encapsulated frames out of the tunnel port, and on
    #: that port encapsulated frames expected back. The preflight refuses an overlay test
    #: with a generator that does not list its encapsulation.
    encapsulations: ClassVar[tuple[str, ...]] = ()
    #: Frame modification kinds (:mod:`vsbench.interfaces.modification`) whose result the
    #: generator verifies at the receiver for a profile with ``frame_modification``: a
    #: frame counts as received only when it arrives so modified. The preflight refuses a
    #: ``dut.frame_modification`` the generator does not list (its frames would be counted
    #: unverified, and an unmodified path would pass for a modifying one).
    frame_modifications: ClassVar[tuple[str, ...]] = ()

    #: True when :meth:`run_tcp` is implemented (a TCP workload, ``traffic.type: tcp``).
    supports_tcp: ClassVar[bool] = False
    #: True for a generator that runs only TCP workloads (no frame trials): the preflight
    #: refuses it for every other traffic type.
    tcp_only: ClassVar[bool] = False

    def run_tcp(self, spec: TcpSpec) -> TcpResult:
        """Run one TCP workload between the configured ports (port 0 client, port 1
        server) and return what the endpoints measured (:mod:`vsbench.interfaces.tcp`).
        Only called on a generator whose class sets :attr:`supports_tcp`, after
        :meth:`configure`."""
        raise PluginError(f"{self.name or type(self).__name__} cannot run TCP workloads")

    #: True when :meth:`run_burst` is implemented; the ``back2back`` and ``burst`` traffic
    #: types refuse (at preflight) a generator that does not declare it.
    supports_bursts: ClassVar[bool] = False

    def run_burst(self, frames: int, *, rate_fps: float | None = None, latency: bool = False) -> TrialResult:
        """Send one burst of exactly ``frames`` frames (aggregate, split evenly over the
        directions), wait for the drain, then read counters, as :meth:`run_trial` does.

        ``rate_fps`` None: back to back, as fast as the generator can (no pacing) -- the
        burst of RFC 2544 section 26.4 / RFC 9004. Else paced at ``rate_fps`` (aggregate).
        The result sets ``burst_frames`` to ``frames``; ``tx_duration_s`` is how long
        sending took (required: it is how the achieved burst rate is known);
        ``intended_load_fps`` is ``rate_fps``, or for an unpaced burst the rate it really
        went out at (``tx_frames / tx_duration_s``); ``intended_duration_s`` is ``frames /
        intended_load_fps``, so ``intended_frames`` is ``frames``. Only called on a
        generator whose class sets :attr:`supports_bursts`.
        """
        raise PluginError(f"{self.name or type(self).__name__} cannot send bursts of a given length")

    def warm_up(self, load_fps: float, duration_s: float) -> None:
        """Send the full flow set at a low rate so switch caches are populated.

        The default runs an ordinary trial and discards it.
        """
        self.run_trial(load_fps, duration_s)
