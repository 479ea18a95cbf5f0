"""The multi-goal search (mode ``multi``): the loop that ties grid, stats and selectors.

1. Loads live on a log-spaced grid (:mod:`.load_grid`); the first trial is at max_load.
2. Every trial is filed by load and judged for every goal (:mod:`.load_stats`).
3. Each goal's :class:`~.candidates.Selector` nominates a load for its current target;
   the lowest nominated load is measured (then the longer trial).
4. The search ends when no goal nominates anything, or when the time budget runs out;
   then each goal reports its relevant bounds under the final target
   (:mod:`.relevant_bounds`) and the conditional throughput at its lower bound.

Targets per goal: a coarse stage (one trial decides a load, bracket four widths wide, trial
duration ``trial_duration_s``), a middle stage (two widths, a loose test) and the final stage (sequential test with
``alpha``/``max_trials_per_load``, bracket one width wide, ``final_trial_duration_s``).
"""

from __future__ import annotations

import math

from .api import GoalResult, SearchConfig, SearchResult, TrialFn
from .candidates import Selector
from .exceed_test import Verdict, clopper_pearson
from .load_grid import LoadGrid
from .load_stats import Target, TrialDatabase
from .measurer import BudgetExhausted, GeneratorExhausted, Measurer
from .relevant_bounds import Bounds, relevant_bounds
from .resolution_rule import Resolution
from .trial_checks import trial_is_bad

#: Bracket width of the coarse stage, in final widths.
COARSE_WIDTH_STEPS = 4
#: The middle stage's test: three consistent trials decide, five force a decision.
MIDDLE_ALPHA = 0.2
MIDDLE_N_MAX = 5
#: Revision 4's middle-stage test: two consistent trials decide (P[Bin(2, 0.5) = 0] =
#: 0.25 <= 0.4), five still force. The middle stage only narrows the bracket to two widths
#: for the final test, whose trials (same duration) reuse every middle-stage trial; a third
#: confirming trial there mostly re-measured a load the final stage then left behind. On the
#: benchmark's noisy models (1000 seeds) this and the loss-guided downward step
#: (:attr:`.candidates.Selector.guess_first`) cut revision 3's mean trial time by 1 / 3 / 6 %
#: at as many wrong NDRs (docs/search.rst; alpha 0.3 or n_max 3/7 measured no better).
REV4_MIDDLE_ALPHA = 0.4
#: Hard stop for pathological trial functions; far above any real search.
MAX_TRIALS = 5000


def targets_for(config: SearchConfig) -> tuple[Target, ...]:
    """Coarse to fine: 4 widths with one trial deciding, 2 widths with a loose test, final."""
    coarse = Target(COARSE_WIDTH_STEPS, alpha=0.5, n_max=1, trial_duration_s=config.trial_duration_s)
    middle = Target(COARSE_WIDTH_STEPS // 2, alpha=MIDDLE_ALPHA, n_max=MIDDLE_N_MAX,
                    trial_duration_s=config.trial_duration_s)
    final = Target(1, alpha=config.alpha, n_max=max(1, config.max_trials_per_load),
                   trial_duration_s=config.final_trial_duration_s)
    if config.guides_external_search_by_loss:
        middle = Target(COARSE_WIDTH_STEPS // 2, alpha=REV4_MIDDLE_ALPHA, n_max=MIDDLE_N_MAX,
                        trial_duration_s=config.trial_duration_s)
    return (coarse, middle, final)


def multi_search(trial: TrialFn, config: SearchConfig) -> SearchResult:
    grid = LoadGrid(config.min_load_fps, config.max_load_fps, config.relative_width)
    top = grid.top
    m = Measurer(trial, config)
    db = TrialDatabase(tuple(config.goals), neighbourhood_decides=config.decides_close_loads_by_neighbourhood,
                       capacity_decides=config.decides_by_capacity_model,
                       resolution=_resolution(config, grid))
    targets = targets_for(config)
    selectors = [Selector(pos, goal, targets, patient_expansion=config.decides_close_loads_by_neighbourhood,
                          guess_first=config.guides_external_search_by_loss,
                          model_guided=config.guides_by_capacity_model)
                 for pos, goal in enumerate(config.goals)]
    stop_reason: str | None = None
    budget_exhausted = False
    while True:
        nominations = [c for s in selectors if (c := s.nominate(db, grid, top)) is not None]
        if not nominations:
            break
        if len(m.trials) >= MAX_TRIALS:
            stop_reason = f"stopped after {MAX_TRIALS} trials"
            break
        winner = min(nominations)
        try:
            measured = m.measure(grid.load(winner.index), winner.duration_s)
        except BudgetExhausted:
            stop_reason, budget_exhausted = "time budget exhausted", True
            _file_late(m, db, grid, top)
            break
        except GeneratorExhausted as exc:
            stop_reason = str(exc)
            _file_late(m, db, grid, top)
            break
        if measured is None:  # the generator fell short: continue below what it can send
            top = grid.index_at_or_below(m.max_load_fps)
            m.max_load_fps = grid.load(top)
            if not config.keeps_failures_above_max_load:
                db.forget_above(top)
            _file_late(m, db, grid, top)
            continue
        _file_late(m, db, grid, top)
        trial_index, result = measured
        db.add(winner.index, trial_index, result)
    goals = [_goal_result(s, db, grid, top, m, stop_reason, config) for s in selectors]
    notes = m.closing_notes() + _inversion_notes(selectors, db, grid, top)
    return SearchResult(
        goals=goals,
        trials=m.trials,
        trial_seconds=m.trial_seconds,
        effective_seconds=m.effective_seconds,
        max_load_fps=m.max_load_fps,
        notes=notes,
        mode=config.mode,
        generator_limited=m.capped_by_generator(goals),
        budget_exhausted=budget_exhausted,
        invalid_trials=m.invalid_trials,
    )


def _resolution(config: SearchConfig, grid: LoadGrid) -> Resolution | None:
    """Revision 6's measure of a resolvable width (:mod:`.resolution_rule`); None before."""
    if not config.guides_by_capacity_model:
        return None
    return Resolution(grid.step_ratio, max(1, config.max_trials_per_load))


def _file_late(m: Measurer, db: TrialDatabase, grid: LoadGrid, top: int) -> None:
    """File each trial the generator sent late but whole (:class:`.measurer.LateTrial`) and
    that was good for every goal as a trial at the grid load at or below what it delivered
    (and at most ``top``): the device passed that rate, offered less evenly than asked,
    so it passes it offered evenly -- a lower bound instead of a wasted trial. One that
    lost frames proves nothing at its delivered rate: a late sender catches up in bursts
    (through an OvS meter at 102.7 kpps such trials lost frames at 78..89 kfps delivered,
    and filed as failures they dragged the NDR to 0.42 N), so it is not filed. One
    delivered below min_load says nothing the grid can hold."""
    for late in m.take_late():
        if late.delivered_fps < grid.min_load_fps:
            continue
        index = min(top, grid.index_at_or_below(late.delivered_fps))
        result = late.as_delivered(m.trials[late.trial_index], grid.load(index))
        if any(trial_is_bad(goal, result) for goal in db.goals):
            continue
        db.add(index, late.trial_index, result, late=True)
        asked = m.trials[late.trial_index].intended_load_fps
        m.notes.append(f"the generator sent every frame of a {asked:.0f} fps trial late ({late.delivered_fps:.0f} fps "
                       f"delivered): its loss judged at {grid.load(index):.0f} fps")


def _goal_result(s: Selector, db: TrialDatabase, grid: LoadGrid, top: int, m: Measurer,
                 stop_reason: str | None, config: SearchConfig) -> GoalResult:
    final = s.targets[-1]
    b = s.final_bounds(db, top)
    provisional = None if b.lower is not None else _provisional_lower(s, db, top, b.upper)
    if provisional is not None:
        final, b = s.targets[provisional[0]], Bounds(provisional[1], b.upper)
    reason = None
    bracketed = b.gap() is not None and b.gap() <= final.width_steps
    if b.lower is not None and b.lower >= top and not bracketed:
        reason = m.max_load_reason(None if b.upper is None else grid.load(b.upper))
    elif b.upper is not None and b.upper <= 0:
        reason = "min_load is an upper bound: the goal is not reachable above min_load"
    elif b.gap() is None or b.gap() > final.width_steps:
        reason = stop_reason or "search ended before the goal was bracketed"
    if provisional is not None:
        reason = (f"{reason or 'search ended early'}; the lower bound is provisional: no load passed the "
                  f"final stage's test, {grid.load(b.lower):.0f} fps passed the {_stage_name(provisional[0])} "
                  f"stage's ({final.trial_duration_s:g} s trials, at most {final.n_max} per load)")
    lower_fps = grid.load(b.lower) if b.lower is not None else None
    upper_fps = grid.load(b.upper) if b.upper is not None else None
    result = GoalResult(
        goal=s.goal,
        lower_bound_fps=lower_fps,
        upper_bound_fps=upper_fps,
        regular=reason is None,
        irregular_reason=reason,
        relative_width=grid.width(b.lower, b.upper) if b.gap() is not None else None,
        lower_bound_provisional=provisional is not None,
    )
    if b.lower is not None:
        stats = db.loads[b.lower]
        n, bad = stats.counts(s.goal_pos, final.trial_duration_s, s.goal.exceed_ratio)
        result.lower_bound_trials, result.lower_bound_bad = n, bad
        result.lower_bound_bad_ci = clopper_pearson(n, bad)
        full = stats.full_records(final.trial_duration_s) or stats.records
        full = [r for r in full if r.valid and not r.late] or [r for r in full if r.valid] or full
        ranked = sorted(full, key=lambda r: r.loss_ratio)
        quantile = ranked[max(0, math.ceil((1.0 - s.goal.exceed_ratio) * len(ranked)) - 1)]
        result.conditional_throughput_fps = lower_fps * (1.0 - quantile.loss_ratio)
        result.lower_bound_trial = quantile.trial_index
    if b.upper is not None:
        stats = db.loads[b.upper]
        n, bad = stats.counts(s.goal_pos, s.targets[-1].trial_duration_s, s.goal.exceed_ratio)
        result.upper_bound_trials, result.upper_bound_bad = n, bad
        result.upper_bound_bad_ci = clopper_pearson(n, bad)
        worst = [r for r in stats.records if r.bad[s.goal_pos]] or stats.records
        result.upper_bound_trial = worst[0].trial_index
    return result


def _stage_name(stage: int) -> str:
    """The name of stage ``stage`` of :func:`targets_for`."""
    return ("coarse", "middle")[stage] if stage < 2 else f"stage {stage + 1}"


def _provisional_lower(s: Selector, db: TrialDatabase, top: int, upper: int | None) -> tuple[int, int] | None:
    """When the final stage found no lower bound (the budget ran out first): the best load
    an earlier, coarser stage classified as passing, below the final upper bound if there
    is one, as (stage, grid index) -- the best load proven so far, never claimed as final.
    None when no stage has one."""
    for stage in range(len(s.targets) - 2, -1, -1):
        verdicts = {i: v for i, v in db.verdicts(s.goal_pos, s.targets[stage]).items()
                    if i <= top and (upper is None or i < upper)}
        lower = relevant_bounds(verdicts).lower
        if lower is not None:
            return stage, lower
    return None


def _inversion_notes(selectors, db: TrialDatabase, grid: LoadGrid, top: int) -> list[str]:
    """Say so when a load above a goal's upper bound passed: the result is conservative."""
    notes = []
    for s in selectors:
        verdicts = db.verdicts(s.goal_pos, s.targets[-1])
        b: Bounds = s.final_bounds(db, top)
        if b.upper is None:
            continue
        above = [i for i, v in verdicts.items() if v is Verdict.LOWER and b.upper < i <= top]
        if above:
            notes.append(
                f"{s.goal.name}: loss inversion, {grid.load(max(above)):.0f} fps passed above the "
                f"upper bound {grid.load(b.upper):.0f} fps; the lower bound is the conservative one"
            )
    return notes
