"""The one place every search mode runs trials through.

The measurer keeps the trial log and the time accounting, enforces the time budget and
handles invalid trials, by the kind the validity rules gave them
(``TrialResult.invalid_kind``; :func:`vsbench.measurement.validity.invalid_kind`). An
invalid trial is never counted as loss in the device.

* **limited** -- the generator could not deliver the load over the trial. Retried
  ``invalid_retries`` times -- none when ``max_load`` is only the generator's estimated
  ceiling and it has not yet delivered this load, unless (revision 7) the attempt
  collapsed under half of it (:meth:`Measurer.limited_retries`) -- and if it still
  cannot, ``max_load`` is lowered to the rate it achieved (:func:`delivered_fps`: the
  best attempt's from revision 7, the worst's before; minus a 1% margin so the next
  trial is deliverable, but never below a load it already delivered) and the search
  continues below it.
  A limited trial that sent every frame, only late, is still a measurement -- of the
  device at the rate the generator did deliver: it is kept as a :class:`LateTrial` for the
  multi-goal search, which files one the device passed at a grid load at or below that
  rate (a pass claims less than was delivered; a loss is not filed, the late sender's
  catch-up bursts may have caused it).
* **disturbed** -- every frame went out in the trial's time, but not evenly (a pacing
  window off: the sender was preempted, then caught up): a property of the moment, not
  of the load, and never a reason to lower ``max_load``. The device got the same frames
  in the same time in a harder pattern, so a disturbed trial that met every goal is a
  measurement and is returned as it is (:func:`.trial_checks.trial_is_bad` judges it by
  its loss). One that missed a goal by more loss than its late frames could cause
  (:func:`.trial_checks.missed_regardless_of_pacing`) is returned too: the device missed
  it on its own. One that missed a goal by less may have missed it because of the
  unevenness: it is retried at the same load ``disturbed_retries`` times, and the last
  one is then handed to the search like a measured one (bad for the goals it missed).
* **untrusted** -- the counters contradict themselves (inconsistent, rx above tx):
  retried like a limited trial, but never lowers ``max_load``; when every attempt at a
  load is untrusted the search ends (:class:`GeneratorExhausted`) rather than build on
  them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from vsbench.interfaces.traffic import (
    CAVEAT_LATE, INVALID_DISTURBED, INVALID_LIMITED, INVALID_UNTRUSTED, TrialResult,
)
from vsbench.measurement.validity import invalid_kind, sent_whole

from .api import GoalResult, SearchConfig, TrialFn
from .trial_checks import missed_regardless_of_pacing, trial_is_bad

#: Margin under the achieved TX rate when lowering max_load, so the next trial at the new
#: max_load is not again a hair short of its target. It doubles with every further lowering
#: (up to :data:`MAX_GENERATOR_MARGIN`): a generator whose rate wanders near its limit (a
#: shared CPU) would otherwise be chased down 1% at a time, two wasted trials per step.
GENERATOR_MARGIN = 0.01
#: Capped at 5%: a 20% cap took a generator that fell 10% short at every load above the
#: device's limit from 120 kfps straight to 86 kfps, under a 100 kfps device it could
#: have measured.
MAX_GENERATOR_MARGIN = 0.05
#: Stop lowering after this many reductions: the generator is not converging on a rate.
#: Every lowering cuts at least GENERATOR_MARGIN and min_load and the time budget bound the
#: walk too, so this only guards against a runaway; a small cap turned a generator that is
#: slow to settle on a shared CPU into a frame size without any result.
MAX_LOWERINGS = 24
#: Revision 7: a first attempt at the estimated ceiling that delivered less than this share
#: of its load collapsed (a sender descheduled for most of the trial): the calibration that
#: estimated the ceiling says the generator can do far more, so it gets the retry an
#: attempt that merely fell short does not.
COLLAPSED_ATTEMPT = 0.5


def delivered_fps(result: TrialResult) -> float:
    """The rate the generator really delivered in a trial.

    ``tx_frames`` over the intended duration undercounts nothing when a generator cuts a
    trial short, but a generator that sends every frame *late* would appear to have
    delivered the asked rate, and max_load would only creep down by the margin per retry.
    Over ``max(intended, tx_duration_s)`` it is the rate the generator really held.
    """
    duration = result.intended_duration_s
    if result.tx_duration_s is not None and result.tx_duration_s > duration:
        duration = result.tx_duration_s
    if duration <= 0:
        return 0.0
    return result.tx_frames / duration


def sent_late(result: TrialResult) -> bool:
    """True for a limited trial that sent every frame it was asked for, only over a longer
    time than the trial's: its counters are whole, its load was what it delivered."""
    return (not result.valid and invalid_kind(result) == INVALID_LIMITED
            and result.burst_frames is None and result.intended_frames > 0
            and sent_whole(result)
            and result.tx_duration_s is not None and result.tx_duration_s > result.intended_duration_s)


def measured_despite(result: TrialResult) -> str | None:
    """Why the search may take ``result`` as a measurement although it is invalid: ``late``
    (:func:`sent_late`: filed at a load at or below the rate it delivered) or
    ``disturbed`` (every frame in time, unevenly: judged by its loss); None for a valid
    trial and for one the search never measures by (``ReportedPoint.sending_caveat``)."""
    if result.valid:
        return None
    if invalid_kind(result) == INVALID_DISTURBED:
        return INVALID_DISTURBED
    return CAVEAT_LATE if sent_late(result) else None


@dataclass(frozen=True)
class LateTrial:
    """A limited trial that sent every frame late (:func:`sent_late`): index into
    ``Measurer.trials`` and the rate it delivered."""

    trial_index: int
    delivered_fps: float

    def as_delivered(self, result: TrialResult, load_fps: float) -> TrialResult:
        """``result`` judged as a trial at ``load_fps`` (at most the delivered rate) over the
        time it really took: valid, its counters unchanged."""
        return dataclasses.replace(
            result, intended_load_fps=load_fps,
            intended_duration_s=max(result.intended_duration_s, result.tx_duration_s or 0.0),
            valid=True, invalid_reason=None, invalid_kind=None)


class BudgetExhausted(Exception):
    """Raised by :meth:`Measurer.measure` when the next trial would exceed the budget."""


class GeneratorExhausted(Exception):
    """Raised when the generator cannot deliver even ``min_load`` (or keeps falling short)."""


@dataclass
class Measurer:
    trial_fn: TrialFn
    config: SearchConfig
    trials: list[TrialResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    trial_seconds: float = 0.0
    effective_seconds: float = 0.0
    invalid_trials: int = 0
    #: Disturbed trials that met every goal, returned as measurements.
    disturbed_passes: int = 0
    lowerings: int = 0
    #: Limited trials that sent every frame late, not yet taken by the search
    #: (:meth:`take_late`).
    late: list[LateTrial] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.max_load_fps = float(self.config.max_load_fps)
        self.min_load_fps = float(self.config.min_load_fps)

    @property
    def generator_limited(self) -> bool:
        return self.lowerings > 0

    def capped_by_generator(self, goals: list[GoalResult]) -> bool:
        """True when max_load was lowered and some goal is not bracketed under it (no upper
        bound, or one above max_load with undeliverable loads between): that goal's result
        is what the generator could send, not what the device could forward. A goal
        bracketed by a real failing load is the device's, however often the generator fell
        short on the way."""
        return self.generator_limited and any(
            g.upper_bound_fps is None or (not g.regular and g.upper_bound_fps > self.max_load_fps * (1 + 1e-9))
            for g in goals)

    def max_load_reason(self, upper_fps: float | None) -> str:
        """Why a goal whose lower bound is max_load is not bracketed: nothing failed, or
        the loads between max_load and the upper bound could not be delivered."""
        if upper_fps is None:
            reason = "max_load is a lower bound: the device was not saturated"
        else:
            reason = (f"max_load is a lower bound: the generator could not deliver the loads up to "
                      f"the upper bound {upper_fps:.0f} fps")
        if self.generator_limited:
            reason += f" (generator-limited to {self.max_load_fps:.0f} fps)"
        return reason

    def spent_s(self) -> float:
        return self.effective_seconds

    def can_afford(self, duration_s: float) -> bool:
        budget = self.config.time_budget_s
        return budget is None or self.effective_seconds + duration_s <= budget + 1e-9

    def measure(self, load_fps: float, duration_s: float) -> tuple[int, TrialResult] | None:
        """Run one trial at ``load_fps`` (clamped to max_load) for ``duration_s``.

        Returns ``(index into trials, result)`` -- a valid result, or one still disturbed
        after ``disturbed_retries`` retries (invalid: bad for every goal) -- or ``None``
        when the generator could not deliver the load and ``max_load_fps`` was lowered
        instead: the caller re-plans. Raises :class:`BudgetExhausted` before a trial that
        would overrun the budget and :class:`GeneratorExhausted` when even ``min_load``
        cannot be delivered.
        """
        load_fps = min(float(load_fps), self.max_load_fps)
        achieved: list[float] = []
        limited_left: int | None = None  # known after the first limited attempt
        disturbed_left = max(0, self.config.disturbed_retries)
        while True:
            if not self.can_afford(duration_s):
                raise BudgetExhausted()
            result = self.trial_fn(load_fps, duration_s)
            self._account(result, duration_s)
            self.trials.append(result)
            if result.valid:
                return len(self.trials) - 1, result
            self.invalid_trials += 1
            kind = invalid_kind(result)
            if kind == INVALID_DISTURBED:
                missed = [g for g in self.config.goals if trial_is_bad(g, result)]
                if not missed:
                    self.disturbed_passes += 1
                    return len(self.trials) - 1, result
                if all(missed_regardless_of_pacing(g, result) for g in missed):
                    return len(self.trials) - 1, result
                if disturbed_left > 0:
                    disturbed_left -= 1
                    continue
                self.notes.append(
                    f"{load_fps:.0f} fps: still disturbed after {self.config.disturbed_retries} "
                    f"retries ({result.invalid_reason}); counted as missing {', '.join(g.name for g in missed)}")
                return len(self.trials) - 1, result
            if kind != INVALID_UNTRUSTED:
                achieved.append(delivered_fps(result))
            if sent_late(result):
                self.late.append(LateTrial(len(self.trials) - 1, delivered_fps(result)))
            if limited_left is None:
                limited_left = self.limited_retries(load_fps, achieved[0] if achieved else None)
            if limited_left == 0:
                break
            limited_left -= 1
        if not achieved:
            # every attempt's counters contradicted themselves: they say nothing about what
            # the generator can send, so max_load stays and this search ends here
            raise GeneratorExhausted(
                f"the generator's results at {load_fps:.0f} fps cannot be used "
                f"({result.invalid_reason})")
        # the retries guard against one bad moment; lowering to the worst attempt undid that
        # (revisions 1-6), the best attempt is what the generator showed it can send
        best = max(achieved) if self.config.trusts_the_generators_best_attempt else min(achieved)
        self._lower_max_load(load_fps, best, result.invalid_reason)
        return None

    def limited_retries(self, load_fps: float, first_achieved_fps: float | None = None) -> int:
        """How often a generator-limited trial at ``load_fps`` is retried before max_load is
        lowered, given what its first attempt delivered. A retry guards a load the
        generator can send against one bad moment (a descheduled sender); at a calibrated
        ceiling it has never delivered, falling short is the answer the retry would give
        again: in 11 quick starts on a shared 2-core host, 25 of 29 retries after a first
        search trial at the calibrated ceiling fell short, while 4 of 48 second trials after
        a delivered first one did. A first attempt there that collapsed under
        :data:`COLLAPSED_ATTEMPT` of its load is a bad moment, not a ceiling (revision 7)."""
        if self.config.max_load_is_estimate and not self.delivered_at_or_above(load_fps):
            collapsed = first_achieved_fps is not None and first_achieved_fps < COLLAPSED_ATTEMPT * load_fps
            if not (collapsed and self.config.trusts_the_generators_best_attempt):
                return 0
        return max(0, self.config.invalid_retries)

    def delivered_at_or_above(self, load_fps: float) -> bool:
        """True when the generator already delivered ``load_fps`` or more (a valid trial)."""
        return any(t.valid and t.intended_load_fps >= load_fps * (1.0 - 1e-9) for t in self.trials)

    def closing_notes(self) -> list[str]:
        """The notes of the search, and how many disturbed trials it took as passes."""
        if not self.disturbed_passes:
            return list(self.notes)
        return self.notes + [f"{self.disturbed_passes} disturbed trial(s) (every frame sent in time, a pacing "
                             f"window off) met every goal: counted as passes, the device having met them under "
                             f"a harder load than asked"]

    def take_late(self) -> list[LateTrial]:
        """The late trials since the last call (each handed out once)."""
        late, self.late = self.late, []
        return late

    def _account(self, result: TrialResult, duration_s: float) -> None:
        self.trial_seconds += duration_s
        effective = result.effective_duration_s
        self.effective_seconds += duration_s if effective is None else max(effective, 0.0)

    def highest_delivered_below(self, load_fps: float) -> float | None:
        """The highest load under ``load_fps`` the generator already delivered (a valid trial)."""
        loads = [t.intended_load_fps for t in self.trials if t.valid and t.intended_load_fps < load_fps]
        return max(loads, default=None)

    def _lower_max_load(self, load_fps: float, achieved_fps: float, reason: str | None) -> None:
        """Lower max_load under ``load_fps``, to what the generator achieved minus a margin,
        but never below a load it has already delivered: a generator that falls short now
        and then on a shared CPU (a descheduled sender) is not a generator that cannot send
        that rate, and chasing it down by the achieved rate of its worst trial threw away
        the loads where the device's limit was (a 100 kpps meter measured at 92.9 kfps)."""
        margin = min(MAX_GENERATOR_MARGIN, GENERATOR_MARGIN * 2 ** self.lowerings)
        new_max = min(achieved_fps, load_fps) * (1.0 - margin)
        delivered = self.highest_delivered_below(load_fps)
        if delivered is not None and delivered > new_max:
            new_max = delivered
        self.lowerings += 1
        self.notes.append(
            f"generator could not deliver {load_fps:.0f} fps (achieved {achieved_fps:.0f} fps"
            f"{'; ' + reason if reason else ''}); max_load lowered to {new_max:.0f} fps"
        )
        self.max_load_fps = new_max
        if new_max < self.min_load_fps or self.lowerings > MAX_LOWERINGS:
            raise GeneratorExhausted(
                f"generator cannot deliver min_load {self.min_load_fps:.0f} fps"
                if new_max < self.min_load_fps
                else f"generator fell short {self.lowerings} times; giving up"
            )
