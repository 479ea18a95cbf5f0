"""Optional RFC 2544 confirmation: one full-length trial at each goal's lower bound.

RFC 2544 section 24 lets a search use short trials but wants the final determination
made with full-length ones. After any search, each goal's lower bound gets one trial of
``full_trial_duration_s``; if it is bad for the goal, the load steps down by one relative
width and is tried again, at most ``confirm_retries`` times. The goal keeps its search
result and gains ``confirmed_fps`` (``None`` when every confirmation failed) and the
indices of the confirmation trials. Goals whose bound is the same load share the trial.
"""

from __future__ import annotations

from dataclasses import replace

from vsbench.interfaces.traffic import TrialResult

from .api import SearchConfig, SearchResult, TrialFn
from .measurer import BudgetExhausted, GeneratorExhausted, Measurer
from .trial_checks import trial_is_bad


def confirm_bounds(trial: TrialFn, config: SearchConfig, result: SearchResult) -> None:
    """Run the confirmation trials and record them in ``result`` (mutated in place)."""
    budget = config.time_budget_s
    remaining = None if budget is None else max(0.0, budget - result.effective_seconds)
    if remaining is not None and remaining <= 0:
        result.notes.append("confirmation skipped: time budget exhausted")
        return
    m = Measurer(trial, replace(config, time_budget_s=remaining,
                                max_load_fps=result.max_load_fps or config.max_load_fps))
    offset = len(result.trials)
    done: dict[float, tuple[int, TrialResult]] = {}

    def measure(load_fps: float) -> tuple[int, TrialResult] | None:
        key = round(load_fps, 6)
        if key not in done:
            measured = m.measure(load_fps, config.full_trial_duration_s)
            if measured is None:
                return None
            done[key] = measured
        return done[key]

    try:
        for goal_result in result.goals:
            load = goal_result.lower_bound_fps
            if load is None:
                continue
            for _attempt in range(1 + max(0, config.confirm_retries)):
                measured = measure(min(load, m.max_load_fps))
                if measured is None:
                    load = m.max_load_fps
                    continue
                index, confirmation = measured
                goal_result.confirmation_trials.append(offset + index)
                if not trial_is_bad(goal_result.goal, confirmation):
                    goal_result.confirmed_fps = confirmation.intended_load_fps
                    break
                load = confirmation.intended_load_fps * (1.0 - config.relative_width)
                if load < config.min_load_fps:
                    break
    except BudgetExhausted:
        result.notes.append("confirmation stopped: time budget exhausted")
    except GeneratorExhausted as exc:
        result.notes.append(f"confirmation stopped: {exc}")
    result.trials.extend(m.trials)
    result.trial_seconds += m.trial_seconds
    result.effective_seconds += m.effective_seconds
    result.invalid_trials += m.invalid_trials
    result.notes.extend(m.notes)
    if m.generator_limited:
        result.generator_limited = True
        result.max_load_fps = m.max_load_fps
