"""The ``topology`` shapes on the real embedded testbed: p2p on four generator ports (Linux
bridge and OvS-DPDK), pvp with two lanes through testpmd, the switchless l3fwd baseline
(phy_vnf_phy) and ``--vswitch none``. Short trials at 64 B; every run must show frames
crossing every lane and every VNF (each direction's counters and each VNF's own), and
leave nothing behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from run_helpers import PVP_SEARCH, assert_reproducible_and_clean, build_plans, require, run
from vsbench.interfaces.traffic import line_rate_fps
from vsbench.system import cpu

pytestmark = pytest.mark.integration

if os.geteuid() != 0:
    pytest.skip("needs root (network namespaces, hugepages)", allow_module_level=True)

#: A continuous stream at a rate every shape here carries on the shared 2-core host.
CONT = "frame_sizes=[64];trial_duration=1;warmup_s=0;rate_fps=20000;latency.trial_duration_s=1"


def _directions_all_crossed(trial: dict, pairs: int, share: float = 0.9) -> None:
    """Every direction of every port pair sent and got (``share`` of) its frames back
    across the DUT."""
    found = {(d["tx_port"], d["rx_port"]): d for d in trial["directions"]}
    wanted = {(2 * k + i, 2 * k + 1 - i) for k in range(pairs) for i in (0, 1)}
    assert set(found) == wanted, found
    for d in found.values():
        assert d["tx_frames"] > 0 and d["rx_frames"] > 0 and d["rx_frames"] >= share * d["tx_frames"], d


def _measured(outcome) -> list[dict]:
    return [t for t in outcome.trials() if t["role"] not in ("floor", "warmup", "calibration")]


@pytest.mark.parametrize("vswitch", ["linux_bridge", "ovs_dpdk"])
def test_p2p_on_four_ports_forwards_every_pair_through_its_own_bridge(tmp_path, vswitch):
    require(("trafficgen", "trafgen"), ("vswitch", vswitch))
    outcome = run(tmp_path, build_plans("phy2phy_cont", vswitch, f"{CONT};port_pairs=2"))
    assert outcome.code == 0, outcome.console
    [test] = outcome.results()["tests"]
    assert test["switching_operations"] == 1
    assert test["topology"] == {"topology": "PHY-PHY", "vnf_count": 0, "switching_operations": 1, "port_pairs": 2}
    [fs] = test["frame_sizes"]
    # the line rate is the four directions', nominal: the testbed's veth have no speed of their own
    assert fs["nominal_line_rate_fps"] == pytest.approx(4 * line_rate_fps(10e9, 64))
    assert fs["link_speed_source"] == "nominal" and fs["link_speeds_bps"] == [10e9] * 4
    assert "veth" in fs["link_speed_reason"]
    for trial in _measured(outcome):
        _directions_all_crossed(trial, 2)
        ports = (trial["switch"].get("datapath") or {}).get("ports")
        if ports:  # the Linux bridge counts per port: each of the four DUT ports forwarded
            assert len(ports) == 4 and all(p["rx_packets"] > 0 and p["tx_packets"] > 0 for p in ports.values()), ports
    [point] = fs["points"]
    assert point["rx_fps"] > 0.9 * point["offered_load_fps"], point
    assert_reproducible_and_clean(outcome)


def _check_lanes(outcome, vnf_count: int, lanes: int) -> dict:
    """Each VNF forwarded in both directions, and every direction's loss is attributed
    stage by stage across its lane."""
    [test] = outcome.results()["tests"]
    assert test["topology"]["lanes"] == lanes and test["topology"]["vnf_count"] == vnf_count
    for trial in _measured(outcome):
        _directions_all_crossed(trial, lanes)
        vnfs = trial["vnf"]["vnfs"]
        assert len(vnfs) == vnf_count
        for vnf in vnfs:
            assert len(vnf["ports"]) == 2, vnf
            assert all(p["rx_frames"] > 0 and p["tx_frames"] > 0 for p in vnf["ports"]), vnf
        for direction in trial["vnf"]["stages"]:
            assert direction["attributed"], direction
            assert sum(s["lost_frames"] for s in direction["stages"]) == direction["lost_frames"]
    return test


def test_pvp_with_two_lanes_through_testpmd_on_ovs_dpdk(tmp_path):
    require(("trafficgen", "trafgen"), ("vswitch", "ovs_dpdk"), ("vnf", "testpmd"))
    outcome = run(tmp_path, build_plans("pvp_cont", "ovs_dpdk", f"{CONT};lanes=2"))
    assert outcome.code == 0, outcome.console
    test = _check_lanes(outcome, 2, 2)
    assert test["switching_operations"] == 2 and test["topology"]["topology"] == "2 x PHY-VNF-PHY in parallel"
    assert test["topology"]["vnf_port_kind"] == "vhostuser"
    assert_reproducible_and_clean(outcome)


def test_pvp_with_two_lanes_through_testpmd_on_the_linux_bridge(tmp_path):
    """veth ends: each testpmd in a namespace of its own (net_af_packet's fanout groups)."""
    require(("trafficgen", "trafgen"), ("vswitch", "linux_bridge"), ("vnf", "testpmd"))
    outcome = run(tmp_path, build_plans("pvp_cont", "linux_bridge", f"{CONT};lanes=2"))
    assert outcome.code == 0, outcome.console
    test = _check_lanes(outcome, 2, 2)
    assert test["topology"]["vnf_port_kind"] == "veth"
    logs = sorted(outcome.run_dir.glob("logs/*/testpmd*.log"))
    assert len(logs) == 2 and all(f"vsb-{outcome.run_id}-vnf" in log.read_text() for log in logs)
    assert_reproducible_and_clean(outcome)


@pytest.mark.long  # tools/test.sh --long: three testpmd behind the Linux bridge
def test_mixed_lanes_one_vnf_beside_a_chain_of_two(tmp_path):
    """ONP 2.1's 40 Gbps scenario 2 on four ports: lane 0 PHY-VNF-PHY, lane 1 PHY-VNF-VNF-PHY."""
    require(("trafficgen", "trafgen"), ("vswitch", "linux_bridge"), ("vnf", "testpmd"))
    outcome = run(tmp_path, build_plans("pvp_cont", "linux_bridge", f"{CONT};lane_vnfs=[1,2]"))
    assert outcome.code == 0, outcome.console
    test = _check_lanes(outcome, 3, 2)
    assert test["switching_operations"] == 2.5 and test["topology"]["lane_vnfs"] == [1, 2]
    point = test["frame_sizes"][0]["points"][0]
    assert point["switched_fps"] == pytest.approx(point["throughput_fps"] * 2.5)
    for trial in _measured(outcome):
        by_lane = {(s["tx_port"], s["rx_port"]): [h["vnf"] for h in s["stages"] if h["stage"] == "vnf"]
                   for s in trial["vnf"]["stages"]}
        assert by_lane == {(0, 1): [0], (1, 0): [0], (2, 3): [1, 2], (3, 2): [2, 1]}
    assert_reproducible_and_clean(outcome)


def test_l3fwd_without_a_switch_on_two_cores(tmp_path):
    """phy2phy_novswitch_tput: l3fwd on the testbed's links, two lcores (one per port)."""
    require(("trafficgen", "trafgen"), ("vnf", "l3fwd"))
    outcome = run(tmp_path, build_plans("phy2phy_novswitch_tput", "ovs_dpdk",
                                        "frame_sizes=[64];trial_duration=1;warmup_s=1;relative_width=0.2;"
                                        "latency.enabled=false;vnf.l3fwd.cores=2;" + PVP_SEARCH))
    assert outcome.code == 0, outcome.console
    [test] = outcome.results()["tests"]
    assert test["vswitch"] == "none" and test["vnf"] == "l3fwd" and test["deployment"] == "phy_vnf_phy"
    assert test["switching_operations"] == 0 and test["topology"]["vnf_count"] == 1
    assert [t["owner"] for t in test["cpu_plan"]["threads"] if t["role"] == "vnf"] == ["l3fwd0 lcores"]
    assert [t["cpus"] for t in test["cpu_plan"]["threads"] if t["role"] == "vnf"] == [[0, 1]]
    ndr = test["frame_sizes"][0]["points"][0]
    assert ndr["loss_ratio"] == 0.0 and ndr["throughput_fps"] > 0
    for trial in _measured(outcome):
        _directions_all_crossed(trial, 1, share=0.0)  # a search trial above the NDR may lose
        [l3fwd] = trial["vnf"]["vnfs"]
        rx = sum(p["rx_frames"] for p in l3fwd["ports"])
        assert rx >= trial["rx_frames"] > 0  # every frame the generator got back crossed l3fwd
    plugins = json.loads((outcome.run_dir / "sysinfo.json").read_text())["plugins"]
    assert {p["name"] for p in plugins} == {"trafgen", "l3fwd"}  # no switch was loaded
    [l3fwd] = [p for p in plugins if p["name"] == "l3fwd"]
    assert "-l 1,0 --main-lcore 1" in l3fwd["versions"]["command_line"]
    assert "--config '(0,0,1),(0,1,1),(1,0,0),(1,1,0)'" in l3fwd["versions"]["command_line"]
    assert l3fwd["versions"]["command_line"].count("qpairs=2") == 2
    assert_reproducible_and_clean(outcome)


@pytest.mark.long  # tools/test.sh --long: two l3fwd, each in a namespace of its own
def test_vswitch_none_runs_a_p2p_testcase_with_one_l3fwd_per_pair(tmp_path):
    require(("trafficgen", "trafgen"), ("vnf", "l3fwd"))
    outcome = run(tmp_path, build_plans("phy2phy_cont", "none", f"{CONT};port_pairs=2", vnf="l3fwd"))
    assert outcome.code == 0, outcome.console
    [test] = outcome.results()["tests"]
    assert (test["deployment"], test["vswitch"], test["vnf"]) == ("phy_vnf_phy", "none", "l3fwd")
    assert test["topology"]["vnf_count"] == 2 and test["topology"]["pairs_per_vnf"] == 1
    for trial in _measured(outcome):
        _directions_all_crossed(trial, 2)
        for vnf in trial["vnf"]["vnfs"]:
            assert all(p["rx_frames"] > 0 and p["tx_frames"] > 0 for p in vnf["ports"]), vnf
    assert_reproducible_and_clean(outcome)


def test_cores_this_host_cannot_place_are_one_line_and_nothing_is_created(tmp_path):
    require(("vnf", "l3fwd"))
    cores = len(cpu.online_cpus()) + 2
    done = subprocess.run([sys.executable, "-m", "vsbench.cli.main", "--test", "phy2phy_novswitch_tput",
                           "--results-dir", str(tmp_path), "--test-params", f"vnf.l3fwd.cores={cores}"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"vnf.l3fwd.cores={cores} needs {cores} CPUs for its lcores" in lines[0], done.stderr
    assert list(tmp_path.iterdir()) == []
