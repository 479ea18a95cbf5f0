"""Revision 5: a close load decided by the capacity model of every overload trial.

The per-load test (:mod:`.exceed_test`) and the neighbourhood fit (:mod:`.neighbourhood_test`)
count pass/fail bits, and at a bad-trial probability near the exceed ratio a bit carries
little: the docs (docs/search.rst) show the noisy models' trial time is bound by that
information. Every trial that overloaded the device also measured its capacity
(:mod:`.capacity_model`), so the model's P(bad at L) is known much sooner than the bits at
L can say it. A load its own test left open is decided by the model when

* it has :data:`MIN_OWN_TRIALS` trials of its own, and their majority agrees with the
  model's side (the exceed-ratio semantics of what is reported stay the per-load ones:
  the model can only settle a load its own trials lean the same way on, never overturn
  them);
* the model's P(bad) lies more than :data:`Z` standard errors from the exceed ratio;
* the pass/fail bits around the load lean the same way: the non-decreasing logistic fit
  of revision 3 over the loads within ``WINDOW_STEPS`` is on the model's side of the exceed
  ratio. The model alone, on the 2 %-jitter model, put NDRs a width or two lower than
  revision 4 did (wrong NDRs 729 against 666 of 1000): a normal fit of a few dozen
  capacities is sometimes a standard deviation off, and the bits then disagree with it.

Otherwise the older rules go on. Pure arithmetic over the recorded trials: a replay decides
the same.
"""

from __future__ import annotations

import math

from .capacity_model import CapacityModel
from .exceed_test import Verdict
from .monotone_fit import logistic_fit
from .neighbourhood_test import WINDOW_STEPS

#: Trials a load needs of its own before the model may decide it.
MIN_OWN_TRIALS = 2
#: Standard errors between the model's P(bad) and the exceed ratio for a decision.
Z = 2.0
#: How many of its standard errors the local pass/fail fit must lean the model's way.
LEAN_SE = 1.0


def capacity_verdict(model: CapacityModel | None, load_fps: float, index: int, counts: dict[int, tuple[int, int]],
                     goal_loss_ratio: float, exceed_ratio: float) -> Verdict | None:
    """The model's verdict on load ``index`` (at ``load_fps``; ``counts`` maps load index to
    (trials, bad trials)); None: not decided."""
    n, bad = counts[index]
    if model is None or n < MIN_OWN_TRIALS:
        return None
    p, se = model.bad_probability(load_fps, goal_loss_ratio)
    if p + Z * se < exceed_ratio and bad < exceed_ratio * n - 1e-9:
        verdict = Verdict.LOWER
    elif p - Z * se > exceed_ratio and bad >= exceed_ratio * n - 1e-9:
        verdict = Verdict.UPPER
    else:
        return None
    pool = [(i, trials, b) for i, (trials, b) in sorted(counts.items())
            if trials > 0 and abs(i - index) <= WINDOW_STEPS]
    threshold = math.log(exceed_ratio / (1.0 - exceed_ratio))
    fit = logistic_fit(pool, index)
    lean = (fit.logit - threshold) / fit.logit_se
    if verdict is Verdict.UPPER:
        return verdict if lean >= LEAN_SE - 1e-12 else None
    return verdict if lean < -LEAN_SE - 1e-12 else None
