"""A seeded device-under-test simulator that answers trials with real ``TrialResult``s.

It stands in for "generator + device" wherever no device exists: unit tests of the search
modes and the search-efficiency benchmark. It models the behaviours that mislead searches:

* a hard forwarding limit ``capacity_fps`` -- above it the excess is dropped;
* per-trial capacity noise (``capacity_jitter``: relative standard deviation of a normal
  draw per trial) and rare small loss spikes at any load (``spike_probability``,
  ``spike_loss_ratio``);
* bursty loss below the limit (``burst_rate_per_s`` bursts per second at full load, fewer
  at lower loads, each losing a geometric number of frames with mean ``burst_frames``);
* loss inversion: inside ``inversion_band`` (fractions of capacity) a trial loses
  ``inversion_loss_ratio`` of its frames with probability ``inversion_probability``, so a
  lower load can lose more than a higher one;
* duration-dependent loss: a ``buffer_frames`` queue absorbs the excess over the
  ``capacity_fps`` for a while, so short trials slightly above the limit pass and long ones
  fail; a ``leak_fps_per_s`` leak lowers the sustainable rate as a trial goes on;
* a generator limit ``generator_max_fps``: above it the trial is invalid (``valid=False``)
  with the achieved TX below the intended one, exactly as a real generator reports it;
* optional latency probes (``probe_rate_fps``) with delays that grow near the limit.

Randomness comes only from ``numpy.random.default_rng(seed)``, so a DUT with the same
parameters and seed answers the same sequence of trials identically.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from vsbench.interfaces.traffic import ProbeRecords, TrialResult


@dataclass
class SimulatedDut:
    capacity_fps: float
    seed: int = 0
    frame_size_bytes: int = 64
    capacity_jitter: float = 0.0
    spike_probability: float = 0.0
    spike_loss_ratio: float = 1e-4
    burst_rate_per_s: float = 0.0
    burst_frames: float = 200.0
    inversion_band: tuple[float, float] | None = None
    inversion_probability: float = 0.0
    inversion_loss_ratio: float = 1e-3
    buffer_frames: float = 0.0
    leak_fps_per_s: float = 0.0
    generator_max_fps: float | None = None
    overhead_s: float = 0.0
    probe_rate_fps: float = 0.0
    base_latency_ns: float = 10_000.0
    trials_run: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        if self.capacity_fps <= 0:
            raise ValueError("capacity_fps must be positive")
        self._rng = np.random.default_rng(self.seed)

    def __call__(self, load_fps: float, duration_s: float) -> TrialResult:
        return self.trial(load_fps, duration_s)

    def trial(self, load_fps: float, duration_s: float) -> TrialResult:
        """One trial at aggregate ``load_fps`` for ``duration_s`` seconds."""
        rng = self._rng
        self.trials_run += 1
        intended = load_fps * duration_s
        valid, reason, sent_fps = True, None, load_fps
        if self.generator_max_fps is not None and load_fps > self.generator_max_fps:
            valid, sent_fps = False, self.generator_max_fps
            reason = f"generator-limited: achieved {self.generator_max_fps:.0f} of {load_fps:.0f} fps"
        tx = int(round(sent_fps * duration_s)) if valid else int(math.floor(sent_fps * duration_s))
        capacity = self.capacity_fps
        if self.capacity_jitter:
            capacity *= max(0.0, 1.0 + self.capacity_jitter * rng.standard_normal())
        lost = self._overload_loss(sent_fps, duration_s, capacity)
        if self.spike_probability and rng.random() < self.spike_probability:
            lost += max(1.0, self.spike_loss_ratio * tx * rng.uniform(0.5, 1.5))
        if self.burst_rate_per_s:
            intensity = self.burst_rate_per_s * duration_s * min(1.0, sent_fps / self.capacity_fps) ** 4
            bursts = rng.poisson(intensity)
            if bursts:
                lost += float(rng.geometric(1.0 / max(1.0, self.burst_frames), size=bursts).sum())
        if self.inversion_band is not None:
            low, high = self.inversion_band
            if low * self.capacity_fps <= sent_fps <= high * self.capacity_fps:
                if rng.random() < self.inversion_probability:
                    lost += self.inversion_loss_ratio * tx * rng.uniform(0.5, 1.5)
        lost_frames = int(min(tx, max(0, round(lost))))
        rx = tx - lost_frames
        probes = self._probes(sent_fps, duration_s, capacity) if self.probe_rate_fps > 0 else None
        return TrialResult(
            intended_load_fps=float(load_fps),
            intended_duration_s=float(duration_s),
            frame_size_bytes=self.frame_size_bytes,
            tx_frames=tx,
            rx_frames=rx,
            tx_duration_s=float(duration_s),
            effective_duration_s=float(duration_s) + self.overhead_s,
            probes=probes,
            valid=valid,
            invalid_reason=reason,
            generator_stats={"simulated": True, "intended_frames": intended},
        )

    def _overload_loss(self, load_fps: float, duration_s: float, capacity_fps: float) -> float:
        """Frames dropped because the load exceeds what the device sustains over the trial."""
        # With a leak the sustainable rate falls linearly during the trial; its mean over
        # the trial is capacity - leak * d / 2, so longer trials lose more.
        sustained = max(0.0, capacity_fps - self.leak_fps_per_s * duration_s / 2.0)
        excess = (load_fps - sustained) * duration_s - self.buffer_frames
        return max(0.0, excess)

    def _probes(self, load_fps: float, duration_s: float, capacity_fps: float) -> ProbeRecords:
        rng = self._rng
        sent = int(round(self.probe_rate_fps * duration_s))
        utilisation = min(load_fps / max(capacity_fps, 1.0), 0.999)
        queueing_ns = self.base_latency_ns * utilisation / (1.0 - utilisation)
        latency = self.base_latency_ns + rng.exponential(max(queueing_ns, 1.0), size=sent)
        keep = np.ones(sent, dtype=bool)
        if load_fps > capacity_fps:
            keep = rng.random(sent) >= (load_fps - capacity_fps) / load_fps
        sequence = np.arange(sent, dtype=np.int64)[keep]
        return ProbeRecords(sequence=sequence, latency_ns=latency[keep].astype(np.int64), sent=sent)


# -- the four kinds the search-efficiency benchmark draws from --------------------------

DUT_KINDS = ("clean", "jitter", "bursty", "inversion")


def make_dut(kind: str, seed: int, capacity_fps: float | None = None) -> SimulatedDut:
    """A DUT of one benchmark ``kind`` with a seeded capacity (log-uniform 0.2-2 Mpps).

    * ``clean``: a hard limit, nothing else.
    * ``jitter``: per-trial capacity jitter of 2% and a 10% chance of a small loss spike.
    * ``bursty``: loss bursts below the limit, about 0.3 per second at full load.
    * ``inversion``: in 80-92% of the capacity a trial loses 0.1% with probability 0.4,
      so lower loads fail more often than loads just below the limit.
    """
    rng = np.random.default_rng([seed, 7919])
    if capacity_fps is None:
        capacity_fps = float(math.exp(rng.uniform(math.log(2e5), math.log(2e6))))
    if kind == "clean":
        return SimulatedDut(capacity_fps, seed=seed)
    if kind == "jitter":
        return SimulatedDut(capacity_fps, seed=seed, capacity_jitter=0.02, spike_probability=0.1,
                            spike_loss_ratio=1e-4)
    if kind == "bursty":
        return SimulatedDut(capacity_fps, seed=seed, burst_rate_per_s=0.3, burst_frames=200.0)
    if kind == "inversion":
        return SimulatedDut(capacity_fps, seed=seed, inversion_band=(0.80, 0.92),
                            inversion_probability=0.4, inversion_loss_ratio=1e-3)
    raise ValueError(f"unknown DUT kind {kind!r}; choose from {', '.join(DUT_KINDS)}")
