"""rule_complexity on ovs_dpdk through the whole chain (testcase, runner, p2p, trafgen,
the switch), with small rule counts and short trials: every result carries what the
switch spent (CPU, frames per core) and its PMD cache figures; a run killed with
``kill -9`` leaves daemons that the plugin's cleaner stops.

Rates on this shared 2-core machine are noise; what is checked is what must hold at any
rate: the rule set is installed in one bundle and is 1:1 with the flows (each new flow
costs exactly one upcall per direction), the PMD's counters cover every forwarded frame,
and nothing is left behind.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from run_helpers import assert_nothing_left, build_plans, run
from vsbench.runner import plugins
from vsbench.system import cleanup, commands, runstate
from vsbench_plugins.vswitch.ovs_dpdk import OvsDpdk

pytestmark = pytest.mark.integration

if os.geteuid() != 0:
    pytest.skip("needs root (network namespaces, hugepages)", allow_module_level=True)
_missing = OvsDpdk.check_prerequisites({})
if _missing:
    pytest.skip(f"missing: {_missing[0]}", allow_module_level=True)
if commands.which("trafgen") is None:
    pytest.skip("trafgen missing (apt-get install netsniff-ng)", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]
PARAMS = ("dut.rules=[64,1000];trial_duration=1;warmup_s=1;search.mode=binary;relative_width=0.2;"
          "max_load_fps=100000;latency.enabled=false")


@pytest.fixture
def state(monkeypatch):
    """A short private state dir (the OvS run dir under it must fit unix socket paths)."""
    path = Path(tempfile.mkdtemp(prefix="vsbst", dir="/run"))
    monkeypatch.setenv(runstate.STATE_DIR_ENV, str(path))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_rule_complexity_results_carry_switch_efficiency_and_pmd_figures(tmp_path, state):
    outcome = run(tmp_path, build_plans("rule_complexity", "ovs_dpdk", PARAMS))
    assert outcome.code == 0, outcome.console
    run_dir = outcome.run_dir
    results, trials = outcome.results(), outcome.trials()
    for test, rules in zip(results["tests"], (64, 1000)):
        assert test["variant"] == {"dut.rules": rules}
        [fs] = test["frame_sizes"]
        [point] = fs["points"]
        eff, dp = point["efficiency"], point["datapath"]
        assert eff["cpu_source"] == "threads" and eff["switch_cores"] > 0.2, eff
        assert eff["fps_per_core"] == pytest.approx(point["rx_fps"] / eff["switch_cores"])
        assert dp["kind"] == "userspace" and dp["rules_installed"] == 2 * rules
        pmd = dp["pmd"]
        bound = trials[point["trial_index"]]
        # every frame the generator got back went through the PMD's lookups (probes: none)
        lookups = pmd["simple_match_hits"] + pmd["emc_hits"] + pmd["smc_hits"] + pmd["megaflow_hits"] + pmd["upcalls"]
        assert lookups >= bound["rx_frames"] > 0
        own = [t for t in trials if t["plan_index"] == test["plan_index"]]
        first = [t for t in own if t["role"] in ("calibration", "warmup")]
        assert [t["role"] for t in first][-1:] == ["warmup"]
        # the generator's calibration burst (when it has one) and the warm-up each send every
        # flow: each (flow, direction) misses once, in the first of them, and gets its megaflow
        assert sum(t["switch"]["datapath"]["pmd"]["upcalls"] for t in first) >= 2 * rules
        for t in own:
            assert t["switch"]["cpu_s"] >= 0 and t["switch"]["elapsed_s"] > 0
            if t["valid"] and t["role"] == "search" and t["rx_frames"] == t["tx_frames"]:
                assert t["switch"]["datapath"]["pmd"]["upcalls"] <= 2  # flows stay cached
        starved = any(t["switch"]["warnings"] for t in own)
        assert starved == any(n.startswith("CPU oversubscribed (busy_poll_starved)") for n in fs["notes"])
    ctl_logs = list((run_dir / "logs").glob("*/ovs/ovs-ctl.log"))
    assert len(ctl_logs) == 2
    for log in ctl_logs:
        text = log.read_text()
        assert text.count("--bundle") >= 1 and "rules-" in text
    assert_nothing_left(outcome.run_id)


def test_a_kill_9_run_is_stopped_by_the_ovs_cleaner(tmp_path, state):
    """vsbench killed while ovs-vswitchd-dpdk spins: cleanup with the plugins' cleaners
    ends the daemons by pid file and gives the hugepages back."""
    results = tmp_path / "results"
    proc = subprocess.Popen(
        [str(ROOT / ".venv" / "bin" / "vsbench"), "--test", "rule_complexity", "--vswitch", "ovs_dpdk",
         "--results-dir", str(results), "--test-params",
         "dut.rules=[1000];trial_duration=30;warmup_s=1;search.mode=binary;latency.enabled=false"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=os.environ.copy())
    run_id, pidfile = None, None
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and pidfile is None:
            assert proc.poll() is None, "vsbench ended before it could be killed"
            runs = list(results.iterdir()) if results.exists() else []
            if runs:
                run_id = runs[0].name.rsplit("-", 1)[1]
                found = [*state.glob(f"{run_id}/p0/vsb-{run_id}-ovs-*/ovs-vswitchd.pid"),
                         *Path(tempfile.gettempdir()).glob(f"vsb-{run_id}-ovs-*/ovs-vswitchd.pid")]
                pidfile = found[0] if found else None
            time.sleep(0.2)
        assert pidfile is not None, "ovs-vswitchd never started"
        time.sleep(3)  # let it reach the trials
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    vswitchd = int(pidfile.read_text())
    assert Path(f"/proc/{vswitchd}").exists()
    report = cleanup.cleanup(run_ids=[run_id], plugin_cleaners=plugins.dead_run_cleaners())
    text = report.summary()
    assert f"vswitch ovs_dpdk: ended ovs-vswitchd pid {vswitchd} (run {run_id})" in text, text
    assert "released" in text and "hugepages" in text  # given back, by the record the run left
    assert not report.failed, text
    state_of = (lambda p: Path(f"/proc/{p}/stat").read_text().split(") ")[1][0]
                if Path(f"/proc/{p}").exists() else None)
    assert state_of(vswitchd) in (None, "Z")
    assert_nothing_left(run_id)
    assert cleanup.cleanup(run_ids=[run_id], plugin_cleaners=plugins.dead_run_cleaners()).removed == []
