"""Invalid trials by kind: a disturbed trial (every frame sent, a pacing window off) is
judged by what the device did -- a goal it met is met (a harder load than asked), one it
missed is retried at the same load -- and never lowers max_load; a generator-limited one
does."""

from __future__ import annotations

import dataclasses
import random

import pytest

from vsbench.interfaces.traffic import (
    INVALID_DISTURBED, INVALID_LIMITED, INVALID_UNTRUSTED, PacingStats, TrialResult,
)
from vsbench.measurement import validity
from vsbench.measurement.goal_report import run_search
from vsbench.measurement.search import Goal, SearchConfig, search
from vsbench.measurement.search.measurer import Measurer
from vsbench.measurement.simulator import SimulatedDut
from vsbench.results import schema
from vsbench.results.model import TrialIdentity, TrialRecord

from tests.unit.replay_kit import replay_from_trials_jsonl

NDR = Goal("NDR", 0.0)
PDR = Goal("PDR", 0.005)


def _window_off(result: TrialResult, deviation: float = 0.05) -> TrialResult:
    """``result`` as a paced generator would report it after a stall: every frame sent,
    one 10 ms window ``deviation`` short; judged by the common rules."""
    nominal = result.intended_load_fps * 0.01
    pacing = PacingStats(window_s=0.01, resolution_s=1e-4, windows=100, nominal_frames_per_window=nominal,
                         max_window_deviation_frames=deviation * nominal, max_frames_per_burst_window=0)
    checked, _ = validity.apply(dataclasses.replace(result, pacing=pacing))
    return checked


def _clean(load: float, duration: float = 1.0) -> TrialResult:
    frames = int(load * duration)
    return TrialResult(load, duration, 64, tx_frames=frames, rx_frames=frames, tx_duration_s=duration)


def test_kinds_follow_the_reasons():
    assert validity.kind_of(("pacing",)) == INVALID_DISTURBED
    assert validity.kind_of(("pacing", "generator-limited")) == INVALID_LIMITED
    assert validity.kind_of(("generator",)) == INVALID_LIMITED
    assert validity.kind_of(("pacing", "inconsistent")) == INVALID_UNTRUSTED
    assert validity.kind_of(("rx-exceeds-tx",)) == INVALID_UNTRUSTED
    assert validity.kind_of(()) is None
    checked = _window_off(_clean(1e5))
    assert not checked.valid and checked.invalid_kind == INVALID_DISTURBED
    short = dataclasses.replace(_clean(1e5), tx_frames=90_000, rx_frames=90_000)
    assert validity.apply(short)[0].invalid_kind == INVALID_LIMITED
    # a result no rule judged (the simulator's): its reason's tags, else limited
    legacy = TrialResult(1e5, 1.0, 64, 10, 10, valid=False, invalid_reason="pacing: a window")
    assert validity.invalid_kind(legacy) == INVALID_DISTURBED
    assert validity.invalid_kind(dataclasses.replace(legacy, invalid_reason=None)) == INVALID_LIMITED
    assert validity.invalid_kind(_clean(1e5)) is None


def test_the_kind_is_in_trials_jsonl():
    checked = _window_off(_clean(1e5))
    rec = TrialRecord(TrialIdentity("abc123", 0, "p"), 0, "search", "2024-01-01T00:00:00.000+00:00", False,
                      checked, invalid_reasons=(checked.invalid_reason,))
    doc = rec.to_json()
    assert doc["invalid_kind"] == "disturbed"
    schema.validate(doc, "trial.schema.json")
    assert TrialRecord.from_json(doc).result.invalid_kind == INVALID_DISTURBED
    valid_doc = TrialRecord(TrialIdentity("abc123", 0, "p"), 1, "search", "2024-01-01T00:00:00.000+00:00", False,
                            _clean(1e5)).to_json()
    assert "invalid_kind" not in valid_doc


def _lossy(result: TrialResult, loss: float = 0.001) -> TrialResult:
    return dataclasses.replace(result, rx_frames=int(result.tx_frames * (1 - loss)))


def _scripted(outcomes):
    """A trial function answering each call with the next outcome: 'ok', 'disturbed'
    (nothing lost), 'disturbed-lossy' (0.1 % lost) or 'short' (90 % of the frames), and
    recording the loads it was asked."""
    asked = []

    def trial(load, duration):
        asked.append(load)
        kind = outcomes[min(len(asked), len(outcomes)) - 1]
        result = _clean(load, duration)
        if kind == "disturbed":
            return _window_off(result)
        if kind == "disturbed-lossy":
            return _window_off(_lossy(result))
        if kind == "short":
            sent = int(0.9 * result.tx_frames)
            return validity.apply(dataclasses.replace(result, tx_frames=sent, rx_frames=sent))[0]
        return result

    return trial, asked


def test_a_disturbed_trial_that_met_every_goal_is_a_measurement():
    from vsbench.measurement.search.trial_checks import trial_is_bad

    trial, asked = _scripted(["disturbed"])
    m = Measurer(trial, SearchConfig(goals=(NDR, PDR), max_load_fps=1e6, min_load_fps=1e3, disturbed_retries=2))
    index, result = m.measure(5e5, 1.0)
    assert asked == [5e5] and index == 0  # not retried
    assert not result.valid and result.invalid_kind == INVALID_DISTURBED  # still flagged as what it was
    assert not trial_is_bad(NDR, result) and not trial_is_bad(PDR, result)
    assert m.max_load_fps == 1e6 and not m.generator_limited and m.invalid_trials == 1
    assert "1 disturbed trial(s)" in m.closing_notes()[-1]


def test_a_disturbed_trial_that_missed_a_goal_is_retried_at_the_same_load():
    trial, asked = _scripted(["disturbed-lossy", "disturbed-lossy", "ok"])
    m = Measurer(trial, SearchConfig(max_load_fps=1e6, min_load_fps=1e3, disturbed_retries=2))
    index, result = m.measure(5e5, 1.0)
    assert result.valid and index == 2
    assert asked == [5e5, 5e5, 5e5]
    assert m.max_load_fps == 1e6 and not m.generator_limited and m.invalid_trials == 2


def test_still_disturbed_after_the_retries_misses_what_it_missed_and_the_search_moves_on():
    from vsbench.measurement.search.trial_checks import trial_is_bad

    trial, asked = _scripted(["disturbed-lossy"])
    m = Measurer(trial, SearchConfig(goals=(NDR, PDR), max_load_fps=1e6, min_load_fps=1e3, disturbed_retries=2))
    index, result = m.measure(5e5, 1.0)
    assert asked == [5e5] * 3 and index == 2
    assert not result.valid and result.invalid_kind == INVALID_DISTURBED
    assert trial_is_bad(NDR, result) and not trial_is_bad(PDR, result)  # 0.1 % lost: PDR met regardless
    assert m.max_load_fps == 1e6 and not m.generator_limited
    assert "still disturbed after 2 retries" in m.notes[-1] and "missing NDR" in m.notes[-1]


def test_other_invalid_trials_stay_bad_for_every_goal():
    from vsbench.measurement.search.trial_checks import trial_is_bad

    short = validity.apply(dataclasses.replace(_clean(1e5), tx_frames=90_000, rx_frames=90_000))[0]
    assert short.invalid_kind == INVALID_LIMITED
    assert trial_is_bad(NDR, short) and trial_is_bad(Goal("lenient", 0.5), short)


def test_a_short_trial_still_lowers_max_load_after_its_retry():
    trial, asked = _scripted(["short"])
    m = Measurer(trial, SearchConfig(max_load_fps=1e6, min_load_fps=1e3, invalid_retries=1, disturbed_retries=2))
    assert m.measure(5e5, 1.0) is None
    assert asked == [5e5, 5e5]
    assert m.generator_limited and m.max_load_fps < 5e5 * 0.9


def test_a_short_trial_at_an_estimated_ceiling_lowers_max_load_at_once():
    """A calibrated ceiling is an estimate: falling short of a load never delivered is the
    answer a retry would give again, so max_load goes down after one trial."""
    trial, asked = _scripted(["short", "ok"])
    m = Measurer(trial, SearchConfig(max_load_fps=5e5, min_load_fps=1e3, invalid_retries=1,
                                     max_load_is_estimate=True))
    assert m.measure(5e5, 1.0) is None
    assert asked == [5e5] and m.generator_limited and m.max_load_fps < 5e5 * 0.9


def test_an_estimated_ceiling_once_delivered_gets_its_retry_again():
    trial, asked = _scripted(["ok", "short", "ok"])
    m = Measurer(trial, SearchConfig(max_load_fps=5e5, min_load_fps=1e3, invalid_retries=1,
                                     max_load_is_estimate=True))
    assert m.measure(5e5, 1.0)[1].valid
    index, result = m.measure(5e5, 1.0)  # a bad moment at a load it has sent: retried
    assert result.valid and asked == [5e5] * 3 and m.max_load_fps == 5e5 and not m.generator_limited


def test_disturbed_attempts_do_not_use_up_the_limited_retry():
    trial, asked = _scripted(["short", "disturbed-lossy", "disturbed-lossy", "ok"])
    m = Measurer(trial, SearchConfig(max_load_fps=1e6, min_load_fps=1e3, invalid_retries=1, disturbed_retries=2))
    index, result = m.measure(5e5, 1.0)
    assert result.valid and len(asked) == 4 and m.max_load_fps == 1e6


def _disturbing(dut, probability, seed=0, above_fps=None, burst_loss=0.0):
    """``dut`` behind a generator that, now and then (or always above ``above_fps``), sends
    every frame but not evenly; a device that loses ``burst_loss`` of them to the catch-up
    burst when that happens."""
    rng = random.Random(seed)

    def trial(load, duration):
        result = dut(load, duration)
        always = above_fps is not None and load > above_fps
        if result.valid and (always or rng.random() < probability):
            return _window_off(_lossy(result, burst_loss) if burst_loss else result)
        return result

    return trial


@pytest.mark.parametrize("mode", ["binary", "multi"])
def test_random_disturbances_leave_the_bounds_and_max_load_alone(mode):
    capacity = 412_345
    cfg = SearchConfig(mode=mode, goals=(NDR, PDR), min_load_fps=10_000, max_load_fps=600_000,
                       relative_width=0.01, trial_duration_s=1.0)
    clean = search(SimulatedDut(capacity, seed=3), cfg)
    for seed in range(6):  # 30 % of the trials disturbed
        noisy = search(_disturbing(SimulatedDut(capacity, seed=3), 0.3, seed=seed), cfg)
        assert noisy.max_load_fps == 600_000 and not noisy.generator_limited
        assert noisy.invalid_trials > 0
        for name in ("NDR", "PDR"):  # the device's own verdicts, uneven or not
            assert noisy.goal(name).lower_bound_fps == clean.goal(name).lower_bound_fps
    # the same disturbances taken for a generator limit walk max_load down (the old rule)
    limited = search(_as_limited(_disturbing(SimulatedDut(capacity, seed=3), 0.3, seed=4)), cfg)
    assert limited.max_load_fps < 600_000 and limited.generator_limited


def _as_limited(trial):
    def wrapped(load, duration):
        result = trial(load, duration)
        return result if result.valid else dataclasses.replace(result, invalid_kind=INVALID_LIMITED)

    return wrapped


@pytest.mark.parametrize("mode", ["binary", "multi"])
def test_a_load_passed_only_unevenly_is_the_devices(mode):
    # the device forwards 500 kfps, the generator paces evenly only up to 300 kfps: the
    # device passed the loads between under a harder (uneven) load, so they are its own
    cfg = SearchConfig(mode=mode, goals=(NDR,), min_load_fps=10_000, max_load_fps=600_000,
                       relative_width=0.01, trial_duration_s=1.0)
    result = search(_disturbing(SimulatedDut(500_000, seed=1), 0.0, above_fps=300_000), cfg)
    ndr = result.goal("NDR")
    assert 500_000 * 0.97 <= ndr.lower_bound_fps <= 500_000 < ndr.upper_bound_fps
    assert result.max_load_fps == 600_000 and not result.generator_limited
    assert all(not t.valid for t in result.trials if t.intended_load_fps > 300_000)
    assert any("disturbed trial(s)" in note for note in result.notes)


@pytest.mark.parametrize("mode", ["binary", "multi"])
def test_a_load_lost_only_to_uneven_pacing_is_not_claimed(mode):
    # the same generator, but the device loses frames to every catch-up burst: a loss that
    # may be the unevenness's is retried, then counted -- never a pass it did not earn
    cfg = SearchConfig(mode=mode, goals=(NDR,), min_load_fps=10_000, max_load_fps=600_000,
                       relative_width=0.01, trial_duration_s=1.0)
    result = search(_disturbing(SimulatedDut(500_000, seed=1), 0.0, above_fps=300_000, burst_loss=1e-3), cfg)
    ndr = result.goal("NDR")
    assert 300_000 * 0.97 <= ndr.lower_bound_fps <= 300_000 < ndr.upper_bound_fps
    assert result.max_load_fps == 600_000 and not result.generator_limited
    assert any("still disturbed" in note for note in result.notes)


@pytest.mark.parametrize("mode", ["binary", "multi"])
def test_a_search_with_disturbed_trials_replays_from_trials_jsonl(mode):
    cfg = SearchConfig(mode=mode, goals=(NDR, PDR), min_load_fps=10_000, max_load_fps=600_000,
                       relative_width=0.01, trial_duration_s=1.0)
    chosen, outcome, _ = run_search(_disturbing(SimulatedDut(412_345, seed=3), 0.3, seed=9), cfg)
    replay = replay_from_trials_jsonl(outcome.trials)
    again, outcome2, _ = run_search(replay, cfg)
    assert replay.position == len(outcome.trials)
    assert [(g.lower_bound_fps, g.upper_bound_fps, g.regular) for g, _ in again] == \
        [(g.lower_bound_fps, g.upper_bound_fps, g.regular) for g, _ in chosen]
    assert outcome2.invalid_trials == outcome.invalid_trials > 0


def _late(result: TrialResult, late_frames: int) -> TrialResult:
    return dataclasses.replace(result, pacing=dataclasses.replace(result.pacing, late_frames=late_frames))


def test_a_miss_beyond_what_the_late_frames_explain_is_the_devices_and_not_retried():
    from vsbench.measurement.search.trial_checks import missed_regardless_of_pacing

    lossy = _window_off(_lossy(_clean(5e5)))  # 500 of 500,000 frames lost
    assert missed_regardless_of_pacing(NDR, _late(lossy, 100))       # 400 lost beyond the 100 displaced
    assert not missed_regardless_of_pacing(NDR, _late(lossy, 500))   # all 500 may be the burst's
    assert not missed_regardless_of_pacing(NDR, lossy)               # no count: cannot tell
    assert not missed_regardless_of_pacing(Goal("lat", 0.0, max_latency_p99_ns=1e6), _late(lossy, 0))
    assert not missed_regardless_of_pacing(PDR, _late(lossy, 0))     # 0.1 % is within PDR's 0.5 %

    asked = []

    def trial(load, duration):
        asked.append(load)
        return _late(_window_off(_lossy(_clean(load, duration))), 10)

    m = Measurer(trial, SearchConfig(goals=(NDR,), max_load_fps=1e6, min_load_fps=1e3, disturbed_retries=2))
    index, result = m.measure(5e5, 1.0)
    assert asked == [5e5] and index == 0 and result.invalid_kind == INVALID_DISTURBED
