"""A load the device failed stays an upper bound when the generator later falls short
under it (search revision 2).

Revision 1 forgot every load above a lowered max_load, the device's failures included: a
binary (or RFC 2544) search that found the device losing frames at 3 Mfps, then met a
generator that could not deliver the next, lower bisection point, reported "max_load is a
lower bound: the device was not saturated" -- a claim its own trial contradicts.
"""

from __future__ import annotations

import dataclasses

import pytest

from vsbench.interfaces.traffic import TrialResult
from vsbench.measurement import validity
from vsbench.measurement.recheck import verify_search
from vsbench.measurement.search import Goal, SearchConfig, search
from vsbench.measurement.search.api import SEARCH_REVISION
from vsbench.results.model import TrialRecord

from tests.unit.replay_kit import replay_from_trials_jsonl

NDR = Goal("NDR", 0.0)
CAPACITY_FPS = 1_000_000.0
MAX_LOAD_FPS = 3_000_000.0


class DeviceAndFadingGenerator:
    """A device that forwards up to CAPACITY_FPS (one frame lost per trial above it: too
    little loss to guess the limit from), driven by a generator that delivers every load
    for its first ``fades_after`` trials and afterwards falls 0.3 % short above the capacity."""

    def __init__(self, fades_after: int) -> None:
        self.fades_after = fades_after
        self.asked: list[float] = []

    def __call__(self, load_fps: float, duration_s: float) -> TrialResult:
        self.asked.append(load_fps)
        sent = int(round(load_fps * duration_s))
        lost = 1 if load_fps > CAPACITY_FPS else 0
        if len(self.asked) > self.fades_after and load_fps > CAPACITY_FPS:
            sent = int(sent * 0.997)
        result = TrialResult(load_fps, duration_s, 64, tx_frames=sent, rx_frames=sent - lost,
                             tx_duration_s=duration_s)
        return validity.apply(result)[0]


def _config(mode: str, revision: int = SEARCH_REVISION) -> SearchConfig:
    # max_trials_per_load=1: one trial decides a load in the multi search's final stage too
    return SearchConfig(mode=mode, goals=(NDR,), min_load_fps=1e4, max_load_fps=MAX_LOAD_FPS,
                        relative_width=0.005, trial_duration_s=0.25, final_trial_duration_s=0.25,
                        full_trial_duration_s=0.25, max_trials_per_load=1, revision=revision)


#: The trial after which the generator fades: binary -- right after the first trial (3 Mfps,
#: lost a frame), so the first bisection point falls short; multi -- after the coarse walk
#: down from max_load has failed two loads (3 and 2.94 Mfps).
FADES_AFTER = {"binary": 1, "multi": 2}


def _failed_loads(result) -> list[float]:
    return [t.intended_load_fps for t in result.trials if t.valid and t.rx_frames < t.tx_frames]


@pytest.mark.parametrize("mode", ["binary", "multi"])
def test_a_failure_the_device_showed_above_a_lowered_max_load_stays_its_upper_bound(mode):
    result = search(DeviceAndFadingGenerator(FADES_AFTER[mode]), _config(mode))
    (ndr,) = result.goals
    assert result.max_load_fps < CAPACITY_FPS, "the generator fell short: max_load was lowered"
    assert ndr.upper_bound_fps in _failed_loads(result), "the upper bound is a load the device failed"
    assert ndr.upper_bound_fps > result.max_load_fps
    assert ndr.lower_bound_fps == pytest.approx(result.max_load_fps)
    assert not ndr.regular
    assert ndr.irregular_reason.startswith(
        f"max_load is a lower bound: the generator could not deliver the loads up to the upper bound "
        f"{ndr.upper_bound_fps:.0f} fps")
    assert "not saturated" not in ndr.irregular_reason
    assert result.generator_limited, "the goal is capped by the generator, not bracketed"


@pytest.mark.parametrize("mode", ["binary", "multi"])
def test_revision_1_forgot_it_as_older_runs_did(mode):
    """The rule older runs ran under, kept so that ``vsbench recompute`` replays them."""
    result = search(DeviceAndFadingGenerator(FADES_AFTER[mode]), _config(mode, revision=1))
    (ndr,) = result.goals
    assert ndr.upper_bound_fps is None and _failed_loads(result)
    assert "the device was not saturated" in ndr.irregular_reason


def test_a_kept_upper_bound_one_width_above_max_load_brackets_the_goal():
    """The device failed U for the NDR (one trial decides); the PDR search comes back to U
    and the generator now falls short there: max_load goes down to the load under U, and U
    still closes the NDR's bracket, one width wide -- a regular result, not a capped one."""
    pdr = Goal("PDR", 0.005)
    config = dataclasses.replace(_config("multi"), goals=(NDR, pdr))

    def drop_excess(visits: dict[float, int], short_from_visit: int):
        def trial(load_fps: float, duration_s: float) -> TrialResult:
            visits[load_fps] = visits.get(load_fps, 0) + 1
            sent = int(round(load_fps * duration_s))
            if visits[load_fps] >= short_from_visit:
                sent = int(sent * 0.997)
            received = min(sent, int(CAPACITY_FPS * duration_s))
            return validity.apply(TrialResult(load_fps, duration_s, 64, tx_frames=sent, rx_frames=received,
                                              tx_duration_s=duration_s))[0]
        return trial

    (ndr, _) = search(drop_excess({}, short_from_visit=10**6), config).goals
    upper, lower = ndr.upper_bound_fps, ndr.lower_bound_fps

    def fading_at_upper(visits: dict[float, int]):
        steady, fading = drop_excess(visits, 10**6), drop_excess(visits, short_from_visit=2)
        return lambda load, duration: (fading if load == upper else steady)(load, duration)

    visits: dict[float, int] = {}
    result = search(fading_at_upper(visits), config)
    assert visits[upper] > 1 and result.max_load_fps == pytest.approx(lower)
    (ndr, _) = result.goals
    assert (ndr.lower_bound_fps, ndr.upper_bound_fps) == (pytest.approx(lower), pytest.approx(upper))
    assert ndr.regular, ndr.irregular_reason
    (old_ndr, _) = search(fading_at_upper({}), dataclasses.replace(config, revision=1)).goals
    assert old_ndr.upper_bound_fps is None and not old_ndr.regular


def test_recompute_replays_each_run_under_the_revision_it_recorded():
    """results.json records ``search_revision``; one without it is an older run, replayed
    under revision 1 -- and the two revisions' figures differ in this case, so a replay
    under the wrong one would report a tampered upper bound."""
    section = {"mode": "binary", "goals": [{"name": "NDR", "loss_ratio": 0.0}], "relative_width": 0.005,
               "min_load_fps": 1e4, "trial_duration_s": 0.25}
    config = {"search": section, "traffic": {"trial_duration_s": 0.25}}

    def recorded_run(revision: int) -> tuple[dict, list[TrialRecord]]:
        result = search(DeviceAndFadingGenerator(FADES_AFTER["binary"]),
                        dataclasses.replace(_config("binary"), revision=revision))
        records = replay_from_trials_jsonl(result.trials).records
        (ndr,) = result.goals
        fs = {"search_max_load_fps": MAX_LOAD_FPS, "search_mode": "binary", "max_load_fps": result.max_load_fps,
              "generator_limited": result.generator_limited,
              "points": [{"name": "NDR", "lower_bound_fps": ndr.lower_bound_fps,
                          "upper_bound_fps": ndr.upper_bound_fps, "regular": ndr.regular,
                          "irregular_reason": ndr.irregular_reason}]}
        if revision >= 2:
            fs["search_revision"] = revision
        return fs, records

    current, records = recorded_run(SEARCH_REVISION)
    assert verify_search(config, current, records, "64 B") == []
    older, old_records = recorded_run(1)
    assert verify_search(config, older, old_records, "64 B") == []
    relabelled = {k: v for k, v in current.items() if k != "search_revision"}
    problems = verify_search(config, relabelled, records, "64 B")
    assert any("upper_bound_fps" in line for line in problems), problems
