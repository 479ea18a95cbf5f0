"""The whole run loop, driven through real entry points.

The plugins come from a separate distribution on sys.path (tests/fixtures/runner_dist),
registered by its own dist-info entry points exactly as a vendor's package would be; the
configuration is resolved by the same code the CLI uses (conf/*.yaml + testcase +
--test-params). Nothing of the runner is mocked.
"""

import csv
import json
import os
import re
import signal
import subprocess
import sys
import time
from io import StringIO
from pathlib import Path

import pytest
import yaml
from rich.console import Console

from vsbench.measurement import recheck
from vsbench.results import recompute, schema
from vsbench.runner import config as cfg
from vsbench.runner import testcases
from vsbench.runner.run import run_plans
from vsbench.system import runstate

ROOT = Path(__file__).resolve().parents[2]
TESTKIT = ROOT / "tests" / "fixtures" / "runner_dist"


def make_plans(tmp_path, testkit, *, test="phy2phy_tput", params="frame_sizes=[64,128];trial_duration=1",
               gen=None, vswitch="marker_switch", collectors=("trial_counter",), extra=None):
    layer = {
        "collectors": list(collectors),
        "trafficgen": {"name": "model_gen", "model_gen": {"capacity_fps": 1_000_000, "marker_dir": str(testkit["markers"]), **(gen or {})}},
        "vswitch": {"name": vswitch, vswitch: {"marker_dir": str(testkit["markers"])}},
        "traffic": {"warmup_s": 1},
        **(extra or {}),
    }
    conf = tmp_path / "layer.yaml"
    conf.write_text(yaml.safe_dump(layer))
    base = cfg.load_layers(cfg.default_conf_dir(), [conf])
    case = testcases.find(test, testcases.default_testcase_dir())
    return testcases.build_plans(case, base, cfg.parse_test_params(params) if params else {}, {})


def run(plans, testkit):
    out = StringIO()
    code = run_plans(plans, testkit["results"], Console(file=out, width=200))
    return code, out.getvalue()


def only_run_dir(testkit) -> Path:
    dirs = list(testkit["results"].iterdir())
    assert len(dirs) == 1, dirs
    return dirs[0]


def assert_torn_down(testkit, run_dir):
    assert list(testkit["markers"].iterdir()) == [], "a plugin resource outlived the run"
    run_id = run_dir.name.rsplit("-", 1)[1]
    assert not runstate.is_live(run_id, testkit["state"])
    assert not (testkit["state"] / f"{run_id}.lock").exists()
    assert not (testkit["state"] / run_id).exists()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def trials_of(run_dir):
    lines = (run_dir / "trials.jsonl").read_text().splitlines()
    docs = [json.loads(line) for line in lines]
    for doc in docs:
        schema.validate(doc, "trial.schema.json")
    return docs


def test_throughput_run_leaves_every_file_and_every_number_recomputes(tmp_path, testkit):
    code, out = run(make_plans(tmp_path, testkit), testkit)
    assert code == 0, out
    run_dir = only_run_dir(testkit)
    assert re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{6}", run_dir.name)
    names = {p.name for p in run_dir.iterdir()}
    assert {"config.yaml", "sysinfo.json", "trials.jsonl", "results.json", "results.csv", "logs"} <= names

    results = json.loads((run_dir / "results.json").read_text())
    schema.validate(results, "results.schema.json")
    assert results["status"] == "complete"
    [test] = results["tests"]
    assert (test["status"], test["deployment"], test["switching_operations"]) == ("complete", "p2p", 1)
    assert (test["vswitch"], test["trafficgen"]) == ("marker_switch", "model_gen")
    assert [fs["frame_size_bytes"] for fs in test["frame_sizes"]] == [64, 128]
    for fs in test["frame_sizes"]:
        ndr, pdr = fs["points"]  # the default multi-goal search: NDR and PDR
        assert (ndr["name"], pdr["name"], fs["search_mode"]) == ("NDR", "PDR", "multi")
        # the modelled DUT forwards 1 Mfps: NDR within the search width below it
        assert 0.99e6 <= ndr["throughput_fps"] <= 1e6
        assert ndr["loss_ratio"] == 0.0 and ndr["valid"] and ndr["regular"]
        assert ndr["lower_bound_fps"] < ndr["upper_bound_fps"] and ndr["lower_bound_trials"] >= 1
        # 0.5% loss allowed: PDR at or above NDR, below capacity / (1 - 0.005)
        assert ndr["throughput_fps"] <= pdr["throughput_fps"] <= 1e6 / 0.995
        assert ndr["latency"]["samples"] == 100 and ndr["latency"]["min_ns"] >= 20_000
        assert ndr["latency_summary"]["percentiles_ns"]["p50"] is not None
        assert ndr["latency_summary"]["percentiles_ns"]["p99"] is None  # 100 samples do not back a p99
        assert [lp["label"] for lp in fs["latency_points"]] == ["probes only", "10% of PDR", "50% of PDR",
                                                              "90% of PDR", "NDR"]
        assert fs["trial_count"] > 0 and fs["trial_seconds"] > 0 and not fs["generator_limited"]
        assert fs["max_load_fps"] == pytest.approx(2 * 10e9 / ((fs["frame_size_bytes"] + 20) * 8))
        assert ndr["line_rate_percent"] == pytest.approx(100 * ndr["throughput_fps"] / fs["max_load_fps"])

    docs = trials_of(run_dir)
    assert [d["trial_index"] for d in docs] == list(range(len(docs)))
    roles = [d["role"] for d in docs if d["frame_size_bytes"] == 64]
    # one warm-up, the search, then the five latency trials
    assert roles[0] == "warmup" and roles[-5:] == ["final"] * 5 and set(roles[1:-5]) == {"search"}
    assert docs[0]["collectors"] == {"trial_counter": {"trial": 1}}
    assert recompute.verify(run_dir) == []
    assert recheck.verify(run_dir) == []

    with open(run_dir / "results.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["frame_size_bytes"] for r in rows] == ["64", "128"]
    assert float(rows[0]["throughput_fps"]) == test["frame_sizes"][0]["points"][0]["throughput_fps"]

    plans = yaml.safe_load((run_dir / "config.yaml").read_text())["plans"]
    assert plans[0]["config"]["trafficgen"]["name"] == "model_gen"
    sysinfo = json.loads((run_dir / "sysinfo.json").read_text())
    schema.validate(sysinfo, "sysinfo.schema.json")
    assert {(p["kind"], p["name"]) for p in sysinfo["plugins"]} == {("trafficgen", "model_gen"), ("vswitch", "marker_switch")}
    log_text = (run_dir / "logs" / "vsbench.log").read_text()
    assert "p2p: marker_switch bridge" in log_text
    assert " DEBUG " not in log_text, "the run log is INFO unless --debug"
    assert "Throughput fps" in out and "% line rate" in out
    assert_torn_down(testkit, run_dir)


def test_continuous_run_offers_the_configured_share_of_line_rate(tmp_path, testkit):
    plans = make_plans(tmp_path, testkit, test="phy2phy_cont", params="frame_sizes=[1518];trial_duration=1")
    code, out = run(plans, testkit)
    assert code == 0, out
    run_dir = only_run_dir(testkit)
    fs = json.loads((run_dir / "results.json").read_text())["tests"][0]["frame_sizes"][0]
    [point] = fs["points"]
    line_rate = 2 * 10e9 / ((1518 + 20) * 8)
    assert point["name"] == "continuous"
    assert point["offered_load_fps"] == pytest.approx(0.10 * line_rate)
    assert point["line_rate_percent"] == pytest.approx(10.0, rel=1e-3)
    assert [d["role"] for d in trials_of(run_dir)] == ["warmup", "continuous"]
    assert recompute.verify(run_dir) == []


def test_external_dut_with_a_generator_limited_below_the_dut(tmp_path, testkit):
    plans = make_plans(tmp_path, testkit, vswitch="external",
                       gen={"capacity_fps": 5e6, "max_rate_fps": 2e6, "marker_dir": None}, params="frame_sizes=[64];trial_duration=1")
    code, out = run(plans, testkit)
    assert code == 0, out
    run_dir = only_run_dir(testkit)
    fs = json.loads((run_dir / "results.json").read_text())["tests"][0]["frame_sizes"][0]
    ndr = fs["points"][0]
    # the generator advertised 2 Mfps, so the search never asked more: max_load is a lower bound
    assert fs["max_load_fps"] == 2e6 and ndr["throughput_fps"] == 2e6
    assert not ndr["regular"] and "not saturated" in ndr["irregular_reason"]
    assert any("not saturated" in n for n in fs["notes"])


def test_generator_that_cannot_deliver_is_never_counted_as_dut_loss(tmp_path, testkit):
    # The generator claims no limit but can only send 2 Mfps: the trials above are invalid.
    plans = make_plans(tmp_path, testkit, vswitch="external", params="frame_sizes=[64];trial_duration=1",
                       gen={"capacity_fps": 5e6, "marker_dir": None},
                       extra={"search": {"max_load_fps": 4e6}})
    plans[0].config["trafficgen"]["model_gen"]["max_rate_fps"] = 2e6
    # capabilities() reports max_rate_fps from settings; hide it so the limit is a surprise
    plans[0].config["trafficgen"]["model_gen"]["latency"] = False
    code, out = run(plans, testkit)
    assert code == 0, out
    run_dir = only_run_dir(testkit)
    fs = json.loads((run_dir / "results.json").read_text())["tests"][0]["frame_sizes"][0]
    docs = trials_of(run_dir)
    invalid = [d for d in docs if not d["valid"]]
    assert invalid and all(d["invalid_reasons"][0].startswith("generator-limited") for d in invalid)
    assert fs["invalid_trial_count"] == len(invalid)
    assert any("generator-limited" in n for n in fs["notes"])
    assert fs["points"][0]["throughput_fps"] < 2e6
    assert fs["points"][0]["loss_ratio"] == 0.0
    assert any("latency not measured" in n for n in fs["notes"])
    assert recompute.verify(run_dir) == []


def test_missing_prerequisite_is_one_line_exit_2_and_nothing_is_created(tmp_path, testkit):
    plans = make_plans(tmp_path, testkit, vswitch="needs_frobnicator")
    code, out = run(plans, testkit)
    assert code == 2
    assert out.strip().count("\n") == 0
    assert "needs_frobnicator cannot run here: missing binary frobnicate (apt-get install frobnicate)" in out
    assert not testkit["results"].exists()
    assert not testkit["state"].exists() or not list(testkit["state"].iterdir())
    assert list(testkit["markers"].iterdir()) == []


def test_unknown_collector_is_a_preflight_error(tmp_path, testkit):
    code, out = run(make_plans(tmp_path, testkit, collectors=("no_such_collector",)), testkit)
    assert code == 2 and "unknown collector plugin 'no_such_collector'" in out
    assert not testkit["results"].exists()


def test_plugin_failure_fails_the_plan_keeps_its_trials_and_the_next_plan_runs(tmp_path, testkit):
    failing = make_plans(tmp_path, testkit, gen={"fail_on_trial": 4})
    good = make_plans(tmp_path, testkit)
    code, out = run(failing + good, testkit)
    assert code == 1
    assert "model generator lost its connection" in out
    assert "Traceback" not in out
    run_dir = only_run_dir(testkit)
    results = json.loads((run_dir / "results.json").read_text())
    assert results["status"] == "failed"
    first, second = results["tests"]
    assert first["status"] == "failed"
    assert first["error"] == "trafficgen model_gen: run_trial: model generator lost its connection"
    assert first["frame_sizes"][0]["status"] == "failed"
    assert first["frame_sizes"][1]["status"] == "not-run"
    assert second["status"] == "complete"
    docs = trials_of(run_dir)
    assert len([d for d in docs if d["plan_index"] == 0]) == 3  # the three trials before the failure
    assert recompute.verify(run_dir) == []
    assert_torn_down(testkit, run_dir)


@pytest.mark.parametrize("signame, code", [("SIGTERM", 143), ("SIGINT", 130), ("SIGHUP", 129)])
def test_signal_tears_down_in_order_and_keeps_finished_trials(tmp_path, testkit, signame, code):
    """SIGHUP (the ssh session the run was started from dropped) is handled like SIGTERM:
    before issue 26 it killed the run with no teardown and results.json said running."""
    plans = make_plans(tmp_path, testkit, gen={"signal_after_trials": 5, "signal": signame})
    hup_before = signal.signal(signal.SIGHUP, signal.SIG_DFL)  # as from a terminal, even under nohup
    try:
        rc, out = run(plans, testkit)
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_DFL
    finally:
        signal.signal(signal.SIGHUP, hup_before)
    assert rc == code
    run_dir = only_run_dir(testkit)
    results = json.loads((run_dir / "results.json").read_text())
    schema.validate(results, "results.schema.json")
    assert results["status"] == "interrupted"
    assert results["tests"][0]["status"] == "interrupted"
    assert results["tests"][0]["frame_sizes"][0]["status"] == "interrupted"
    assert len(trials_of(run_dir)) == 5
    assert f"interrupted by {signame}" in out
    assert_torn_down(testkit, run_dir)


def test_an_error_outside_any_plan_leaves_a_failed_run_not_a_running_one(tmp_path, testkit, monkeypatch):
    """Issue 26: a run that died early (here: sysinfo.json could not be written, before
    the first plan) kept "status": "running" in results.json and the report."""
    from vsbench.runner import run as run_module

    def broken(self):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(run_module.Run, "write_sysinfo", broken)
    # issue 28: a file the run cannot write is the run's failure (exit 1, one line naming it),
    # no longer an exception for the CLI to report as an internal error
    code, out = run(make_plans(tmp_path, testkit), testkit)
    assert code == 1 and "failed" in out.strip().splitlines()[-1] and "No space left" in out.strip().splitlines()[-1]
    run_dir = only_run_dir(testkit)
    results = json.loads((run_dir / "results.json").read_text())
    schema.validate(results, "results.schema.json")
    assert results["status"] == "failed" and results["finished_at"]
    assert "running" not in {t["status"] for t in results["tests"]}
    assert "No space left on device" in results["tests"][0]["error"]
    report = (run_dir / "report.html").read_text()
    assert "had not finished" not in report
    assert_torn_down(testkit, run_dir)


def test_ctrl_c_where_no_handler_runs_still_ends_the_run_interrupted(tmp_path, testkit, monkeypatch):
    """A KeyboardInterrupt (or SystemExit) that is not the run's own signal handling --
    raised mid-plan -- left the run, its plan and its frame size "running"."""
    from vsbench.runner import run as run_module

    real = run_module.normalise_points
    calls = []

    def interrupting(test, fs):
        real(test, fs)
        calls.append(fs.frame_size_bytes)
        raise KeyboardInterrupt

    monkeypatch.setattr(run_module, "normalise_points", interrupting)
    plans = make_plans(tmp_path, testkit, params="frame_sizes=[64,128];trial_duration=1")
    with pytest.raises(KeyboardInterrupt):
        run(plans, testkit)
    assert calls == [64]
    run_dir = only_run_dir(testkit)
    results = json.loads((run_dir / "results.json").read_text())
    schema.validate(results, "results.schema.json")
    assert results["status"] == "interrupted"
    assert results["tests"][0]["status"] == "interrupted"
    assert results["tests"][0]["error"] == "KeyboardInterrupt"
    assert [fs["status"] for fs in results["tests"][0]["frame_sizes"]] == ["complete", "not-run"]
    assert_torn_down(testkit, run_dir)


def test_a_run_started_with_nohup_keeps_ignoring_sighup():
    """nohup asks a run to outlive its session: the run must not take SIGHUP back."""
    from vsbench.runner.run import SignalGuard

    before = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    guard = SignalGuard()
    try:
        guard.install()
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
        assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    finally:
        guard.restore()
        signal.signal(signal.SIGHUP, before)


def test_signal_during_teardown_does_not_cut_it_short(tmp_path, testkit):
    plans = make_plans(tmp_path, testkit, params="frame_sizes=[64];trial_duration=1")
    plans[0].config["trafficgen"]["model_gen"]["signal_on_stop"] = "SIGINT"
    rc, out = run(plans, testkit)
    assert rc == 130, out
    run_dir = only_run_dir(testkit)
    results = json.loads((run_dir / "results.json").read_text())
    assert results["status"] == "interrupted"
    assert results["tests"][0]["frame_sizes"][0]["status"] == "complete"
    assert recompute.verify(run_dir) == []
    assert_torn_down(testkit, run_dir)


def test_a_forked_helper_process_does_not_inherit_the_runs_signal_handling(tmp_path, testkit):
    plans = make_plans(tmp_path, testkit, params="frame_sizes=[64];trial_duration=1",
                       gen={"fork_and_terminate_child": True})
    rc, out = run(plans, testkit)
    assert rc == 0, out
    assert_torn_down(testkit, only_run_dir(testkit))


CLI_RUN = """
import signal, sys
signal.signal(signal.SIGHUP, signal.SIG_DFL)  # as started from a terminal, even if pytest runs under nohup
from vsbench.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def _cli(tmp_path, testkit, gen_settings, params):
    layer = {
        "collectors": [],
        "trafficgen": {"name": "model_gen", "model_gen": {"capacity_fps": 1e6, "marker_dir": str(testkit["markers"]), **gen_settings}},
        "vswitch": {"name": "marker_switch", "marker_switch": {"marker_dir": str(testkit["markers"])}},
    }
    conf = tmp_path / "layer.yaml"
    conf.write_text(yaml.safe_dump(layer))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTKIT), os.environ.get("PYTHONPATH", "")]),
           runstate.STATE_DIR_ENV: str(testkit["state"])}
    argv = [sys.executable, "-c", CLI_RUN, "--test", "phy2phy_tput", "--conf-file", str(conf),
            "--results-dir", str(testkit["results"]), "--test-params", params]
    return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _wait_for_trials(testkit, n, proc, timeout_s=60.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for path in testkit["results"].glob("*/trials.jsonl"):
            if len(path.read_text().splitlines()) >= n:
                return path.parent
        assert proc.poll() is None, proc.stdout.read()
        time.sleep(0.05)
    raise AssertionError("trials did not appear")


@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_cli_run_killed_by_sigterm_or_sighup_from_outside(tmp_path, testkit, signum, code):
    """SIGHUP: the ssh session a run was started from dropped (issue 26)."""
    proc = _cli(tmp_path, testkit, {"sleep_per_trial_s": 0.3}, "frame_sizes=[64];trial_duration=1")
    run_dir = _wait_for_trials(testkit, 3, proc)
    run_id = run_dir.name.rsplit("-", 1)[1]
    assert runstate.is_live(run_id, testkit["state"])
    assert (testkit["markers"] / "switch").exists()
    proc.send_signal(signum)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == code, out
    assert "Traceback" not in out
    assert json.loads((run_dir / "results.json").read_text())["status"] == "interrupted"
    assert len(trials_of(run_dir)) >= 3
    assert list(testkit["markers"].iterdir()) == []
    assert not runstate.is_live(run_id, testkit["state"])


def test_cli_run_killed_by_sigkill_keeps_trials_and_is_seen_as_dead(tmp_path, testkit):
    proc = _cli(tmp_path, testkit, {"sleep_per_trial_s": 0.3}, "frame_sizes=[64];trial_duration=1")
    run_dir = _wait_for_trials(testkit, 2, proc)
    run_id = run_dir.name.rsplit("-", 1)[1]
    assert run_id in runstate.live_run_ids(testkit["state"])
    proc.kill()
    proc.communicate(timeout=60)
    assert len(trials_of(run_dir)) >= 2
    # the lock died with the process: cleanup may now take what the run left
    assert run_id not in runstate.live_run_ids(testkit["state"])
    assert (testkit["state"] / run_id).is_dir()
    assert (testkit["markers"] / "switch").exists()  # nobody tore it down: that is cleanup's job


def _kill_9_mid_run(tmp_path, testkit) -> Path:
    proc = _cli(tmp_path, testkit, {"sleep_per_trial_s": 0.3}, "frame_sizes=[64];trial_duration=1")
    run_dir = _wait_for_trials(testkit, 2, proc)
    proc.kill()
    proc.communicate(timeout=60)
    return run_dir


def test_cleanup_after_kill_9_marks_the_dead_runs_results_interrupted(tmp_path, testkit, monkeypatch, capsys):
    """Issue 26: after kill -9 and ``vsbench cleanup`` results.json (and the report) still
    said the run was running. Cleanup sees only this test's state dir here (a snapshot of
    the machine would show other runs' namespaces) and no plugin cleaner runs."""
    from vsbench.cli.main import main
    from vsbench.runner import plugins as plugin_registry
    from vsbench.system import cleanup

    run_dir = _kill_9_mid_run(tmp_path, testkit)
    run_id = run_dir.name.rsplit("-", 1)[1]
    assert json.loads((run_dir / "results.json").read_text())["status"] == "running"  # what kill -9 leaves
    monkeypatch.setattr(cleanup, "snapshot",
                        lambda state_dir=None: cleanup.Snapshot(state_entries=sorted(testkit["state"].iterdir())))
    monkeypatch.setattr(plugin_registry, "dead_run_cleaners", lambda: [])
    capsys.readouterr()
    assert main(["cleanup"]) == 0
    out = capsys.readouterr().out
    said = "".join(out.split())  # the console wraps long paths
    assert f"marked{run_dir / 'results.json'}interrupted(run{run_id})" in said, out
    results = json.loads((run_dir / "results.json").read_text())
    schema.validate(results, "results.schema.json")
    assert results["status"] == "interrupted"
    test = results["tests"][0]
    assert test["status"] == "interrupted" and "killed" in test["error"]
    assert test["frame_sizes"][0]["status"] == "interrupted"
    assert "running" not in (run_dir / "results.csv").read_text()
    assert "had not finished" not in (run_dir / "report.html").read_text()
    assert not (testkit["state"] / f"{run_id}.lock").exists()
    # a second cleanup finds nothing, and changes nothing
    before = (run_dir / "results.json").read_text()
    assert main(["cleanup"]) == 0
    assert "nothing to clean up" in capsys.readouterr().out
    assert (run_dir / "results.json").read_text() == before


def test_marking_a_dead_suite_run_closes_suite_json_and_leaves_finished_runs_alone(tmp_path, testkit):
    from vsbench.results.dead_run import mark_dead_run

    run_dir = _kill_9_mid_run(tmp_path, testkit)
    run_id = run_dir.name.rsplit("-", 1)[1]
    suite = {"schema": "vsbench.suite/1", "suite": "smoke", "title": "Smoke", "profile": "quick",
             "run_id": run_id, "status": "running", "host": {},
             "summary": {"ids": 0, "measured": 0, "not_measurable": 0, "not_measured": 0}, "runs": [], "ids": []}
    (run_dir / "suite.json").write_text(json.dumps(suite))
    assert mark_dead_run("someone-else", run_dir) == []  # not this run's directory
    assert mark_dead_run(run_id, run_dir, dry_run=True) == [
        f"would mark {run_dir / 'results.json'} interrupted", f"would mark {run_dir / 'suite.json'} interrupted"]
    assert json.loads((run_dir / "suite.json").read_text())["status"] == "running"
    assert (run_dir / ".space-reserve").is_file()  # the killed run's reserve (issue 28)...
    lines = mark_dead_run(run_id, run_dir)
    assert not (run_dir / ".space-reserve").exists()  # ...is freed by cleanup
    assert lines[:2] == [f"marked {run_dir / 'results.json'} interrupted", f"marked {run_dir / 'suite.json'} interrupted"]
    doc = json.loads((run_dir / "suite.json").read_text())
    schema.validate(doc, "suite_result.schema.json")
    assert doc["status"] == "interrupted"
    assert mark_dead_run(run_id, run_dir) == []  # already closed


def test_recompute_command_confirms_a_run_and_catches_a_tampered_figure(tmp_path, testkit):
    from vsbench.cli.main import main

    code, out = run(make_plans(tmp_path, testkit), testkit)
    assert code == 0, out
    run_dir = only_run_dir(testkit)
    assert main(["recompute", str(run_dir)]) == 0

    results = json.loads((run_dir / "results.json").read_text())
    results["tests"][0]["frame_sizes"][0]["points"][0]["throughput_fps"] *= 1.01
    (run_dir / "results.json").write_text(json.dumps(results))
    assert main(["recompute", str(run_dir)]) == 1
    assert main(["recompute", str(tmp_path / "nowhere")]) == 2


def test_recompute_of_a_run_without_trials_says_there_is_nothing_to_recompute(tmp_path, testkit, capsys):
    """Issue 26: a run that failed before its first trial "recomputed exactly" (exit 0)."""
    from vsbench.cli.main import main

    code, out = run(make_plans(tmp_path, testkit, params="frame_sizes=[64];trial_duration=1",
                               gen={"fail_on_trial": 1}), testkit)
    assert code == 1, out
    run_dir = only_run_dir(testkit)
    assert (run_dir / "trials.jsonl").read_text() == ""
    capsys.readouterr()
    assert main(["recompute", str(run_dir)]) == 1
    said = " ".join(capsys.readouterr().out.split())
    assert "nothing to recompute" in said and "holds no trial" in said and "failed" in said, said
    assert "every reported figure recomputes" not in said
