"""Search revision 5 of the multi-goal search (issue 31): a close load decided by a
censored fit of the capacity every overload trial measured.

Revision 5 must find a meter's rate within [0.95 N, N] in no more trial time than revision
2 on the meter reference and the quick start, and replay exactly under its own revision only.
"""

from __future__ import annotations

import math

import pytest

from vsbench.measurement.search.capacity_model import fit_capacity
from vsbench.measurement.search.capacity_rule import capacity_verdict
from vsbench.measurement.search.exceed_test import Verdict
from vsbench.measurement.simulator import SimulatedDut

from tests.unit.search_revision_kit import (
    check_configuration_opts_in, check_meter_rate_found_in_no_more_time,
    check_recompute_verifies_and_catches_relabel,
    capacity_trials, check_replays_exactly_and_only_under_its_revision, multi, noisy_trial_seconds)


def test_the_fit_finds_the_capacity_and_the_spread_from_overload_trials():
    dut = SimulatedDut(1e6, seed=3, capacity_jitter=0.02, spike_probability=0.1)
    loads = [1e6 * (0.96 + 0.08 * k / 59) for k in range(60)]
    model = fit_capacity(capacity_trials(dut, loads))
    assert model is not None
    assert abs(math.exp(model.mu) / 1e6 - 1.0) < 0.01
    assert 0.01 < model.sigma < 0.03
    low, _ = model.bad_probability(0.95e6, 0.0)
    high, _ = model.bad_probability(1.05e6, 0.0)
    assert low < 0.3 < 0.9 < high


def test_no_fit_without_enough_overload_trials():
    dut = SimulatedDut(1e6, seed=3)
    assert fit_capacity(capacity_trials(dut, [0.9e6, 0.95e6, 1.01e6, 1.02e6])) is None


def test_the_model_settles_only_a_load_whose_own_majority_and_neighbours_agree():
    dut = SimulatedDut(1e6, seed=3, capacity_jitter=0.005, spike_probability=0.02)
    model = fit_capacity(capacity_trials(dut, [1e6 * (0.98 + 0.04 * k / 39) for k in range(40)]))
    low, high = 0.97e6, 1.03e6
    quiet = {9: (2, 0), 10: (2, 0), 11: (2, 0)}  # the bits around index 10 lean low
    loud = {9: (2, 2), 10: (2, 2), 11: (2, 2)}
    assert capacity_verdict(model, low, 10, quiet, 0.0, 0.5) is Verdict.LOWER
    assert capacity_verdict(model, low, 10, {**quiet, 10: (2, 1)}, 0.0, 0.5) is None  # a tie leans up
    assert capacity_verdict(model, high, 10, loud, 0.0, 0.5) is Verdict.UPPER
    assert capacity_verdict(model, high, 10, {**loud, 10: (2, 0)}, 0.0, 0.5) is None
    assert capacity_verdict(model, high, 10, {9: (6, 6), 10: (2, 1), 11: (6, 6)}, 0.0, 0.5) is Verdict.UPPER
    # the model says low, but the neighbourhood's bits lean high: not decided
    assert capacity_verdict(model, low, 10, {8: (4, 4), 9: (4, 4), 10: (3, 1), 11: (6, 6)}, 0.0, 0.5) is None
    assert capacity_verdict(model, low, 10, {10: (1, 0)}, 0.0, 0.5) is None  # too few of its own
    assert capacity_verdict(None, low, 10, quiet, 0.0, 0.5) is None


def test_only_revision_5_decides_by_the_capacity_model():
    assert multi(5).decides_by_capacity_model and not multi(4).decides_by_capacity_model


def test_noisy_devices_find_ndrs_near_the_capacity():
    """A guard, not the proof (the benchmark's 1000 seeds are, docs/search.rst)."""
    noisy_trial_seconds((5,), range(10), ndr_floor=0.85)


@pytest.mark.parametrize("reference", ["meter", "quick_start"])
def test_the_meter_rate_is_found_within_5_percent_in_no_more_trial_time(reference):
    check_meter_rate_found_in_no_more_time(reference, revision=5, baseline=2, seed=5031)


def test_a_revision_5_run_replays_exactly_and_only_under_its_revision():
    check_replays_exactly_and_only_under_its_revision(5, older=4)


def test_a_configuration_opts_in_to_revision_5():
    check_configuration_opts_in(5, older=4, rule="decides_by_capacity_model")


def test_recompute_verifies_a_revision_5_run_and_catches_it_relabelled():
    """``vsbench recompute``'s check replays a multi run under the revision it recorded."""
    check_recompute_verifies_and_catches_relabel(5, older=4)
