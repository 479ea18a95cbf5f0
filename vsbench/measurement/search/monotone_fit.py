"""Estimates of a load's bad-trial probability that borrow strength from its neighbours.

Used only for loads the per-load test could not decide within ``n_max`` trials (see
:mod:`.load_stats`): there, eleven-odd trials cannot tell p = 0.45 from p = 0.55, but the
neighbouring loads can, because p rises with load. Two estimates are averaged:

* the **isotonic** fit (pool-adjacent-violators over ascending loads, weights = trials):
  the maximum-likelihood non-decreasing curve; it pools a load with neighbours only where
  their rates contradict "more load, more bad trials", and copes with sharp edges;
* a **local logistic** fit, ``P(bad) = 1 / (1 + exp(-(a + b (i - i0))))`` with ``b >= 0``
  over the *undecided* loads within a few grid steps: it uses every nearby trial even when
  the rates happen to be in order. Loads the test already decided are left out of it, so a
  smooth curve is never drawn across a sharp capacity edge (a load just below a hard limit
  must not inherit the limit's certainty of loss).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: Grid steps either side of a load that its logistic fit may use.
NEIGHBOURHOOD_STEPS = 8
_RIDGE = 0.01


def isotonic_rates(points: list[tuple[int, int, int]]) -> dict[int, float]:
    """Weighted isotonic (non-decreasing) fit of bad-trial rates over ascending loads.

    ``points`` are ``(load index, trials, bad trials)`` sorted by index; the result maps
    each index to its fitted rate (pool-adjacent-violators, weights = trials).
    """
    blocks: list[list] = []  # [trials, bad, indices]
    for index, n, bad in points:
        blocks.append([n, bad, [index]])
        while len(blocks) > 1 and blocks[-2][1] * blocks[-1][0] > blocks[-1][1] * blocks[-2][0]:
            n2, bad2, idx2 = blocks.pop()
            blocks[-1][0] += n2
            blocks[-1][1] += bad2
            blocks[-1][2].extend(idx2)
    return {i: bad / n for n, bad, idx in blocks for i in idx}


@dataclass(frozen=True)
class LogisticFit:
    """A non-decreasing logistic fit evaluated at one load: the log-odds of a bad trial
    there and its standard error (from the observed information; the slope is held
    fixed when it sits at its bound of zero)."""

    logit: float
    logit_se: float

    @property
    def rate(self) -> float:
        return _sigmoid(self.logit)


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, x))))


def logistic_fit(points: list[tuple[int, int, int]], center: int) -> LogisticFit:
    """A non-decreasing logistic fit to ``points`` (index, trials, bad), at ``center``.

    Newton-Raphson on the binomial log-likelihood with a small ridge (so perfectly
    separated data stay finite) and the slope clamped at zero from below.
    """
    a, b = 0.0, 0.1
    for _ in range(60):
        ga = -_RIDGE * a
        gb = -_RIDGE * b
        haa, hab, hbb = _information(points, center, a, b)
        for index, n, bad in points:
            x = index - center
            residual = bad - n * _sigmoid(a + b * x)
            ga += residual
            gb += residual * x
        det = haa * hbb - hab * hab
        da = (hbb * ga - hab * gb) / det
        db = (haa * gb - hab * ga) / det
        if b + db < 0.0:  # the slope hits its bound: fix it at zero, step in a alone
            db = -b
            da = ga / haa
        a += da
        b += db
        if abs(da) < 1e-9 and abs(db) < 1e-9:
            break
    haa, hab, hbb = _information(points, center, a, b)
    variance = 1.0 / haa if b <= 1e-9 else hbb / (haa * hbb - hab * hab)
    return LogisticFit(a, math.sqrt(variance))


def _information(points: list[tuple[int, int, int]], center: int, a: float, b: float) -> tuple[float, float, float]:
    """The (ridged) information matrix (aa, ab, bb) of the fit at (a, b)."""
    haa = hbb = _RIDGE
    hab = 0.0
    for index, n, _bad in points:
        x = index - center
        p = _sigmoid(a + b * x)
        weight = n * p * (1.0 - p) + 1e-12
        haa += weight
        hab += weight * x
        hbb += weight * x * x
    return haa, hab, hbb


def logistic_rate(points: list[tuple[int, int, int]], center: int) -> float:
    """P(bad) at ``center`` from :func:`logistic_fit`."""
    return logistic_fit(points, center).rate


def pooled_rate(index: int, counts: dict[int, tuple[int, int]], undecided: set[int],
                isotonic: dict[int, float]) -> float:
    """The estimate a forced decision at ``index`` uses: mean of isotonic and logistic."""
    local = [
        (i, n, bad) for i, (n, bad) in sorted(counts.items())
        if i in undecided and n > 0 and abs(i - index) <= NEIGHBOURHOOD_STEPS
    ]
    if len({i for i, _n, _b in local}) < 2:
        return isotonic[index]
    return 0.5 * (logistic_rate(local, index) + isotonic[index])
