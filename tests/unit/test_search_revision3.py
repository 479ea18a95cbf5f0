"""Search revision 3 of the multi-goal search: close loads decided by their neighbourhood,
external-search steps that wait for their trial (issue 31).

Revision 3 must save trial time where the device is noisy, change nothing where it is not
(a meter, a clean limit: the same trials as revision 2), and replay exactly -- a run keeps
the revision it was recorded under.
"""

from __future__ import annotations

import pytest

from vsbench.measurement.search import Goal
from vsbench.measurement.search.candidates import Selector
from vsbench.measurement.search.controller import targets_for
from vsbench.measurement.search.exceed_test import Verdict
from vsbench.measurement.search.load_grid import LoadGrid
from vsbench.measurement.search.load_stats import TrialDatabase
from vsbench.measurement.search.monotone_fit import logistic_fit, logistic_rate
from vsbench.measurement.search.neighbourhood_test import (
    EARLY_POOL_TRIALS, FORCED_POOL_TRIALS, MIN_OWN_TRIALS, neighbourhood_verdict,
)
from vsbench.measurement.simulator import SimulatedDut

from tests.unit.search_revision_kit import (
    PDR, check_meter_rate_found_in_no_more_time, check_replays_exactly_and_only_under_its_revision, multi,
    noisy_trial_seconds,
)

def noisy_dut(seed: int, capacity_fps: float = 700_000.0) -> SimulatedDut:
    """Issue 31's 2 %-jitter model: capacity jitter 2 % per trial, a 10 % chance of a spike."""
    return SimulatedDut(capacity_fps, seed=seed, capacity_jitter=0.02, spike_probability=0.1, spike_loss_ratio=1e-4)


# -- the neighbourhood rule ----------------------------------------------------------------


def test_a_load_whose_trials_agree_is_left_to_its_own_test():
    # three good trials next to loads that failed: the per-load test decides it (at five),
    # a hard edge is never smoothed into its neighbours
    counts = {10: (3, 0), 11: (12, 12), 12: (12, 12)}
    assert neighbourhood_verdict(10, counts, 0.5, n_max=13) is None


def test_a_mixed_load_is_decided_early_when_its_neighbourhood_is_clear():
    # 1 bad in 6 here (too few for its own test), none below, 1 in 6 above: clearly under q
    counts = {9: (6, 0), 10: (6, 1), 11: (6, 1)}
    assert sum(n for n, _b in counts.values()) >= EARLY_POOL_TRIALS
    assert neighbourhood_verdict(10, counts, 0.5, n_max=13) is Verdict.LOWER
    mirrored = {9: (6, 5), 10: (6, 5), 11: (6, 6)}
    assert neighbourhood_verdict(10, mirrored, 0.5, n_max=13) is Verdict.UPPER


def test_a_close_call_waits_for_more_trials_then_the_fit_decides():
    # p flat around q: 5 of 10 bad at every load -- not clear, so undecided until the
    # neighbourhood holds FORCED_POOL_TRIALS, then the tie goes to the conservative side
    few = {9: (4, 2), 10: (4, 2), 11: (4, 2)}
    assert neighbourhood_verdict(10, few, 0.5, n_max=13) is None
    many = {9: (10, 5), 10: (10, 5), 11: (10, 5)}
    assert sum(n for n, _b in many.values()) >= FORCED_POOL_TRIALS
    assert neighbourhood_verdict(10, many, 0.5, n_max=13) is Verdict.UPPER
    assert MIN_OWN_TRIALS <= 4


def test_logistic_fit_gives_the_rate_of_revision_2_and_an_error_that_shrinks_with_trials():
    points = [(8, 6, 1), (9, 6, 2), (10, 6, 4), (11, 6, 5)]
    fit = logistic_fit(points, 9)
    assert fit.rate == logistic_rate(points, 9)
    more = logistic_fit([(i, 4 * n, 4 * b) for i, n, b in points], 9)
    assert more.logit_se == pytest.approx(fit.logit_se / 2, rel=0.1)


def test_verdicts_use_the_rule_only_under_revision_3():
    goals = (Goal("G", 0.0),)
    target = targets_for(multi(3, goals=goals))[-1]
    trial_loads = {9: [False] * 6, 10: [False] * 5 + [True], 11: [True] + [False] * 5}
    dbs = {rev: TrialDatabase(goals, neighbourhood_decides=rev >= 3) for rev in (2, 3)}
    dut = SimulatedDut(1e6)
    for db in dbs.values():
        for index, outcomes in trial_loads.items():
            for bad in outcomes:
                trial = dut(2e6 if bad else 1e5, target.trial_duration_s)
                db.add(index, 0, trial)
    assert dbs[2].verdicts(0, target)[10] is Verdict.UNDECIDED
    assert dbs[3].verdicts(0, target)[10] is Verdict.LOWER


# -- external search waits for its trial ------------------------------------------------


def _waiting_selector(patient: bool) -> tuple[Selector, TrialDatabase, list[int]]:
    """A goal with a lower bound and no upper one, asked for its next load three times
    while another goal's trials go first (nothing of its own is measured)."""
    config = multi(3 if patient else 2)
    db = TrialDatabase(config.goals)
    db.add(100, 0, SimulatedDut(1e9)(1e5, 1.0))  # one good trial: a coarse lower bound
    selector = Selector(1, PDR, targets_for(config), patient_expansion=patient)
    top = 2000
    grid = LoadGrid(config.min_load_fps, config.max_load_fps, config.relative_width)
    asked = [selector.nominate(db, grid, top).index for _ in range(3)]
    return selector, db, asked


def test_an_unmeasured_external_step_is_nominated_again_not_doubled():
    assert _waiting_selector(patient=True)[2] == [104, 104, 104]
    # revision 2 doubled the step at every call, measured or not
    assert _waiting_selector(patient=False)[2] == [104, 108, 116]


# -- what revision 3 saves and what it keeps --------------------------------------------


def test_noisy_devices_take_less_trial_time_with_ndrs_as_close():
    spent = noisy_trial_seconds((2, 3), range(12), ndr_floor=0.97, make_dut=noisy_dut)
    assert spent[3] < 0.9 * spent[2], spent


@pytest.mark.parametrize("reference", ["meter", "quick_start"])
def test_the_meter_rate_is_found_within_5_percent_in_no_more_trial_time(reference):
    check_meter_rate_found_in_no_more_time(reference, revision=3, baseline=2, seed=31)


def test_a_revision_3_run_replays_exactly_and_only_under_its_revision():
    check_replays_exactly_and_only_under_its_revision(3, older=2)


def test_a_configuration_opts_in_and_a_replay_keeps_the_recorded_revision():
    """search.revision picks a new search's rules; a replay passes the revision the run
    recorded, whatever the section says."""
    from vsbench.measurement.search.api import SEARCH_REVISION
    from vsbench.measurement.search.settings import search_config_from_section

    base = {"mode": "multi"}
    assert search_config_from_section(base, max_load_fps=1e6, full_trial_duration_s=1).revision == SEARCH_REVISION
    opted = search_config_from_section({**base, "revision": 3}, max_load_fps=1e6, full_trial_duration_s=1)
    assert opted.revision == 3 and opted.decides_close_loads_by_neighbourhood
    replay = search_config_from_section({**base, "revision": 3}, max_load_fps=1e6, full_trial_duration_s=1, revision=2)
    assert replay.revision == 2
