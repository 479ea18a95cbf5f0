"""The runner's side of rule/flow scaling: a bad rule set stops the run before anything
exists, frame sizes a switch cannot forward are skipped with a note, and ``vsbench
cleanup`` lets each plugin undo its part of a killed run first."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from io import StringIO
from pathlib import Path

from rich.console import Console

from vsbench.results import recompute
from vsbench.runner import plugins
from vsbench.runner.run import max_frame_bytes, run_plans
from vsbench.system import cleanup, runstate
from vsbench_plugins.vswitch.ovs_dpdk import OvsDpdk
from vsbench_plugins.vswitch.ovs_kernel import OvsKernel

DEAD = "c0ffee"


def _run(plans, testkit):
    out = StringIO()
    return run_plans(plans, testkit["results"], Console(file=out, width=300)), out.getvalue()


def test_a_rule_set_that_cannot_cover_the_flows_is_one_line_before_anything_exists(testkit, testkit_plans):
    plans = testkit_plans("phy2phy_tput", "frame_sizes=[64];dut.rules=10;flows=20")
    code, out = _run(plans, testkit)
    assert code == 2
    assert out.strip().count("\n") == 0
    assert "traffic.flows=20 exceeds dut.rules=10" in out
    assert not testkit["results"].exists() or not any(testkit["results"].iterdir())
    assert list(testkit["markers"].iterdir()) == []


def test_rule_complexity_with_consistent_rules_passes_preflight(testkit, testkit_plans):
    plans = testkit_plans("rule_complexity",
                   "dut.rules=[64];trial_duration=1;search.mode=binary;relative_width=0.2")
    code, out = _run(plans, testkit)
    assert code == 0, out


def test_frame_sizes_above_the_switchs_largest_frame_are_skipped_with_a_note(testkit, testkit_plans, monkeypatch):
    cls = plugins.load("vswitch", "rule_marker_switch")
    monkeypatch.setattr(cls, "max_frame_bytes", lambda self: 100, raising=False)
    plans = testkit_plans("phy2phy_tput",
                   "frame_sizes=[64,128];trial_duration=1;search.mode=binary;relative_width=0.2")
    code, out = _run(plans, testkit)
    assert code == 0, out
    [run_dir] = list(testkit["results"].iterdir())
    small, big = json.loads((run_dir / "results.json").read_text())["tests"][0]["frame_sizes"]
    assert small["status"] == "complete" and small["points"]
    assert big["status"] == "not-run" and big["points"] == [] and big["trial_count"] == 0
    assert any("at most 100 B" in n and "not 128 B" in n for n in big["notes"])
    assert "at most 100 B" in out
    trials = [json.loads(line) for line in (run_dir / "trials.jsonl").read_text().splitlines()]
    assert {t["frame_size_bytes"] for t in trials} == {64}
    assert recompute.verify(run_dir) == []


def test_max_frame_bytes_hint_is_optional_and_never_fails_the_plan():
    class Broken:
        name = "broken"

        def max_frame_bytes(self):
            raise RuntimeError("no ports yet")

    assert max_frame_bytes(None) is None
    assert max_frame_bytes(object()) is None
    assert max_frame_bytes(Broken()) is None


# --------------------------------------------------------------------------- cleanup


def test_each_plugin_cleaner_is_found_once_through_the_entry_points():
    found = plugins.dead_run_cleaners()
    labels = [label for label, _ in found]
    # ovs_dpdk, ovs_kernel and ovs_tc share the OvS base's cleaner: asked once
    assert labels.count("vswitch ovs_dpdk") == 1
    assert not any(label in ("vswitch ovs_kernel", "vswitch ovs_tc", "vswitch linux_bridge") for label in labels)


def test_plugin_cleaners_run_first_with_the_runs_work_dirs(tmp_path, monkeypatch):
    state = tmp_path / "state"
    plan_dir = state / DEAD / "p0"
    plan_dir.mkdir(parents=True)
    seen = []

    def cleaner(run_id, work_dirs):
        seen.append((run_id, list(work_dirs), plan_dir.exists()))
        return ["ended ovs-vswitchd pid 4242"]

    def broken(run_id, work_dirs):
        raise OSError("permission denied")

    monkeypatch.setattr(cleanup, "snapshot", lambda state_dir=None: cleanup.Snapshot(state_entries=[state / DEAD]))
    report = cleanup.cleanup(state_dir=state, plugin_cleaners=[("vswitch fake", cleaner), ("vswitch broken", broken)])
    [(run_id, work_dirs, existed)] = seen
    assert run_id == DEAD and existed  # before the generic removal
    assert work_dirs[0] == plan_dir and state / DEAD in work_dirs
    assert not (state / DEAD).exists()  # then the generic removal
    text = report.summary()
    assert f"vswitch fake: ended ovs-vswitchd pid 4242 (run {DEAD})" in text
    assert "could not remove plugin vswitch broken" in text and "permission denied" in text


def test_plugin_cleaners_leave_live_runs_and_dry_runs_alone(tmp_path):
    state = tmp_path / "state"
    called = []
    with runstate.claim(DEAD, base=state):
        report = cleanup.run_plugin_cleaners([DEAD], [("x", lambda r, w: called.append(r) or [])], state_dir=state)
    assert called == [] and report.removed == []
    report = cleanup.run_plugin_cleaners([DEAD], [("x", lambda r, w: called.append(r) or [])],
                                         state_dir=state, dry_run=True)
    assert called == []


def _fake_daemon(run_dir: Path, name: str) -> subprocess.Popen:
    """A process whose command line names ``run_dir``, with its pid file where OvS keeps it."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", str(run_dir)])
    # Until the child has exec'd, its command line is pytest's: the cleaner would rightly
    # take it for someone else's process (a loaded host once showed exactly that).
    cmdline = Path(f"/proc/{proc.pid}/cmdline")
    deadline = time.monotonic() + 10
    while str(run_dir).encode() not in cmdline.read_bytes() and time.monotonic() < deadline:
        time.sleep(0.01)
    (run_dir / f"{name}.pid").write_text(f"{proc.pid}\n")
    return proc


def test_ovs_cleaner_ends_a_dead_runs_daemons_and_nothing_else(tmp_path):
    ours = tmp_path / f"vsb-{DEAD}-ovs-abcd"
    other = tmp_path / "vsb-0badf0-ovs-efgh"
    for d in (ours, other):
        d.mkdir()
    daemons = [_fake_daemon(ours, "ovs-vswitchd"), _fake_daemon(ours, "ovsdb-server")]
    stranger = _fake_daemon(other, "ovs-vswitchd")
    try:
        done = OvsDpdk.cleanup_dead_run(DEAD, [tmp_path])
        for proc in daemons:
            assert proc.wait(timeout=10) == -signal.SIGTERM
        assert any("ovs-vswitchd" in line for line in done) and any(str(ours) in line for line in done)
        assert not ours.exists()
        assert other.exists() and stranger.poll() is None
        assert OvsKernel.cleanup_dead_run("not-a-run-id", [tmp_path]) == []
    finally:
        for proc in (*daemons, stranger):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
