"""Which search result each goal reports, shared by the runner and the recomputation.

The runner (:mod:`vsbench.runner.traffic_types`) and :mod:`vsbench.measurement.recheck`
both call :func:`run_search`: the runner over the generator, the recheck over the recorded
trials in order. Because the search is a pure function of its trial results, the same
trials give the same decisions, so every bound in results.json can be recomputed.
"""

from __future__ import annotations

from typing import Any

from vsbench.measurement.search import GoalResult, SearchConfig, SearchResult, TrialFn, search, search_repeated

Chosen = list[tuple[GoalResult, SearchResult]]


def run_search(trial: TrialFn, cfg: SearchConfig) -> tuple[Chosen, SearchResult, dict[str, dict] | None]:
    """The search (or ``cfg.repetitions`` searches) over ``trial``.

    Returns per goal the result to report and the search it came from (with repetitions:
    the first search whose lower bound is nearest the median), the last search (its notes
    and limits), and per goal the repetition statistics (None without repetitions).
    """
    if cfg.repetitions <= 1:
        outcome = search(trial, cfg)
        return [(g, outcome) for g in outcome.goals], outcome, None
    repeated = search_repeated(trial, cfg)
    chosen: Chosen = []
    stats: dict[str, dict] = {}
    for position, rep in enumerate(repeated.goals):
        def distance(run: SearchResult, position: int = position, median: float | None = rep.median_fps) -> float:
            bound = run.goals[position].lower_bound_fps
            return float("inf") if bound is None or median is None else abs(bound - median)

        best = min(repeated.runs, key=distance)
        chosen.append((best.goals[position], best))
        stats[rep.goal.name] = {
            "lower_bounds_fps": list(rep.lower_bounds_fps), "median_fps": rep.median_fps,
            "min_fps": rep.min_fps, "max_fps": rep.max_fps, "cv": rep.cv,
            "unstable": bool(rep.unstable), "reasons": list(rep.reasons),
        }
    return chosen, repeated.runs[-1], stats


def goal_stats(goal_result: GoalResult) -> dict[str, Any]:
    """The search statistics a reported point carries next to its bounds."""
    return {
        "lower_bound_trials": goal_result.lower_bound_trials,
        "lower_bound_bad": goal_result.lower_bound_bad,
        "upper_bound_trials": goal_result.upper_bound_trials,
        "upper_bound_bad": goal_result.upper_bound_bad,
        "relative_width": goal_result.relative_width,
        "confirmed_fps": goal_result.confirmed_fps,
    }
