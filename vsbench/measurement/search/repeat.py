"""Whole-search repetitions and how much the results move between them.

One search hides run-to-run noise; CSIT's "NDR all over the place" reports (CSIT-1855) and
VSPERF's worst-of-N/best-of-N both call for repeating it. Each goal gets the median,
min, max and coefficient of variation of its lower bounds, and is flagged **unstable**
when the CV exceeds ``unstable_cv`` (2%), when a repetition found no lower bound, or --
for the run as a whole -- when the strictest goal's median is below 0.8 of the most
lenient one's (a large NDR/PDR gap signals noise, MLRsearch draft section "Throughput with
Non-Zero Loss").
"""

from __future__ import annotations

import statistics

from .api import RepeatedSearchResult, RepetitionStats, SearchConfig, SearchResult, TrialFn

#: NDR/PDR below this ratio marks the run unstable.
MIN_STRICT_TO_LENIENT = 0.8


def repetition_stats(runs: list[SearchResult], unstable_cv: float = 0.02) -> RepeatedSearchResult:
    if not runs:
        raise ValueError("need at least one search result")
    stats: list[RepetitionStats] = []
    for position, first in enumerate(runs[0].goals):
        bounds = [run.goals[position].lower_bound_fps for run in runs]
        conditional = [run.goals[position].conditional_throughput_fps for run in runs]
        found = [b for b in bounds if b is not None]
        entry = RepetitionStats(goal=first.goal, lower_bounds_fps=bounds, median_fps=None, min_fps=None,
                                max_fps=None, cv=None)
        if found:
            mean = statistics.fmean(found)
            entry.median_fps = statistics.median(found)
            entry.min_fps, entry.max_fps = min(found), max(found)
            entry.cv = statistics.pstdev(found) / mean if mean > 0 else None
            found_conditional = [c for c in conditional if c is not None]
            if found_conditional:
                entry.conditional_median_fps = statistics.median(found_conditional)
        if len(found) < len(bounds):
            entry.unstable = True
            entry.reasons.append(f"{len(bounds) - len(found)} of {len(bounds)} repetitions found no lower bound")
        if entry.cv is not None and entry.cv > unstable_cv:
            entry.unstable = True
            entry.reasons.append(f"coefficient of variation {entry.cv:.3f} > {unstable_cv}")
        stats.append(entry)
    result = RepeatedSearchResult(runs=runs, goals=stats)
    result.reasons = [f"{s.goal.name}: {reason}" for s in stats for reason in s.reasons]
    ranked = sorted((s for s in stats if s.median_fps), key=lambda s: (s.goal.loss_ratio, s.goal.exceed_ratio))
    if len(ranked) >= 2 and ranked[0].goal.loss_ratio < ranked[-1].goal.loss_ratio:
        strict, lenient = ranked[0], ranked[-1]
        ratio = strict.median_fps / lenient.median_fps
        if ratio < MIN_STRICT_TO_LENIENT:
            result.reasons.append(f"{strict.goal.name}/{lenient.goal.name} = {ratio:.2f} < {MIN_STRICT_TO_LENIENT}")
    result.unstable = bool(result.reasons)
    return result


def search_repeated(trial: TrialFn, config: SearchConfig, search_once) -> RepeatedSearchResult:
    runs = [search_once(trial, config) for _ in range(max(1, config.repetitions))]
    return repetition_stats(runs, config.unstable_cv)
