"""Latency, PDV and IPDV of a probe stream, from per-packet records or from histograms.

* **Latency** (one-way delay D): min, mean, max and the nearest-rank percentiles p50, p90,
  p99, p99.9 and p99.99. A percentile p is reported only when at least ``10 / (1 - p)``
  samples back it (p99 needs 1 000, p99.99 needs 100 000); otherwise it is ``None``.
* **PDV** (RFC 5481 section 4.2): ``D(i) - D(min)`` for every packet; its percentiles are
  the latency percentiles minus the minimum, so they come at no extra cost.
* **IPDV** (RFC 5481 section 4.1): ``D(i) - D(i-1)`` for consecutive sequence numbers that
  both arrived and arrived one after the other; reported as min and max (signed) and
  percentiles of its absolute value.
* A log-bucketed histogram (:mod:`.histogram`) for reports.

:func:`summarize_latency` is exact (it sees every sample). :class:`LatencyAccumulator`
takes the same records chunk by chunk in bounded memory, for runs too long to hold: its
min, max, mean and count stay exact and its percentiles come from a 64-buckets-per-octave
histogram (under 0.6% relative error).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from vsbench.interfaces.traffic import LatencyHistogram, ProbeRecords

from .histogram import LogHistogram
from .reordering import DEFAULT_WINDOW, SequenceSummary, SequenceTracker, analyze_sequence

#: Reported percentiles: name -> percent.
PERCENTILES: dict[str, float] = {"p50": 50.0, "p90": 90.0, "p99": 99.0, "p99_9": 99.9, "p99_99": 99.99}
#: Buckets per octave of the histogram carried in a summary (about 9% wide buckets).
REPORT_BUCKETS_PER_OCTAVE = 8
#: Buckets per octave used to find the few values a percentile can be among.
SELECT_BUCKETS_PER_OCTAVE = 64


def min_samples_for(percent: float) -> int:
    """Samples needed before percentile ``percent`` is reported: 10 / (1 - p)."""
    return math.ceil(round(10.0 / (1.0 - percent / 100.0), 6))


@dataclass
class IpdvSummary:
    count: int
    min_ns: float | None
    max_ns: float | None
    mean_abs_ns: float | None
    abs_percentiles_ns: dict[str, float | None] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"count": self.count, "min_ns": self.min_ns, "max_ns": self.max_ns,
                "mean_abs_ns": self.mean_abs_ns, "abs_percentiles_ns": dict(self.abs_percentiles_ns)}


@dataclass
class LatencySummary:
    count: int
    min_ns: float | None
    mean_ns: float | None
    max_ns: float | None
    percentiles_ns: dict[str, float | None]
    pdv_percentiles_ns: dict[str, float | None]  # D - Dmin (RFC 5481)
    pdv_max_ns: float | None
    histogram: list[tuple[float, int]]  # (bucket lower edge ns, count), log buckets
    ipdv: IpdvSummary | None = None
    sequence: SequenceSummary | None = None
    exact: bool = True  # percentiles from every sample (False: from a histogram)
    negative_count: int = 0  # samples below zero: a clock problem, reported, not hidden

    def to_dict(self) -> dict:
        return {
            "count": self.count,
            "min_ns": self.min_ns,
            "mean_ns": self.mean_ns,
            "max_ns": self.max_ns,
            "percentiles_ns": dict(self.percentiles_ns),
            "pdv_percentiles_ns": dict(self.pdv_percentiles_ns),
            "pdv_max_ns": self.pdv_max_ns,
            "histogram": [{"lower_ns": lower, "count": count} for lower, count in self.histogram],
            "ipdv": self.ipdv.to_dict() if self.ipdv else None,
            "sequence": self.sequence.to_dict() if self.sequence else None,
            "exact": self.exact,
            "negative_count": self.negative_count,
        }


def _exact_percentiles(values: np.ndarray, buckets: np.ndarray | None = None) -> dict[str, float | None]:
    """Exact nearest-rank percentiles of ``values``.

    A log histogram of the values (``buckets``: their bucket indices, computed here when
    not given) says which bucket holds each wanted rank; only the values of those few
    buckets are then partially sorted. That reads the data twice instead of copying and
    selecting over all of it, which is what makes 10 million samples cheap.
    """
    n = int(values.size)
    wanted = {name: p for name, p in PERCENTILES.items() if n >= min_samples_for(p)}
    out: dict[str, float | None] = dict.fromkeys(PERCENTILES)
    if not wanted:
        return out
    ranks = {name: max(1, math.ceil(p / 100.0 * n)) - 1 for name, p in wanted.items()}
    if n < 100_000:
        parted = np.partition(values, sorted(set(ranks.values())))
        return {**out, **{name: float(parted[rank]) for name, rank in ranks.items()}}
    if buckets is None:
        buckets = LogHistogram(SELECT_BUCKETS_PER_OCTAVE).bucket_of(values)
    counts = np.bincount(buckets)
    below = np.concatenate(([0], np.cumsum(counts)))
    target = {name: int(np.searchsorted(below, rank, side="right")) - 1 for name, rank in ranks.items()}
    table = np.zeros(counts.size, dtype=bool)
    table[list(set(target.values()))] = True
    chosen = table[buckets]
    sub_values, sub_buckets = values[chosen], buckets[chosen]
    for bucket in set(target.values()):
        inside = sub_values[sub_buckets == bucket]
        names = [name for name, b in target.items() if b == bucket]
        local = sorted({ranks[name] - int(below[bucket]) for name in names})
        parted = np.partition(inside, local)
        for name in names:
            out[name] = float(parted[ranks[name] - int(below[bucket])])
    return out


def _histogram_from_buckets(buckets: np.ndarray) -> list[tuple[float, int]]:
    """The report histogram from bucket indices at SELECT_BUCKETS_PER_OCTAVE."""
    fine = LogHistogram(SELECT_BUCKETS_PER_OCTAVE)
    fine.counts = np.bincount(buckets).astype(np.int64)
    return fine.coarsened(REPORT_BUCKETS_PER_OCTAVE).nonempty()


def _narrow(values: np.ndarray, lo: int | None = None, hi: int | None = None) -> np.ndarray:
    """int32 when the values fit and so do their differences (selection and differences
    on half the bytes are about twice as fast)."""
    if values.dtype.kind in "iu" and values.dtype.itemsize > 4 and values.size:
        lo = int(values.min()) if lo is None else lo
        hi = int(values.max()) if hi is None else hi
        if -(2**30) <= lo and hi < 2**30:
            return values.astype(np.int32)
    return values


def _pdv(percentiles: dict[str, float | None], min_ns: float | None) -> dict[str, float | None]:
    return {k: (None if v is None or min_ns is None else v - min_ns) for k, v in percentiles.items()}


def _ipdv(sequence: np.ndarray, latency: np.ndarray) -> IpdvSummary:
    if sequence.size < 2:
        return IpdvSummary(0, None, None, None, dict.fromkeys(PERCENTILES))
    consecutive = (sequence[1:] - sequence[:-1]) == 1
    diffs = latency[1:] - latency[:-1]
    if not consecutive.all():
        diffs = diffs[consecutive]
    if diffs.size == 0:
        return IpdvSummary(0, None, None, None, dict.fromkeys(PERCENTILES))
    absolute = np.abs(diffs)
    return IpdvSummary(
        count=int(diffs.size),
        min_ns=float(diffs.min()),
        max_ns=float(diffs.max()),
        mean_abs_ns=float(absolute.mean(dtype=np.float64)),
        abs_percentiles_ns=_exact_percentiles(absolute),
    )


def summarize_latency(probes: ProbeRecords) -> LatencySummary:
    """Everything the report says about one probe stream, exactly, from its records."""
    latency = np.asarray(probes.latency_ns)
    sequence = np.asarray(probes.sequence)
    if latency.shape != sequence.shape:
        raise ValueError("probe records need one sequence number per latency sample")
    seq_summary = analyze_sequence(sequence, probes.sent) if sequence.size or probes.sent else None
    if latency.size == 0:
        return LatencySummary(0, None, None, None, dict.fromkeys(PERCENTILES), dict.fromkeys(PERCENTILES),
                              None, [], None, seq_summary)
    lo, hi = latency.min(), latency.max()
    min_ns, max_ns = float(lo), float(hi)
    if latency.dtype.kind in "iu":
        latency = _narrow(latency, int(lo), int(hi))
    buckets = LogHistogram(SELECT_BUCKETS_PER_OCTAVE).bucket_of(latency)
    percentiles = _exact_percentiles(latency, buckets)
    return LatencySummary(
        count=int(latency.size),
        min_ns=min_ns,
        mean_ns=float(latency.mean(dtype=np.float64)),
        max_ns=max_ns,
        percentiles_ns=percentiles,
        pdv_percentiles_ns=_pdv(percentiles, min_ns),
        pdv_max_ns=max_ns - min_ns,
        histogram=_histogram_from_buckets(buckets),
        ipdv=_ipdv(sequence, latency),
        sequence=seq_summary,
        exact=True,
        negative_count=int(np.count_nonzero(latency < 0)) if min_ns < 0 else 0,
    )


def summarize_histogram(hist: LatencyHistogram) -> LatencySummary:
    """The same summary from a generator's histogram (TRex, IxNetwork).

    A percentile is the *upper* edge of the bucket that holds its rank (the last bucket's
    upper edge is the generator's max), so it never understates latency; PDV uses the
    generator's minimum, or the lowest non-empty bucket's lower edge, as D(min). IPDV and
    reordering need per-packet records and are ``None``.
    """
    lowers = np.asarray(hist.bucket_lower_ns, dtype=np.float64)
    counts = np.asarray(hist.counts, dtype=np.int64)
    if lowers.shape != counts.shape:
        raise ValueError("histogram needs one count per bucket")
    order = np.argsort(lowers, kind="stable")
    lowers, counts = lowers[order], counts[order]
    total = int(counts.sum())
    if total <= 0:
        return LatencySummary(0, None, None, None, dict.fromkeys(PERCENTILES), dict.fromkeys(PERCENTILES),
                              None, [], exact=False)
    nonempty = np.nonzero(counts)[0]
    min_ns = float(hist.min_ns) if hist.min_ns is not None else float(lowers[nonempty[0]])
    max_ns = float(hist.max_ns) if hist.max_ns is not None else None
    cumulative = np.cumsum(counts)
    percentiles: dict[str, float | None] = dict.fromkeys(PERCENTILES)
    for name, p in PERCENTILES.items():
        if total < min_samples_for(p):
            continue
        bucket = int(np.searchsorted(cumulative, max(1, math.ceil(p / 100.0 * total))))
        upper = float(lowers[bucket + 1]) if bucket + 1 < lowers.size else max_ns
        if upper is None:
            upper = float(lowers[bucket])
        if max_ns is not None:
            upper = min(upper, max_ns)
        percentiles[name] = max(upper, min_ns)
    if hist.mean_ns is not None:
        mean_ns = float(hist.mean_ns)
    else:  # bucket midpoints; the last bucket counts at its lower edge (or max)
        uppers = np.append(lowers[1:], max_ns if max_ns is not None else lowers[-1])
        mean_ns = float(((lowers + uppers) / 2.0 * counts).sum() / total)
    return LatencySummary(
        count=total,
        min_ns=min_ns,
        mean_ns=mean_ns,
        max_ns=max_ns,
        percentiles_ns=percentiles,
        pdv_percentiles_ns=_pdv(percentiles, min_ns),
        pdv_max_ns=None if max_ns is None else max_ns - min_ns,
        histogram=[(float(lowers[i]), int(counts[i])) for i in nonempty],
        exact=False,
    )


class LatencyAccumulator:
    """Bounded-memory summary of a probe stream delivered in chunks (long latency tests).

    Memory stays at a few hundred kilobytes whatever the duration: two log histograms
    (latency and absolute IPDV), the exact min/max/sum/count, the last record for the IPDV
    across chunk boundaries, and a :class:`SequenceTracker` window.
    """

    def __init__(self, window: int = DEFAULT_WINDOW):
        self.latency = LogHistogram()
        self.ipdv_abs = LogHistogram()
        self.ipdv_min: float | None = None
        self.ipdv_max: float | None = None
        self.negative = 0
        self.sequence = SequenceTracker(window)
        self._last: tuple[int, int] | None = None

    def add(self, sequence, latency_ns) -> None:
        seq = np.asarray(sequence, dtype=np.int64)
        lat = np.asarray(latency_ns, dtype=np.int64)
        if seq.shape != lat.shape:
            raise ValueError("need one sequence number per latency sample")
        if seq.size == 0:
            return
        self.negative += int(np.count_nonzero(lat < 0))
        self.latency.add(lat)
        self.sequence.add(seq)
        if self._last is not None:
            seq_all = np.concatenate(([self._last[0]], seq))
            lat_all = np.concatenate(([self._last[1]], lat))
        else:
            seq_all, lat_all = seq, lat
        consecutive = (seq_all[1:] - seq_all[:-1]) == 1
        diffs = (lat_all[1:] - lat_all[:-1])[consecutive]
        if diffs.size:
            self.ipdv_abs.add(np.abs(diffs))
            lo, hi = float(diffs.min()), float(diffs.max())
            self.ipdv_min = lo if self.ipdv_min is None else min(self.ipdv_min, lo)
            self.ipdv_max = hi if self.ipdv_max is None else max(self.ipdv_max, hi)
        self._last = (int(seq[-1]), int(lat[-1]))

    def add_probes(self, probes: ProbeRecords) -> None:
        self.add(probes.sequence, probes.latency_ns)

    def summary(self, sent: int | None = None) -> LatencySummary:
        h = self.latency
        percentiles = {
            name: (h.percentile(p) if h.count >= min_samples_for(p) else None) for name, p in PERCENTILES.items()
        }
        ipdv_percentiles = {
            name: (self.ipdv_abs.percentile(p) if self.ipdv_abs.count >= min_samples_for(p) else None)
            for name, p in PERCENTILES.items()
        }
        return LatencySummary(
            count=h.count,
            min_ns=h.min_value,
            mean_ns=h.mean,
            max_ns=h.max_value,
            percentiles_ns=percentiles,
            pdv_percentiles_ns=_pdv(percentiles, h.min_value),
            pdv_max_ns=None if h.min_value is None else h.max_value - h.min_value,
            histogram=h.coarsened(REPORT_BUCKETS_PER_OCTAVE).nonempty() if h.count else [],
            ipdv=IpdvSummary(self.ipdv_abs.count, self.ipdv_min, self.ipdv_max, self.ipdv_abs.mean,
                             ipdv_percentiles),
            sequence=self.sequence.summary(sent),
            exact=False,
            negative_count=self.negative,
        )
