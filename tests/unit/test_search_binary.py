"""The binary, rfc2544 and tst009 searches on the seeded DUT simulator."""

import pytest

from vsbench.interfaces.traffic import TrialResult
from vsbench.measurement.search import Goal, SearchConfig, search
from vsbench.measurement.simulator import SimulatedDut

NDR = Goal("NDR", 0.0)
PDR = Goal("PDR", 0.005)


def config(**kw):
    base = dict(mode="binary", goals=(NDR,), min_load_fps=10_000, max_load_fps=2_000_000,
                relative_width=0.005, trial_duration_s=1.0, full_trial_duration_s=60.0)
    base.update(kw)
    return SearchConfig(**base)


def test_binary_finds_a_hard_limit_within_the_width():
    dut = SimulatedDut(capacity_fps=812_345, seed=1)
    result = search(dut, config())
    ndr = result.goal("NDR")
    assert ndr.regular, ndr.irregular_reason
    assert ndr.lower_bound_fps <= 812_345 < ndr.upper_bound_fps
    assert (ndr.upper_bound_fps - ndr.lower_bound_fps) / ndr.upper_bound_fps <= 0.005
    assert ndr.relative_width <= 0.005
    # first trial at max_load, as RFC 2544 binary search starts
    assert result.trials[0].intended_load_fps == 2_000_000
    assert result.trial_seconds == pytest.approx(len(result.trials) * 1.0)
    assert result.trials[ndr.lower_bound_trial].intended_load_fps == ndr.lower_bound_fps
    assert result.trials[ndr.lower_bound_trial].loss_ratio == 0.0
    assert ndr.conditional_throughput_fps == ndr.lower_bound_fps


def test_binary_two_goals_share_trials_and_pdr_is_not_below_ndr():
    dut = SimulatedDut(capacity_fps=500_000, seed=2)
    single = search(SimulatedDut(capacity_fps=500_000, seed=2), config())
    both = search(dut, config(goals=(NDR, PDR)))
    ndr, pdr = both.goal("NDR"), both.goal("PDR")
    assert ndr.lower_bound_fps <= 500_000 < ndr.upper_bound_fps
    # PDR tolerates 0.5% loss: the limit is between 500k and 500k / 0.995
    assert 500_000 <= pdr.upper_bound_fps and pdr.lower_bound_fps <= 500_000 / 0.995
    assert pdr.lower_bound_fps >= ndr.lower_bound_fps
    # sharing: fewer trials than two independent searches
    assert len(both.trials) < 2 * len(single.trials)


def test_max_load_passing_is_reported_irregular_with_reason():
    dut = SimulatedDut(capacity_fps=5_000_000, seed=3)
    result = search(dut, config())
    ndr = result.goal("NDR")
    assert len(result.trials) == 1
    assert ndr.lower_bound_fps == 2_000_000 and ndr.upper_bound_fps is None
    assert not ndr.regular and "max_load is a lower bound" in ndr.irregular_reason


def test_unreachable_goal_min_load_fails():
    dut = SimulatedDut(capacity_fps=5_000, seed=4)  # below min_load
    result = search(dut, config())
    ndr = result.goal("NDR")
    assert ndr.lower_bound_fps is None and ndr.upper_bound_fps == 10_000
    assert not ndr.regular and "min_load is an upper bound" in ndr.irregular_reason
    assert any(t.intended_load_fps == 10_000 for t in result.trials)


def test_generator_limited_trial_is_retried_then_max_load_lowered():
    dut = SimulatedDut(capacity_fps=5_000_000, seed=5, generator_max_fps=1_500_000)
    result = search(dut, config())
    # first trial at 2 Mpps is invalid, retried once, then max_load drops below 1.5 Mpps
    assert [t.valid for t in result.trials[:2]] == [False, False]
    assert result.trials[0].intended_load_fps == result.trials[1].intended_load_fps == 2_000_000
    assert result.generator_limited and result.invalid_trials == 2
    assert result.max_load_fps == pytest.approx(1_500_000 * 0.99)
    assert any("max_load lowered" in n for n in result.notes)
    ndr = result.goal("NDR")
    assert ndr.lower_bound_fps == pytest.approx(result.max_load_fps)
    assert not ndr.regular and "generator-limited" in ndr.irregular_reason
    # an invalid trial never counts as DUT loss: no upper bound came from them
    assert ndr.upper_bound_fps is None


def test_generator_limit_below_capacity_search_continues_below_it():
    dut = SimulatedDut(capacity_fps=1_000_000, seed=6, generator_max_fps=1_500_000)
    result = search(dut, config())
    ndr = result.goal("NDR")
    assert ndr.regular
    assert ndr.lower_bound_fps <= 1_000_000 < ndr.upper_bound_fps <= result.max_load_fps


def test_invalid_retry_that_succeeds_does_not_lower_max_load():
    dut = SimulatedDut(capacity_fps=700_000, seed=7)
    calls = []

    def flaky(load, duration):
        calls.append(load)
        r = dut(load, duration)
        if len(calls) == 1:
            return TrialResult(load, duration, 64, tx_frames=r.tx_frames // 2, rx_frames=r.tx_frames // 2,
                               valid=False, invalid_reason="tx stalled")
        return r

    result = search(flaky, config())
    assert calls[0] == calls[1] == 2_000_000
    assert not result.generator_limited and result.max_load_fps == 2_000_000
    assert result.goal("NDR").regular


def test_time_budget_stops_with_irregular_best_so_far():
    dut = SimulatedDut(capacity_fps=812_345, seed=8)
    result = search(dut, config(time_budget_s=4.0))
    assert len(result.trials) == 4 and result.budget_exhausted
    ndr = result.goal("NDR")
    assert not ndr.regular and ndr.irregular_reason == "time budget exhausted"
    assert ndr.upper_bound_fps is not None


def test_rfc2544_mode_uses_full_length_trials_and_sees_duration_dependent_loss():
    # a buffer absorbs 20k frames: short trials pass up to capacity + 20k fps, 60 s ones do not
    short = search(SimulatedDut(capacity_fps=400_000, buffer_frames=20_000, seed=9), config())
    full = search(SimulatedDut(capacity_fps=400_000, buffer_frames=20_000, seed=9),
                  config(mode="rfc2544"))
    assert all(t.intended_duration_s == 60.0 for t in full.trials)
    assert full.trial_seconds == pytest.approx(60.0 * len(full.trials))
    assert short.goal("NDR").lower_bound_fps > 410_000
    assert 400_000 * 0.99 <= full.goal("NDR").lower_bound_fps <= 400_000 + 20_000 / 60


def test_tst009_verifies_a_failed_load_before_giving_up_on_it():
    # a device with a 50% chance of a small loss spike: one bad trial does not condemn a load
    dut = SimulatedDut(capacity_fps=300_000, spike_probability=0.5, seed=10)
    result = search(dut, config(mode="tst009", full_trial_duration_s=2.0))
    loads = [t.intended_load_fps for t in result.trials]
    repeated = [l for i, l in enumerate(loads[1:], 1) if l == loads[i - 1]]
    assert repeated, "a failing load should be measured again"
    for t in result.trials:
        assert t.intended_duration_s == 2.0
    ndr = result.goal("NDR")
    # a load fails only if both of its trials fail
    upper_trials = [t for t in result.trials if t.intended_load_fps == ndr.upper_bound_fps]
    assert len(upper_trials) == 2 and all(t.loss_ratio > 0 for t in upper_trials)


def test_binary_is_fooled_by_loss_inversion_and_says_nothing_wrong_about_it():
    # binary search trusts one trial: a lossy band below capacity becomes its upper bound
    dut = SimulatedDut(capacity_fps=1_000_000, inversion_band=(0.45, 0.55), inversion_probability=1.0,
                       seed=11)
    result = search(dut, config())
    ndr = result.goal("NDR")
    assert ndr.upper_bound_fps <= 550_000  # the band, not the capacity


def test_latency_bound_goal_fails_trials_over_the_bound():
    dut = SimulatedDut(capacity_fps=1_000_000, probe_rate_fps=2_000, base_latency_ns=10_000, seed=12)
    lat = Goal("LAT", 0.0, max_latency_p99_ns=100_000)
    result = search(dut, config(goals=(NDR, lat)))
    ndr, bound = result.goal("NDR"), result.goal("LAT")
    assert bound.regular and ndr.regular
    # p99 of base + Exp(base * u / (1 - u)) reaches 100 us near u = 0.7: well below capacity
    assert bound.lower_bound_fps < 0.85 * ndr.lower_bound_fps


@pytest.mark.parametrize("bad", [
    dict(goals=()),
    dict(goals=(NDR, NDR)),
    dict(min_load_fps=0),
    dict(min_load_fps=3e6),
    dict(relative_width=0),
    dict(goals=(Goal("X", 1.5),)),
    dict(mode="nope"),
    dict(time_budget_s=-1),
])
def test_bad_configuration_is_a_one_line_value_error(bad):
    with pytest.raises(ValueError) as info:
        search(SimulatedDut(capacity_fps=1e5), config(**bad))
    assert "\n" not in str(info.value)
