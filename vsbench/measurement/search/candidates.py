"""Which load one goal wants measured next.

Each goal walks a short list of targets, coarse to fine (see
:class:`~vsbench.measurement.search.load_stats.Target`). For its current target it looks
at its relevant bounds and nominates one load:

* **halve** -- at a new target, first measure the middle of the previous target's bracket
  (so a previous bound the middle makes irrelevant never costs a full classification);
* **refine** -- then re-measure the previous target's bounds until the finer test
  classifies them (lower first);
* **external search** -- a bound is missing: step beyond the other bound by a width that
  doubles after every step that did not find it, or jump straight to where the measured
  loss says the limit is (forwarding rate / (1 - goal loss ratio));
* **internal search** -- both bounds exist: try the load the measured loss points at,
  clamped strictly inside the bracket; if such guesses stop halving the bracket, fall back
  to an uneven log-space bisection that prefers the lower side;
* an undecided load already inside the bracket is always preferred to a new one, so no
  measured trial is wasted.

The controller picks the lowest nominated load (then the longer trial), as MLRsearch does:
measuring low loads first keeps loss inversion from invalidating work already done.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from .api import Goal
from .exceed_test import Verdict
from .load_grid import LoadGrid
from .load_stats import Target, TrialDatabase
from .relevant_bounds import Bounds, relevant_bounds


@dataclass(frozen=True, order=True)
class Candidate:
    index: int
    neg_duration: float  # so that, at equal load, the longer trial sorts first
    goal_pos: int

    @property
    def duration_s(self) -> float:
        return -self.neg_duration


@dataclass
class Selector:
    goal_pos: int
    goal: Goal
    targets: tuple[Target, ...]
    stage: int = 0
    previous: Bounds | None = None
    expansions_up: int = 0
    expansions_down: int = 0
    guess_gaps: list[int] = field(default_factory=list)
    #: Revision 3: an external-search step nominated but not yet measured (another goal's
    #: lower load went first) is nominated again instead of doubling the step once more per
    #: call. Revisions 1-2 doubled it at every call, so a goal that waited behind another
    #: overshot by 2**k widths and then spent a whole classification far from its bound.
    patient_expansion: bool = False
    pending_reach: int | None = None
    #: Revision 4: a downward external step goes to where the loss at the upper bound
    #: points (at least one stage width down) instead of the smaller of that and a step
    #: doubled after every upper bound found. Revisions 1-3 doubled after the loss-guided
    #: steps too, so a guess that landed one width high was followed by a step 16 widths
    #: down, and the coarse stage then spent trials climbing back.
    guess_first: bool = False
    #: Revision 6: in the middle and final stages the guess is the load where the capacity
    #: model of every overload trial (:mod:`.capacity_model`) predicts this goal's crossing,
    #: not the loss at the upper bound alone. It only moves where trials go; the verdicts
    #: are the same rules'. From the coarse stage on it cost the clean model trials (its
    #: one-trial bracket is already right); from the middle stage on it cut the 2 % and 5 %
    #: jitter models' mean trial time by 1-1.5 % (seeds 1000-1299) at as many wrong NDRs
    #: (docs/search.rst).
    model_guided: bool = False

    @property
    def target(self) -> Target:
        return self.targets[self.stage]

    def bounds(self, db: TrialDatabase, top: int) -> tuple[Bounds, dict[int, Verdict]]:
        verdicts = _in_reach(db.verdicts(self.goal_pos, self.target), top)
        return relevant_bounds(verdicts), verdicts

    def final_bounds(self, db: TrialDatabase, top: int) -> Bounds:
        return relevant_bounds(_in_reach(db.verdicts(self.goal_pos, self.targets[-1]), top))

    def is_done(self, bounds: Bounds, top: int) -> bool:
        if bounds.lower is not None and bounds.lower >= top:
            return True
        if bounds.upper is not None and bounds.upper <= 0:
            return True
        gap = bounds.gap()
        return gap is not None and gap <= self.target.width_steps

    def nominate(self, db: TrialDatabase, grid: LoadGrid, top: int) -> Candidate | None:
        while True:
            bounds, verdicts = self.bounds(db, top)
            if not self.is_done(bounds, top):
                break
            if self.stage + 1 >= len(self.targets):
                return None
            self.stage += 1
            self.previous = bounds
            self.expansions_up = self.expansions_down = 0
            self.guess_gaps = []
            self.pending_reach = None
        # an upper bound above a lowered max_load can put a bisection point there: the
        # generator can send no more than top (which is then undecided: lower < top)
        index = min(self._choose(bounds, verdicts, db, grid, top), top)
        return Candidate(index, -self.target.trial_duration_s, self.goal_pos)

    # -- strategies --------------------------------------------------------------------

    def _choose(self, b: Bounds, verdicts, db: TrialDatabase, grid: LoadGrid, top: int) -> int:
        undecided = sorted(i for i, v in verdicts.items() if v is Verdict.UNDECIDED)
        step = self.target.width_steps
        prev = self.previous
        def worth(index: int | None) -> bool:
            return (
                index is not None
                and 0 <= index <= top
                and verdicts.get(index, Verdict.UNDECIDED) is Verdict.UNDECIDED
                and (b.lower is None or index > b.lower)
                and (b.upper is None or index < b.upper)
            )

        if prev is not None:
            # halve: the middle of the previous stage's bracket, when it is at most two
            # of this stage's widths wide -- measured first, so a bound of the previous
            # stage that the middle makes irrelevant never costs a full classification
            gap = prev.gap()
            if gap is not None and step < gap <= 2 * step:
                middle = self._bisect(prev.lower, prev.upper, step)
                if worth(middle):
                    return middle
            # refine: the previous stage's bounds, lower first
            for index in (prev.lower, prev.upper):
                if worth(index):
                    return index
        if b.lower is None and b.upper is None:
            return undecided[0] if undecided else top
        if b.upper is None:  # external search upwards
            self.expansions_down = 0
            if self._still_pending(b, db, top):
                return self.pending_reach
            reach = min(top, b.lower + step * 2**self.expansions_up)
            above = [i for i in undecided if b.lower < i <= reach]
            if above:
                return above[0]
            self.expansions_up += 1
            return self._expanded_to(reach)
        if b.lower is None:  # external search downwards
            self.expansions_up = 0
            if self._still_pending(b, db, top):
                return self.pending_reach
            reach = max(0, b.upper - step * 2**self.expansions_down)
            guess = self._guess(b.upper, db, grid)
            if guess is not None and guess < b.upper and self.guess_first:
                reach = max(0, min(b.upper - step, guess))
            elif guess is not None and guess < b.upper:
                reach = min(reach, max(0, guess))
            below = [i for i in undecided if reach <= i < b.upper]
            if below:
                return below[-1]
            self.expansions_down += 1
            return self._expanded_to(reach)
        # internal search
        self.expansions_up = self.expansions_down = 0
        gap = b.upper - b.lower
        choice = self._bisect(b.lower, b.upper, step)
        guess = self._guess(b.upper, db, grid)
        if guess is not None and self._guesses_still_halve(gap):
            choice = min(max(guess, b.lower + 1), b.upper - 1)
            if not self.guess_gaps or self.guess_gaps[-1] != gap:  # not a repeated nomination
                self.guess_gaps.append(gap)
        else:
            self.guess_gaps = []
        inside = [i for i in undecided if b.lower < i < b.upper]
        if inside:
            return min(inside, key=lambda i: (abs(i - choice), i))
        return choice

    def _expanded_to(self, reach: int) -> int:
        """Nominate the external search's new ``reach`` (and remember it, revision 3)."""
        if self.patient_expansion:
            self.pending_reach = reach
        return reach

    def _still_pending(self, b: Bounds, db: TrialDatabase, top: int) -> bool:
        """True when the last external step (revision 3) is unmeasured and still outside the
        one bound there is: it is nominated again, unchanged."""
        reach = self.pending_reach
        if reach is None or reach in db.loads or not 0 <= reach <= top:
            return False
        return (b.lower is None or reach > b.lower) and (b.upper is None or reach < b.upper)

    def _guesses_still_halve(self, gap: int) -> bool:
        """Loss-guided guesses are trusted while each two of them at least halve the gap.

        ``guess_gaps`` holds the bracket gap at each distinct guess (a nomination repeated
        while another goal's candidate is measured does not count).
        """
        if gap in self.guess_gaps[-1:]:
            return len(self.guess_gaps) < 3 or self.guess_gaps[-1] * 2 <= self.guess_gaps[-3]
        if len(self.guess_gaps) < 2:
            return True
        return gap * 2 <= self.guess_gaps[-2]

    @staticmethod
    def _bisect(lower: int, upper: int, step: int) -> int:
        """Split so the upper part is a power-of-two number of target widths (>= half)."""
        gap = upper - lower
        part = step
        while part * 2 < gap:
            part *= 2
        if part >= gap:
            return lower + max(1, gap // 2)
        return upper - part

    def _guess(self, upper: int, db: TrialDatabase, grid: LoadGrid) -> int | None:
        """Where the loss at the upper bound (or, revision 6, the capacity model) says this
        goal's limit is, as a grid index.

        A trial that lost frames forwarded ``F = rx / duration``; if the device drops only
        the excess over what it can forward, the goal's loss ratio g is reached at
        ``F / (1 - g)``. The median over the bad trials at the bound damps noise. Goals with
        a latency bound get no guess: loss says nothing about latency.
        """
        if self.goal.max_latency_p99_ns is not None:
            return None
        if self.model_guided and self.stage >= 1:
            model = db.capacity_model(self.target.trial_duration_s)
            crossing = None if model is None else model.crossing_fps(self.goal.loss_ratio, self.goal.exceed_ratio)
            if crossing is not None and crossing >= grid.min_load_fps:
                return grid.index_at_or_below(crossing)
        stats = db.loads.get(upper)
        if stats is None:
            return None
        estimates = [
            r.forwarding_fps / (1.0 - self.goal.loss_ratio)
            for r in stats.records
            if r.valid and r.bad[self.goal_pos] and r.loss_ratio > self.goal.loss_ratio and r.forwarding_fps > 0
        ]
        if not estimates:
            return None
        return grid.index_at_or_below(statistics.median(estimates))


def _in_reach(verdicts: dict[int, Verdict], top: int) -> dict[int, Verdict]:
    """The verdicts that bound a goal under max_load (grid index ``top``): every load up to
    it, and a load above it the device failed (an upper bound measured before the generator
    fell short and max_load was lowered under it -- the loss was the device's). A load
    above it that passed or is undecided cannot be measured again, so it bounds nothing."""
    return {i: v for i, v in verdicts.items() if i <= top or v is Verdict.UPPER}
