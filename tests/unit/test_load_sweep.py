"""The load_sweep ladder (vRouter characterization use case 0) and its reported points."""

import pytest

from vsbench.interfaces.traffic import TrialResult
from vsbench.measurement import load_sweep as ls
from vsbench.results import summary
from vsbench.results.model import TrialIdentity, TrialRecord


def test_full_ladder_hand_listed():
    steps = ls.sweep_percents()
    assert len(steps) == 10 + 9 + 99
    assert steps[:10] == [0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09, 0.1]
    assert steps[10:19] == [0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    assert steps[19:22] == [2.0, 3.0, 4.0] and steps[-1] == 100.0
    assert steps == sorted(set(steps))


def test_ladder_stops_early_and_starts_late():
    assert ls.sweep_percents(0.3) == [0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09, 0.1, 0.2, 0.3]
    assert ls.sweep_percents(5) [-3:] == [3.0, 4.0, 5.0]
    assert ls.sweep_percents(2.5)[-1] == 2.0
    assert ls.sweep_percents(100, min_percent=97) == [98.0, 99.0, 100.0]
    assert ls.sweep_percents(0.01) == [0.01]


@pytest.mark.parametrize("args", [(0.001,), (101,), (10, 10), (10, -1)])
def test_ladder_rejects_bad_limits(args):
    with pytest.raises(ls.SweepError):
        ls.sweep_percents(*args)


def test_loads_are_percent_of_reference():
    assert ls.sweep_loads(1e6, [0.01, 1.0, 100.0]) == [(0.01, 100.0), (1.0, 10000.0), (100.0, 1e6)]
    with pytest.raises(ls.SweepError):
        ls.sweep_loads(0, [1.0])


def step(index, load, rx, valid=True):
    result = TrialResult(intended_load_fps=load, intended_duration_s=1.0, frame_size_bytes=64,
                         tx_frames=int(load), rx_frames=int(rx), valid=valid)
    rec = TrialRecord(identity=TrialIdentity("abc123", 0, "t"), trial_index=index, role="continuous",
                      started_at="2026-01-01T00:00:00.000+00:00", latency_requested=False, result=result)
    return summary.sweep_step(rec, load / 1e4)


def test_sweep_selection_hand_computed():
    steps = [step(0, 1000, 1000), step(1, 2000, 2000), step(2, 3000, 2900), step(3, 4000, 3500),
             step(4, 5000, 3400), step(5, 6000, 6000, valid=False)]
    chosen = summary.sweep_selection(steps)
    assert chosen == {summary.SWEEP_ZERO_LOSS: 1, summary.SWEEP_MAX_RX: 3}
    assert steps[2].lost_frames == 100 and steps[2].loss_ratio == pytest.approx(100 / 3000)
    assert summary.sweep_selection([step(0, 1000, 10)]) == {summary.SWEEP_MAX_RX: 0}
