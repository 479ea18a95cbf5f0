"""The trial database of the multi-goal search: every trial, filed by load and goal.

Every trial updates every goal (a trial at load L is good or bad for each goal), which is
how NDR, PDR and latency-bounded goals come out of one stream of trials. Trials shorter
than a target's trial duration are *short*; following the MLRsearch draft, a short bad
trial counts against a load only when short good trials do not balance it, so short
trials can condemn a load but never vouch for it at the final duration.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from vsbench.interfaces.traffic import TrialResult

from .api import Goal
from .capacity_model import CapacityModel, TrialLoss, fit_capacity
from .capacity_rule import capacity_verdict
from .exceed_test import Verdict, classify, decided_by_test
from .monotone_fit import isotonic_rates, pooled_rate
from .neighbourhood_test import FORCED_POOL_TRIALS, neighbourhood_verdict
from .resolution_rule import FUTILE_POOL_TRIALS, Resolution, width_unresolvable
from .trial_checks import trial_is_bad


@dataclass(frozen=True)
class Target:
    """One stage of a goal's search: how wide, how sure, and with which trial duration.

    ``width_steps`` is the bracket width (in grid steps) at which the stage is done;
    ``alpha``/``n_max`` parametrise the per-load test; trials shorter than
    ``trial_duration_s`` are short for this target.
    """

    width_steps: int
    alpha: float
    n_max: int
    trial_duration_s: float


@dataclass
class _Record:
    trial_index: int
    duration_s: float
    loss_ratio: float
    forwarding_fps: float
    bad: tuple[bool, ...]  # one per goal, in goal order
    #: False for a trial still disturbed after its retries: bad for every goal, but its
    #: loss says nothing about the device (no capacity hint, no conditional throughput).
    valid: bool = True
    #: Judged at the rate the generator delivered, not the one asked
    #: (:class:`.measurer.LateTrial`): reported only when no trial at the load kept its rate.
    late: bool = False


@dataclass
class LoadStats:
    """All trials at one load index."""

    index: int
    load_fps: float
    records: list[_Record] = field(default_factory=list)

    def counts(self, goal_pos: int, duration_s: float, exceed_ratio: float) -> tuple[int, int]:
        """(trials, bad trials) that count at ``duration_s`` for the goal at ``goal_pos``."""
        n = bad = 0
        short_good = short_bad = 0.0
        for r in self.records:
            if r.duration_s >= duration_s * (1 - 1e-9):
                n += 1
                bad += r.bad[goal_pos]
            elif r.bad[goal_pos]:
                short_bad += r.duration_s / duration_s
            else:
                short_good += r.duration_s / duration_s
        if short_bad and exceed_ratio < 1.0:
            balance = exceed_ratio / (1.0 - exceed_ratio)
            excess = math.ceil(max(0.0, short_bad - balance * short_good) - 1e-9)
            n += excess
            bad += excess
        return n, bad

    def verdict(self, goal_pos: int, goal: Goal, target: Target) -> Verdict:
        n, bad = self.counts(goal_pos, target.trial_duration_s, goal.exceed_ratio)
        return classify(n, bad, goal.exceed_ratio, target.alpha, target.n_max)

    def full_records(self, duration_s: float) -> list[_Record]:
        return [r for r in self.records if r.duration_s >= duration_s * (1 - 1e-9)]


class TrialDatabase:
    """Load index -> :class:`LoadStats`, for a fixed tuple of goals."""

    def __init__(self, goals: tuple[Goal, ...], *, neighbourhood_decides: bool = False,
                 capacity_decides: bool = False, resolution: Resolution | None = None):
        self.goals = goals
        #: Revision 6 (:mod:`.resolution_rule`): given when a close load is decided on fewer
        #: trials where the capacity model calls a width unresolvable.
        self.resolution = resolution
        self.loads: dict[int, LoadStats] = {}
        #: Revision 5 (:mod:`.capacity_rule`): the capacity model of every overload trial
        #: decides a load its own test left open, before the neighbourhood fit is asked.
        self.capacity_decides = capacity_decides
        self._models: dict[tuple[float, int], CapacityModel | None] = {}
        self._trial_count = 0
        #: Revision 3 (:mod:`.neighbourhood_test`): a close load is decided from its
        #: neighbours as soon as they are sure enough, not only at ``n_max``.
        self.neighbourhood_decides = neighbourhood_decides

    def add(self, index: int, trial_index: int, trial: TrialResult, *, late: bool = False) -> None:
        stats = self.loads.get(index)
        if stats is None:
            stats = self.loads[index] = LoadStats(index, trial.intended_load_fps)
        duration = trial.intended_duration_s
        self._trial_count += 1
        stats.records.append(
            _Record(
                trial_index=trial_index,
                duration_s=duration,
                loss_ratio=trial.loss_ratio,
                forwarding_fps=trial.rx_frames / duration if duration > 0 else 0.0,
                bad=tuple(trial_is_bad(goal, trial) for goal in self.goals),
                valid=trial.valid,
                late=late,
            )
        )

    def verdicts(self, goal_pos: int, target: Target) -> dict[int, Verdict]:
        """Each load's verdict for one goal under one target.

        The per-load test decides what it can. A load that reached ``n_max`` trials
        without a decision is judged by :func:`.monotone_fit.pooled_rate`, an estimate of
        its bad-trial probability that also uses the neighbouring loads, instead of by its
        own noisy majority. Loads the test decided keep that verdict, so a real loss
        inversion (decided long before n_max) stays conservative.
        """
        goal = self.goals[goal_pos]
        counts = {
            i: s.counts(goal_pos, target.trial_duration_s, goal.exceed_ratio) for i, s in self.loads.items()
        }
        if self.neighbourhood_decides:
            model = self.capacity_model(target.trial_duration_s) if self.capacity_decides else None
            forced_pool = FORCED_POOL_TRIALS
            if self.resolution is not None and width_unresolvable(model, goal.loss_ratio, goal.exceed_ratio,
                                                                  self.resolution):
                forced_pool = FUTILE_POOL_TRIALS
            return _neighbourhood_verdicts(counts, goal, target, model, self.loads, forced_pool)
        out: dict[int, Verdict] = {}
        undecided: set[int] = set()
        forced: list[int] = []
        for i, (n, bad) in counts.items():
            out[i] = classify(n, bad, goal.exceed_ratio, target.alpha, target.n_max)
            if n > 0 and goal.exceed_ratio > 0 and not decided_by_test(n, bad, goal.exceed_ratio, target.alpha):
                undecided.add(i)
                if n >= target.n_max:
                    forced.append(i)
        if forced and target.n_max > 1:
            iso = isotonic_rates([(i, *counts[i]) for i in sorted(counts) if counts[i][0] > 0])
            for i in forced:
                rate = pooled_rate(i, counts, undecided, iso)
                out[i] = Verdict.LOWER if rate < goal.exceed_ratio - 1e-12 else Verdict.UPPER
        return out

    def capacity_model(self, duration_s: float) -> CapacityModel | None:
        """The capacity model (:func:`.capacity_model.fit_capacity`) of the valid trials at
        ``duration_s`` or longer, refitted only when a trial was added."""
        key = (duration_s, self._trial_count)
        if key not in self._models:
            trials = [TrialLoss(s.load_fps, r.loss_ratio, r.forwarding_fps)
                      for s in self.loads.values() for r in s.full_records(duration_s) if r.valid and not r.late]
            self._models = {key: fit_capacity(trials)}
        return self._models[key]

    def forget_above(self, top: int) -> None:
        """Drop loads above ``top`` (after max_load was lowered they cannot be re-measured)."""
        for index in [i for i in self.loads if i > top]:
            del self.loads[index]
        self._trial_count += 1  # the trials changed: the capacity model is refitted


def _neighbourhood_verdicts(counts: dict[int, tuple[int, int]], goal: Goal, target: Target,
                            model: CapacityModel | None = None,
                            loads: dict[int, LoadStats] | None = None,
                            forced_pool: int = FORCED_POOL_TRIALS) -> dict[int, Verdict]:
    """Revision 3's verdicts: the per-load test, then :func:`.neighbourhood_test.neighbourhood_verdict`
    for each load it left open (a target whose test one trial decides has no neighbourhood rule).
    Revision 5 passes its capacity ``model``: :func:`.capacity_rule.capacity_verdict` is asked
    first (``loads`` gives each index's load); revision 6 may lower ``forced_pool``."""
    out = {i: classify(n, bad, goal.exceed_ratio, target.alpha, target.n_max) for i, (n, bad) in counts.items()}
    if target.n_max <= 1 or goal.exceed_ratio <= 0.0:
        return out
    for i, (n, bad) in counts.items():
        if n > 0 and not decided_by_test(n, bad, goal.exceed_ratio, target.alpha):
            verdict = None
            if model is not None and loads is not None:
                verdict = capacity_verdict(model, loads[i].load_fps, i, counts, goal.loss_ratio, goal.exceed_ratio)
            if verdict is None:
                verdict = neighbourhood_verdict(i, counts, goal.exceed_ratio, target.n_max, forced_pool)
            if verdict is not None:
                out[i] = verdict
    return out
