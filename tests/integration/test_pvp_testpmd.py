"""The PVP family on the real embedded testbed: trafgen -> switch -> testpmd -> switch -> trafgen.

OvS-DPDK with testpmd on vhost-user ports (net_virtio_user), and the Linux bridge with
testpmd on veth pairs (net_af_packet). Short trials, 64 B. Each run must report the VNF's
own counters beside the generator's with the loss attributed per stage, carry the topology,
its switching operations and -- on a 2-core machine -- the oversubscription flag, and leave
nothing behind (namespaces, processes, vhost-user sockets, hugepage files and pages, DPDK
runtime directories) on success, on failure and on Ctrl-C.
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

from run_helpers import PVP_SEARCH, assert_nothing_left, assert_reproducible_and_clean, build_plans, require, run
from vsbench.system import cpu

pytestmark = pytest.mark.integration

if os.geteuid() != 0:
    pytest.skip("needs root (network namespaces, hugepages)", allow_module_level=True)

SHORT = "frame_sizes=[64];trial_duration=2;warmup_s=1"
HUGEPAGES = Path("/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages")


def _two_cores() -> bool:
    return len(cpu.online_cpus()) <= 2


def _check_vnf_run(outcome, deployment: str, vnf_count: int, switching_operations: int,
                   pmd: bool = True) -> dict:
    """``pmd``: the switch busy-polls too (OvS-DPDK), so on 2 cores the plan is oversubscribed;
    a kernel bridge forwards in softirq and only testpmd and the generator poll."""
    results = outcome.results()
    [test] = results["tests"]
    assert test["deployment"] == deployment and test["vnf"] == "testpmd"
    assert test["switching_operations"] == switching_operations
    assert test["topology"]["vnf_count"] == vnf_count
    assert test["cpu_plan"]["busy_pollers"] == 1 + vnf_count + (1 if pmd else 0)
    assert test["cpu_oversubscribed"] is test["cpu_plan"]["oversubscribed"]
    if _two_cores() and pmd:
        assert test["cpu_oversubscribed"] is True
        assert any(n.startswith("CPU oversubscribed") for n in test["notes"])
    [fs] = test["frame_sizes"]
    assert fs["status"] == "complete", fs
    point = fs["points"][0]
    if test["cpu_oversubscribed"]:
        assert point["cpu_oversubscribed"] is True
    assert point["switched_fps"] == pytest.approx(point["throughput_fps"] * switching_operations)
    vnf = point["vnf"]
    assert [v["index"] for v in vnf["vnfs"]] == list(range(vnf_count))
    # the VNFs forwarded the frames the generator saw arrive: every received frame crossed them
    for direction in vnf["stages"]:
        assert direction["attributed"], direction
        assert sum(s["lost_frames"] for s in direction["stages"]) == direction["lost_frames"]
        vnf_stages = [s for s in direction["stages"] if s["stage"] == "vnf"]
        assert len(vnf_stages) == len(direction["stages"]) // 2
        assert all(s["out_frames"] >= direction["rx_frames"] for s in vnf_stages)
    assert any(t["owner"].startswith("vnf") for t in point["thread_cpu"])
    trials = outcome.trials()
    assert all(len(t["vnf"]["vnfs"]) == vnf_count for t in trials if t["role"] != "floor")
    sysinfo = json.loads((outcome.run_dir / "sysinfo.json").read_text())
    testpmd = [p for p in sysinfo["plugins"] if p["name"] == "testpmd"]
    assert len(testpmd) == vnf_count
    assert "--no-pci" in testpmd[0]["versions"]["command_line"]
    assert testpmd[0]["versions"]["dpdk"].startswith("DPDK")
    return test


def test_pvp_tput_ovs_dpdk_testpmd(tmp_path):
    require(("trafficgen", "trafgen"), ("vswitch", "ovs_dpdk"), ("vnf", "testpmd"))
    pages = int(HUGEPAGES.read_text())
    outcome = run(tmp_path, build_plans("pvp_tput", "ovs_dpdk",
                                        "frame_sizes=[64];trial_duration=1;warmup_s=1;relative_width=0.2;"
                                        "latency.enabled=false;" + PVP_SEARCH))
    assert outcome.code == 0, outcome.console
    test = _check_vnf_run(outcome, "pvp", 1, 2)
    assert test["topology"]["vnf_port_kind"] == "vhostuser"
    ndr = test["frame_sizes"][0]["points"][0]
    assert ndr["loss_ratio"] == 0.0 and ndr["throughput_fps"] > 0
    # testpmd's own counters beside the generator's, as the user sees them
    assert "vnf testpmd#0: rx" in outcome.console and "frames lost: switch passes" in outcome.console
    assert_reproducible_and_clean(outcome)
    assert int(HUGEPAGES.read_text()) == pages


@pytest.mark.long  # tools/test.sh --long (CI runs it after the test command): see setup.cfg
def test_pvvp_pvpv_and_multiport_cont_ovs_dpdk(tmp_path):
    require(("trafficgen", "trafgen"), ("vswitch", "ovs_dpdk"), ("vnf", "testpmd"))
    params = "frame_sizes=[64];trial_duration=2;warmup_s=0;rate_fps=20000;latency.trial_duration_s=1"
    outcome = run(tmp_path / "pvvp", build_plans("pvvp_cont", "ovs_dpdk", params))
    assert outcome.code == 0, outcome.console
    _check_vnf_run(outcome, "pvvp", 2, 3)
    assert_reproducible_and_clean(outcome)
    outcome = run(tmp_path / "pvpv", build_plans("pvpv_cont", "ovs_dpdk", params))
    assert outcome.code == 0, outcome.console
    test = _check_vnf_run(outcome, "pvpv", 2, 2)
    stages = test["frame_sizes"][0]["points"][0]["vnf"]["stages"]
    assert sorted((d["tx_port"], d["rx_port"]) for d in stages) == [(0, 1), (1, 0), (2, 3), (3, 2)]
    assert_reproducible_and_clean(outcome)
    # the multi-port PVP: the same four directions through one 4-port testpmd
    outcome = run(tmp_path / "multiport", build_plans("pvp_tput_multiport", "ovs_dpdk",
                                                      f"{params};traffic.type=continuous"))
    assert outcome.code == 0, outcome.console
    test = _check_vnf_run(outcome, "pvp_multiport", 1, 2)
    point = test["frame_sizes"][0]["points"][0]
    assert {(h["in_port"], h["out_port"]) for d in point["vnf"]["stages"] for h in d["stages"] if h["stage"] == "vnf"} \
        == {(0, 1), (1, 0), (2, 3), (3, 2)}
    assert_reproducible_and_clean(outcome)


def test_pvp_cont_testpmd_as_vhost_user_server_in_macswap_mode(tmp_path):
    """testpmd creates the sockets (virtio-user server mode), OvS connects as a client
    (dpdkvhostuserclient); macswap rewrites both MACs and OvS's port flows still deliver."""
    require(("trafficgen", "trafgen"), ("vswitch", "ovs_dpdk"), ("vnf", "testpmd"))
    outcome = run(tmp_path, build_plans(
        "pvp_cont", "ovs_dpdk", "frame_sizes=[64];trial_duration=1;warmup_s=1;rate_fps=20000;latency.trial_duration_s=1;"
                                "vnf.testpmd.vhost_server=true;vnf.testpmd.forward_mode=macswap"))
    assert outcome.code == 0, outcome.console
    test = _check_vnf_run(outcome, "pvp", 1, 2)
    point = test["frame_sizes"][0]["points"][0]
    assert point["rx_fps"] > 0.9 * point["offered_load_fps"], point
    log = next(outcome.run_dir.glob("logs/*/testpmd0.log")).read_text()
    assert "server=1" in log and "macswap packet forwarding" in log
    assert_reproducible_and_clean(outcome)


def test_pvp_cont_linux_bridge_on_veth(tmp_path):
    require(("trafficgen", "trafgen"), ("vswitch", "linux_bridge"), ("vnf", "testpmd"))
    outcome = run(tmp_path, build_plans("pvp_cont", "linux_bridge",
                                        "frame_sizes=[64];trial_duration=1;warmup_s=1;rate_fps=20000;latency.trial_duration_s=1"))
    assert outcome.code == 0, outcome.console
    test = _check_vnf_run(outcome, "pvp", 1, 2, pmd=False)
    assert test["topology"]["vnf_port_kind"] == "veth"
    assert test["frame_sizes"][0]["points"][0]["rx_fps"] > 0
    assert_reproducible_and_clean(outcome)


def test_a_testpmd_that_fails_to_start_leaves_nothing(tmp_path):
    require(("trafficgen", "trafgen"), ("vswitch", "ovs_dpdk"), ("vnf", "testpmd"))
    pages = int(HUGEPAGES.read_text())
    outcome = run(tmp_path, build_plans("pvp_cont", "ovs_dpdk", f"{SHORT};vnf.testpmd.start_timeout_s=0.01"))
    assert outcome.code == 1
    [test] = outcome.results()["tests"]
    assert test["status"] == "failed" and "testpmd" in test["error"] and "Traceback" not in outcome.console
    assert_nothing_left(outcome.run_id)
    assert int(HUGEPAGES.read_text()) == pages


def test_ctrl_c_during_a_pvp_trial_tears_everything_down(tmp_path):
    require(("trafficgen", "trafgen"), ("vswitch", "ovs_dpdk"), ("vnf", "testpmd"))
    pages = int(HUGEPAGES.read_text())
    proc = subprocess.Popen([sys.executable, "-m", "vsbench.cli.main", "--test", "pvp_cont", "--vswitch", "ovs_dpdk",
                             "--results-dir", str(tmp_path), "--test-params",
                             "frame_sizes=[64];trial_duration=30;warmup_s=1;rate_fps=20000"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 120
        trials = None
        while time.monotonic() < deadline and proc.poll() is None:
            found = list(tmp_path.glob("*/trials.jsonl"))
            if found and found[0].read_text().count("\n") >= 1:  # warm-up done: the 30 s trial runs
                trials = found[0]
                break
            time.sleep(0.2)
        assert trials is not None, "the run never reached its first trial"
        time.sleep(1)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, out
    run_dir = trials.parent
    assert json.loads((run_dir / "results.json").read_text())["status"] == "interrupted"
    assert_nothing_left(run_dir.name.rsplit("-", 1)[1])
    assert int(HUGEPAGES.read_text()) == pages
