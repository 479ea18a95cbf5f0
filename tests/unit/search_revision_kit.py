"""What the tests of each search revision share: the issue-31 search settings and noisy
device, and the two checks every new revision must pass against an older one (the meter
reference and quick start in no more trial time; an exact replay under its own revision
only)."""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from vsbench.measurement.recheck import Diverged
from vsbench.measurement.search import Goal, SearchConfig, TrialFn, search
from vsbench.measurement.search.capacity_model import TrialLoss
from vsbench.measurement.simulator import SimulatedDut

from tests.unit.replay_kit import replay_from_trials_jsonl

NDR = Goal("NDR", 0.0)
PDR = Goal("PDR", 0.005)


def multi(revision: int, **kw) -> SearchConfig:
    """The multi-goal search of tools/bench/search_efficiency.py (NDR, PDR 0.5 %, 0.5 % width,
    10 kfps to 10GbE line rate at 64 B) under ``revision``."""
    base = dict(mode="multi", goals=(NDR, PDR), min_load_fps=10_000.0, max_load_fps=14_880_952.0,
                relative_width=0.005, revision=revision)
    base.update(kw)
    return SearchConfig(**base)


def noisy_dut(seed: int, capacity_fps: float = 700_000.0) -> SimulatedDut:
    """Issue 31's 5 %-jitter model (30 % spikes)."""
    return SimulatedDut(capacity_fps, seed=seed, capacity_jitter=0.05, spike_probability=0.3, spike_loss_ratio=1e-4)


def capacity_trials(dut: SimulatedDut, loads: list[float]) -> list[TrialLoss]:
    """One 1 s trial of ``dut`` at each load, as the capacity model takes it."""
    out = []
    for load in loads:
        r = dut(load, 1.0)
        out.append(TrialLoss(load, r.loss_ratio, r.rx_frames / 1.0))
    return out


def noisy_trial_seconds(revisions: tuple[int, ...], seeds: range, ndr_floor: float,
                        make_dut: Callable[[int], SimulatedDut] = noisy_dut) -> dict[int, float]:
    """Each revision's summed trial-seconds over ``make_dut(seed)`` of ``seeds`` (a fresh copy
    per revision; default :func:`noisy_dut`), after checking that every NDR is regular and
    within [ndr_floor C, 1.01 C] of the device's capacity C."""
    seconds = {revision: 0.0 for revision in revisions}
    for seed in seeds:
        for revision in revisions:
            dut = make_dut(seed)
            result = search(dut, multi(revision))
            ndr = result.goal("NDR")
            assert ndr.regular, (revision, seed, ndr.irregular_reason)
            assert ndr_floor * dut.capacity_fps <= ndr.lower_bound_fps <= 1.01 * dut.capacity_fps, \
                (revision, seed, ndr.lower_bound_fps, dut.capacity_fps)
            seconds[revision] += result.trial_seconds
    return seconds


def check_meter_rate_found_in_no_more_time(reference: str, revision: int, baseline: int, seed: int) -> None:
    """Issue 31's condition: the meter reference (phy2phy_meter: 2 s trials, max_load
    200 kfps) and the quick start (1 s trials, 1 % width, an 18 s budget, max_load the
    generator's) find a meter's rate N within [0.95 N, N] under ``revision``, for rates drawn
    at random, in no more trial-seconds than under ``baseline``."""
    rng = np.random.default_rng(seed)
    for draw in range(25):
        rate = float(math.exp(rng.uniform(math.log(20_000), math.log(180_000))))
        if reference == "meter":
            settings = dict(max_load_fps=200_000.0, trial_duration_s=2.0, final_trial_duration_s=2.0,
                            time_budget_s=600.0)
        else:
            settings = dict(max_load_fps=rate * float(rng.uniform(1.1, 10.0)), relative_width=0.01,
                            time_budget_s=18.0)
        seconds = {}
        for rev in (baseline, revision):
            result = search(SimulatedDut(rate, seed=draw), multi(rev, min_load_fps=1000.0, **settings))
            ndr = result.goal("NDR").lower_bound_fps
            assert ndr is not None and 0.95 * rate <= ndr <= rate, (reference, rate, rev, ndr)
            seconds[rev] = result.trial_seconds
        assert seconds[revision] <= seconds[baseline], (reference, rate, seconds)


def check_replays_exactly_and_only_under_its_revision(revision: int, older: int,
                                                      source: Callable[[], TrialFn] = lambda: noisy_dut(5)) -> None:
    """A run under ``revision`` of ``source()`` (default: the noisy device, seed 5) replays
    from its trials.jsonl to the same bounds, and the same trials under ``older`` ask for
    other loads: the recorded revision matters."""
    result = search(source(), multi(revision))
    replay = replay_from_trials_jsonl(result.trials)
    again = search(replay, multi(revision))
    assert replay.position == len(replay.records)
    assert [(g.lower_bound_fps, g.upper_bound_fps, g.irregular_reason) for g in again.goals] == \
        [(g.lower_bound_fps, g.upper_bound_fps, g.irregular_reason) for g in result.goals]
    replay_older = replay_from_trials_jsonl(result.trials)
    try:
        search(replay_older, multi(older))
    except Diverged:
        return
    assert replay_older.position < len(replay_older.records), \
        f"revision {older} asked for exactly revision {revision}'s trials"


def check_recompute_verifies_and_catches_relabel(revision: int, older: int,
                                                 source: Callable[[], TrialFn] = lambda: noisy_dut(7)) -> None:
    """``vsbench recompute``'s check (verify_search) replays a multi run of ``source()``
    (default: the noisy device, seed 7) under the revision its results.json recorded: a
    ``revision`` run verifies; labelled ``older`` it does not."""
    from vsbench.measurement.recheck import verify_search

    section = {"mode": "multi", "goals": [{"name": "NDR", "loss_ratio": 0.0}, {"name": "PDR", "loss_ratio": 0.005}],
               "relative_width": 0.005, "min_load_fps": 10_000.0, "trial_duration_s": 1.0}
    config = {"search": section, "traffic": {"trial_duration_s": 60.0}}
    result = search(source(), multi(revision))
    records = replay_from_trials_jsonl(result.trials).records
    fs = {"search_max_load_fps": 14_880_952.0, "search_mode": "multi", "max_load_fps": result.max_load_fps,
          "generator_limited": result.generator_limited, "search_revision": revision,
          "points": [{"name": g.goal.name, "lower_bound_fps": g.lower_bound_fps, "upper_bound_fps": g.upper_bound_fps,
                      "regular": g.regular, "irregular_reason": g.irregular_reason} for g in result.goals]}
    assert verify_search(config, fs, records, "64 B") == []
    assert verify_search(config, {**fs, "search_revision": older}, records, "64 B") != []


def check_configuration_opts_in(revision: int, older: int, rule: str) -> None:
    """``search.revision: revision`` in a configuration runs ``revision``'s rules (the
    SearchConfig property ``rule`` is on), and a replay of an ``older`` run does not."""
    from vsbench.measurement.search.settings import search_config_from_section

    section = {"mode": "multi", "revision": revision}
    opted = search_config_from_section(section, max_load_fps=1e6, full_trial_duration_s=1)
    assert opted.revision == revision and getattr(opted, rule)
    replay = search_config_from_section(section, max_load_fps=1e6, full_trial_duration_s=1, revision=older)
    assert replay.revision == older and not getattr(replay, rule)
