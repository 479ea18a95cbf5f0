"""The common validity rules: generator shortfall and rx>tx are never counted as DUT loss."""

import pytest

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
    assert validity.judge(_trial(998, 998)).valid  # and one whole frame less: rounding
    assert not validity.judge(_trial(997, 997)).valid


def test_a_whole_frame_short_per_direction_is_rounding():
    """A 68 fps, 0.5 s trial intends 34.06 frames; two directions send 17 each."""
    from vsbench.interfaces.traffic import DirectionCounters, TrialResult

    dirs = (DirectionCounters(0, 1, 17, 17), DirectionCounters(1, 0, 17, 17))
    small = TrialResult(68.118, 0.5, 64, tx_frames=34, rx_frames=34, directions=dirs, tx_duration_s=0.5)
    assert validity.judge(small).valid
    fewer = TrialResult(68.118, 0.5, 64, tx_frames=32, rx_frames=32, directions=(
        DirectionCounters(0, 1, 16, 16), DirectionCounters(1, 0, 16, 16)), tx_duration_s=0.5)
    assert validity.judge(fewer).tags == ("generator-limited",)


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


# --------------------------------------------------------------------------- inconsistent results

from vsbench.interfaces.traffic import DirectionCounters  # noqa: E402


def test_negative_or_fractional_counters_are_inconsistent():
    assert validity.judge(_trial(-5, 0)).tags == ("inconsistent",)
    assert validity.judge(_trial(1000, 999.5)).tags == ("inconsistent",)
    assert validity.judge(_trial(True, 0)).tags == ("inconsistent",)


def test_directions_must_add_up():
    bad = _trial(1000, 1000, directions=(DirectionCounters(0, 1, 400, 400), DirectionCounters(1, 0, 500, 500)))
    verdict = validity.judge(bad)
    assert verdict.tags == ("inconsistent",) and "add up to 900" in verdict.reasons[0]


def test_the_result_must_echo_what_was_asked():
    asked = validity.Asked(load_fps=1000.0, duration_s=1.0, frame_size_bytes=64)
    assert validity.judge(_trial(1000, 1000), asked).valid
    assert validity.judge(_trial(1000, 1000, load=2000.0), asked).tags == ("inconsistent",)
    assert "asked 128 B" in validity.judge(_trial(1000, 1000), validity.Asked(1000.0, 1.0, 128)).reasons[0]


def test_sending_time_far_from_the_trial():
    assert validity.judge(_trial(1000, 1000, tx_duration_s=0.1)).tags == ("inconsistent",)
    late = validity.judge(_trial(1000, 1000, tx_duration_s=5.0))
    assert late.tags == ("generator-limited",) and "took 5 s" in late.reasons[0]
    assert validity.judge(_trial(1000, 1000, tx_duration_s=1.3)).valid


def test_untrusted_reasons_are_told_from_a_generator_limit():
    assert validity.untrusted("inconsistent: tx_frames is negative (-5)")
    assert validity.untrusted("generator-limited: sent 5 of 10; rx-exceeds-tx: received 6 > sent 5")
    assert validity.untrusted("deadline: x did not return")
    assert not validity.untrusted("generator-limited: sent 5 of 10 intended frames (50.00%)")
    assert not validity.untrusted(None)


def test_untrusted_trials_never_lower_max_load():
    from vsbench.measurement.search import SearchConfig
    from vsbench.measurement.search.measurer import GeneratorExhausted, Measurer

    def nonsense(load, duration):
        checked, _ = validity.apply(TrialResult(load, duration, 64, tx_frames=-1, rx_frames=0))
        return checked

    m = Measurer(nonsense, SearchConfig(max_load_fps=1e6, min_load_fps=1e3, invalid_retries=1))
    with pytest.raises(GeneratorExhausted, match="cannot be used"):
        m.measure(5e5, 1.0)
    assert m.max_load_fps == 1e6 and m.invalid_trials == 2
