"""A suite run on the real embedded testbed, as a user runs it (the CLI in a subprocess):
suite.json accounts for every id, report.html has a section per id in a real browser, every
figure recomputes, and nothing is left -- after a complete suite, after SIGTERM in the middle
of one, and after ``vsbench cleanup`` following ``kill -9``.

The suite is tests/fixtures/suites/smoke.yaml: two Linux-bridge runs (no hugepages, no PMD: the
cheapest real switch), a run no host can do alone (two hosts), a reference table and a gain.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from run_helpers import assert_nothing_left, require
from tests import browser
from vsbench.measurement import recheck
from vsbench.results import schema

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root to create network namespaces")]

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ROOT / "tests" / "fixtures" / "suites" / "smoke.yaml"


def _default_sighup() -> None:
    """A run inherits an ignored SIGHUP (nohup) and keeps ignoring it, by design; the run
    under test must see SIGHUP as an ssh session's end would deliver it, whatever started
    the test runner."""
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def vsbench(*args: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "vsbench.cli.main", *args], cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=_default_sighup, **kwargs)


def run_dir_of(results: Path) -> Path:
    [run_dir] = [p for p in results.iterdir() if p.is_dir()]
    return run_dir


def suite_json(run_dir: Path) -> dict:
    doc = json.loads((run_dir / "suite.json").read_text())
    schema.validate(doc, "suite_result.schema.json")
    return doc


def wait_for(condition, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    pytest.fail(f"timed out waiting for {what}")


@pytest.fixture(autouse=True)
def _bridge():
    require(("vswitch", "linux_bridge"), ("trafficgen", "trafgen"))


def test_a_suite_runs_end_to_end_and_accounts_for_every_id(tmp_path):
    proc = vsbench("--suite", str(SMOKE), "--results-dir", str(tmp_path), "--json")
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-2000:]
    summary = json.loads(out)
    assert summary["suite"]["ids"] == {"999/T1": "measured", "999/T2": "not_measurable"}
    run_dir = run_dir_of(tmp_path)
    doc = suite_json(run_dir)
    assert doc["status"] == "complete" and doc["summary"]["measured"] == 1
    t1, t2 = doc["ids"]
    measured = [r for r in t1["rows"] if r["status"] == "measured"]
    assert {r["series"] for r in measured} == {"1 flow", "8 flows"}
    assert all(r["values"]["ndr_fps"] > 1000 for r in measured)  # the bridge forwarded real frames
    eight = next(r for r in measured if r["series"] == "8 flows")
    assert eight["values"]["gain_percent"] is not None
    one = next(r for r in measured if r["series"] == "1 flow")
    assert one["report"] == {"ndr_fps": 1000000, "ndr_l1_mbps": 672}
    assert [r["key"]["frame_size"] for r in t1["rows"] if r["status"] == "report_only"] == [1518]
    assert t2["status"] == "not_measurable" and "2 hosts" in t2["reason"]
    # every figure of the run recomputes from its trials, as any run's
    assert recheck.verify(run_dir) == []
    assert_nothing_left(run_dir.name.rsplit("-", 1)[1])
    if browser.chromium() is not None:
        seen = browser.load(run_dir / "report.html")
        assert seen.console_errors == [] and seen.exceptions == [], seen
        sections = {h["section"]: h["text"] for h in seen.headings if h["level"] == "H3"}
        assert sections["suite-999-T1"].startswith("999/T1") and sections["suite-999-T2"].startswith("999/T2")
        assert all(i["complete"] and i["width"] > 100 for i in seen.images)


@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_sigterm_in_the_middle_of_a_suite_tears_down_and_keeps_what_it_measured(tmp_path, signum, code):
    """SIGHUP is what a suite started over ssh gets when the session drops (issue 26):
    torn down like SIGTERM, not killed with its testbed left behind."""
    proc = vsbench("--suite", str(SMOKE), "--results-dir", str(tmp_path))
    # after the first plan ended, while the second one is under way
    wait_for(lambda: any(tmp_path.iterdir()) and (run_dir_of(tmp_path) / "suite.json").is_file()
             and any(r["status"] == "measured" for r in suite_json(run_dir_of(tmp_path))["ids"][0]["rows"]),
             300, "the suite's first measured row")
    time.sleep(3)
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == code, err[-2000:]
    run_dir = run_dir_of(tmp_path)
    doc = suite_json(run_dir)
    assert doc["status"] == "interrupted"
    assert json.loads((run_dir / "results.json").read_text())["status"] == "interrupted"
    assert any(r["status"] == "measured" for r in doc["ids"][0]["rows"])
    assert "Suite smoke" in (run_dir / "report.html").read_text()
    assert_nothing_left(run_dir.name.rsplit("-", 1)[1])


def test_cleanup_after_kill_9_of_a_suite_leaves_nothing(tmp_path):
    proc = vsbench("--suite", str(SMOKE), "--results-dir", str(tmp_path), start_new_session=True)
    wait_for(lambda: any(tmp_path.iterdir()) and any(
        f"-{run_dir_of(tmp_path).name.rsplit('-', 1)[1]}-" in ns
        for ns in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()),
        300, "the suite's testbed")
    time.sleep(2)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    run_id = run_dir_of(tmp_path).name.rsplit("-", 1)[1]
    done = subprocess.run([sys.executable, "-m", "vsbench.cli.main", "cleanup"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert_nothing_left(run_id)
    # the dead run's files no longer say it is running (issue 26)
    run_dir = run_dir_of(tmp_path)
    assert json.loads((run_dir / "results.json").read_text())["status"] == "interrupted"
    assert suite_json(run_dir)["status"] == "interrupted"
