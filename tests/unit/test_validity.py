"""The common validity rules: generator shortfall and rx>tx are never counted as DUT loss."""

from vsbench.interfaces.traffic import TrialResult
from vsbench.measurement import validity


def _trial(tx, rx, load=1000.0, duration=1.0, **kw):
    return TrialResult(load, duration, 64, tx_frames=tx, rx_frames=rx, **kw)


def test_full_delivery_with_loss_is_valid():
    checked, verdict = validity.apply(_trial(1000, 900))
    assert verdict.valid and checked.valid
    assert checked.loss_ratio == 0.1


def test_exactly_99_9_percent_sent_is_still_valid():
    assert validity.judge(_trial(999, 999)).valid
    assert not validity.judge(_trial(998, 998)).valid


def test_short_send_is_generator_limited_and_counters_are_kept():
    checked, verdict = validity.apply(_trial(500, 500))
    assert verdict.tags == ("generator-limited",)
    assert not checked.valid
    assert checked.invalid_reason.startswith("generator-limited")
    assert (checked.tx_frames, checked.rx_frames) == (500, 500)


def test_rx_exceeding_tx_is_invalid_not_zero_loss():
    checked, verdict = validity.apply(_trial(1000, 1001))
    assert verdict.tags == ("rx-exceeds-tx",)
    assert not checked.valid


def test_generator_own_verdict_is_kept_alongside_ours():
    result = _trial(100, 100, valid=False, invalid_reason="port down")
    checked, verdict = validity.apply(result)
    assert verdict.tags == ("generator", "generator-limited")
    assert "port down" in checked.invalid_reason


def test_zero_length_trial_has_nothing_to_judge_on_tx():
    assert validity.judge(_trial(0, 0, load=0.0)).valid
