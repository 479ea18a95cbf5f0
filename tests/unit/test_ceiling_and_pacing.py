"""The generator ceiling (measured once, bounds the search) and the pacing validity rule."""

from __future__ import annotations

import pytest

from vsbench.interfaces.traffic import PacingStats, TrialResult
from vsbench.measurement import ceiling, validity
from vsbench.results.model import TrialIdentity, TrialRecord


def _burst(tx_frames=300_000, tx_duration_s=0.5):
    return TrialResult(intended_load_fps=tx_frames / tx_duration_s if tx_duration_s else 0.0,
                       intended_duration_s=tx_duration_s,
                       frame_size_bytes=64, tx_frames=tx_frames, rx_frames=tx_frames,
                       tx_duration_s=tx_duration_s, burst_frames=tx_frames)


def test_calibration_burst_is_long_enough_and_splits_evenly():
    assert ceiling.calibration_frames(1e6, 2) == 300_000
    assert ceiling.calibration_frames(1e6, 1, duration_s=0.5) == 500_000
    assert ceiling.calibration_frames(1000, 2) == ceiling.MIN_CALIBRATION_FRAMES
    assert ceiling.calibration_frames(333_333, 2) % 2 == 0
    with pytest.raises(ValueError):
        ceiling.calibration_frames(1e6, 0)


def test_ceiling_is_the_burst_rate_times_the_share():
    c = ceiling.ceiling_from(_burst(300_000, 0.5), share=0.9, trial_index=7)
    assert c.burst_rate_fps == pytest.approx(600_000) and c.max_load_fps == pytest.approx(540_000)
    assert c.trial_index == 7
    with pytest.raises(ceiling.CeilingError):
        ceiling.ceiling_from(_burst(300_000, 0.0))
    with pytest.raises(ValueError):
        ceiling.ceiling_from(_burst(), share=1.5)


def test_the_slower_calibration_burst_counts():
    fast = ceiling.ceiling_from(_burst(300_000, 0.7), share=0.75, trial_index=0)
    slow = ceiling.ceiling_from(_burst(300_000, 1.0), share=0.75, trial_index=1)
    assert ceiling.slowest([fast, slow]) is slow and ceiling.slowest(iter([slow, fast])) is slow
    with pytest.raises(ceiling.CeilingError):
        ceiling.slowest([])


def test_a_goal_at_max_load_is_at_the_ceiling():
    assert ceiling.at_ceiling(500_000, 500_000, 0.005)
    assert ceiling.at_ceiling(498_000, 500_000, 0.005)
    assert not ceiling.at_ceiling(490_000, 500_000, 0.005)
    assert not ceiling.at_ceiling(None, 500_000, 0.005)


def _paced(dev_frames, nominal=5000.0, windows=100):
    p = PacingStats(window_s=0.01, resolution_s=1e-4, windows=windows, nominal_frames_per_window=nominal,
                    max_window_deviation_frames=dev_frames, max_frames_per_burst_window=600, max_late_s=0.002)
    return TrialResult(intended_load_fps=nominal * 100, intended_duration_s=1.0, frame_size_bytes=64,
                       tx_frames=int(nominal * 100), rx_frames=int(nominal * 100), tx_duration_s=1.0, pacing=p)


def test_a_window_off_by_more_than_half_a_percent_invalidates_the_trial():
    assert validity.judge(_paced(25)).valid  # exactly 0.5 %
    verdict = validity.judge(_paced(26))
    assert verdict.tags == ("pacing",)
    assert "10 ms window was 26 frames off its nominal 5000" in verdict.reasons[0]
    assert "2.0 ms behind schedule" in verdict.reasons[0]
    # a slow stream: one frame either way is the nature of a window, not a pacing error
    assert validity.judge(_paced(2, nominal=100)).valid
    assert not validity.judge(_paced(3, nominal=100)).valid
    # no windows (a trial shorter than one window) or no pacing figures: nothing to judge
    assert validity.judge(_paced(1000, windows=0)).valid
    checked, verdict = validity.apply(_paced(100))
    assert not checked.valid and checked.invalid_reason.startswith("pacing: ")


def test_pacing_survives_trials_jsonl():
    result = _paced(3)
    rec = TrialRecord(identity=TrialIdentity("abc123", 0, "p"), trial_index=0, role="search",
                      started_at="2024-01-01T00:00:00.000+00:00", latency_requested=False, result=result)
    doc = rec.to_json()
    assert doc["pacing"]["max_window_deviation_ratio"] == pytest.approx(3 / 5000)
    assert doc["pacing"]["burst_ratio"] == pytest.approx(600 / 500)
    assert TrialRecord.from_json(doc).result.pacing == result.pacing
    from vsbench.results import schema

    schema.validate(doc, "trial.schema.json")
    schema.validate({**rec.to_json(), "role": "calibration"}, "trial.schema.json")


def test_the_ceiling_share_is_configured_else_the_generators_else_the_default():
    assert ceiling.share_for(0.9, 0.75) == 0.9
    assert ceiling.share_for(None, 0.75) == 0.75
    assert ceiling.share_for(None, None) == ceiling.CEILING_SHARE
    with pytest.raises(ValueError):
        ceiling.share_for(1.5, None)
