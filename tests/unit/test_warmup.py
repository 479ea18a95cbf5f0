"""The warm-up sends every flow before the search: rate first, then duration, then a cap
that is a warning; what it covered is written with the trial."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
import yaml
from rich.console import Console

from vsbench.interfaces.traffic import DirectionCounters, TrialResult
from vsbench.measurement import warmup
from vsbench.results import schema
from vsbench.runner import config as cfg
from vsbench.runner import testcases
from vsbench.runner.run import run_plans

ROOT = Path(__file__).resolve().parents[2]
TESTKIT = ROOT / "tests" / "fixtures" / "runner_dist"
MPPS = 1_000_000.0


def plan(flows, *, directions=2, max_load=MPPS, min_load=1000.0, **settings):
    s = warmup.WarmupSettings(min_duration_s=settings.pop("min_s", 2.0), **settings)
    return warmup.plan(s, flows=flows, directions=directions, max_load_fps=max_load, min_load_fps=min_load)


def test_few_flows_keep_the_low_rate_and_the_configured_duration():
    p = plan(64)
    assert p.load_fps == pytest.approx(0.01 * MPPS)
    assert p.duration_s == 2.0
    assert not p.rate_raised and not p.capped
    assert p.planned_passes >= 2 and p.planned_flows == 64


def test_128k_flows_raise_the_rate_before_stretching_the_trial():
    # the old sizing: 10 kpps (1% of 1 Mpps) for 51 s; now the rate goes up to the safe
    # bound (10%) and the trial lasts what two passes need at that rate
    p = plan(128_000)
    assert p.rate_raised and not p.capped
    assert p.load_fps == pytest.approx(0.1 * MPPS)
    assert p.duration_s == pytest.approx(2 * 128_000 * 2 / (0.1 * MPPS))
    assert p.planned_passes == pytest.approx(2.0)
    assert p.planned_flows == 128_000


def test_rate_is_raised_only_as_far_as_the_minimum_duration_needs():
    p = plan(20_000)  # 80k frames: 40 kpps for 2 s is enough, below the 100 kpps bound
    assert p.rate_raised
    assert p.load_fps == pytest.approx(40_000)
    assert p.duration_s == pytest.approx(2.0)


def test_a_million_flows_fit_in_the_default_cap():
    p = plan(1_000_000)
    assert not p.capped
    assert p.duration_s == pytest.approx(40.0)
    assert p.planned_flows == 1_000_000


def test_the_cap_still_sending_every_flow_once_is_fewer_passes():
    p = plan(1_000_000, max_duration_s=25.0)
    assert p.capped and p.duration_s == 25.0
    assert p.planned_passes == pytest.approx(1.25)
    assert p.planned_flows == 1_000_000
    note = warmup.cap_warning(p)
    assert "1.2 of 2 passes" in note and "traffic.warmup_max_s" in note and "\n" not in note


def test_the_cap_that_leaves_flows_out_says_how_many_it_reaches():
    p = plan(1_000_000, max_duration_s=5.0)
    assert p.capped
    assert p.planned_flows == 250_000  # 100 kpps x 5 s / 2 directions
    assert "only 250000 of 1000000 flows per direction" in warmup.cap_warning(p)


@pytest.mark.parametrize("flows", [1, 7, 1000, 65_536, 128_000, 300_001, 1_000_000])
@pytest.mark.parametrize("directions", [1, 2])
@pytest.mark.parametrize("max_load", [5_000.0, 250_000.0, MPPS, 14_880_952.0])
def test_an_uncapped_warm_up_sends_every_flow_the_wanted_number_of_times(flows, directions, max_load):
    p = plan(flows, directions=directions, max_load=max_load, max_duration_s=1e6, passes=3)
    assert not p.capped
    assert p.load_fps * p.duration_s / directions >= 3 * flows * (1 - 1e-9)
    assert p.load_fps <= max_load * (1 + 1e-12)
    assert p.load_fps <= max(0.1 * max_load, min(max_load, 1000.0)) * (1 + 1e-12)
    assert p.duration_s >= 2.0


def test_min_load_and_max_load_bound_the_rate():
    assert plan(10, max_load=50_000.0).load_fps == 1000.0            # 1% would be 500 fps
    assert plan(10, max_load=800.0).load_fps == 800.0                # max_load below min_load
    assert plan(10**6, max_load=800.0, max_duration_s=1e9).load_fps == 800.0


def test_zero_minimum_duration_goes_straight_to_the_bound():
    p = plan(1000, min_s=0.0)
    assert p.load_fps == pytest.approx(0.1 * MPPS)
    assert p.duration_s == pytest.approx(4000 / (0.1 * MPPS))
    assert not warmup.WarmupSettings(min_duration_s=0.0).enabled


@pytest.mark.parametrize("traffic, fragment", [
    ({"warmup_s": 2, "warmup_passes": 0}, "warmup_passes"),
    ({"warmup_s": 2, "warmup_passes": True}, "warmup_passes"),
    ({"warmup_s": 10, "warmup_max_s": 5}, "warmup_max_s 5 is below traffic.warmup_s 10"),
    ({"warmup_s": 2, "warmup_max_share": 0.001}, "warmup_max_share"),
    ({"warmup_s": -1}, "warmup_s"),
])
def test_inconsistent_settings_are_one_line(traffic, fragment):
    with pytest.raises(warmup.WarmupError) as exc:
        warmup.settings_from_traffic(traffic)
    assert fragment in str(exc.value) and "\n" not in str(exc.value)


def test_settings_default_what_is_unset():
    s = warmup.settings_from_traffic({"warmup_s": 3, "warmup_max_s": None})
    assert s == warmup.WarmupSettings(3.0, warmup.DEFAULT_MAX_DURATION_S, warmup.DEFAULT_PASSES)


def _result(tx_a, rx_a, tx_b, rx_b):
    return TrialResult(intended_load_fps=1.0, intended_duration_s=1.0, frame_size_bytes=64,
                       tx_frames=tx_a + tx_b, rx_frames=rx_a + rx_b,
                       directions=(DirectionCounters(0, 1, tx_a, rx_a), DirectionCounters(1, 0, tx_b, rx_b)))


def test_coverage_counts_the_direction_that_sent_least():
    p = plan(1000)
    cov = warmup.coverage(p, _result(5000, 5000, 700, 600))
    assert cov["flows_covered"] == 700 and cov["all_flows_covered"] is False
    assert cov["passes_sent"] == pytest.approx(0.7) and cov["passes_received"] == pytest.approx(0.6)
    cov = warmup.coverage(p, _result(2000, 1999, 2100, 2100))
    assert cov["flows_covered"] == 1000 and cov["all_flows_covered"] is True
    assert cov["passes_received"] == pytest.approx(1.999)
    assert cov["wanted_passes"] == 2 and cov["capped"] is False


def test_coverage_without_direction_counters_shares_the_totals():
    p = plan(1000)
    r = TrialResult(intended_load_fps=1.0, intended_duration_s=1.0, frame_size_bytes=64,
                    tx_frames=4000, rx_frames=3000)
    cov = warmup.coverage(p, r)
    assert cov["flows_covered"] == 1000 and cov["passes_sent"] == 2.0 and cov["passes_received"] == 1.5


# --------------------------------------------------------------- through the runner


def _run(tmp_path, params):
    layer = {
        "collectors": [],
        "trafficgen": {"name": "model_gen", "model_gen": {"capacity_fps": 1_000_000}},
        "vswitch": {"name": "marker_switch", "marker_switch": {"marker_dir": str(tmp_path)}},
        "latency": {"enabled": False},
    }
    conf = tmp_path / "layer.yaml"
    conf.write_text(yaml.safe_dump(layer))
    base = cfg.load_layers(cfg.default_conf_dir(), [conf])
    case = testcases.find("phy2phy_tput", testcases.default_testcase_dir())
    plans = testcases.build_plans(case, base, cfg.parse_test_params(params), {})
    out = StringIO()
    code = run_plans(plans, tmp_path / "results", Console(file=out, width=300))
    assert code == 0, out.getvalue()
    [run_dir] = list((tmp_path / "results").iterdir())
    trials = [json.loads(line) for line in (run_dir / "trials.jsonl").read_text().splitlines()]
    results = json.loads((run_dir / "results.json").read_text())
    return trials, results


COMMON = "frame_sizes=[64];trial_duration=1;search.mode=binary;relative_width=0.2;search.max_load_fps=1000000"


def test_the_warm_up_trial_records_the_flows_it_covered(tmp_path, testkit):
    trials, results = _run(tmp_path, COMMON + ";flows=200000;warmup_s=1")
    [warm] = [t for t in trials if t["role"] == "warmup"]
    schema.validate(warm, "trial.schema.json")
    assert warm["intended_load_fps"] == pytest.approx(100_000)       # raised to the 10% bound
    assert warm["intended_duration_s"] == pytest.approx(8.0)          # 2 passes x 200k x 2 / 100k
    assert warm["warmup"]["flows_covered"] == 200_000 and warm["warmup"]["all_flows_covered"]
    assert warm["warmup"]["passes_sent"] == pytest.approx(2.0)
    assert not any("warm-up" in n for n in results["tests"][0]["frame_sizes"][0]["notes"])
    assert all("warmup" not in t for t in trials if t["role"] != "warmup")


def test_a_capped_warm_up_is_a_note_of_the_frame_size(tmp_path, testkit):
    trials, results = _run(tmp_path, COMMON + ";flows=200000;warmup_s=1;warmup_max_s=2")
    [warm] = [t for t in trials if t["role"] == "warmup"]
    assert warm["warmup"]["capped"] is True
    assert warm["warmup"]["flows_covered"] == 100_000 and not warm["warmup"]["all_flows_covered"]
    notes = results["tests"][0]["frame_sizes"][0]["notes"]
    assert any("warm-up capped" in n and "only 100000 of 200000 flows" in n for n in notes), notes
