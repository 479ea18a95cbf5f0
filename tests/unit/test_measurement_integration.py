"""The measurement engine wired into runs: default search, generator limits, recomputation.

Runs go through the real runner with the model generator of tests/fixtures/runner_dist
(a DUT with a hard capacity; the generator can be made slower than asked), so every file a
run leaves is the real thing; the search is the real pure search.
"""

import csv
import json
import shutil
from io import StringIO
from pathlib import Path

import pytest
import yaml
from rich.console import Console

from vsbench.cli.main import main as cli_main
from vsbench.interfaces.traffic import TrialResult
from vsbench.measurement import recheck
from vsbench.measurement.search import SearchConfig, search
from vsbench.measurement.search.api import SEARCH_REVISION
from vsbench.measurement.search.measurer import delivered_fps
from vsbench.measurement.search.settings import SEARCH_SECTION_SCHEMA, search_config_from_section
from vsbench.results import schema, writers
from vsbench.runner import config as cfg
from vsbench.runner import testcases
from vsbench.runner.run import run_plans

ROOT = Path(__file__).resolve().parents[2]
TESTKIT = ROOT / "tests" / "fixtures" / "runner_dist"


# -- a generator that sends every frame, late -------------------------------------------------


def stretching_generator(capability_fps: float, dut_capacity_fps: float):
    """Sends every frame it is asked for, but never faster than ``capability_fps``: above it
    the trial takes longer than asked and is invalid (as trafgen reports it)."""

    def trial(load_fps: float, duration_s: float) -> TrialResult:
        frames = int(round(load_fps * duration_s))
        tx_duration = max(duration_s, frames / capability_fps)
        rx = frames if load_fps <= dut_capacity_fps else int(dut_capacity_fps * duration_s)
        late = tx_duration > duration_s * 1.001
        return TrialResult(intended_load_fps=load_fps, intended_duration_s=duration_s, frame_size_bytes=64,
                           tx_frames=frames, rx_frames=rx, tx_duration_s=tx_duration,
                           effective_duration_s=tx_duration + 0.5, valid=not late,
                           invalid_reason=f"needed {tx_duration:.3f} s" if late else None)

    return trial


def test_delivered_rate_uses_the_time_the_generator_really_took():
    r = TrialResult(intended_load_fps=1e6, intended_duration_s=1.0, frame_size_bytes=64, tx_frames=1_000_000,
                    rx_frames=1_000_000, tx_duration_s=2.5)
    assert r.achieved_tx_fps == 1e6  # every frame was sent ...
    assert delivered_fps(r) == pytest.approx(400_000)  # ... over 2.5 s
    early = TrialResult(intended_load_fps=1e6, intended_duration_s=1.0, frame_size_bytes=64, tx_frames=500_000,
                        rx_frames=500_000, tx_duration_s=0.9)
    assert delivered_fps(early) == 500_000  # never faster than the intended duration says


@pytest.mark.parametrize("mode", ["multi", "binary"])
def test_a_generator_that_stretches_the_trial_lowers_max_load_to_what_it_delivers(mode):
    # it can send 300 kfps; the DUT forwards 2 Mfps: every bound is the generator's
    cfg_ = SearchConfig(mode=mode, goals=SearchConfig.goals, min_load_fps=10_000, max_load_fps=1e6,
                        relative_width=0.01)
    result = search(stretching_generator(300_000, 2e6), cfg_)
    assert result.generator_limited
    # one lowering lands just under the generator's real rate, not 1% under the asked load
    assert 0.95 * 300_000 <= result.max_load_fps < 300_000
    assert "max_load lowered to" in result.notes[0]
    ndr = result.goal("NDR")
    assert ndr.lower_bound_fps is not None and ndr.lower_bound_fps <= result.max_load_fps
    assert not ndr.regular and "generator-limited" in ndr.irregular_reason
    assert result.invalid_trials <= 2 * (1 + cfg_.invalid_retries)


# -- configuration -----------------------------------------------------------------------------


def _resolve_refs(node, defs):
    if isinstance(node, dict):
        if "$ref" in node:
            return _resolve_refs(defs[node["$ref"].rsplit("/", 1)[1]], defs)
        return {k: _resolve_refs(v, defs) for k, v in node.items() if k != "description"}
    if isinstance(node, list):
        return [_resolve_refs(v, defs) for v in node]
    return node


def test_config_schema_search_section_is_the_search_engines_fragment():
    doc = cfg.load_schema("config.schema.json")
    assert _resolve_refs(doc["properties"]["search"], doc["$defs"]) == SEARCH_SECTION_SCHEMA


def test_defaults_are_the_multi_goal_search_and_trial_duration_stays_the_rfc2544_one():
    base = cfg.load_layers(cfg.default_conf_dir(), [])
    cfg.validate_config(base)
    assert base["search"]["mode"] == "multi"
    assert [(g["name"], g["loss_ratio"], g["exceed_ratio"]) for g in base["search"]["goals"]] == [
        ("NDR", 0.0, 0.5), ("PDR", 0.005, 0.5)]
    assert base["search"]["time_budget_s"] > 0
    assert cfg.resolve_key("trial_duration", base) == "traffic.trial_duration_s"
    assert cfg.resolve_key("search.trial_duration_s", base) == "search.trial_duration_s"
    case = testcases.find("phy2phy_tput", testcases.default_testcase_dir())
    [plan] = testcases.build_plans(case, base, cfg.parse_test_params("trial_duration=2"), {})
    assert plan.config["traffic"]["trial_duration_s"] == 2
    assert [g["name"] for g in plan.config["search"]["goals"]] == ["NDR", "PDR"]


def _search_trial_s(params: str, test: str = "phy2phy_tput") -> tuple[float, float]:
    """(search trial, final-stage trial) lengths the plan's search would use."""
    base = cfg.load_layers(cfg.default_conf_dir(), [])
    case = testcases.find(test, testcases.default_testcase_dir())
    [plan] = testcases.build_plans(case, base, cfg.parse_test_params(params), {"vswitch": "ovs_dpdk"})
    sc = search_config_from_section(plan.config["search"], max_load_fps=1e6,
                                    full_trial_duration_s=plan.config["traffic"]["trial_duration_s"])
    return sc.trial_duration_s, sc.final_trial_duration_s


def test_an_asked_trial_duration_is_the_search_trial_length_and_the_default_stays_1_s():
    assert _search_trial_s("frame_sizes=[64]") == (1.0, 1.0)  # the testcase's 60 s is not asked for
    assert _search_trial_s("frame_sizes=[64];trial_duration=2") == (2.0, 2.0)
    assert _search_trial_s("traffic.trial_duration_s=0.5") == (0.5, 0.5)
    # the search's own lengths, asked for as well, win
    assert _search_trial_s("trial_duration=2;search.trial_duration_s=1") == (1.0, 1.0)
    assert _search_trial_s("trial_duration=2;search.final_trial_duration_s=4") == (2.0, 4.0)
    # over a testcase that sets its search's length (the meter reference: 2 s)
    assert _search_trial_s("", "phy2phy_meter") == (2.0, 2.0)
    assert _search_trial_s("traffic.trial_duration_s=1", "phy2phy_meter") == (1.0, 1.0)


def test_a_swept_trial_duration_sets_each_plans_search_trials():
    base = cfg.load_layers(cfg.default_conf_dir(), [])
    case = testcases.find("phy2phy_tput", testcases.default_testcase_dir())
    plans = testcases.build_plans(case, base, cfg.parse_test_params("trial_duration=[1,3]"), {})
    assert [(p.config["traffic"]["trial_duration_s"], p.config["search"]["trial_duration_s"]) for p in plans] == [
        (1, 1), (3, 3)]


def test_the_builtin_suites_quick_profiles_keep_1_s_search_trials():
    """Honouring an asked trial duration must not slow a quick profile (at most 30 min):
    each asks for 1 s trials where it searches."""
    from vsbench.suite import catalog, planning
    from vsbench.suite.host import HostFacts

    host = HostFacts(cpus=64, threads_per_core=2, sockets=2, kvm=True, kernel="6.1.0")
    base = cfg.load_layers(cfg.default_conf_dir(), [])
    suites, _ = catalog.load_all()
    checked = 0
    for suite in (s for s in suites if s.origin == "built-in"):
        plan = planning.build(suite, "quick", base, testcases.default_testcase_dir(), host, check_prerequisites=False)
        for planned in plan.plans:
            config = planned.plan.config
            if config["traffic"]["type"] == "tcp":
                continue
            sc = search_config_from_section(config["search"], max_load_fps=1e6,
                                            full_trial_duration_s=config["traffic"]["trial_duration_s"])
            assert (sc.trial_duration_s, sc.final_trial_duration_s) <= (1.0, 1.0), (suite.name, planned.run)
            checked += 1
    assert checked > 10


def test_the_quick_start_asks_for_1_s_trials():
    """tools/quickstart.sh's timing (README: 1 s search trials, within three minutes) holds
    now that its trial_duration is the search's trial length."""
    text = (Path(__file__).resolve().parents[2] / "tools" / "quickstart.sh").read_text()
    params = cfg.parse_test_params(text.split('--test-params "')[1].split('"')[0])
    assert params["trial_duration"] == 1


def test_search_trials_of_a_run_last_the_asked_trial_duration(tmp_path, testkit):
    """Issue 26: ``--test-params "frame_sizes=[64];trial_duration=2"`` wrote 2 s into
    config.yaml and the report while every search trial in trials.jsonl lasted 1 s."""
    code, out, run_dir = _run(tmp_path, testkit, params="frame_sizes=[64];traffic.trial_duration_s=2")
    assert code == 0, out
    search_trials = [json.loads(line) for line in (run_dir / "trials.jsonl").read_text().splitlines()
                     if json.loads(line)["role"] == "search"]
    assert search_trials and {t["intended_duration_s"] for t in search_trials} == {2.0}
    [plan] = yaml.safe_load((run_dir / "config.yaml").read_text())["plans"]
    assert plan["config"]["search"]["trial_duration_s"] == 2
    assert recheck.verify(run_dir) == []


def test_meter_testcase_resolves_with_a_meter_rate():
    base = cfg.load_layers(cfg.default_conf_dir(), [])
    case = testcases.find("phy2phy_meter", testcases.default_testcase_dir())
    [plan] = testcases.build_plans(case, base, {}, {"vswitch": "ovs_dpdk"})
    assert plan.config["dut"]["meter_pps"] > 0
    assert plan.config["search"]["max_load_fps"] > plan.config["dut"]["meter_pps"]
    cfg.validate_config(plan.config)


# -- whole runs through the runner -----------------------------------------------------------


def _run(tmp_path, testkit, *, params="frame_sizes=[64]", gen=None, extra=None) -> tuple[int, str, Path]:
    layer = {
        "trafficgen": {"name": "model_gen", "model_gen": {"capacity_fps": 1_000_000, "marker_dir": None,
                                                          **(gen or {})}},
        "vswitch": {"name": "external"},
        "traffic": {"warmup_s": 1},
        "latency": {"trial_duration_s": 1},
        **(extra or {}),
    }
    conf = tmp_path / "layer.yaml"
    conf.write_text(yaml.safe_dump(layer))
    base = cfg.load_layers(cfg.default_conf_dir(), [conf])
    case = testcases.find("phy2phy_tput", testcases.default_testcase_dir())
    plans = testcases.build_plans(case, base, cfg.parse_test_params(params), {})
    out = StringIO()
    code = run_plans(plans, testkit["results"], Console(file=out, width=220))
    [run_dir] = list(testkit["results"].iterdir())
    return code, out.getvalue(), run_dir


def test_default_run_reports_ndr_and_pdr_with_bounds_and_latency_and_recomputes(tmp_path, testkit):
    code, out, run_dir = _run(tmp_path, testkit)
    assert code == 0, out
    results = json.loads((run_dir / "results.json").read_text())
    schema.validate(results, "results.schema.json")
    [fs] = results["tests"][0]["frame_sizes"]
    ndr, pdr = fs["points"]
    for p in (ndr, pdr):
        assert p["lower_bound_fps"] < p["upper_bound_fps"]
        assert p["lower_bound_trials"] >= 1 and p["relative_width"] <= 0.005 + 1e-9
        assert p["conditional_throughput_fps"] <= p["lower_bound_fps"]
        assert p["regular"] and p["irregular_reason"] is None
    assert fs["trial_count"] > 5 and fs["trial_seconds"] > 0 and fs["effective_seconds"] > 0
    trials = [json.loads(line) for line in (run_dir / "trials.jsonl").read_text().splitlines()]
    assert [t["role"] for t in trials].count("warmup") == 1  # once per frame size, never a result
    assert all(trials[p["trial_index"]]["role"] == "search" for p in (ndr, pdr))
    # latency at 0/10/50/90% of PDR and at NDR, each a latency trial of latency.trial_duration_s
    loads = [lp["load_fps"] for lp in fs["latency_points"]]
    assert loads == pytest.approx([0, 0.1 * pdr["throughput_fps"], 0.5 * pdr["throughput_fps"],
                                   0.9 * pdr["throughput_fps"], ndr["throughput_fps"]])
    for lp in fs["latency_points"]:
        t = trials[lp["trial_index"]]
        assert t["role"] == "final" and t["latency_requested"] and t["intended_duration_s"] == 1
        assert lp["summary"]["samples"] == 100 and lp["summary"]["pdv_percentiles_ns"]["p50"] is not None
    assert ndr["latency_trial_index"] == fs["latency_points"][-1]["trial_index"]
    # terminal: both goals, latency; csv: the appended columns
    assert "NDR" in out and "PDR fps" in out and "Lat min" in out
    with open(run_dir / "results.csv", newline="") as f:
        reader = csv.DictReader(f)
        header = list(reader.fieldnames)
        [row] = list(reader)
    assert float(row["pdr_throughput_fps"]) == pdr["throughput_fps"] and row["search_mode"] == "multi"
    assert header[: len(writers.CSV_COLUMNS)] == list(writers.CSV_COLUMNS)
    assert recheck.verify(run_dir) == []


def test_a_latency_trial_the_generator_sent_late_is_marked_not_passed_off(tmp_path, testkit):
    code, out, run_dir = _run(tmp_path, testkit, gen={"capacity_fps": 1e6, "late_latency": True})
    assert code == 0, out
    results = json.loads((run_dir / "results.json").read_text())
    schema.validate(results, "results.schema.json")
    [fs] = results["tests"][0]["frame_sizes"]
    trials = [json.loads(line) for line in (run_dir / "trials.jsonl").read_text().splitlines()]
    late = [lp for lp in fs["latency_points"] if lp["load_fps"] > 0]
    assert late and all(lp["valid"] is False and "sending took" in lp["invalid_reason"] for lp in late)
    assert all(lp["valid"] is trials[lp["trial_index"]]["valid"] for lp in fs["latency_points"])
    assert [lp["valid"] for lp in fs["latency_points"] if lp["load_fps"] == 0] == [True]
    for lp in late:
        assert (f"latency '{lp['label']}' (trial {lp['trial_index']}) is not the latency at "
                f"{lp['load_fps']:,.0f} fps") in " | ".join(fs["notes"])
    assert "(invalid: not at this load)" in (run_dir / "report.html").read_text()
    assert f"64 B latency 'NDR' (trial {late[-1]['trial_index']}) is not the latency at" in out
    assert recheck.verify(run_dir) == []


def test_a_calibrated_ceiling_the_generator_cannot_send_is_lowered_at_once_and_replays(tmp_path, testkit):
    """The ceiling (bursts at 800 kfps x 0.75) is above what the generator sends paced
    (500 kfps): the first search trial falls short and lowers max_load without a retry,
    and the replay of the search (recompute) takes the same path."""
    gen = {"capacity_fps": 1e6, "paced_limit_fps": 500_000, "burst_rate_fps": 800_000, "ceiling_share": 0.75}
    code, out, run_dir = _run(tmp_path, testkit, params="frame_sizes=[64];latency.enabled=false", gen=gen)
    assert code == 0, out
    [fs] = json.loads((run_dir / "results.json").read_text())["tests"][0]["frame_sizes"]
    assert fs["max_load_is_ceiling"] and fs["search_max_load_fps"] == pytest.approx(600_000)
    assert fs["search_max_load_is_estimate"] and fs["search_revision"] == SEARCH_REVISION
    trials = [json.loads(line) for line in (run_dir / "trials.jsonl").read_text().splitlines()]
    assert [t["role"] for t in trials][:3] == ["calibration", "calibration", "warmup"]
    search = [t for t in trials if t["role"] == "search"]
    assert not search[0]["valid"] and search[1]["valid"]  # no retry at the never-delivered ceiling
    assert search[1]["intended_load_fps"] < 500_000 and fs["generator_limited"]
    assert recheck.verify(run_dir) == []


def _tamper(run_dir: Path, edit) -> Path:
    copy_dir = run_dir.parent / (run_dir.name + "-tampered")
    shutil.copytree(run_dir, copy_dir)
    doc = json.loads((copy_dir / "results.json").read_text())
    edit(doc["tests"][0]["frame_sizes"][0])
    (copy_dir / "results.json").write_text(json.dumps(doc))
    return copy_dir


@pytest.mark.parametrize("field, change", [
    ("upper_bound_fps", lambda v: v * 1.01),
    ("lower_bound_fps", lambda v: v * 0.99),
    ("conditional_throughput_fps", lambda v: v + 1),
    ("regular", lambda v: not v),
    ("lower_bound_trials", lambda v: v + 1),
])
def test_recompute_catches_a_tampered_search_figure(tmp_path, testkit, field, change):
    code, out, run_dir = _run(tmp_path, testkit)
    assert code == 0, out
    assert recheck.verify(run_dir) == []

    def edit(fs):
        fs["points"][1][field] = change(fs["points"][1][field])

    problems = recheck.verify(_tamper(run_dir, edit))
    assert any(f"PDR: {field}" in p for p in problems), problems


def test_recompute_catches_a_missing_search_trial_and_a_tampered_latency_summary(tmp_path, testkit):
    code, out, run_dir = _run(tmp_path, testkit)
    assert code == 0, out
    doc = json.loads((run_dir / "results.json").read_text())
    fs = doc["tests"][0]["frame_sizes"][0]
    # the replay must ask for exactly the recorded loads: drop one search trial's line
    lines = (run_dir / "trials.jsonl").read_text().splitlines()
    search_lines = [i for i, line in enumerate(lines) if json.loads(line)["role"] == "search"]
    gone = run_dir.parent / "gone"
    shutil.copytree(run_dir, gone)
    kept = lines[: search_lines[3]] + lines[search_lines[3] + 1:]
    (gone / "trials.jsonl").write_text("\n".join(kept) + "\n")
    assert any("replay diverged" in p or "never asked" in p for p in recheck.verify(gone))

    def edit(fs_):
        fs_["latency_points"][2]["summary"]["percentiles_ns"]["p50"] += 1

    assert any("summary differs" in p for p in recheck.verify(_tamper(run_dir, edit)))
    assert fs["points"][0]["latency_summary"] is not None


def test_cli_recompute_runs_the_search_replay(tmp_path, testkit, capsys):
    code, out, run_dir = _run(tmp_path, testkit)
    assert code == 0, out
    assert cli_main(["recompute", str(run_dir)]) == 0
    bad = _tamper(run_dir, lambda fs: fs["points"][0].__setitem__("upper_bound_fps", 1.0))
    assert cli_main(["recompute", str(bad)]) != 0
    assert "upper_bound_fps" in capsys.readouterr().out


def test_cli_recompute_of_a_run_whose_files_are_not_text_is_one_line_naming_the_file(tmp_path, testkit, capsys):
    code, out, run_dir = _run(tmp_path, testkit)
    assert code == 0, out
    capsys.readouterr()
    (run_dir / "config.yaml").write_bytes(b"\xff\xfe\x00binary")
    assert cli_main(["recompute", str(run_dir)]) == 2
    err = capsys.readouterr().err
    assert f"cannot recompute {run_dir}/config.yaml: cannot read" in err
    assert "internal error" not in err and len(err.strip().splitlines()) == 1


def test_generator_limited_run_is_flagged_in_results_csv_and_terminal(tmp_path, testkit):
    # asked up to 4 Mfps of a generator that sends 2 Mfps at most, in front of a 5 Mfps DUT
    code, out, run_dir = _run(tmp_path, testkit, gen={"capacity_fps": 5e6, "max_rate_fps": 2e6},
                              extra={"search": {"max_load_fps": 4e6}})
    assert code == 0, out
    results = json.loads((run_dir / "results.json").read_text())
    schema.validate(results, "results.schema.json")
    [fs] = results["tests"][0]["frame_sizes"]
    assert fs["generator_limited"] is True and fs["search_max_load_fps"] == 4e6
    assert 0.95 * 2e6 <= fs["max_load_fps"] < 2e6
    note = f"generator-limited: max_load lowered to {fs['max_load_fps']:.0f} fps"
    assert fs["notes"][0].startswith(note)
    assert f"generator-limited: max_load lowered to {fs['max_load_fps']:,.0f} fps" in out
    ndr = fs["points"][0]
    assert ndr["throughput_fps"] <= fs["max_load_fps"] and ndr["loss_ratio"] == 0.0
    assert not ndr["regular"] and "generator-limited" in ndr["irregular_reason"]
    with open(run_dir / "results.csv", newline="") as f:
        [row] = list(csv.DictReader(f))
    assert row["generator_limited"] == "true"
    assert float(row["max_load_fps"]) == pytest.approx(fs["max_load_fps"])
    assert recheck.verify(run_dir) == []


def test_a_point_measured_by_a_late_trial_is_valid_names_its_caveat_and_recomputes(tmp_path, testkit):
    # a generator that sends every frame of every trial over 2 % more time than asked (as
    # trafgen behind its shaper on a busy host did in CI), in front of a 1 Mfps DUT: the
    # search files its late trials at loads they delivered, and a point it reports from
    # one is valid (not the report's red "invalid"), says "late" and replays
    code, out, run_dir = _run(tmp_path, testkit, params="frame_sizes=[64];latency.enabled=false",
                              gen={"capacity_fps": 1e6, "late_every": 1, "late_share": 1.02},
                              extra={"search": {"max_load_fps": 4e6}})
    assert code == 0, out
    results = json.loads((run_dir / "results.json").read_text())
    schema.validate(results, "results.schema.json")
    [fs] = results["tests"][0]["frame_sizes"]
    trials = [json.loads(line) for line in (run_dir / "trials.jsonl").read_text().splitlines()]
    caveats = []
    for point in fs["points"]:
        trial = trials[point["trial_index"]]
        assert point["valid"] and point["loss_ratio"] <= point["goal_loss_ratio"], point
        assert point["sending_caveat"] == (None if trial["valid"] else "late"), (point, trial)
        caveats.append(point["sending_caveat"])
    assert "late" in caveats, fs["points"]  # the case under test happened
    assert recheck.verify(run_dir) == []
    bad = _tamper(run_dir, lambda fs_: [p.__setitem__("sending_caveat", None) for p in fs_["points"]])
    assert any("sending_caveat" in p for p in recheck.verify(bad))


def test_a_budget_that_ends_before_the_final_stage_reports_a_provisional_ndr(tmp_path, testkit):
    # 1 s coarse trials, 2 s final trials and a budget under 2 s: the final stage never
    # runs, the coarse one passes max_load -- reported, flagged, and replayed the same
    code, out, run_dir = _run(tmp_path, testkit, params="frame_sizes=[64];latency.enabled=false",
                              gen={"sleep_per_trial_s": 0.2},
                              extra={"search": {"time_budget_s": 1.9, "trial_duration_s": 1.0,
                                                "final_trial_duration_s": 2.0, "max_load_fps": 500_000}})
    assert code == 0, out
    results = json.loads((run_dir / "results.json").read_text())
    schema.validate(results, "results.schema.json")
    [fs] = results["tests"][0]["frame_sizes"]
    ndr = fs["points"][0]
    assert ndr["throughput_fps"] is not None and ndr["lower_bound_provisional"] is True
    assert not ndr["regular"] and "provisional" in ndr["irregular_reason"]
    assert "provisional" in out
    assert recheck.verify(run_dir) == []
