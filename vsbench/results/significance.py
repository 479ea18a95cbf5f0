"""Is a difference between two measurements real, or within their noise? Pure functions.

Two kinds of evidence, strongest first:

* **Repeats** (``--repeat K``, several runs given as one side of a comparison, or
  ``search.repetitions``): with at least two samples on each side, Welch's two-sample
  t-test at 95 % confidence -- the confidence interval of the difference of the means must
  exclude zero (pyperf decides "significant" the same way).
* **Intervals** of single measurements: the search's bounds of a throughput (the true
  figure lies between the highest passing and the lowest failing load), or a confidence
  interval over the probes of one latency trial. Two disjoint intervals differ; overlapping
  ones are *within noise*. A single run says nothing about run-to-run noise, so this is
  the weaker statement, and :attr:`Change.basis` says which one was made.

Without either, the verdict is ``unknown``, never a guess. A change smaller than
:data:`NEGLIGIBLE_PERCENT` is within noise whatever the test says: no vsbench figure is
resolved that finely (the search stops at 0.5 % relative width), so a "significant"
0.01 % would only say that repeats of a deterministic figure agree.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Sequence

SIGNIFICANT, WITHIN_NOISE, UNKNOWN = "significant", "within noise", "unknown"
#: Relative changes below this (in %) are never called significant.
NEGLIGIBLE_PERCENT = 0.1

#: Two-sided 95 % quantiles of Student's t for 1..30 degrees of freedom.
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
         2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
         2.060, 2.056, 2.052, 2.048, 2.045, 2.042)
Z975 = 1.959964


def t975(df: float) -> float:
    """The 97.5 % quantile of Student's t with ``df`` degrees of freedom (rounded down: the
    conservative side); above 30 the Cornish-Fisher expansion around the normal quantile."""
    if df < 1:
        return math.inf
    if df <= len(_T975):
        return _T975[int(math.floor(df)) - 1]
    return Z975 + (Z975 ** 3 + Z975) / (4 * df)


@dataclass(frozen=True)
class Interval:
    low: float
    high: float

    def overlaps(self, other: "Interval") -> bool:
        return self.low <= other.high and other.low <= self.high


def mean_interval(samples: Sequence[float]) -> Interval | None:
    """95 % confidence interval of the mean of ``samples`` (None below two samples)."""
    n = len(samples)
    if n < 2:
        return None
    mean = statistics.fmean(samples)
    half = t975(n - 1) * statistics.stdev(samples) / math.sqrt(n)
    return Interval(mean - half, mean + half)


def quantile_interval(sorted_samples: Sequence[float], q: float) -> Interval | None:
    """Distribution-free 95 % confidence interval of the ``q`` quantile from order
    statistics (normal approximation of the binomial rank); None when the samples are too
    few for the interval's ranks to exist."""
    n = len(sorted_samples)
    if n == 0 or not 0 < q < 1:
        return None
    half = Z975 * math.sqrt(n * q * (1 - q))
    lo, hi = math.floor(n * q - half), math.ceil(n * q + half)
    if lo < 1 or hi > n:
        return None
    return Interval(float(sorted_samples[lo - 1]), float(sorted_samples[hi - 1]))


@dataclass(frozen=True)
class Change:
    """``b`` against ``a``: the relative change of the central values in percent, its 95 %
    interval when repeats give one, the verdict and what it rests on. ``better`` is None
    when the change is zero or unknown."""

    percent: float | None
    percent_low: float | None
    percent_high: float | None
    significance: str
    basis: str
    better: bool | None


def _negligible(percent: float | None) -> bool:
    return percent is not None and abs(percent) < NEGLIGIBLE_PERCENT


def welch(a: Sequence[float], b: Sequence[float]) -> tuple[float, Interval]:
    """Difference of means b - a and its 95 % Welch interval (both sides >= 2 samples)."""
    ma, mb = statistics.fmean(a), statistics.fmean(b)
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    diff = mb - ma
    se2 = va + vb
    if se2 == 0:
        return diff, Interval(diff, diff)
    df = se2 ** 2 / ((va ** 2 / (len(a) - 1) if va else 0.0) + (vb ** 2 / (len(b) - 1) if vb else 0.0))
    half = t975(df) * math.sqrt(se2)
    return diff, Interval(diff - half, diff + half)


def compare_values(a_value: float | None, a_samples: Sequence[float], a_interval: Interval | None,
                   b_value: float | None, b_samples: Sequence[float], b_interval: Interval | None,
                   higher_is_better: bool) -> Change:
    """The change from measurement ``a`` (the baseline) to ``b``.

    ``*_value`` is the central value shown (the median of the samples), ``*_samples`` the
    repeats, ``*_interval`` the uncertainty of a single measurement (or None).
    """
    if a_value is None or b_value is None:
        return Change(None, None, None, UNKNOWN, "a value is missing", None)
    percent = None if a_value == 0 else 100.0 * (b_value - a_value) / abs(a_value)
    better = None if b_value == a_value else ((b_value > a_value) == higher_is_better)
    if len(a_samples) >= 2 and len(b_samples) >= 2:
        _, diff = welch(a_samples, b_samples)
        mean_a = statistics.fmean(a_samples)
        low = None if mean_a == 0 else 100.0 * diff.low / abs(mean_a)
        high = None if mean_a == 0 else 100.0 * diff.high / abs(mean_a)
        verdict = SIGNIFICANT if (diff.low > 0 or diff.high < 0) and not _negligible(percent) else WITHIN_NOISE
        basis = f"Welch t-test, 95 %, {len(a_samples)} vs {len(b_samples)} repeats"
        return Change(percent, low, high, verdict, basis, better)
    ia = mean_interval(a_samples) if len(a_samples) >= 2 else a_interval
    ib = mean_interval(b_samples) if len(b_samples) >= 2 else b_interval
    if ia is None or ib is None:
        return Change(percent, None, None, UNKNOWN,
                      "one measurement without an interval: repeat it (--repeat K) to judge noise", better)
    verdict = WITHIN_NOISE if ia.overlaps(ib) or _negligible(percent) else SIGNIFICANT
    return Change(percent, None, None, verdict,
                  "measurement intervals (single runs: run-to-run noise not measured)", better)
