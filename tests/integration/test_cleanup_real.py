"""cleanup against real namespaces, veths, processes and directories of a dead run."""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from vsbench.system import cleanup, commands, runstate
from vsbench.system.naming import new_run_id

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root to create network namespaces"),
    pytest.mark.skipif(commands.which("ip") is None, reason="needs iproute2 (apt-get install iproute2)"),
]


def _alive(pid):
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat[stat.rindex(")") + 2:].split()[0] != "Z"


@pytest.fixture
def dead_run(tmp_path):
    """The leftovers of a run killed with -9: a netns with a process, a veth, directories."""
    run_id = new_run_id()
    ns = f"vsb-{run_id}-dut"
    state = tmp_path / "state"
    (state / run_id / "p0").mkdir(parents=True)
    (state / f"{run_id}.lock").write_text("{}")
    ovs_dir = Path(tempfile.mkdtemp(prefix=f"vsb-{run_id}-ovs-"))
    commands.run(["ip", "netns", "add", ns])
    commands.run(["ip", "link", "add", f"vsb{run_id}x0", "type", "veth", "peer", "name", f"vsb{run_id}x1"])
    inside = subprocess.Popen(["ip", "netns", "exec", ns, "sleep", "600"], start_new_session=True)
    outside = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", f"--db={ovs_dir}/db.sock"],
                               start_new_session=True)
    commands.wait_for(lambda: inside.pid in cleanup.netns_pids(ns), 10, what="sleep inside the netns")
    commands.wait_for(lambda: str(ovs_dir) in " ".join(getattr(cleanup.read_process(outside.pid), "argv", ())), 10,
                      what="the process outside the netns with the run's directory on its command line")
    yield {"run_id": run_id, "ns": ns, "state": state, "ovs_dir": ovs_dir, "procs": (inside, outside)}
    for proc in (inside, outside):
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    subprocess.run(["ip", "netns", "delete", ns], capture_output=True)
    subprocess.run(["ip", "link", "delete", f"vsb{run_id}x0"], capture_output=True)
    shutil.rmtree(ovs_dir, ignore_errors=True)


def test_dead_run_is_removed_completely_and_a_second_pass_finds_nothing(dead_run):
    run_id, state = dead_run["run_id"], dead_run["state"]
    report = cleanup.cleanup(state_dir=state, run_ids={run_id})
    assert not report.failed, report.summary()
    kinds = {i.kind for i in report.removed}
    assert {"process", "netns", "link", "directory", "lock"} <= kinds
    for proc in dead_run["procs"]:
        try:
            proc.wait(timeout=10)  # ended by pid (our child, so reap it)
        except subprocess.TimeoutExpired:  # once in CI: say what cleanup saw and did
            pytest.fail(f"pid {proc.pid} ({proc.args}) still runs after cleanup; it removed: "
                        + "; ".join(f"{i.kind} {i.name} {i.detail}" for i in report.removed))
    assert dead_run["ns"] not in os.listdir("/run/netns")
    assert not Path(f"/sys/class/net/vsb{run_id}x0").exists()
    assert not dead_run["ovs_dir"].exists() and list(state.iterdir()) == []
    again = cleanup.cleanup(state_dir=state, run_ids={run_id})
    assert again.removed == [] and again.summary() == "nothing to clean up"


def test_a_live_run_is_left_alone(dead_run):
    run_id, state = dead_run["run_id"], dead_run["state"]
    (state / f"{run_id}.lock").unlink()
    claim = runstate.claim(run_id, base=state)
    try:
        report = cleanup.cleanup(state_dir=state, run_ids={run_id})
        assert report.removed == [] and run_id in report.live_runs
        assert all(p.poll() is None for p in dead_run["procs"])
        assert dead_run["ns"] in os.listdir("/run/netns")
    finally:
        claim.release()


def test_dry_run_touches_nothing(dead_run):
    report = cleanup.cleanup(dry_run=True, state_dir=dead_run["state"], run_ids={dead_run["run_id"]})
    assert report.removed and "would remove netns" in report.summary()
    assert all(p.poll() is None for p in dead_run["procs"])
    assert dead_run["ns"] in os.listdir("/run/netns")
