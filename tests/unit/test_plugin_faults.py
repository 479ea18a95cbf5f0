"""A third-party plugin that raises, returns nonsense or hangs is contained (issue 11 item 6).

Each test runs the real CLI in a subprocess with a misbehaving plugin from a separately
"installed" distribution (tests/fixtures/faulty_dist, found through its entry points like
a vendor's package). What must hold every time: the fault is one line naming the plugin and
the call (no traceback unless -v), the exit code says the run failed (or it completed with
the bad trials marked invalid), every file of the run is readable, and the plugin's daemon
-- a real child process it started -- is gone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import yaml

from vsbench.results import schema

ROOT = Path(__file__).resolve().parents[2]
FAULTY = ROOT / "tests" / "fixtures" / "faulty_dist"
PARAMS = "frame_sizes=[64];trial_duration=0.5"
#: Short deadlines so a hang costs seconds: trial 0.5 s + 2 s margin, 2 s for the rest.
DEADLINES = {"trial_margin_s": 2, "stop_s": 2, "configure_s": 2, "start_s": 5, "call_s": 5}


def vsbench(tmp_path: Path, gen: dict, *, switch: str = "external", switch_settings: dict | None = None,
            tests: tuple[str, ...] = ("phy2phy_tput",), verbose: bool = False):
    conf = tmp_path / "conf.yaml"
    conf.write_text(yaml.safe_dump({
        "results_dir": str(tmp_path / "results"),
        "collectors": [],
        "deadlines": DEADLINES,
        "traffic": {"warmup_s": 0},
        "latency": {"enabled": False},
        "search": {"time_budget_s": 30},
        "trafficgen": {"faulty_gen": {"pid_file": str(tmp_path / "daemon.pid"), **gen}},
        "vswitch": {switch: switch_settings or {}},
    }))
    argv = [sys.executable, "-m", "vsbench.cli.main", "--trafficgen", "faulty_gen", "--vswitch", switch,
            "--conf-file", str(conf), "--test-params", PARAMS, *(["-v"] if verbose else [])]
    for test in tests:
        argv += ["--test", test]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(FAULTY), os.environ.get("PYTHONPATH", "")]),
           "VSBENCH_STATE_DIR": str(tmp_path / "state")}
    t0 = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=180, env=env, cwd=tmp_path)
    done.elapsed_s = time.monotonic() - t0  # type: ignore[attr-defined]
    done.said = " ".join((done.stdout + done.stderr).split())  # type: ignore[attr-defined] # unwrapped
    return done


def daemon_alive(tmp_path: Path) -> bool:
    pid_file = tmp_path / "daemon.pid"
    if not pid_file.exists():
        return False
    pid = int(pid_file.read_text())
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] != "Z"


def run_files(tmp_path: Path) -> tuple[dict, list[dict]]:
    """results.json and trials.jsonl of the run, both checked against their schemas."""
    (run_dir,) = (tmp_path / "results").iterdir()
    results = json.loads((run_dir / "results.json").read_text())
    schema.validate(results, "results.schema.json")
    trials = [json.loads(line) for line in (run_dir / "trials.jsonl").read_text().splitlines()]
    for trial in trials:
        schema.validate(trial, "trial.schema.json")
    return results, trials


def assert_contained(done, tmp_path: Path, line: str) -> None:
    assert "Traceback" not in done.said, done.stderr[-3000:]
    assert line in done.said, done.said[-3000:]
    assert not daemon_alive(tmp_path), "the plugin's daemon is still running"


def test_a_plugin_that_raises_is_one_line_naming_plugin_and_call(tmp_path):
    done = vsbench(tmp_path, {"fault": "raise", "fault_on_trial": 3})
    assert done.returncode == 1
    assert_contained(done, tmp_path, "trafficgen faulty_gen: run_trial: ZeroDivisionError: division by zero")
    results, trials = run_files(tmp_path)
    assert results["status"] == "failed" and results["tests"][0]["status"] == "failed"
    assert len(trials) == 2, "the trials before the fault are kept"


def test_with_verbose_the_plugins_traceback_is_shown(tmp_path):
    done = vsbench(tmp_path, {"fault": "raise", "fault_on_trial": 2}, verbose=True)
    assert done.returncode == 1
    assert "Traceback" in done.stderr and "return 1 / 0" in done.stderr
    assert not daemon_alive(tmp_path)


def test_a_bug_in_start_is_one_line(tmp_path):
    done = vsbench(tmp_path, {"fault": "raise_start"})
    assert done.returncode == 1
    assert "trafficgen faulty_gen: start: KeyError: 'no such key'" in done.said
    assert "Traceback" not in done.said
    run_files(tmp_path)


def test_a_trial_that_hangs_is_recorded_invalid_and_ends_the_run(tmp_path):
    done = vsbench(tmp_path, {"fault": "hang", "fault_on_trial": 3}, tests=("phy2phy_tput", "phy2phy_tput"))
    assert done.returncode == 1
    # the search's trials last the asked trial_duration (0.5 s), not the multi search's 1 s
    assert_contained(done, tmp_path, "trafficgen faulty_gen: run_trial did not return within 2.5 s "
                                     "(trial 0.5 s + margin 2 s)")
    assert done.elapsed_s < 60
    results, trials = run_files(tmp_path)
    last = trials[-1]
    assert len(trials) == 3 and not last["valid"]
    assert last["invalid_reasons"][0].startswith("deadline: trafficgen faulty_gen: run_trial did not return")
    assert [t["status"] for t in results["tests"]] == ["failed", "not-run"]
    assert "missed a deadline" in results["tests"][1]["error"]


def test_nonsense_results_are_invalid_and_never_used(tmp_path):
    done = vsbench(tmp_path, {"fault": "nonsense", "fault_on_trial": 1})
    assert done.returncode == 0, done.said[-2000:]  # the run itself went as asked: no figure, every trial invalid
    assert "Traceback" not in done.said
    assert not daemon_alive(tmp_path)
    results, trials = run_files(tmp_path)
    assert trials and all(not t["valid"] for t in trials)
    reasons = trials[0]["invalid_reasons"]
    assert any(r.startswith("inconsistent: tx_frames is negative") for r in reasons), reasons
    assert trials[0]["generator_stats"]["reported"]["tx_frames"].startswith("-")
    (fs,) = results["tests"][0]["frame_sizes"]
    assert all(p.get("throughput_fps") is None for p in fs["points"]), "a figure was built on nonsense"
    assert any("cannot be used" in note for note in fs["notes"]), fs["notes"]


def test_a_result_that_is_not_a_trial_result_is_invalid(tmp_path):
    done = vsbench(tmp_path, {"fault": "none", "fault_on_trial": 2})
    assert "Traceback" not in done.said
    _, trials = run_files(tmp_path)
    assert trials[0]["valid"]
    assert trials[1]["invalid_reasons"] == ["inconsistent: run_trial returned NoneType, not a TrialResult"]


def test_a_stop_that_hangs_is_cut_and_the_teardown_goes_on(tmp_path):
    done = vsbench(tmp_path, {"fault": "hang_stop"})
    assert done.returncode == 0, done.said[-2000:]
    assert_contained(done, tmp_path, "trafficgen faulty_gen: stop did not return within 2 s")
    assert done.elapsed_s < 60
    results, _ = run_files(tmp_path)
    assert results["status"] == "complete"


def test_a_switch_that_hangs_while_wiring_ends_the_run(tmp_path):
    done = vsbench(tmp_path, {}, switch="faulty_switch", switch_settings={"fault": "hang"})
    assert done.returncode == 1
    assert "vswitch faulty_switch: add_port did not return within 2 s" in done.said
    assert "Traceback" not in done.said
    run_files(tmp_path)


def test_a_teardown_that_raises_does_not_stop_the_others(tmp_path):
    done = vsbench(tmp_path, {}, switch="faulty_switch", switch_settings={"fault": "raise_teardown"})
    assert done.returncode == 0, done.said[-2000:]
    assert_contained(done, tmp_path, "vswitch faulty_switch: teardown of faulty switch state: "
                                     "IndexError: list index out of range")
