"""A frame mix and ``--rate`` through the whole run loop (the runner testkit's model
generator and switch, real entry points), and recompute over what the run wrote."""

from __future__ import annotations

import csv
import json

import pytest

from vsbench.interfaces.frame_mix import imix
from vsbench.results import recompute, schema
from vsbench.runner import traffic_types
from vsbench.runner.rate_option import RateError, overrides

from test_runner import make_plans, only_run_dir, run  # noqa: E402 -- the runner tests' helpers

LINE_10G_BIDIR = 2 * 10e9


def _plans(tmp_path, testkit, params, rate=None, gen=None):
    plans = make_plans(tmp_path, testkit, params=params, gen=gen)
    if rate is None:
        return plans
    from vsbench.runner import config as cfg
    from vsbench.runner import testcases

    test_params = {**cfg.parse_test_params(params), **overrides(rate)}
    layer_base = cfg.load_layers(cfg.default_conf_dir(), [tmp_path / "layer.yaml"])
    case = testcases.find("phy2phy_tput", testcases.default_testcase_dir())
    return testcases.build_plans(case, layer_base, test_params, {})


def test_an_imix_search_reports_aggregate_and_per_size_and_recomputes(tmp_path, testkit):
    code, out = run(_plans(tmp_path, testkit, "frame_sizes=[64,imix];trial_duration=1"), testkit)
    assert code == 0, out
    run_dir = only_run_dir(testkit)
    results = json.loads((run_dir / "results.json").read_text())
    schema.validate(results, "results.schema.json")
    plain, mixed = results["tests"][0]["frame_sizes"]
    assert plain["frame_mix"] is None and all(p["per_size"] is None for p in plain["points"])
    mix = imix()
    assert mixed["frame_size_bytes"] == 354 and mixed["frame_mix"]["name"] == "imix"
    assert mixed["frame_mix"]["cycle_bytes"] == list(mix.cycle)
    # the line rate and bit rates are at the mix's mean wire size, not at 354 B
    assert mixed["nominal_line_rate_fps"] == pytest.approx(LINE_10G_BIDIR / ((mix.mean_frame_size_bytes + 20) * 8))
    ndr = mixed["points"][0]
    assert ndr["name"] == "NDR" and 0.99e6 <= ndr["throughput_fps"] <= 1e6  # the model DUT forwards 1 Mfps
    assert ndr["throughput_l1_mbps"] == pytest.approx(mix.l1_bps(ndr["throughput_fps"]) / 1e6)
    by = {r["frame_size_bytes"]: r for r in ndr["per_size"]}
    assert by[64]["frame_share"] == pytest.approx(7 / 12)
    assert sum(r["throughput_fps"] for r in ndr["per_size"]) == pytest.approx(ndr["throughput_fps"])
    assert sum(r["tx_frames"] for r in ndr["per_size"]) > 0
    assert recompute.verify(run_dir) == []
    with open(run_dir / "results.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert rows[1]["frame_mix"] == "imix" and rows[1]["mix_sizes"] == "64:7/570:4/1518:1"
    assert rows[1]["mix_throughput_fps"].startswith("64:") and rows[0]["frame_mix"] == ""
    assert "imix (354)" in out and "64 B 58.3%" in out  # the table's row and the per-size line
    from vsbench.results.report_html import build_report

    page = build_report(run_dir)
    assert "Frame mix per size" in page and "imix (mean 353.8 B)" in page

    # a tampered per-size figure is caught
    ndr["per_size"][2]["throughput_fps"] *= 1.1
    (run_dir / "results.json").write_text(json.dumps(results))
    problems = recompute.verify(run_dir)
    assert len(problems) == 1 and "1518 B: per_size throughput_fps" in problems[0]


def test_rate_50_percent_runs_one_fixed_rate_trial_set_and_reports_its_loss(tmp_path, testkit):
    # the model DUT forwards 1 Mfps: half the 64 B line rate (14.88 Mfps) loses most of it
    code, out = run(_plans(tmp_path, testkit, "frame_sizes=[64,imix];trial_duration=1", rate="50%"), testkit)
    assert code == 0, out
    run_dir = only_run_dir(testkit)
    results = json.loads((run_dir / "results.json").read_text())
    test = results["tests"][0]
    assert test["traffic_type"] == "continuous"
    for fs in test["frame_sizes"]:
        [point] = fs["points"]
        assert point["name"] == "continuous"
        assert point["offered_load_fps"] == pytest.approx(0.5 * fs["nominal_line_rate_fps"])
        assert point["loss_ratio"] > 0 and point["rx_fps"] == pytest.approx(1e6, rel=0.02)
    assert test["frame_sizes"][1]["points"][0]["per_size"] is not None
    trials = [json.loads(line) for line in (run_dir / "trials.jsonl").read_text().splitlines()]
    assert [t["role"] for t in trials].count("continuous") == 2  # one fixed-rate trial per frame size
    assert recompute.verify(run_dir) == []
    # offered: half the aggregate line rate of both 10G directions (2 x 14.88 Mfps at 64 B)
    assert "fixed rate 64 B: offered 14,880,952 fps, sent 14,880,952 fps, received 1,000,000 fps, loss 93.28%" in out
    assert "fixed rate imix (354 B): offered 3,343,736 fps" in out


def test_rate_in_l1_bits_is_frames_at_each_sizes_wire_size(tmp_path, testkit):
    code, out = run(_plans(tmp_path, testkit, "frame_sizes=[64,imix];trial_duration=1", rate="0.5Gbps"), testkit)
    assert code == 0, out
    results = json.loads((only_run_dir(testkit) / "results.json").read_text())
    plain, mixed = results["tests"][0]["frame_sizes"]
    assert plain["points"][0]["offered_load_fps"] == pytest.approx(0.5e9 / (84 * 8))
    assert mixed["points"][0]["offered_load_fps"] == pytest.approx(0.5e9 / ((imix().mean_frame_size_bytes + 20) * 8))
    assert plain["points"][0]["loss_ratio"] == 0


def test_a_generator_whose_capabilities_say_no_mix_fails_the_frame_size_in_one_line(tmp_path, testkit):
    code, out = run(_plans(tmp_path, testkit, "frame_sizes=[imix];trial_duration=1", gen={"frame_mix": False}),
                    testkit)
    assert code == 1
    results = json.loads((only_run_dir(testkit) / "results.json").read_text())
    [fs] = results["tests"][0]["frame_sizes"]
    assert fs["status"] == "failed" and "cannot send frame mix imix" in fs["error"]


def test_preflight_refuses_a_mix_for_a_generator_class_without_mix_support():
    class NoMix:
        name = "nomix"

    with pytest.raises(traffic_types.TrafficTypeError, match="trafficgen nomix cannot send a frame mix"):
        traffic_types.check_generator({"frame_sizes": [64, "imix"]}, NoMix)
    traffic_types.check_generator({"frame_sizes": [64]}, NoMix)
    with pytest.raises(traffic_types.TrafficTypeError, match="back2back does not take a frame mix"):
        traffic_types.check({"type": "back2back", "frame_sizes": ["imix"]})


@pytest.mark.parametrize("text, key, value", [
    ("50%", "traffic.rate_percent", 50.0),
    ("12.5 %", "traffic.rate_percent", 12.5),
    ("1Mpps", "traffic.rate_fps", 1e6),
    ("500kpps", "traffic.rate_fps", 5e5),
    ("2000pps", "traffic.rate_fps", 2000.0),
    ("2.5Gbps", "traffic.rate_l1_bps", 2.5e9),
    ("100mbps", "traffic.rate_l1_bps", 1e8),
])
def test_rate_spellings_become_one_rate_key_of_a_continuous_run(text, key, value):
    out = overrides(text)
    assert out["traffic.type"] == "continuous" and out[key] == pytest.approx(value)
    assert [k for k in ("traffic.rate_fps", "traffic.rate_percent", "traffic.rate_l1_bps") if out[k] is not None] == [key]


def test_rate_search_words_choose_the_goals():
    assert [g["name"] for g in overrides("ndr_pdr")["search.goals"]] == ["NDR", "PDR"]
    assert [g["name"] for g in overrides("NDR")["search.goals"]] == ["NDR"]
    assert overrides("pdr")["search.goals"][0]["loss_ratio"] == 0.005
    assert overrides("pdr")["traffic.type"] == "rfc2544_throughput"


@pytest.mark.parametrize("text", ["50", "150%", "0%", "-1Mpps", "fast", "1 Mbit", "1e400pps", "ndr-pdr", ""])
def test_bad_rate_spellings_are_one_line_errors(text):
    with pytest.raises(RateError) as info:
        overrides(text)
    assert "\n" not in str(info.value) and "--rate" in str(info.value)


def test_rate_ndr_runs_the_search_with_that_one_goal(tmp_path, testkit):
    code, out = run(_plans(tmp_path, testkit, "frame_sizes=[imix];trial_duration=1", rate="ndr"), testkit)
    assert code == 0, out
    results = json.loads((only_run_dir(testkit) / "results.json").read_text())
    [fs] = results["tests"][0]["frame_sizes"]
    assert [p["name"] for p in fs["points"]] == ["NDR"] and fs["points"][0]["per_size"]
    assert recompute.verify(only_run_dir(testkit)) == []


@pytest.mark.parametrize("args, fragment", [
    (["--rate", "50"], "--rate '50': expected a rate such as 50%, 1Mpps"),
    (["--rate", "150%"], "at most 100% of the line rate"),
    (["--test-params", "frame_sizes=[64,jumbo]"], "'jumbo' is neither a frame size nor a frame mix"),
    (["--test-params", "frame_sizes=[imix];frame_mixes={imix: {64: 1}}"], "cannot be redefined"),
])
def test_cli_refuses_a_bad_rate_or_mix_in_one_line_with_exit_2(tmp_path, args, fragment):
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "vsbench.cli.main", "--test", "phy2phy_tput", "--vswitch",
                           "linux_bridge", "--results-dir", str(tmp_path), *args],
                          capture_output=True, text=True, timeout=120)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and len(lines) == 1 and fragment in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr and list(tmp_path.iterdir()) == []  # nothing was created
