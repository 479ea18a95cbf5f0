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
from .exceed_test import Verdict, classify, decided_by_test as _decided_by_test

ISOTONIC = True
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

    def __init__(self, goals: tuple[Goal, ...]):
        self.goals = goals
        self.loads: dict[int, LoadStats] = {}

    def add(self, index: int, trial_index: int, trial: TrialResult) -> None:
        stats = self.loads.get(index)
        if stats is None:
            stats = self.loads[index] = LoadStats(index, trial.intended_load_fps)
        duration = trial.intended_duration_s
        stats.records.append(
            _Record(
                trial_index=trial_index,
                duration_s=duration,
                loss_ratio=trial.loss_ratio,
                forwarding_fps=trial.rx_frames / duration if duration > 0 else 0.0,
                bad=tuple(trial_is_bad(goal, trial) for goal in self.goals),
            )
        )

    def verdicts(self, goal_pos: int, target: Target) -> dict[int, Verdict]:
        """Each load's verdict for one goal under one target.

        The per-load test decides what it can. A load that reached ``n_max`` trials
        without a decision is judged by the monotone (isotonic) estimate of its bad-trial
        probability: neighbouring loads whose bad-trial rates violate "more load, more
        bad trials" are pooled, so a noisy majority at one load does not outvote its
        neighbours. Loads the test decided are not touched -- a real loss inversion is
        decided by the test long before n_max and stays conservative.
        """
        goal = self.goals[goal_pos]
        counts = {
            i: s.counts(goal_pos, target.trial_duration_s, goal.exceed_ratio) for i, s in self.loads.items()
        }
        out: dict[int, Verdict] = {}
        forced: list[int] = []
        for i, (n, bad) in counts.items():
            verdict = classify(n, bad, goal.exceed_ratio, target.alpha, target.n_max)
            if ISOTONIC and n >= target.n_max and goal.exceed_ratio > 0 and not _decided_by_test(
                n, bad, goal.exceed_ratio, target.alpha
            ):
                forced.append(i)
            out[i] = verdict
        if forced:
            fitted = isotonic_rates([(i, *counts[i]) for i in sorted(counts) if counts[i][0] > 0])
            for i in forced:
                out[i] = Verdict.LOWER if fitted[i] < goal.exceed_ratio - 1e-12 else Verdict.UPPER
        return out

    def forget_above(self, top: int) -> None:
        """Drop loads above ``top`` (after max_load was lowered they cannot be re-measured)."""
        for index in [i for i in self.loads if i > top]:
            del self.loads[index]


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
