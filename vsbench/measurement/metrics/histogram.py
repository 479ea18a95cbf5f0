"""A streaming, mergeable, log-bucketed histogram with exact count, sum, min and max.

Memory is bounded by the value range, not the sample count: with ``buckets_per_octave=k``
values from 1 ns to 2**40 ns (18 minutes) fit in at most ``40 k + 1`` counters, so an
hour-long latency test costs the same few kilobytes as a one-second one. Bucket ``b >= 1``
holds values in ``[2**((b-1)/k), 2**(b/k))``; bucket 0 holds values below 1 (including 0).
A percentile read from the histogram is the geometric middle of its bucket, clamped to
the exact min and max, so its relative error is below ``2**(1/(2k)) - 1`` (0.54% at k=64).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

DEFAULT_BUCKETS_PER_OCTAVE = 64


@dataclass
class LogHistogram:
    buckets_per_octave: int = DEFAULT_BUCKETS_PER_OCTAVE
    counts: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    count: int = 0
    total: float = 0.0
    min_value: float | None = None
    max_value: float | None = None

    def bucket_of(self, values: np.ndarray) -> np.ndarray:
        """Bucket index of each value (float32 logarithms: a value within 1e-7 of a bucket
        edge may land in the neighbouring bucket, far below the bucket width)."""
        v = np.asarray(values).astype(np.float32)
        np.maximum(v, np.float32(0.5), out=v)
        np.log2(v, out=v)
        v *= np.float32(self.buckets_per_octave)
        np.floor(v, out=v)
        out = v.astype(np.int32)
        out += 1
        np.maximum(out, 0, out=out)
        return out

    def lower_edge(self, bucket: int) -> float:
        return 0.0 if bucket <= 0 else 2.0 ** ((bucket - 1) / self.buckets_per_octave)

    def upper_edge(self, bucket: int) -> float:
        return 2.0 ** (bucket / self.buckets_per_octave)

    def add(self, values) -> None:
        """Add a batch of non-negative values (negative ones are counted in bucket 0)."""
        v = np.asarray(values)
        if v.size == 0:
            return
        buckets = self.bucket_of(v)
        found = np.bincount(buckets)
        if found.size > self.counts.size:
            grown = np.zeros(found.size, dtype=np.int64)
            grown[: self.counts.size] = self.counts
            self.counts = grown
        self.counts[: found.size] += found
        self.count += int(v.size)
        self.total += float(v.sum(dtype=np.float64))
        vmin, vmax = float(v.min()), float(v.max())
        self.min_value = vmin if self.min_value is None else min(self.min_value, vmin)
        self.max_value = vmax if self.max_value is None else max(self.max_value, vmax)

    def merge(self, other: "LogHistogram") -> None:
        """Add ``other``'s samples to this histogram (both must use the same bucketing)."""
        if other.buckets_per_octave != self.buckets_per_octave:
            raise ValueError("cannot merge histograms with different buckets_per_octave")
        if other.counts.size > self.counts.size:
            grown = np.zeros(other.counts.size, dtype=np.int64)
            grown[: self.counts.size] = self.counts
            self.counts = grown
        self.counts[: other.counts.size] += other.counts
        self.count += other.count
        self.total += other.total
        for name, pick in (("min_value", min), ("max_value", max)):
            mine, theirs = getattr(self, name), getattr(other, name)
            if theirs is not None:
                setattr(self, name, theirs if mine is None else pick(mine, theirs))

    @property
    def mean(self) -> float | None:
        return self.total / self.count if self.count else None

    def percentile(self, percent: float) -> float | None:
        """Nearest-rank percentile estimate (see the module docstring for its error)."""
        if not self.count:
            return None
        rank = max(1, math.ceil(percent / 100.0 * self.count))
        bucket = int(np.searchsorted(np.cumsum(self.counts), rank))
        if bucket == 0:
            value = 0.0
        else:
            value = 2.0 ** ((bucket - 0.5) / self.buckets_per_octave)
        return float(min(max(value, self.min_value), self.max_value))

    def nonempty(self) -> list[tuple[float, int]]:
        """``(lower edge, count)`` of every non-empty bucket, ascending."""
        return [(self.lower_edge(int(b)), int(self.counts[b])) for b in np.nonzero(self.counts)[0]]

    def coarsened(self, buckets_per_octave: int) -> "LogHistogram":
        """The same samples in wider buckets (``buckets_per_octave`` must divide ours)."""
        if self.buckets_per_octave % buckets_per_octave:
            raise ValueError("target buckets_per_octave must divide the current one")
        factor = self.buckets_per_octave // buckets_per_octave
        out = LogHistogram(buckets_per_octave, count=self.count, total=self.total,
                           min_value=self.min_value, max_value=self.max_value)
        if self.counts.size:
            index = np.arange(self.counts.size)
            # bucket b>=1 covers exponent (b-1)/k; map to (b-1)//factor + 1
            target = np.where(index == 0, 0, (index - 1) // factor + 1)
            out.counts = np.bincount(target, weights=self.counts).astype(np.int64)
        return out
