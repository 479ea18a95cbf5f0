"""The per-load classification test: is P(trial is bad) at this load above the exceed ratio?

Losses are bursty, so the statistical unit is the trial, not the packet: at load L each
full-length trial is bad with an unknown probability p(L), and a goal with exceed ratio q
holds at L when p(L) <= q (q = 0.5: the median trial meets the goal, as CSIT's default).
After n trials with k bad, the load is

* a **lower bound** when P[Bin(n, q) <= k] <= alpha (so few bad trials are unlikely if
  p were q or more),
* an **upper bound** when P[Bin(n, q) >= k] <= alpha,
* otherwise undecided, until ``n_max`` trials, where the majority rule decides
  (k < q n is lower; a tie is upper, the conservative side).

With q = 0.5 and alpha = 0.05 five consistent trials decide a load (MLRsearch with a 21 s
duration sum needs eleven). ``alpha = 0.5, n_max = 1`` makes one trial decide, which the
coarse phase uses. An exceed ratio of 0 means no trial may be bad: one good trial is a
lower bound and any bad trial an upper bound (RFC 2544 semantics).
"""

from __future__ import annotations

import math
from enum import Enum
from functools import lru_cache


class Verdict(Enum):
    LOWER = "lower"
    UPPER = "upper"
    UNDECIDED = "undecided"


def binomial_cdf(k: int, n: int, p: float) -> float:
    """P[Bin(n, p) <= k]."""
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    if p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 0.0
    return math.fsum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k + 1))


def binomial_sf(k: int, n: int, p: float) -> float:
    """P[Bin(n, p) >= k]."""
    return 1.0 - binomial_cdf(k - 1, n, p) if k > 0 else 1.0


@lru_cache(maxsize=4096)
def classify(n: int, bad: int, exceed_ratio: float, alpha: float, n_max: int) -> Verdict:
    """Classify a load from ``n`` trials of which ``bad`` violated the goal."""
    if n <= 0:
        return Verdict.UNDECIDED
    q = exceed_ratio
    if q <= 0.0:
        return Verdict.UPPER if bad > 0 else Verdict.LOWER
    if binomial_cdf(bad, n, q) <= alpha + 1e-12:
        return Verdict.LOWER
    if binomial_sf(bad, n, q) <= alpha + 1e-12:
        return Verdict.UPPER
    if n >= n_max:
        return Verdict.LOWER if bad < q * n - 1e-9 else Verdict.UPPER
    return Verdict.UNDECIDED


def decided_by_test(n: int, bad: int, exceed_ratio: float, alpha: float) -> bool:
    """True when the one-sided tests alone (without the n_max majority rule) decide."""
    if exceed_ratio <= 0.0:
        return True
    return (
        binomial_cdf(bad, n, exceed_ratio) <= alpha + 1e-12
        or binomial_sf(bad, n, exceed_ratio) <= alpha + 1e-12
    )


def clopper_pearson(n: int, bad: int, confidence: float = 0.95) -> tuple[float, float]:
    """Exact two-sided confidence interval for the bad-trial probability from n trials."""
    if n <= 0:
        return 0.0, 1.0
    tail = (1.0 - confidence) / 2.0

    def solve(predicate) -> float:
        lo, hi = 0.0, 1.0
        for _ in range(60):
            mid = (lo + hi) / 2.0
            if predicate(mid):
                hi = mid
            else:
                lo = mid
        return (lo + hi) / 2.0

    # lower limit: largest p with P[Bin(n,p) >= bad] <= tail
    lower = 0.0 if bad == 0 else solve(lambda p: binomial_sf(bad, n, p) > tail)
    # upper limit: smallest p with P[Bin(n,p) <= bad] <= tail
    upper = 1.0 if bad == n else solve(lambda p: binomial_cdf(bad, n, p) <= tail)
    return lower, upper
