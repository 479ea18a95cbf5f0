"""Revision 3: a close load is decided by its neighbourhood as soon as that is sure enough.

The per-load test (:mod:`.exceed_test`) decides a load from its own trials. Where the
bad-trial probability p is near the exceed ratio q -- the loads that bracket a noisy
device's NDR -- it cannot: p = 0.4 and p = 0.6 need dozens of trials each to tell apart,
and revisions 1-2 spent ``n_max`` (13) trials on every such load before the neighbours
were consulted at all (:func:`.monotone_fit.pooled_rate`). MLRsearch spends up to 21 on each.

But p rises with load, so the trials at the neighbouring loads say almost as much about
p(L) as trials at L itself: one non-decreasing logistic curve through the loads within
:data:`WINDOW_STEPS` grid steps (:func:`.monotone_fit.logistic_fit`) estimates the
log-odds at L with a standard error that shrinks with *all* those trials. On the
search-efficiency benchmark's noisy DUT models that takes 0.76-0.80 of revision 2's trial
time with as many wrong NDRs over 1000 seeds (docs/search.rst has the figures and the
reasoning). The rule, for a load the per-load test has not decided:

* it needs :data:`MIN_OWN_TRIALS` trials of its own that disagree (some good, some bad):
  a load whose trials all agree is what the per-load test decides best (five in a row),
  and a hard edge (a meter, a clean device) must not be smoothed into its neighbours;
* it is decided early when its neighbourhood holds :data:`EARLY_POOL_TRIALS` trials and
  the fitted log-odds lie more than :data:`EARLY_Z` standard errors from logit(q): the
  trials keep going only where the decision is close;
* it is decided by the fit's sign when the neighbourhood holds
  :data:`FORCED_POOL_TRIALS` trials, or when the load reached ``n_max`` trials of its own
  (the revision-2 cap): more trials at a p that flat move the answer less than a width.

The sign decides with the conservative tie of the per-load test: exactly q is an upper
bound. Pure arithmetic over the trial counts, so a replay decides the same.
"""

from __future__ import annotations

import math

from .exceed_test import Verdict
from .monotone_fit import logistic_fit

#: Grid steps either side of a load whose trials its fit uses.
WINDOW_STEPS = 2
#: Trials a load needs of its own (and both outcomes among them) before its neighbourhood
#: may decide it early.
MIN_OWN_TRIALS = 3
#: Neighbourhood trials from which a clear fit decides.
EARLY_POOL_TRIALS = 12
#: How many standard errors from logit(q) a fit must be to decide early. 1.5, not 1.0: at
#: 1.0 the 2%-jitter model's wrong NDRs rose from 667 to 681 in 1000 seeds; at 1.5 they
#: stay at revision 2's (docs/search.rst).
EARLY_Z = 1.5
#: Neighbourhood trials at which the fit's sign decides however close it is. Fewer (26)
#: cut the noisy models' trial time by another 6-11 % and raised the 2%-jitter model's wrong
#: NDRs to about 699 in 1000 seeds (revision 2: 667).
FORCED_POOL_TRIALS = 30


def neighbourhood_verdict(index: int, counts: dict[int, tuple[int, int]], exceed_ratio: float,
                          n_max: int, forced_pool_trials: int = FORCED_POOL_TRIALS) -> Verdict | None:
    """The verdict of load ``index`` (not decided by its own test) from the loads around it.

    ``counts`` maps load index to (trials, bad trials) at the target's duration. None: not
    yet (the per-load test's verdict stands, ``UNDECIDED`` or its n_max majority).
    ``forced_pool_trials``: the neighbourhood trials at which the fit's sign decides
    (revision 6 passes fewer where a width is unresolvable, :mod:`.resolution_rule`).
    """
    n, bad = counts[index]
    at_cap = n >= n_max
    if not at_cap and (n < MIN_OWN_TRIALS or bad in (0, n)):
        return None
    pool = [(i, trials, b) for i, (trials, b) in sorted(counts.items())
            if trials > 0 and abs(i - index) <= WINDOW_STEPS]
    if len(pool) < 2:
        return None
    fit = logistic_fit(pool, index)
    threshold = math.log(exceed_ratio / (1.0 - exceed_ratio))
    pooled = sum(trials for _i, trials, _b in pool)
    clear = pooled >= EARLY_POOL_TRIALS and abs(fit.logit - threshold) > EARLY_Z * fit.logit_se
    if not (at_cap or pooled >= forced_pool_trials or clear):
        return None
    return Verdict.LOWER if fit.logit < threshold - 1e-12 else Verdict.UPPER
