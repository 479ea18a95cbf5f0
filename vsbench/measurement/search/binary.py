"""Binary searches: plain ``binary``, ``rfc2544`` (full-length trials) and ``tst009``.

One bracket per goal, ``[lower, upper]``: the highest load that passed and the lowest that
failed, starting from ``[min_load, max_load]`` with the first trial at ``max_load``. The
next load is the arithmetic midpoint of the bracket of the unfinished goal whose midpoint is
lowest; every trial updates every goal's bracket, so NDR and PDR share trials until their
brackets diverge. A goal is done when ``(upper - lower) / upper <= relative_width``, when
``max_load`` passes, or when ``min_load`` fails. Only loads inside a bracket narrow it, so
a pass above a failure (loss inversion) is ignored, as in a textbook binary search.

``tst009`` (ETSI NFV-TST009 section 12.3.3, binary search with loss verification): when the
trial at a load fails for a goal whose bracket holds the load, the load is re-measured up
to ``tst009_verifications`` times; a load passes for a goal if any of its trials passes.
"""

from __future__ import annotations

from dataclasses import dataclass

from vsbench.interfaces.traffic import TrialResult

from .api import Goal, GoalResult, SearchConfig, SearchResult, TrialFn
from .measurer import BudgetExhausted, GeneratorExhausted, Measurer
from .trial_checks import trial_is_bad

_REL_EPS = 1e-9


@dataclass
class _Bracket:
    goal: Goal
    lower_fps: float | None = None
    lower_trial: int | None = None
    lower_n: int = 0
    lower_bad: int = 0
    upper_fps: float | None = None
    upper_trial: int | None = None
    upper_n: int = 0
    upper_bad: int = 0

    def holds(self, load_fps: float) -> bool:
        return (self.lower_fps is None or load_fps > self.lower_fps) and (
            self.upper_fps is None or load_fps < self.upper_fps
        )


def _is_done(b: _Bracket, m: Measurer, width: float) -> bool:
    if _at_max_load(b, m):
        return True
    if b.upper_fps is not None and b.upper_fps <= m.min_load_fps * (1 + _REL_EPS):
        return True
    return _bracketed(b, width)


def _at_max_load(b: _Bracket, m: Measurer) -> bool:
    return b.lower_fps is not None and b.lower_fps >= m.max_load_fps * (1 - _REL_EPS)


def _bracketed(b: _Bracket, width: float) -> bool:
    if b.lower_fps is None or b.upper_fps is None:
        return False
    return (b.upper_fps - b.lower_fps) / b.upper_fps <= width + _REL_EPS


def _next_load(b: _Bracket, m: Measurer, width: float) -> float:
    if b.upper_fps is None:
        return m.max_load_fps
    lower = b.lower_fps if b.lower_fps is not None else m.min_load_fps
    if b.lower_fps is None and (b.upper_fps - lower) / b.upper_fps <= width + _REL_EPS:
        return m.min_load_fps
    return (lower + b.upper_fps) / 2.0


def _forget_above(brackets: list[_Bracket], max_load_fps: float, keep_uppers: bool) -> None:
    """After max_load was lowered, a lower bound above it cannot steer the search any more;
    an upper bound there (the device failed a load the generator delivered) still bounds the
    goal when ``keep_uppers`` (``SearchConfig.keeps_failures_above_max_load``)."""
    for b in brackets:
        if not keep_uppers and b.upper_fps is not None and b.upper_fps > max_load_fps:
            b.upper_fps, b.upper_trial, b.upper_n, b.upper_bad = None, None, 0, 0
        if b.lower_fps is not None and b.lower_fps > max_load_fps:
            b.lower_fps, b.lower_trial, b.lower_n, b.lower_bad = None, None, 0, 0


def _measure_load(
    m: Measurer, load_fps: float, duration_s: float, brackets: list[_Bracket], verifications: int
) -> list[tuple[int, TrialResult]] | None:
    """One trial at ``load_fps``, plus loss-verification repeats while an active goal fails."""
    done: list[tuple[int, TrialResult]] = []
    for attempt in range(1 + verifications):
        measured = m.measure(load_fps, duration_s)
        if measured is None:
            return None
        done.append(measured)
        load_fps = measured[1].intended_load_fps
        failing = [
            b for b in brackets
            if b.holds(load_fps) and all(trial_is_bad(b.goal, t) for _, t in done)
        ]
        if not failing:
            break
    return done


def _update(b: _Bracket, load_fps: float, measured: list[tuple[int, TrialResult]]) -> None:
    if not b.holds(load_fps):
        return
    verdicts = [(i, t, trial_is_bad(b.goal, t)) for i, t in measured]
    good = [(i, t) for i, t, bad in verdicts if not bad]
    n, n_bad = len(verdicts), sum(1 for *_x, bad in verdicts if bad)
    if good:
        best = min(good, key=lambda it: it[1].loss_ratio)
        b.lower_fps, b.lower_trial, b.lower_n, b.lower_bad = load_fps, best[0], n, n_bad
    else:
        b.upper_fps, b.upper_trial, b.upper_n, b.upper_bad = load_fps, verdicts[-1][0], n, n_bad


def binary_search(trial: TrialFn, config: SearchConfig) -> SearchResult:
    """Run the ``binary``, ``rfc2544`` or ``tst009`` search described in the module doc."""
    if config.mode == "binary":
        duration_s, verifications = config.trial_duration_s, 0
    elif config.mode == "rfc2544":
        duration_s, verifications = config.full_trial_duration_s, 0
    elif config.mode == "tst009":
        duration_s, verifications = config.full_trial_duration_s, max(0, config.tst009_verifications)
    else:
        raise ValueError(f"binary_search does not run mode {config.mode!r}")
    width = config.relative_width
    m = Measurer(trial, config)
    brackets = [_Bracket(goal) for goal in config.goals]
    stop_reason: str | None = None
    budget_exhausted = False
    while True:
        pending = [b for b in brackets if not _is_done(b, m, width)]
        if not pending:
            break
        load_fps = min(_next_load(b, m, width) for b in pending)
        try:
            measured = _measure_load(m, load_fps, duration_s, pending, verifications)
        except BudgetExhausted:
            stop_reason, budget_exhausted = "time budget exhausted", True
            break
        except GeneratorExhausted as exc:
            stop_reason = str(exc)
            break
        if measured is None:
            _forget_above(brackets, m.max_load_fps, config.keeps_failures_above_max_load)
            continue
        actual_load = measured[0][1].intended_load_fps
        for b in brackets:
            _update(b, actual_load, measured)
    goals = [_goal_result(b, m, width, stop_reason) for b in brackets]
    return SearchResult(
        goals=goals,
        trials=m.trials,
        trial_seconds=m.trial_seconds,
        effective_seconds=m.effective_seconds,
        max_load_fps=m.max_load_fps,
        notes=m.closing_notes(),
        mode=config.mode,
        generator_limited=m.capped_by_generator(goals),
        budget_exhausted=budget_exhausted,
        invalid_trials=m.invalid_trials,
    )


def _goal_result(b: _Bracket, m: Measurer, width: float, stop_reason: str | None) -> GoalResult:
    reason: str | None = None
    if _at_max_load(b, m) and not _bracketed(b, width):
        reason = m.max_load_reason(b.upper_fps)
    elif b.upper_fps is not None and b.upper_fps <= m.min_load_fps * (1 + _REL_EPS):
        reason = "min_load is an upper bound: the goal is not reachable above min_load"
    elif not _is_done(b, m, width):
        reason = stop_reason or "search ended before the goal was bracketed"
    conditional = None
    if b.lower_trial is not None:
        conditional = b.lower_fps * (1.0 - m.trials[b.lower_trial].loss_ratio)
    achieved_width = None
    if b.lower_fps is not None and b.upper_fps is not None:
        achieved_width = (b.upper_fps - b.lower_fps) / b.upper_fps
    return GoalResult(
        goal=b.goal,
        lower_bound_fps=b.lower_fps,
        upper_bound_fps=b.upper_fps,
        conditional_throughput_fps=conditional,
        regular=reason is None,
        irregular_reason=reason,
        lower_bound_trial=b.lower_trial,
        upper_bound_trial=b.upper_trial,
        lower_bound_trials=b.lower_n,
        lower_bound_bad=b.lower_bad,
        upper_bound_trials=b.upper_n,
        upper_bound_bad=b.upper_bad,
        relative_width=achieved_width,
    )
