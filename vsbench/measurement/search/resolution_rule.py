"""Revision 6: where the device's noise makes a width unresolvable, stop paying for it.

Revisions 3-5 decide a load the per-load test leaves open by the sign of the neighbourhood
fit (:mod:`.neighbourhood_test`) once :data:`~.neighbourhood_test.FORCED_POOL_TRIALS` (30)
trials lie around it. That many trials are worth it where the bad-trial probability p(L)
rises steeply with load: a few dozen trials then place the answer within a width. But on a
device whose capacity varies by several per cent from trial to trial, p(L) rises by only a
few hundredths per width (issue 31's 5 %-jitter model: about 0.03 at its NDR crossing,
0.09 on the 2 % model, 0.38 on the 0.5 % one). Near the crossing every load's p is then
within a few hundredths of the exceed ratio, and ``max_trials_per_load`` trials (13: a
binomial standard error of 0.14 at q = 0.5) cannot tell a load from its neighbours four
widths away: the 30 trials buy a coin flip between loads that cannot be told apart, and
the noisy searches spent most of their time there (docs/search.rst).

The capacity model (:mod:`.capacity_model`) knows the slope from every overload trial: when
p rises per grid step by less than a quarter of one load's binomial standard error at
``n_max`` trials, at the crossing the model predicts, the width is unresolvable and a close
load is decided from :data:`FUTILE_POOL_TRIALS` neighbourhood trials. The verdict is the
same fit's sign as at 30 trials, on fewer of them, and only where more trials could not
place the answer within the asked width anyway: on steep devices nothing changes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .capacity_model import CapacityModel

#: A width is resolvable when ``n_max`` trials' binomial standard error spans fewer than
#: this many grid steps of the modelled p(L). 3 took the 2 %-jitter model's mean trial time
#: down another 4 % and its wrong NDRs up from 666 to 688 of 1000: the fitted spread is
#: itself noisy, and near that model's real slope (0.09 per step) the rule fired on it.
RESOLVABLE_STEPS = 4
#: Neighbourhood trials from which the fit's sign decides a close load where the width is
#: unresolvable (elsewhere :data:`.neighbourhood_test.FORCED_POOL_TRIALS`). 12 took the
#: 5 %-jitter model's trial time down by a further fifth, and its NDRs another 0.16 widths
#: (root mean square) from the exact answer; 20 is the compromise kept.
FUTILE_POOL_TRIALS = 20


@dataclass(frozen=True)
class Resolution:
    """What resolving a width means for one search: adjacent grid loads are ``step_ratio``
    apart, and the final stage gives a load at most ``n_max`` trials of its own (the final
    stage's in every stage: it is the reported width that is in question)."""

    step_ratio: float
    n_max: int


def width_unresolvable(model: CapacityModel | None, goal_loss_ratio: float, exceed_ratio: float,
                       resolution: Resolution) -> bool:
    """True when, by the model, p(L) rises per grid step by less than 1/:data:`RESOLVABLE_STEPS`
    of the binomial standard error of ``resolution.n_max`` trials, at the goal's predicted
    crossing."""
    if model is None or not 0.0 < exceed_ratio < 1.0 or resolution.n_max <= 1:
        return False
    crossing = model.crossing_fps(goal_loss_ratio, exceed_ratio)
    if crossing is None:
        return False
    standard_error = math.sqrt(exceed_ratio * (1.0 - exceed_ratio) / resolution.n_max)
    rise = model.rise_per_step(crossing, goal_loss_ratio, resolution.step_ratio)
    return rise * RESOLVABLE_STEPS < standard_error
