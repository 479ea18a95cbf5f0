"""The multi-goal search at the end of its budget and with a generator that falls short.

* When the budget runs out before the final stage passed any load, each goal still
  reports the best load an earlier stage passed, flagged as provisional -- never nothing.
* A generator-limited trial that sent every frame late and lost nothing counts as a pass at
  the rate it delivered (filed at a grid load at or below it); one that lost frames is not
  filed (its loss may be the late sender's bursts).
"""

from __future__ import annotations

import dataclasses

import pytest

from vsbench.interfaces.traffic import TrialResult
from vsbench.measurement import validity
from vsbench.measurement.goal_report import run_search
from vsbench.measurement.search import Goal, SearchConfig, search
from vsbench.measurement.search.measurer import measured_despite, sent_late
from vsbench.measurement.simulator import SimulatedDut

from tests.unit.replay_kit import replay_from_trials_jsonl

NDR = Goal("NDR", 0.0)
PDR = Goal("PDR", 0.005)


def config(**kw) -> SearchConfig:
    base = dict(mode="multi", goals=(NDR, PDR), min_load_fps=1_000, max_load_fps=200_000,
                relative_width=0.01, trial_duration_s=1.0, final_trial_duration_s=2.0)
    base.update(kw)
    return SearchConfig(**base)


def lossless(load: float, duration: float) -> TrialResult:
    frames = int(round(load * duration))
    return TrialResult(load, duration, 64, tx_frames=frames, rx_frames=frames, tx_duration_s=duration,
                       effective_duration_s=duration)


def late_generator(limit_fps: float, device_fps: float):
    """A generator that sends every frame but no faster than ``limit_fps`` (so a trial above
    it takes longer and its plugin calls it invalid), into a device that forwards
    ``device_fps`` without loss and drops the excess; judged by the common rules."""
    def trial(load: float, duration: float) -> TrialResult:
        frames = int(round(load * duration))
        tx_s = max(duration, frames / limit_fps)
        rx = min(frames, int(device_fps * tx_s))
        slow = tx_s > duration * 1.01
        result = TrialResult(load, duration, 64, tx_frames=frames, rx_frames=rx, tx_duration_s=tx_s,
                             effective_duration_s=tx_s + 0.5, valid=not slow,
                             invalid_reason=f"trafgen needed {tx_s:.4f} s" if slow else None)
        return validity.apply(result)[0]
    return trial


@pytest.mark.parametrize("revision, stage", [(2, "coarse"), (6, "middle")])
def test_budget_out_before_the_final_stage_reports_the_coarse_lower_bound_flagged(revision, stage):
    # 1 s coarse trials pass at max_load; the budget ends before one 2 s trial can run
    # (revision 4 on, two consistent 1 s trials also decide the middle stage)
    result = search(lossless, config(time_budget_s=2.5, revision=revision))
    assert result.budget_exhausted
    for goal in result.goals:
        assert goal.lower_bound_fps == pytest.approx(200_000)
        assert goal.lower_bound_provisional and not goal.regular
        assert goal.irregular_reason.startswith("max_load is a lower bound")
        assert "provisional" in goal.irregular_reason and f"{stage} stage's (1 s trials" in goal.irregular_reason
        assert goal.lower_bound_trials >= 1 and goal.lower_bound_bad == 0


def test_a_final_lower_bound_is_never_provisional():
    result = search(lossless, config(time_budget_s=60))
    for goal in result.goals:
        assert goal.lower_bound_fps == pytest.approx(200_000)
        assert not goal.lower_bound_provisional


def test_a_provisional_bound_stays_under_the_final_upper_bound():
    # loses above 150 kfps; with a tight budget the final stage may have failed a load the
    # coarse stage passed -- the provisional bound must stay below any final upper bound
    for budget in (3.0, 5.0, 8.0, 12.0):
        result = search(SimulatedDut(150_000, seed=4), config(time_budget_s=budget))
        for goal in result.goals:
            if goal.lower_bound_provisional and goal.upper_bound_fps is not None:
                assert goal.lower_bound_fps < goal.upper_bound_fps
            if goal.lower_bound_fps is not None:
                assert goal.lower_bound_fps <= 150_000 / (1 - goal.goal.loss_ratio) * 1.0001


def test_late_trials_are_judged_at_the_delivered_rate():
    gen = late_generator(limit_fps=120_000, device_fps=1e9)
    first = gen(200_000, 1.0)
    assert not first.valid and sent_late(first)
    result = search(gen, config(time_budget_s=60))
    ndr = result.goal("NDR")
    # the generator delivers ~120 kfps; the device loses nothing: NDR found near the
    # generator's rate, not nothing, and below what it delivered
    assert ndr.lower_bound_fps is not None and 110_000 <= ndr.lower_bound_fps <= 120_000
    assert any("judged at" in note for note in result.notes)
    assert result.generator_limited


def test_measured_despite_names_only_trials_the_search_measures_by():
    late = late_generator(limit_fps=120_000, device_fps=1e9)(200_000, 1.0)
    disturbed = dataclasses.replace(lossless(100_000, 1.0), valid=False, invalid_reason="pacing: a window off",
                                    invalid_kind="disturbed")
    short = validity.apply(dataclasses.replace(lossless(100_000, 1.0), tx_frames=90_000, rx_frames=90_000))[0]
    assert [measured_despite(t) for t in (lossless(100_000, 1.0), late, disturbed, short)] == \
        [None, "late", "disturbed", None]


def bursty_late_generator(limit_fps: float, device_fps: float):
    """Like :func:`late_generator`, but a late trial loses 1 % of its frames whatever its
    rate (the sender's catch-up bursts overflow the device's buffer) while an even one
    loses nothing up to ``device_fps``."""
    even = late_generator(limit_fps, device_fps)

    def trial(load: float, duration: float) -> TrialResult:
        result = even(load, duration)
        if sent_late(result):
            result = dataclasses.replace(result, rx_frames=int(result.tx_frames * 0.99))
        return result
    return trial


def test_a_late_trial_that_lost_frames_condemns_nothing():
    # the device forwards 150 kfps evenly; the generator sends 120 kfps at most and its late
    # trials lose frames to their bursts: those losses must not pull NDR under 120 kfps
    result = search(bursty_late_generator(limit_fps=120_000, device_fps=150_000), config(time_budget_s=120))
    ndr = result.goal("NDR")
    assert ndr.lower_bound_fps is not None and 0.95 * 120_000 <= ndr.lower_bound_fps <= 120_000
    assert not any("judged at" in note for note in result.notes)


def test_late_trials_with_loss_leave_a_real_limit_to_the_even_trials():
    # the device forwards 100 kfps; the generator sends at most 150 kfps
    result = search(late_generator(limit_fps=150_000, device_fps=100_000), config(time_budget_s=120))
    ndr = result.goal("NDR")
    assert ndr.lower_bound_fps is not None and 0.95 * 100_000 <= ndr.lower_bound_fps <= 100_000


def test_a_late_trial_is_not_sent_late_when_frames_are_missing():
    short = validity.apply(dataclasses.replace(lossless(100_000, 1.0), tx_frames=90_000, rx_frames=90_000,
                                               tx_duration_s=1.2))[0]
    assert not short.valid and not sent_late(short)
    assert not sent_late(lossless(100_000, 1.0))


def test_a_search_with_late_trials_replays_from_trials_jsonl():
    cfg = config(time_budget_s=20)
    chosen, outcome, _ = run_search(late_generator(limit_fps=130_000, device_fps=125_000), cfg)
    assert outcome.invalid_trials > 0
    replay = replay_from_trials_jsonl(outcome.trials)
    again, outcome2, _ = run_search(replay, cfg)
    assert replay.position == len(outcome.trials)
    assert [(g.lower_bound_fps, g.upper_bound_fps, g.lower_bound_provisional) for g, _ in again] == \
        [(g.lower_bound_fps, g.upper_bound_fps, g.lower_bound_provisional) for g, _ in chosen]
    assert outcome2.notes == outcome.notes
