"""The single-purpose parts of the multi-goal search, each on hand-computed cases."""

import math

import pytest

from vsbench.measurement.search.exceed_test import (
    Verdict, binomial_cdf, binomial_sf, classify, clopper_pearson,
)
from vsbench.measurement.search.load_grid import LoadGrid
from vsbench.measurement.search.monotone_fit import isotonic_rates, logistic_rate, pooled_rate
from vsbench.measurement.search.relevant_bounds import relevant_bounds

L, U, X = Verdict.LOWER, Verdict.UPPER, Verdict.UNDECIDED


def test_grid_steps_are_exactly_one_width_and_ends_are_min_and_max():
    grid = LoadGrid(10_000, 1_000_000, 0.005)
    assert grid.load(grid.top) == pytest.approx(1_000_000)
    assert grid.load(0) == 10_000
    for i in range(2, grid.top + 1):
        assert 1 - grid.load(i - 1) / grid.load(i) == pytest.approx(0.005)
    assert 1 - grid.load(0) / grid.load(1) <= 0.005 + 1e-12
    # (1e6/1e4) = 100 = (1/0.995)^k  ->  k = ln 100 / -ln 0.995 = 918.5 -> 919 steps
    assert grid.top == math.ceil(math.log(100) / -math.log(0.995))


def test_grid_index_at_or_below():
    grid = LoadGrid(1_000, 100_000, 0.01)
    for i in (1, 5, grid.top - 1, grid.top):
        load = grid.load(i)
        assert grid.index_at_or_below(load) == i
        assert grid.index_at_or_below(load * 1.001) == i
        assert grid.index_at_or_below(load * 0.999) == i - 1
    assert grid.index_at_or_below(5e6) == grid.top
    assert grid.index_at_or_below(10) == 0
    assert grid.width(3, 4) == pytest.approx(0.01)


def test_binomial_tails_match_hand_values():
    assert binomial_cdf(0, 5, 0.5) == pytest.approx(1 / 32)
    assert binomial_cdf(1, 8, 0.5) == pytest.approx(9 / 256)
    assert binomial_sf(5, 5, 0.5) == pytest.approx(1 / 32)
    assert binomial_sf(0, 5, 0.3) == 1.0
    assert binomial_cdf(2, 4, 0.25) == pytest.approx(0.75**4 + 4 * 0.25 * 0.75**3 + 6 * 0.25**2 * 0.75**2)


def test_five_consistent_trials_decide_at_alpha_five_percent():
    # P[Bin(4, .5) <= 0] = 1/16 > 0.05, P[Bin(5, .5) <= 0] = 1/32 <= 0.05
    assert classify(4, 0, 0.5, 0.05, 11) is X
    assert classify(5, 0, 0.5, 0.05, 11) is L
    assert classify(5, 5, 0.5, 0.05, 11) is U
    # one contrary trial: 8 trials are needed (P[Bin(8,.5) <= 1] = 9/256 = 0.035)
    assert classify(7, 1, 0.5, 0.05, 11) is X
    assert classify(8, 1, 0.5, 0.05, 11) is L
    assert classify(8, 7, 0.5, 0.05, 11) is U


def test_majority_at_n_max_with_ties_upper():
    assert classify(11, 5, 0.5, 0.05, 11) is L
    assert classify(11, 6, 0.5, 0.05, 11) is U
    assert classify(10, 5, 0.5, 0.05, 10) is U  # a tie is the conservative upper bound


def test_one_trial_decides_at_alpha_half_and_exceed_zero_means_no_bad_trial():
    assert classify(1, 0, 0.5, 0.5, 1) is L
    assert classify(1, 1, 0.5, 0.5, 1) is U
    assert classify(1, 0, 0.0, 0.05, 11) is L
    assert classify(3, 1, 0.0, 0.05, 11) is U


def test_clopper_pearson_known_values():
    lo, hi = clopper_pearson(10, 0)
    assert lo == 0.0 and hi == pytest.approx(1 - 0.025 ** (1 / 10), abs=1e-9)  # 0.3085
    lo, hi = clopper_pearson(10, 10)
    assert hi == 1.0 and lo == pytest.approx(0.025 ** (1 / 10), abs=1e-9)
    lo, hi = clopper_pearson(20, 10)
    assert lo == pytest.approx(0.2720, abs=1e-4) and hi == pytest.approx(0.7280, abs=1e-4)


def test_relevant_bounds_are_conservative_under_loss_inversion():
    # 10 passes above the failure at 7: the smallest upper bound wins
    verdicts = {3: L, 5: L, 7: U, 8: L, 10: L, 12: U}
    b = relevant_bounds(verdicts)
    assert (b.lower, b.upper) == (5, 7)
    assert relevant_bounds({3: L, 4: X, 6: L}) == type(b)(6, None)
    assert relevant_bounds({3: U, 6: U}) == type(b)(None, 3)
    assert relevant_bounds({}) == type(b)(None, None)


def test_isotonic_pools_only_violators():
    # rates 0.57, 0.38, 0.62 -> the first two pool to 20/42
    fitted = isotonic_rates([(1, 21, 12), (2, 21, 8), (3, 21, 13)])
    assert fitted[1] == fitted[2] == pytest.approx(20 / 42)
    assert fitted[3] == pytest.approx(13 / 21)
    fitted = isotonic_rates([(1, 5, 0), (2, 5, 2), (3, 5, 5)])
    assert fitted == {1: 0.0, 2: 0.4, 3: 1.0}


def test_logistic_rate_hand_cases():
    # symmetric data around the centre: the fitted rate there is one half
    points = [(8, 10, 2), (9, 10, 4), (10, 10, 5), (11, 10, 6), (12, 10, 8)]
    assert logistic_rate(points, 10) == pytest.approx(0.5, abs=1e-6)
    # a flat 30% everywhere: slope ~0, rate ~0.3 (the ridge pulls a hair toward 0.5)
    flat = [(i, 20, 6) for i in range(5)]
    assert logistic_rate(flat, 2) == pytest.approx(0.3, abs=0.01)
    # decreasing data: the slope is clamped at zero, so the fit is the pooled rate
    falling = [(0, 10, 8), (1, 10, 2)]
    assert logistic_rate(falling, 0) == pytest.approx(0.5, abs=0.01)


def test_pooled_rate_uses_only_undecided_neighbours():
    counts = {5: (13, 6), 6: (13, 7), 7: (5, 5)}
    iso = isotonic_rates([(i, *counts[i]) for i in sorted(counts)])
    # 7 is decided (5 of 5 bad): left out of the smooth fit, only 5 and 6 take part
    rate = pooled_rate(6, counts, undecided={5, 6}, isotonic=iso)
    assert rate == pytest.approx(0.5 * (logistic_rate([(5, 13, 6), (6, 13, 7)], 6) + 7 / 13))
    # alone in its neighbourhood: the isotonic estimate
    assert pooled_rate(6, counts, undecided={6}, isotonic=iso) == pytest.approx(7 / 13)


def test_forced_decision_borrows_from_neighbours():
    from vsbench.interfaces.traffic import TrialResult
    from vsbench.measurement.search.api import Goal
    from vsbench.measurement.search.load_stats import Target, TrialDatabase

    db = TrialDatabase((Goal("NDR", 0.0),))
    target = Target(1, alpha=0.05, n_max=11, trial_duration_s=1.0)

    def add(index, bad_count, n=11):
        for k in range(n):
            lost = 1 if k < bad_count else 0
            db.add(index, k, TrialResult(1000.0 * (1 + index), 1.0, 64, tx_frames=1000, rx_frames=1000 - lost))

    add(1, 6)   # its own majority says upper...
    add(2, 4)   # ...but the loads above it pass more often
    add(3, 5)
    verdicts = db.verdicts(0, target)
    assert verdicts[1] is L  # isotonic pools 1 with 2 and 3: 15/33 < 0.5
