"""The traffic generator contract: run one trial at an offered load, report what happened.

A generator does not search, does not decide what is loss and does not compute statistics:
the measurement engine does all of that once, for every generator (DESIGN.md principle 2).
A vendor implementing a generator reads this module and ``vsbench_plugins.trafficgen.trafgen``.

Life cycle, driven by the runner::

    gen = GeneratorClass(context)          # cheap; no connection yet
    gen.start()                            # connect / launch; register teardown in context
    gen.configure(profile, ports)          # once per frame size / flow count
    result = gen.run_trial(load, duration, latency=False)   # many times
    gen.stop()                             # also registered as teardown by start()
"""

from __future__ import annotations

import abc
from typing import ClassVar, Sequence

from vsbench.interfaces.plugin import Plugin
from vsbench.interfaces.traffic import (
    GeneratorCapabilities,
    GeneratorPort,
    TrafficProfile,
    TrialResult,
)


class TrafficGenerator(Plugin):
    """Abstract traffic generator. Loads are aggregate frames/s over all directions."""

    kind: ClassVar[str] = "trafficgen"

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

    def warm_up(self, load_fps: float, duration_s: float) -> None:
        """Send the full flow set at a low rate so switch caches are populated.

        The default runs an ordinary trial and discards it.
        """
        self.run_trial(load_fps, duration_s)
