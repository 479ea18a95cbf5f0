"""Combine PROX's per-interval latency samples into one trial histogram in nanoseconds.

PROX publishes latency per stats interval (about 1 s): ``lat stats`` gives that interval's
min/avg/max in µs plus min/max since ``reset stats``; ``lat all stats`` adds 128 buckets of
``2**bucket_size`` TSC cycles for the same interval. A trial therefore polls during the run
and adds every *new* interval (a new ``last_tsc``) once. The mean is weighted by the bucket
counts when buckets are available, else by interval length (as PROX's own rapid scripts do).
Min and max come from the since-reset fields, which cover exactly the trial because the
plugin resets the statistics while the generators are stopped.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from vsbench.interfaces.traffic import LatencyHistogram

from vsbench_plugins.trafficgen.prox.replies import LAT_BUCKETS, LatStats, bucket_width_ns


@dataclass
class _CoreState:
    last_tsc: int | None = None
    latest: LatStats | None = None


@dataclass
class LatencyAccumulator:
    bucket_size_exp: int
    counts: list[int] = field(default_factory=lambda: [0] * LAT_BUCKETS)
    tsc_hz: int | None = None
    weighted_sum_us: float = 0.0
    weight: float = 0.0
    mis_ordered: int = 0
    duplicate: int = 0
    extent: int = 0
    intervals: int = 0
    _cores: dict[int, _CoreState] = field(default_factory=dict)

    def baseline(self, core: int, stats: LatStats) -> None:
        """Remember the interval already published before the trial started."""
        self._cores[core] = _CoreState(last_tsc=stats.last_tsc, latest=None)

    def add(self, core: int, stats: LatStats, buckets: list[int] | None) -> bool:
        """Add one reply; ignored (False) unless it is a new interval for ``core``."""
        state = self._cores.setdefault(core, _CoreState())
        if state.last_tsc is not None and stats.last_tsc <= state.last_tsc:
            return False
        interval_cycles = stats.last_tsc - state.last_tsc if state.last_tsc is not None else 0
        state.last_tsc = stats.last_tsc
        state.latest = stats
        self.tsc_hz = stats.tsc_hz
        samples = sum(buckets) if buckets is not None else None
        if buckets is not None:
            for i, n in enumerate(buckets[:LAT_BUCKETS]):
                self.counts[i] += n
        has_traffic = samples > 0 if samples is not None else stats.max_us > 0
        if not has_traffic:
            return True
        w = float(samples) if samples is not None else float(max(interval_cycles, 1))
        self.weighted_sum_us += stats.avg_us * w
        self.weight += w
        self.intervals += 1
        self.mis_ordered += stats.mis_ordered or 0
        self.duplicate += stats.duplicate or 0
        self.extent += stats.extent or 0
        return True

    def histogram(self) -> LatencyHistogram | None:
        """The trial's latency in ns, or None when no interval carried traffic."""
        if self.weight <= 0 or self.tsc_hz is None:
            return None
        latest = [s.latest for s in self._cores.values() if s.latest is not None]
        min_us = min((s.min_since_reset_us for s in latest if s.max_since_reset_us > 0), default=None)
        max_us = max((s.max_since_reset_us for s in latest), default=None)
        width = bucket_width_ns(self.bucket_size_exp, self.tsc_hz)
        # Dense from bucket 0 to one past the last used bucket, so every used bucket's upper
        # edge is the next lower edge.
        last = max((i for i, n in enumerate(self.counts) if n), default=-1)
        n_buckets = min(last + 2, LAT_BUCKETS) if last >= 0 else 0  # 0: summary only (no buckets)
        return LatencyHistogram(
            bucket_lower_ns=[int(round(i * width)) for i in range(n_buckets)],
            counts=list(self.counts[:n_buckets]),
            min_ns=float(min_us * 1000) if min_us is not None else None,
            max_ns=float(max_us * 1000) if max_us is not None else None,
            mean_ns=self.weighted_sum_us / self.weight * 1000.0,
        )
