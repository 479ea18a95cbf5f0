"""A VNF behind the switch's VXLAN tunnel endpoints, and rule sets through a VNF, on the real
embedded testbed.

pvp_vxlan: trafgen sends VXLAN into the switch on both ports, the switch (a private
OvS-DPDK with native userspace tunnelling, or a Linux bridge with vxlan devices)
decapsulates, testpmd forwards the inner frames (vhost-user / veth), the switch
encapsulates them and sends VXLAN back. A short fixed-rate trial must arrive loss-free with
every frame verified by the generator (outer headers of the receiving port's tunnel, inner
headers, payload) and every frame counted by testpmd. pvp and pvp_vxlan with rule sets
(OvS-DPDK): the N rules of each direction on both switch passes, and a flow without its
rule lost at the first pass (testpmd never sees it). Short trials, small counts; the runs
must leave nothing behind.
"""

from __future__ import annotations

import dataclasses
import os

import pytest

from run_helpers import (
    assert_reproducible_and_clean, build_plans, only_its_sending_was_off, require, run, run_fixed_rate,
)

pytestmark = pytest.mark.integration

if os.geteuid() != 0:
    pytest.skip("needs root (network namespaces, hugepages)", allow_module_level=True)

CONT = "frame_sizes=[64];type=continuous;trial_duration=1;warmup_s=1;rate_fps=10000;latency.enabled=false"


def _vnf_saw_every_frame(point: dict, trial: dict) -> None:
    """testpmd's own counters: every frame the generator got back crossed it, both ways."""
    [vnf] = point["vnf"]["vnfs"]
    assert vnf["index"] == 0
    for direction in point["vnf"]["stages"]:
        assert direction["attributed"], direction
        [hop] = [s for s in direction["stages"] if s["stage"] == "vnf"]
        assert hop["in_frames"] >= direction["rx_frames"] > 0 and hop["out_frames"] >= direction["rx_frames"]
    assert sum(d["rx_frames"] for d in point["vnf"]["stages"]) == trial["rx_frames"]


@pytest.mark.parametrize("vswitch, port_kind", [("ovs_dpdk", "vhostuser"), ("linux_bridge", "veth")])
def test_vxlan_in_through_the_vnf_and_vxlan_out_every_frame_verified(tmp_path, vswitch, port_kind):
    require(("trafficgen", "trafgen"), ("vswitch", vswitch), ("vnf", "testpmd"))
    outcome = run_fixed_rate(tmp_path, build_plans("pvp_vxlan_tput", vswitch, f"{CONT};flows=4"))
    assert outcome.code == 0, outcome.console
    [test] = outcome.results()["tests"]
    topology = test["topology"]
    assert test["deployment"] == "pvp_vxlan" and test["switching_operations"] == 2
    assert topology["vnf_port_kind"] == port_kind and topology["encapsulation"] == "vxlan"
    assert [(v["port"], v["vni"], v["dut_ip"]) for v in topology["vteps"]] == [
        (0, 99, "198.18.0.254"), (1, 100, "198.18.1.254")]
    [fs] = test["frame_sizes"]
    assert (fs["frame_size_bytes"], fs["outer_frame_size_bytes"], fs["rx_wrong_frames"]) == (64, 114, 0), fs
    [point] = fs["points"]
    [trial] = [t for t in outcome.trials() if t["role"] == "continuous"]
    assert point["loss_ratio"] == 0.0 and (point["valid"] or only_its_sending_was_off(trial)), point
    assert trial["tx_frames"] == trial["rx_frames"] == 10000 and trial["rx_wrong_frames"] == 0
    # each direction arrived encapsulated by the receiving port's VTEP, outer and inner as sent
    directions = trial["generator_stats"]["directions"]
    assert [(d["rx_verified_frames"], d["rx_wrong_frames"]) for d in directions] == [(5000, 0), (5000, 0)]
    _vnf_saw_every_frame(point, trial)
    assert_reproducible_and_clean(outcome)


def test_frames_with_another_vni_than_the_receiving_ports_are_counted_wrong(tmp_path, monkeypatch):
    """The generator sends each port's VNI but expects, on each receiving port, one more than
    that port's VTEP uses: every frame crosses the VNF and arrives, none is counted received,
    each is counted wrong for its VNI."""
    from vsbench_plugins.trafficgen.trafgen import verify

    require(("trafficgen", "trafgen"), ("vswitch", "linux_bridge"), ("vnf", "testpmd"))
    real_expected = verify.expected_frame

    def expect_another_vni(fields, plan, direction, tunnel):
        return real_expected(fields, plan, direction, tunnel and dataclasses.replace(tunnel, vni=tunnel.vni + 1))

    monkeypatch.setattr(verify, "expected_frame", expect_another_vni)
    outcome = run(tmp_path, build_plans("pvp_vxlan_tput", "linux_bridge", CONT))
    assert outcome.code == 0, outcome.console
    [trial] = [t for t in outcome.trials() if t["role"] == "continuous"]
    assert trial["rx_frames"] == 0 and trial["rx_wrong_frames"] == trial["tx_frames"] == 10000
    whys = {d["rx_iface"][-3:]: {s["why"] for s in d["rx_wrong_samples"]} for d in trial["generator_stats"]["directions"]}
    # direction 0 arrives on port 1 from its VTEP (VNI 100), direction 1 on port 0 (VNI 99)
    assert whys == {"tg1": {"VNI is 0x6400, expected 0x6500"}, "tg0": {"VNI is 0x6300, expected 0x6400"}}, whys
    [point] = outcome.results()["tests"][0]["frame_sizes"][0]["points"]
    for direction in point["vnf"]["stages"]:  # testpmd forwarded every one of them
        [vnf] = [s for s in direction["stages"] if s["stage"] == "vnf"]
        assert vnf["in_frames"] == vnf["out_frames"] == 5000
    assert_reproducible_and_clean(outcome)


RULES = 64


@pytest.mark.parametrize("test, size", [("pvp_rule_complexity", 86), ("pvp_vxlan_rule_complexity", 130)])
def test_rules_on_both_switch_passes_and_a_flow_without_its_rule_is_lost_before_the_vnf(tmp_path, monkeypatch, test, size):
    """N rules per direction on each of the two bridges; the generator is made to send 2N
    flows: the N without a rule are dropped by the first bridge they enter, testpmd never
    sees them, and what arrives is exactly the ruled half, each frame right."""
    from vsbench.deployment import pvp

    require(("trafficgen", "trafgen"), ("vswitch", "ovs_dpdk"), ("vnf", "testpmd"))
    real_profile = pvp.VnfChain.profile

    def twice_the_flows(self, profile):
        return dataclasses.replace(real_profile(self, profile), flows=2 * RULES)

    monkeypatch.setattr(pvp.VnfChain, "profile", twice_the_flows)
    params = (f"{CONT};frame_sizes=[{size}];rate_fps=12800;dut.rules=[{RULES}];"
              "trafficgen.trafgen.engine=trafgen")  # 128 flows fit the engine's one-byte counters
    outcome = run(tmp_path, build_plans(test, "ovs_dpdk", params))
    assert outcome.code == 0, outcome.console
    [result] = outcome.results()["tests"]
    [fs] = result["frame_sizes"]
    [point] = fs["points"]
    assert point["datapath"]["rules_installed"] == 2 * 2 * RULES  # 2 directions x 2 bridges
    [trial] = [t for t in outcome.trials() if t["role"] == "continuous"]
    # 6400 frames per direction, 50 cycles of its 128 flows: the 64 unruled flows' half is lost
    assert trial["tx_frames"] == 12800 and trial["rx_frames"] == 6400, trial
    assert (trial.get("rx_wrong_frames") or 0) == 0
    for direction in point["vnf"]["stages"]:
        [vnf] = [s for s in direction["stages"] if s["stage"] == "vnf"]
        assert vnf["in_frames"] == direction["rx_frames"] == 3200, direction  # lost before the VNF
        first_pass = direction["stages"][0]
        assert first_pass["stage"] != "vnf" and first_pass["lost_frames"] == 3200, direction
    assert_reproducible_and_clean(outcome)


@pytest.mark.long  # tools/test.sh --long: two short NDR searches with 1000 rules through the VNF
@pytest.mark.parametrize("test", ["pvp_rule_complexity", "pvp_vxlan_rule_complexity"])
def test_rule_complexity_through_the_vnf_searches_an_ndr(tmp_path, test):
    require(("trafficgen", "trafgen"), ("vswitch", "ovs_dpdk"), ("vnf", "testpmd"))
    params = ("frame_sizes=[64];trial_duration=1;warmup_s=1;search.mode=binary;relative_width=0.25;"
              "max_load_fps=100000;latency.enabled=false;dut.rules=[1000]")
    outcome = run(tmp_path, build_plans(test, "ovs_dpdk", params))
    assert outcome.code == 0, outcome.console
    [result] = outcome.results()["tests"]
    assert result["variant"] == {"dut.rules": 1000}
    [fs] = result["frame_sizes"]
    [point] = fs["points"]
    assert point["datapath"]["rules_installed"] == 4000 and point["throughput_fps"] > 0
    assert (fs.get("rx_wrong_frames") or 0) == 0
    trials = outcome.trials()
    first = [t for t in trials if t["role"] in ("calibration", "warmup")]
    assert [t["role"] for t in first][-1:] == ["warmup"]
    # each flow of each direction misses once on each of the two bridges (its rule matches its
    # addresses exactly, so its megaflow is its own) before the search starts
    assert sum(t["switch"]["datapath"]["pmd"]["upcalls"] for t in first) >= 2 * 2 * 1000
    assert_reproducible_and_clean(outcome)
