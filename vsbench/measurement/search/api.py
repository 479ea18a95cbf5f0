"""Types of the search engine: goals, configuration, results. Pure data, no I/O.

The engine is a pure function over a ``trial(load_fps, duration_s) -> TrialResult``
callable (see :mod:`vsbench.interfaces.traffic`). The runner wraps the generator so the
callable applies the common validity rules, persists every trial and shows progress; the
search only decides which load to try next and what the bounds are.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Literal

from vsbench.interfaces.traffic import TrialResult

TrialFn = Callable[[float, float], TrialResult]
SearchMode = Literal["binary", "rfc2544", "tst009", "multi"]


@dataclass(frozen=True)
class Goal:
    """One throughput goal: the highest load whose trials keep loss <= ``loss_ratio``.

    ``exceed_ratio`` is the share of trials at a load that may exceed the loss ratio
    (MLRsearch semantics; 0.5 = median). ``max_latency_p99_ns`` optionally adds a latency
    bound: a trial whose probe p99 exceeds it counts as bad for this goal.
    """

    name: str
    loss_ratio: float = 0.0
    exceed_ratio: float = 0.5
    max_latency_p99_ns: float | None = None


@dataclass(frozen=True)
class SearchConfig:
    mode: SearchMode = "binary"
    goals: tuple[Goal, ...] = (Goal("NDR", 0.0),)
    min_load_fps: float = 1_000.0
    max_load_fps: float = 1_000_000.0
    relative_width: float = 0.005
    trial_duration_s: float = 1.0
    final_trial_duration_s: float = 1.0
    time_budget_s: float | None = None


@dataclass
class GoalResult:
    """What the search found for one goal; loads are aggregate offered frames/s."""

    goal: Goal
    lower_bound_fps: float | None  # highest load classified as passing (the throughput)
    upper_bound_fps: float | None  # lowest load classified as failing
    conditional_throughput_fps: float | None = None
    regular: bool = True
    irregular_reason: str | None = None
    lower_bound_trial: int | None = None  # index into SearchResult.trials
    upper_bound_trial: int | None = None


@dataclass
class SearchResult:
    goals: list[GoalResult]
    trials: list[TrialResult] = field(default_factory=list)
    trial_seconds: float = 0.0  # sum of intended trial durations
    effective_seconds: float = 0.0  # wall time including overheads where known
    max_load_fps: float | None = None  # lowered when the generator could not deliver
    notes: list[str] = field(default_factory=list)
