"""Search revision 7: a generator that falls short is judged by its best attempt.

CI saw a real-PROX search on a loaded host lower max_load from 14.9 Mfps to 17 fps and end
its frame size with no result: one trial in which the sender was stalled (17 frames in 1 s)
decided the generator's ceiling, because the lowering took the worst attempt at the load.
Under revision 7 the best attempt decides, and a first attempt at an estimated ceiling that
collapsed under half its load is retried. These tests put that stall behind the simulated
device, check that revision 6 loses the frame size to it and revision 7 does not, and that
revision 7 asks for revision 6's trials wherever the attempts agree.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import pytest

from vsbench.interfaces.traffic import TrialResult
from vsbench.measurement.search import search
from vsbench.measurement.simulator import SimulatedDut

from tests.unit.search_revision_kit import (
    check_configuration_opts_in, check_recompute_verifies_and_catches_relabel,
    check_replays_exactly_and_only_under_its_revision, multi,
)

CAPACITY_FPS = 100_000.0
#: What the generator sends at most (the real PROX on this testbed: 229-324 kfps).
GENERATOR_FPS = 229_000.0
#: What CI's stalled PROX trial sent in 1 s.
STALLED_FRAMES = 17


@dataclass
class StallingGenerator:
    """The simulated device behind a generator that sends at most :data:`GENERATOR_FPS` and,
    in the trials numbered in ``stalls`` (0-based), stalls: :data:`STALLED_FRAMES` frames
    go out, all of them arrive, and the generator says it fell short."""

    stalls: frozenset[int]
    dut: SimulatedDut = field(default_factory=lambda: SimulatedDut(CAPACITY_FPS, generator_max_fps=GENERATOR_FPS))
    trials_run: int = 0

    def __call__(self, load_fps: float, duration_s: float) -> TrialResult:
        result = self.dut(load_fps, duration_s)
        index, self.trials_run = self.trials_run, self.trials_run + 1
        if index not in self.stalls:
            return result
        return dataclasses.replace(
            result, tx_frames=STALLED_FRAMES, rx_frames=STALLED_FRAMES, valid=False,
            invalid_reason=f"generator-limited: sent {STALLED_FRAMES} of {load_fps * duration_s:.0f} intended frames")


def _ndr(revision: int, stalls: set[int], **config) -> float | None:
    result = search(StallingGenerator(frozenset(stalls)), multi(revision, **config))
    return result.goal("NDR").lower_bound_fps


def test_a_stalled_retry_at_line_rate_no_longer_decides_the_generators_ceiling():
    """max_load at the line rate: the first attempt falls short at the generator's 229 kfps,
    its retry stalls. Revision 6 lowered max_load to the stall's 17 fps, under min_load: no
    NDR. Revision 7 lowers it to the first attempt's rate and finds the device's."""
    assert _ndr(6, {1}) is None
    ndr = _ndr(7, {1})
    assert ndr is not None and 0.99 * CAPACITY_FPS <= ndr <= CAPACITY_FPS


def test_a_stall_at_the_estimated_ceiling_is_retried_once():
    """max_load the calibrated estimate (deliverable): the first trial there stalls.
    Revision 6 never retried at an undelivered estimate, so the stall lowered max_load to
    17 fps; revision 7 retries a collapse and finds the device's NDR."""
    estimate = dict(max_load_fps=0.9 * GENERATOR_FPS, max_load_is_estimate=True)
    assert _ndr(6, {0}, **estimate) is None
    ndr = _ndr(7, {0}, **estimate)
    assert ndr is not None and 0.99 * CAPACITY_FPS <= ndr <= CAPACITY_FPS


def test_an_estimate_the_generator_merely_falls_short_of_is_still_not_retried():
    """A first attempt at an undelivered estimate that delivered most of it (here 92 %) is
    the ceiling the retry would find again: max_load is lowered after that one trial, under
    revision 7 as under 6 (the quick start's economy)."""
    estimate = 250_000.0
    for revision in (6, 7):
        result = search(StallingGenerator(frozenset()), multi(revision, max_load_fps=estimate, max_load_is_estimate=True))
        assert [t.intended_load_fps for t in result.trials].count(estimate) == 1, revision
        assert result.max_load_fps == pytest.approx(0.99 * GENERATOR_FPS, rel=0.01)


@pytest.mark.parametrize("mode", ["binary", "rfc2544", "multi"])
def test_every_mode_asks_for_revision_6s_trials_when_the_attempts_agree(mode):
    """The simulator's generator delivers exactly its ceiling at every load above it: best
    and worst attempt agree, so revision 7 is revision 6, trial for trial."""
    def loads(revision: int) -> list[float]:
        dut = SimulatedDut(CAPACITY_FPS, seed=11, capacity_jitter=0.02, generator_max_fps=GENERATOR_FPS)
        result = search(dut, multi(revision, mode=mode))
        assert result.max_load_fps < GENERATOR_FPS  # lowered under the generator's ceiling
        return [t.intended_load_fps for t in result.trials]

    assert loads(7) == loads(6)


def test_a_revision_7_run_with_a_stall_replays_exactly_and_only_under_its_revision():
    check_replays_exactly_and_only_under_its_revision(7, older=6, source=lambda: StallingGenerator(frozenset({1})))


def test_a_configuration_opts_in_to_revision_7():
    check_configuration_opts_in(7, older=6, rule="trusts_the_generators_best_attempt")


def test_recompute_verifies_a_revision_7_run_and_catches_it_relabelled():
    check_recompute_verifies_and_catches_relabel(7, older=6, source=lambda: StallingGenerator(frozenset({1})))
