"""The default multi-goal search on the seeded DUT simulator."""

import dataclasses

import pytest

from vsbench.interfaces.traffic import TrialResult
from vsbench.measurement.search import Goal, SearchConfig, search
from vsbench.measurement.simulator import SimulatedDut, make_dut

NDR = Goal("NDR", 0.0)
PDR = Goal("PDR", 0.005)


def config(**kw):
    base = dict(mode="multi", goals=(NDR, PDR), min_load_fps=10_000, max_load_fps=14_880_952,
                relative_width=0.005)
    base.update(kw)
    return SearchConfig(**base)


@pytest.mark.parametrize("revision", [2, None])
def test_clean_limit_ndr_and_pdr_from_one_trial_stream(revision):
    capacity = 812_345
    result = search(SimulatedDut(capacity, seed=1), config(**({"revision": revision} if revision else {})))
    ndr, pdr = result.goal("NDR"), result.goal("PDR")
    assert ndr.regular and pdr.regular
    assert ndr.lower_bound_fps <= capacity < ndr.upper_bound_fps
    assert ndr.relative_width == pytest.approx(0.005)
    # PDR: loss (L - C) / L <= 0.5%  <=>  L <= C / 0.995
    assert pdr.lower_bound_fps <= capacity / 0.995 < pdr.upper_bound_fps
    if revision == 2:  # five consistent trials decide each bound (alpha = 0.05)
        assert (ndr.lower_bound_trials, ndr.lower_bound_bad) == (5, 0)
        assert (ndr.upper_bound_trials, ndr.upper_bound_bad) == (5, 5)
        assert ndr.lower_bound_bad_ci == (0.0, pytest.approx(1 - 0.025 ** 0.2))
        assert ndr.upper_bound_bad_ci == (pytest.approx(0.025 ** 0.2), 1.0)
    else:  # revision 5 on: the capacity model of the overload trials may settle one sooner
        assert ndr.lower_bound_bad == 0 and 2 <= ndr.lower_bound_trials <= 5
        assert ndr.upper_bound_bad == ndr.upper_bound_trials and 2 <= ndr.upper_bound_trials <= 5
    # NDR's upper bound is PDR's lower bound here: the same trials serve both goals
    assert ndr.upper_bound_fps == pdr.lower_bound_fps
    assert result.trial_seconds <= 20
    assert result.trials[0].intended_load_fps == pytest.approx(14_880_952)
    # conditional throughput: lower bound times (1 - median loss) of its trials
    assert ndr.conditional_throughput_fps == ndr.lower_bound_fps
    assert pdr.conditional_throughput_fps < pdr.lower_bound_fps


def test_every_goal_is_updated_by_every_trial():
    result = search(SimulatedDut(300_000, seed=2), config(goals=(NDR, Goal("X", 0.001), PDR)))
    loads = {t.intended_load_fps for t in result.trials}
    for goal in result.goals:
        assert goal.regular
        assert goal.lower_bound_fps in loads and goal.upper_bound_fps in loads
    x = result.goal("X").lower_bound_fps
    assert result.goal("NDR").lower_bound_fps <= x <= result.goal("PDR").lower_bound_fps


def test_noisy_device_bounds_are_near_capacity_and_use_more_trials():
    dut = make_dut("jitter", 3)
    result = search(dut, config())
    ndr = result.goal("NDR")
    assert ndr.regular
    assert 0.97 * dut.capacity_fps <= ndr.lower_bound_fps <= 1.02 * dut.capacity_fps
    # revision 5 on, the capacity model may settle a bound on two trials of its own
    assert ndr.lower_bound_trials >= 2 and ndr.upper_bound_trials >= 2
    assert ndr.lower_bound_trials + ndr.upper_bound_trials >= 10
    assert result.trial_seconds > 20


def test_unreachable_goal_is_irregular_with_its_reason():
    result = search(SimulatedDut(5_000, seed=4), config())
    for goal in result.goals:
        assert goal.lower_bound_fps is None and goal.upper_bound_fps == 10_000
        assert not goal.regular and "min_load is an upper bound" in goal.irregular_reason


def test_unreachable_latency_goal_next_to_a_reachable_loss_goal():
    dut = SimulatedDut(1_000_000, probe_rate_fps=1_000, base_latency_ns=20_000, seed=5)
    lat = Goal("LAT", 0.0, max_latency_p99_ns=10_000)  # below the device's base latency
    result = search(dut, config(goals=(NDR, lat)))
    assert result.goal("NDR").regular
    lat_result = result.goal("LAT")
    assert not lat_result.regular and lat_result.upper_bound_fps == 10_000


def test_max_load_lower_bound_is_irregular():
    result = search(SimulatedDut(50e6, seed=6), config())
    ndr = result.goal("NDR")
    assert ndr.lower_bound_fps == pytest.approx(14_880_952) and ndr.upper_bound_fps is None
    assert not ndr.regular and "max_load is a lower bound" in ndr.irregular_reason
    assert ndr.lower_bound_trials == 5


def test_generator_limited_max_load_is_lowered_onto_the_grid():
    dut = SimulatedDut(20e6, generator_max_fps=3e6, seed=7)
    result = search(dut, config())
    assert result.generator_limited and result.invalid_trials == 2
    assert result.max_load_fps <= 3e6 * 0.99
    ndr = result.goal("NDR")
    assert ndr.lower_bound_fps == pytest.approx(result.max_load_fps)
    assert "generator-limited" in ndr.irregular_reason
    assert all(t.valid for t in result.trials[2:])


def test_a_generator_short_now_and_then_keeps_loads_it_delivered():
    """A sender descheduled on a shared CPU falls short at a load it delivered before:
    max_load drops to that delivered load, not to the worst trial's achieved rate."""
    capacity = 100_000
    dut = SimulatedDut(capacity, seed=3)
    calls = []

    def flaky(load_fps, duration_s):
        result = dut(load_fps, duration_s)
        calls.append(load_fps)
        # every trial above the capacity after the 4th is late and 6% short
        if len(calls) > 4 and load_fps > capacity:
            return dataclasses.replace(result, valid=False, invalid_reason="late",
                                       tx_frames=int(result.tx_frames * 0.94))
        return result

    result = search(flaky, config(max_load_fps=200_000))
    [failed] = {t.intended_load_fps for t in result.trials if not t.valid}
    delivered = max(t.intended_load_fps for t in result.trials if t.valid and t.intended_load_fps < failed)
    assert result.generator_limited and result.notes[0].startswith("generator could not deliver")
    # one grid step under the failing load, not 6% (and a margin) under it
    assert result.max_load_fps == pytest.approx(delivered) and delivered >= 0.99 * capacity
    ndr = result.goal("NDR")
    assert ndr.lower_bound_fps is not None and 0.99 * capacity <= ndr.lower_bound_fps <= capacity


def test_a_lowered_max_load_above_every_goal_is_not_generator_limited():
    """The generator fell short above the device's limit, but every goal was bracketed by
    failing loads below the lowered max_load: the figures are the device's, not capped."""
    capacity = 100_000
    dut = SimulatedDut(capacity, seed=5)

    def short_above_110k(load_fps, duration_s):
        result = dut(load_fps, duration_s)
        if load_fps > 1.1 * capacity:
            return dataclasses.replace(result, valid=False, invalid_reason="late",
                                       tx_frames=int(result.tx_frames * 0.9))
        return result

    result = search(short_above_110k, config(max_load_fps=400_000))
    assert result.invalid_trials >= 2 and result.max_load_fps < 400_000
    assert all(g.upper_bound_fps is not None for g in result.goals)
    assert not result.generator_limited


def test_time_budget_returns_bounds_so_far_as_irregular():
    result = search(make_dut("jitter", 8), config(time_budget_s=10))
    assert result.budget_exhausted and result.trial_seconds <= 10
    assert all(not g.regular and g.irregular_reason.startswith("time budget exhausted") for g in result.goals)


def collapsing_dut(max_load):
    """Loses nothing in [0.6, 0.9] of max_load, 0.3% in a band at [0.5, 0.6), much above 0.9,
    and forwards only 55% of max_load when overloaded (so the first guess lands in the band)."""
    def trial(load, duration):
        tx = int(load * duration)
        frac = load / max_load
        if frac > 0.9:
            rx = int(0.55 * max_load * duration)
        elif 0.5 <= frac < 0.6:
            rx = int(tx * 0.997)
        else:
            rx = tx
        return TrialResult(load, duration, 64, tx_frames=tx, rx_frames=min(rx, tx))
    return trial


def test_loss_inversion_gives_the_conservative_bound():
    result = search(collapsing_dut(1e6), config(max_load_fps=1e6))
    ndr, pdr = result.goal("NDR"), result.goal("PDR")
    assert ndr.regular and pdr.regular
    # the band decides NDR, even though loads above it (measured for PDR) lose nothing
    assert ndr.upper_bound_fps < 0.6e6 and ndr.lower_bound_fps < 0.5e6
    assert 0.895e6 <= pdr.lower_bound_fps <= 0.9e6
    loads_passed_above = [t.intended_load_fps for t in result.trials
                          if t.loss_ratio == 0 and t.intended_load_fps > 0.6e6]
    assert loads_passed_above
    assert any("NDR: loss inversion" in note for note in result.notes)


def test_exceed_ratio_zero_one_bad_trial_condemns_a_load():
    dut = SimulatedDut(400_000, spike_probability=0.3, seed=9)
    strict = search(dut, config(goals=(Goal("NDR0", 0.0, exceed_ratio=0.0),)))
    median = search(SimulatedDut(400_000, spike_probability=0.3, seed=9), config(goals=(NDR,)))
    assert strict.goal("NDR0").lower_bound_fps < median.goal("NDR").lower_bound_fps


def test_bursty_device_within_a_few_widths():
    dut = make_dut("bursty", 10)
    ndr = search(dut, config()).goal("NDR")
    assert ndr.regular
    assert 0.98 * dut.capacity_fps <= ndr.lower_bound_fps <= dut.capacity_fps
