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

#: The revision of the search's rules, recorded with every search (results.json
#: ``search_revision``) so that ``vsbench recompute`` replays a run under the rules it ran
#: with. 1: when the generator fell short and max_load was lowered, every load above the new
#: max_load was forgotten, the device's failures there included. 2: a load the device failed
#: (by the final test) stays the goal's upper bound when max_load is lowered under it: the
#: generator falling short later does not unmake a loss the device showed at a load that
#: was delivered, and forgetting it turned bracketed goals into "the device was not
#: saturated". 3 (``multi`` only): a load the per-load test leaves open is decided by a
#: logistic fit over its neighbours as soon as that is clear
#: (:mod:`~vsbench.measurement.search.neighbourhood_test`), and an external-search step
#: another goal's trial delayed is not doubled again before it is measured. Revision 3 is
#: not yet the default: it cuts the noisy DUT models' trial time by a fifth to a quarter
#: with as many wrong NDRs over 1000 seeds, but on the benchmark's 40 seeds one model has
#: one more (docs/search.rst); ``search.revision: 3`` in a configuration runs it.
#: 4 (``multi`` only): revision 3, with a middle stage that two consistent trials decide and
#: a downward external step that follows the loss-guided guess instead of doubling after
#: it (``search.revision: 4``; docs/search.rst has its figures).
#: 5 (``multi`` only): revision 4, and a load its own test leaves open is decided by a
#: censored fit of the capacity every overload trial measured, when that is clear and the
#: load's own majority agrees (:mod:`~vsbench.measurement.search.capacity_rule`;
#: ``search.revision: 5``).
#: 6 (``multi`` only): revision 5, and the capacity model also guides: the middle and final
#: stages aim at the load where it predicts the goal's crossing, and where it says the
#: device's bad-trial probability rises too slowly for ``max_trials_per_load`` trials to
#: resolve four widths, a close load is decided from 20 neighbourhood trials instead of 30
#: (:mod:`~vsbench.measurement.search.resolution_rule`). Revision 6 is the default: on
#: issue 31's benchmark it takes 0.37-0.49 of MLRsearch's trial time on every DUT model with
#: no more wrong NDRs on the 40 seeds, and no more than revision 2's on every model over
#: 1000; on a real OvS-DPDK meter it found what revision 2 found in as much trial time or
#: less (docs/search.rst). ``search.revision: 2`` runs the old rules.
#: 7 (every mode): revision 6, and a generator that falls short is judged by its best
#: attempt, not its worst: max_load is lowered to the highest rate the attempts at a load
#: achieved, and a first attempt at the estimated ceiling that achieved under half of it
#: (a stalled sender, not a ceiling) is retried once
#: (:mod:`~vsbench.measurement.search.measurer`). CI saw a real-PROX search lower max_load
#: from 14.9 Mfps to 17 fps (a stalled sender: 17 frames in a 1 s trial) and end the frame
#: size without a result. The same search as revision 6 wherever no attempt fell short.
SEARCH_REVISION = 7
#: The newest rules a configuration may ask for (``search.revision``).
LATEST_REVISION = 7


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
    """How to search. Every field has a default so callers name only what they change.

    Modes:

    * ``binary`` -- plain binary search between ``min_load_fps`` and ``max_load_fps``; every
      trial lasts ``trial_duration_s`` and one trial decides a load.
    * ``rfc2544`` -- the same binary search with every trial lasting
      ``full_trial_duration_s`` (60 s, RFC 2544 section 24): the compliance mode.
    * ``tst009`` -- ETSI NFV-TST009 binary search with loss verification: a load whose
      full-length trial fails is re-measured ``tst009_verifications`` times and passes if
      any repetition passes.
    * ``multi`` -- the multi-goal search (log-space grid, sequential test per load,
      MLRsearch-compatible relevant bounds).

    ``time_budget_s`` limits the sum of effective trial durations; when it runs out the
    search stops and reports the bounds found so far as irregular.
    """

    mode: SearchMode = "binary"
    goals: tuple[Goal, ...] = (Goal("NDR", 0.0),)
    min_load_fps: float = 1_000.0
    max_load_fps: float = 1_000_000.0
    relative_width: float = 0.005
    trial_duration_s: float = 1.0
    final_trial_duration_s: float = 1.0
    time_budget_s: float | None = None
    # -- additions (all defaulted, so older callers keep working) --
    #: Trial duration of the ``rfc2544`` and ``tst009`` modes and of confirmation trials.
    full_trial_duration_s: float = 60.0
    #: ``tst009``: how many times a failed load is re-measured before it counts as failing.
    tst009_verifications: int = 1
    #: ``multi``: error probability of each per-load classification (one-sided).
    alpha: float = 0.05
    #: ``multi``: full-length trials at one load after which an undecided load is judged
    #: together with its neighbours (see ``monotone_fit``).
    max_trials_per_load: int = 13
    #: Run one trial of ``full_trial_duration_s`` at each goal's lower bound afterwards.
    confirm: bool = False
    #: How many times a failed confirmation steps the bound down by one width.
    confirm_retries: int = 3
    #: How many times an invalid (generator-limited) trial is retried before ``max_load``
    #: is lowered to the rate the generator achieved.
    invalid_retries: int = 1
    #: ``max_load_fps`` is an estimate of what the generator can send (its calibrated
    #: ceiling), not a rate it was ever seen to deliver: a generator-limited trial at a load
    #: it has not delivered yet lowers ``max_load`` at once, without ``invalid_retries``.
    max_load_is_estimate: bool = False
    #: The rules this search runs under (:data:`SEARCH_REVISION`; a replay of an older run
    #: passes the revision that run recorded).
    revision: int = SEARCH_REVISION
    #: How many times a disturbed trial (every frame sent in time, a pacing window off) that
    #: missed a goal is retried at the same load; one that met every goal is a measurement
    #: (a harder load than asked), none lowers ``max_load``, and one still disturbed after
    #: the retries counts as missing the goals it missed.
    disturbed_retries: int = 2
    #: Whole-search repetitions for :func:`~vsbench.measurement.search.search_repeated`.
    repetitions: int = 1
    #: Coefficient of variation of the repeated lower bounds above which a goal is unstable.
    unstable_cv: float = 0.02

    @property
    def keeps_failures_above_max_load(self) -> bool:
        """Revision 2's rule (:data:`SEARCH_REVISION`): a load the device failed stays an
        upper bound when max_load is lowered under it."""
        return self.revision >= 2

    @property
    def decides_close_loads_by_neighbourhood(self) -> bool:
        """Revision 3's rules of the ``multi`` search (:data:`SEARCH_REVISION`)."""
        return self.revision >= 3

    @property
    def decides_by_capacity_model(self) -> bool:
        """Revision 5's rule of the ``multi`` search: the capacity model of the overload
        trials decides close loads (:data:`SEARCH_REVISION`)."""
        return self.revision >= 5

    @property
    def guides_by_capacity_model(self) -> bool:
        """Revision 6's rules of the ``multi`` search: the capacity model's predicted crossing
        guides where the next trial goes, and a width the device's noise makes unresolvable
        is decided on fewer trials (:data:`SEARCH_REVISION`)."""
        return self.revision >= 6

    @property
    def trusts_the_generators_best_attempt(self) -> bool:
        """Revision 7's rule (every mode): max_load is lowered to the best rate the attempts
        at a load achieved, and a collapsed attempt at the estimated ceiling is retried
        (:data:`SEARCH_REVISION`)."""
        return self.revision >= 7

    @property
    def guides_external_search_by_loss(self) -> bool:
        """Revision 4's rules of the ``multi`` search: the loss-guided downward step and the
        looser middle stage (:data:`SEARCH_REVISION`)."""
        return self.revision >= 4


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
    # -- additions --
    #: Full-length trials at the lower/upper bound and how many of them were bad for this
    #: goal (the statistics behind the classification; n=1 in the binary modes).
    lower_bound_trials: int = 0
    lower_bound_bad: int = 0
    upper_bound_trials: int = 0
    upper_bound_bad: int = 0
    #: 95% Clopper-Pearson interval of the bad-trial probability at each bound.
    lower_bound_bad_ci: tuple[float, float] | None = None
    upper_bound_bad_ci: tuple[float, float] | None = None
    #: Achieved width (upper - lower) / upper, ``None`` without both bounds.
    relative_width: float | None = None
    #: Outcome of the optional full-duration confirmation trial(s) at the lower bound.
    confirmed_fps: float | None = None
    confirmation_trials: list[int] = field(default_factory=list)
    #: The lower bound is not the final stage's: the search ended (its time budget) before
    #: the final test passed any load, and this is the best load an earlier, shorter stage
    #: passed -- a lower bound proven by fewer or shorter trials (``irregular_reason`` says
    #: which). Never set when the final stage has a lower bound.
    lower_bound_provisional: bool = False


@dataclass
class SearchResult:
    goals: list[GoalResult]
    trials: list[TrialResult] = field(default_factory=list)
    trial_seconds: float = 0.0  # sum of intended trial durations
    effective_seconds: float = 0.0  # wall time including overheads where known
    max_load_fps: float | None = None  # lowered when the generator could not deliver
    notes: list[str] = field(default_factory=list)
    # -- additions --
    mode: str | None = None
    generator_limited: bool = False  # max_load was lowered to what the generator achieved
    budget_exhausted: bool = False
    invalid_trials: int = 0

    def goal(self, name: str) -> GoalResult:
        """The result of the goal called ``name`` (KeyError when there is none)."""
        for result in self.goals:
            if result.goal.name == name:
                return result
        raise KeyError(name)


@dataclass
class RepetitionStats:
    """One goal over repeated searches: the spread of its lower bounds (frames/s)."""

    goal: Goal
    lower_bounds_fps: list[float | None]
    median_fps: float | None
    min_fps: float | None
    max_fps: float | None
    cv: float | None  # population standard deviation over mean
    conditional_median_fps: float | None = None
    unstable: bool = False
    reasons: list[str] = field(default_factory=list)


@dataclass
class RepeatedSearchResult:
    """``repetitions`` independent searches and the per-goal statistics over them."""

    runs: list[SearchResult]
    goals: list[RepetitionStats]
    unstable: bool = False
    reasons: list[str] = field(default_factory=list)

    def goal(self, name: str) -> RepetitionStats:
        for stats in self.goals:
            if stats.goal.name == name:
                return stats
        raise KeyError(name)
