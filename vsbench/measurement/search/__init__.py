"""The search engine: which loads to try and what the throughput bounds are. Pure, no I/O.

Call :func:`search` with a ``trial(load_fps, duration_s) -> TrialResult`` callable and a
:class:`SearchConfig`; it returns a :class:`SearchResult` with one :class:`GoalResult` per
goal and every trial it ran, in order.
"""

from __future__ import annotations

from .api import (
    Goal, GoalResult, RepeatedSearchResult, RepetitionStats, SearchConfig, SearchMode, SearchResult, TrialFn,
)


def search(trial: TrialFn, config: SearchConfig) -> SearchResult:
    """Find every goal of ``config`` by running trials through ``trial``.

    ``trial`` must not raise for a load the generator cannot reach; it returns a result
    with ``valid=False`` instead (see :mod:`vsbench.measurement.search.measurer`).
    """
    _check(config)
    from .binary import binary_search

    from .controller import multi_search

    from .confirm import confirm_bounds

    if config.mode in ("binary", "rfc2544", "tst009"):
        result = binary_search(trial, config)
    elif config.mode == "multi":
        result = multi_search(trial, config)
    else:
        raise ValueError(f"unknown search mode {config.mode!r}")
    if config.confirm:
        confirm_bounds(trial, config, result)
    return result


def search_repeated(trial: TrialFn, config: SearchConfig) -> RepeatedSearchResult:
    """Run :func:`search` ``config.repetitions`` times; per goal median/min/max/CV/unstable."""
    from .repeat import search_repeated as _repeat

    _check(config)
    return _repeat(trial, config, search)


def _check(config: SearchConfig) -> None:
    """Reject a configuration no search can honour, with a one-line reason."""
    if not config.goals:
        raise ValueError("search needs at least one goal")
    names = [g.name for g in config.goals]
    if len(set(names)) != len(names):
        raise ValueError(f"goal names must be unique, got {names}")
    for g in config.goals:
        if not 0.0 <= g.loss_ratio < 1.0:
            raise ValueError(f"goal {g.name}: loss_ratio must be in [0, 1), got {g.loss_ratio}")
        if not 0.0 <= g.exceed_ratio < 1.0:
            raise ValueError(f"goal {g.name}: exceed_ratio must be in [0, 1), got {g.exceed_ratio}")
    if not 0 < config.min_load_fps < config.max_load_fps:
        raise ValueError(
            f"need 0 < min_load_fps < max_load_fps, got {config.min_load_fps} and {config.max_load_fps}"
        )
    if not 0.0 < config.relative_width < 1.0:
        raise ValueError(f"relative_width must be in (0, 1), got {config.relative_width}")
    if config.trial_duration_s <= 0 or config.final_trial_duration_s <= 0 or config.full_trial_duration_s <= 0:
        raise ValueError("trial durations must be positive")
    if not 0.0 < config.alpha < 0.5:
        raise ValueError(f"alpha must be in (0, 0.5), got {config.alpha}")
    if config.max_trials_per_load < 1:
        raise ValueError(f"max_trials_per_load must be >= 1, got {config.max_trials_per_load}")
    if config.repetitions < 1:
        raise ValueError(f"repetitions must be >= 1, got {config.repetitions}")
    if min(config.confirm_retries, config.invalid_retries, config.disturbed_retries,
           config.tst009_verifications) < 0:
        raise ValueError("confirm_retries, invalid_retries, disturbed_retries and tst009_verifications must be >= 0")
    if config.time_budget_s is not None and config.time_budget_s <= 0:
        raise ValueError(f"time_budget_s must be positive, got {config.time_budget_s}")


__all__ = [
    "Goal", "GoalResult", "RepeatedSearchResult", "RepetitionStats", "SearchConfig", "SearchMode", "SearchResult",
    "TrialFn", "search", "search_repeated",
]
