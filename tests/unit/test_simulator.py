"""The seeded DUT simulator behaves as documented (the searches' tests rely on it)."""

import numpy as np
import pytest

from vsbench.measurement.search import Goal, SearchConfig, search
from vsbench.measurement.simulator import DUT_KINDS, SimulatedDut, make_dut


def test_hard_limit_drops_exactly_the_excess():
    dut = SimulatedDut(1_000_000, seed=1)
    below, above = dut(900_000, 2.0), dut(1_250_000, 2.0)
    assert below.tx_frames == 1_800_000 and below.rx_frames == below.tx_frames and below.valid
    assert above.tx_frames == 2_500_000 and above.rx_frames == 2_000_000
    assert above.loss_ratio == pytest.approx(0.2)


def test_same_seed_same_answers_different_seed_different():
    a, b, c = (make_dut("jitter", s) for s in (3, 3, 4))
    loads = [a.capacity_fps * f for f in (0.97, 0.99, 1.0, 1.01, 1.03)]
    ra = [a(load, 1.0).rx_frames for load in loads]
    assert ra == [b(load, 1.0).rx_frames for load in loads]
    assert c.capacity_fps != a.capacity_fps


def test_kinds_and_capacity_range():
    for kind in DUT_KINDS:
        caps = [make_dut(kind, s).capacity_fps for s in range(200)]
        assert 2e5 <= min(caps) and max(caps) <= 2e6
    with pytest.raises(ValueError):
        make_dut("nope", 1)


def test_jitter_kind_bad_trial_probability_near_capacity():
    dut = make_dut("jitter", 5)
    bad = np.mean([dut(dut.capacity_fps, 1.0).loss_ratio > 0 for _ in range(3000)])
    # P(bad) = 1 - 0.9 * P(capacity draw >= mean) = 0.55
    assert bad == pytest.approx(0.55, abs=0.03)


def test_bursty_losses_are_small_and_below_capacity():
    dut = make_dut("bursty", 6)
    trials = [dut(0.99 * dut.capacity_fps, 1.0) for _ in range(2000)]
    lossy = [t for t in trials if t.lost_frames]
    assert 0.2 < len(lossy) / len(trials) < 0.32  # 1 - exp(-0.3 * 0.99^4)
    assert all(t.loss_ratio < 0.005 for t in lossy)


def test_inversion_band_loses_more_than_just_below_capacity():
    dut = make_dut("inversion", 7)
    band = np.mean([dut(0.85 * dut.capacity_fps, 1.0).lost_frames > 0 for _ in range(2000)])
    near = np.mean([dut(0.97 * dut.capacity_fps, 1.0).lost_frames > 0 for _ in range(2000)])
    assert band == pytest.approx(0.4, abs=0.04) and near == 0


def test_buffer_and_leak_make_loss_depend_on_duration():
    buffered = SimulatedDut(100_000, buffer_frames=5_000, seed=8)
    assert buffered(104_000, 1.0).lost_frames == 0
    assert buffered(104_000, 60.0).lost_frames == 4_000 * 60 - 5_000
    leaky = SimulatedDut(100_000, leak_fps_per_s=100.0, seed=9)
    assert leaky(99_500, 1.0).lost_frames == 0
    assert leaky(99_500, 60.0).lost_frames > 0


def test_generator_limit_gives_invalid_trials_with_the_achieved_rate():
    dut = SimulatedDut(5e6, generator_max_fps=1e6, seed=10)
    result = dut(2e6, 1.0)
    assert not result.valid and "generator-limited" in result.invalid_reason
    assert result.achieved_tx_fps == pytest.approx(1e6)
    assert dut(0.9e6, 1.0).valid


def test_probes_lose_and_slow_down_with_load():
    dut = SimulatedDut(1e6, probe_rate_fps=1000, base_latency_ns=10_000, seed=11)
    light, heavy, over = dut(0.3e6, 2.0), dut(0.95e6, 2.0), dut(2e6, 2.0)
    assert light.probes.sent == 2000 and len(light.probes.sequence) == 2000
    assert np.median(heavy.probes.latency_ns) > 2 * np.median(light.probes.latency_ns)
    assert len(over.probes.sequence) < over.probes.sent


@pytest.mark.parametrize("mode", ["binary", "rfc2544", "tst009", "multi"])
def test_every_mode_reports_an_unreachable_goal(mode):
    result = search(SimulatedDut(3_000, seed=12),
                    SearchConfig(mode=mode, goals=(Goal("NDR", 0.0),), min_load_fps=10_000, max_load_fps=1e6,
                                 full_trial_duration_s=2.0))
    ndr = result.goal("NDR")
    assert ndr.lower_bound_fps is None and not ndr.regular
    assert "min_load is an upper bound" in ndr.irregular_reason


@pytest.mark.parametrize("mode", ["binary", "rfc2544", "tst009", "multi"])
def test_every_mode_finds_a_clean_limit(mode):
    result = search(SimulatedDut(345_678, seed=13),
                    SearchConfig(mode=mode, goals=(Goal("NDR", 0.0),), min_load_fps=10_000, max_load_fps=1e6,
                                 full_trial_duration_s=2.0))
    ndr = result.goal("NDR")
    assert ndr.regular and ndr.lower_bound_fps <= 345_678 < ndr.upper_bound_fps
    assert ndr.relative_width <= 0.005 + 1e-12


@pytest.mark.parametrize("mode", ["rfc2544", "tst009"])
def test_long_trial_modes_see_a_deterministic_inversion_band(mode):
    # loads in [0.45, 0.55] of capacity always lose: with the midpoint in the band the
    # binary modes stop there
    dut = SimulatedDut(1e6, inversion_band=(0.45, 0.55), inversion_probability=1.0, seed=14)
    result = search(dut, SearchConfig(mode=mode, goals=(Goal("NDR", 0.0),), min_load_fps=10_000, max_load_fps=2e6,
                                      full_trial_duration_s=2.0))
    assert result.goal("NDR").upper_bound_fps <= 0.55e6
