"""Full-length confirmation trials and whole-search repetitions."""

import pytest

from vsbench.measurement.search import Goal, GoalResult, SearchConfig, SearchResult, search, search_repeated
from vsbench.measurement.search.repeat import repetition_stats
from vsbench.measurement.simulator import SimulatedDut, make_dut

NDR = Goal("NDR", 0.0)
PDR = Goal("PDR", 0.005)


def config(**kw):
    base = dict(mode="multi", goals=(NDR, PDR), min_load_fps=10_000, max_load_fps=14_880_952,
                relative_width=0.005, full_trial_duration_s=60.0)
    base.update(kw)
    return SearchConfig(**base)


def test_confirmation_passes_on_a_clean_device():
    result = search(SimulatedDut(700_000, seed=1), config(confirm=True))
    for goal in result.goals:
        assert goal.confirmed_fps == goal.lower_bound_fps
        assert len(goal.confirmation_trials) == 1
        trial = result.trials[goal.confirmation_trials[0]]
        assert trial.intended_duration_s == 60.0 and trial.intended_load_fps == goal.lower_bound_fps
    assert result.trial_seconds == pytest.approx(
        sum(t.intended_duration_s for t in result.trials))


def test_confirmation_steps_down_when_long_trials_fail():
    # a 5000-frame buffer hides the limit from 1 s trials but not from 60 s ones
    dut = SimulatedDut(400_000, buffer_frames=5_000, seed=2)
    result = search(dut, config(goals=(NDR,), confirm=True, confirm_retries=3))
    ndr = result.goal("NDR")
    assert ndr.lower_bound_fps > 400_000  # the 1 s search overshoots the sustained rate
    loads = [result.trials[i].intended_load_fps for i in ndr.confirmation_trials]
    assert len(loads) >= 2 and loads == sorted(loads, reverse=True)
    assert loads[1] == pytest.approx(loads[0] * 0.995)
    if ndr.confirmed_fps is not None:
        assert ndr.confirmed_fps <= 400_000 + 5_000 / 60
    else:
        assert len(loads) == 4


def test_confirmation_respects_the_time_budget():
    result = search(SimulatedDut(700_000, seed=3), config(confirm=True, time_budget_s=30))
    assert all(g.confirmed_fps is None for g in result.goals)
    assert any("confirmation" in note for note in result.notes)


def test_repetitions_report_spread_and_stability():
    repeated = search_repeated(SimulatedDut(500_000, seed=4), config(repetitions=3))
    assert len(repeated.runs) == 3
    ndr = repeated.goal("NDR")
    assert len(ndr.lower_bounds_fps) == 3 and ndr.min_fps <= ndr.median_fps <= ndr.max_fps
    assert ndr.cv == pytest.approx(0.0, abs=1e-12)  # a clean limit gives the same bound
    assert not ndr.unstable and not repeated.unstable


def test_noisy_device_is_flagged_unstable():
    dut = SimulatedDut(500_000, capacity_jitter=0.4, seed=5)
    repeated = search_repeated(dut, config(repetitions=4))
    ndr = repeated.goal("NDR")
    assert ndr.cv > 0.02 and ndr.unstable and repeated.unstable
    assert any("coefficient of variation" in r for r in repeated.reasons)


def run_with(ndr_fps, pdr_fps):
    return SearchResult(goals=[GoalResult(NDR, ndr_fps, None), GoalResult(PDR, pdr_fps, None)])


def test_large_ndr_pdr_gap_is_unstable():
    repeated = repetition_stats([run_with(700e3, 1e6), run_with(700e3, 1e6)])
    assert repeated.unstable and any("NDR/PDR = 0.70" in r for r in repeated.reasons)
    assert not repetition_stats([run_with(900e3, 1e6)] * 2).unstable


def test_missing_lower_bound_in_a_repetition_is_unstable():
    repeated = repetition_stats([run_with(900e3, 1e6), run_with(None, 1e6)])
    ndr = repeated.goal("NDR")
    assert ndr.unstable and ndr.median_fps == 900e3 and "1 of 2 repetitions" in ndr.reasons[0]


def test_repetition_stats_by_hand():
    runs = [search(make_dut("clean", s, capacity_fps=c), config()) for s, c in ((1, 1e6), (2, 1.1e6), (3, 0.9e6))]
    stats = repetition_stats(runs, unstable_cv=0.02).goal("NDR")
    values = [r.goal("NDR").lower_bound_fps for r in runs]
    assert stats.median_fps == sorted(values)[1]
    mean = sum(values) / 3
    cv = (sum((v - mean) ** 2 for v in values) / 3) ** 0.5 / mean
    assert stats.cv == pytest.approx(cv) and stats.unstable


def test_bad_repetitions_value():
    with pytest.raises(ValueError):
        search_repeated(SimulatedDut(1e5), config(repetitions=0))
