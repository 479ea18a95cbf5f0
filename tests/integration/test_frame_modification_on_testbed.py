"""Frame modification on the real embedded testbed: every kind through a real switch,
verified at the receiver.

trafgen sends 64 B frames (4 flows, both directions) at a fixed low rate through a private
OvS-DPDK whose forwarding flows modify them (``dut.frame_modification``), or through a
Linux bridge whose VLAN filtering pushes or pops a tag. A frame counts as received only
when it arrives modified as the setting says (trafgen's packet-socket BPF on each receiving
port, the tag read from the packet's metadata): every kind must arrive with every frame
received and verified and none wrong. And the check must be able to fail: with the switch's
modification taken away (plain forwarding) while the generator still expects it, every
frame arrives and every one is counted wrong, with the reason.
"""

from __future__ import annotations

import os
from io import StringIO

import pytest
from rich.console import Console

from run_helpers import (
    assert_reproducible_and_clean, build_plans, only_its_sending_was_off, require, run, run_fixed_rate,
)
from vsbench.runner.run import run_plans

pytestmark = pytest.mark.integration

if os.geteuid() != 0:
    pytest.skip("needs root (network namespaces, hugepages)", allow_module_level=True)

PARAMS = ("frame_sizes=[64];type=continuous;trial_duration=1;warmup_s=1;rate_fps=10000;"
          "latency.enabled=false;flows=4")
TAGGED = ";traffic.fields.vlan_id=10"

#: Every kind with parameters that change what the generator sends (and what it sends).
KINDS = {
    "vlan_push": "{kind: vlan_push, vlan_id: 100, vlan_pcp: 5}",
    "vlan_pop": "{kind: vlan_pop}" + TAGGED,
    "vlan_rewrite": "{kind: vlan_rewrite, vlan_id: 200, vlan_pcp: 3}" + TAGGED,
    "mpls_push": "{kind: mpls_push, mpls_label: 1000}",
    "mac_rewrite": "{kind: mac_rewrite, src_mac: '02:00:00:00:00:09', dst_mac: '02:00:00:00:00:0a'}",
    "dscp": "{kind: dscp, dscp: 46}",
    "ttl_set": "{kind: ttl_set, ttl: 17}",
    "ttl_decrement": "{kind: ttl_decrement}",
    "ip_rewrite": "{kind: ip_rewrite, src_ip: 192.0.2.1, dst_ip: 192.0.2.2}",
    "l4_rewrite": "{kind: l4_rewrite, src_port: 5000, dst_port: 6000}",
}
#: The Linux bridge pushes (PCP 0) and pops by VLAN filtering, where the kernel has it.
BRIDGE_KINDS = {"vlan_push": "{kind: vlan_push, vlan_id: 100}", "vlan_pop": KINDS["vlan_pop"]}


def _params(vswitch: str, kind: str) -> str:
    setting = (BRIDGE_KINDS if vswitch == "linux_bridge" else KINDS)[kind]
    return f"{PARAMS};dut.frame_modification={setting}"


@pytest.mark.parametrize("vswitch, kind", [("ovs_dpdk", kind) for kind in KINDS])
def test_every_frame_arrives_modified_and_is_counted(tmp_path, vswitch, kind):
    _modified_run(tmp_path, vswitch, kind)


@pytest.mark.parametrize("kind", sorted(BRIDGE_KINDS))
def test_the_linux_bridge_pushes_and_pops_a_vlan_or_says_why_not_before_creating_anything(tmp_path, kind):
    """Where the kernel's bridge filters VLANs, every frame arrives tagged (untagged) and
    verified; where it does not (this testbed's kernel: CONFIG_BRIDGE_VLAN_FILTERING off,
    and no 8021q or tc actions either) the run is refused with that reason, exit 2,
    nothing created."""
    from vsbench_plugins.vswitch.linux_bridge import vlan_filtering_missing

    require(("trafficgen", "trafgen"), ("vswitch", "linux_bridge"))
    if vlan_filtering_missing() is None:
        _modified_run(tmp_path, "linux_bridge", kind)
        return
    out = StringIO()
    code = run_plans(build_plans("phy2phy_cont", "linux_bridge", _params("linux_bridge", kind)), tmp_path,
                     Console(file=out, width=400))
    console = " ".join(out.getvalue().split())
    assert code == 2, console
    assert "bridge has no VLAN filtering" in console and "CONFIG_BRIDGE_VLAN_FILTERING" in console, console
    assert list(tmp_path.iterdir()) == []  # no run directory: refused before anything was created


def _modified_run(tmp_path, vswitch: str, kind: str) -> None:
    require(("trafficgen", "trafgen"), ("vswitch", vswitch))
    outcome = run_fixed_rate(tmp_path, build_plans("phy2phy_cont", vswitch, _params(vswitch, kind)))
    assert outcome.code == 0, outcome.console
    [result] = outcome.results()["tests"]
    assert result["topology"]["frame_modification"]["kind"] == kind
    [fs] = result["frame_sizes"]
    delta = {"vlan_push": 4, "vlan_pop": -4, "mpls_push": 4}.get(kind, 0)
    assert (fs["frame_size_bytes"], fs["received_frame_size_bytes"], fs["rx_wrong_frames"]) == (64, 64 + delta, 0), fs
    [point] = fs["points"]
    [trial] = [t for t in outcome.trials() if t["role"] == "continuous"]
    assert point["loss_ratio"] == 0.0 and (point["valid"] or only_its_sending_was_off(trial)), point
    assert trial["tx_frames"] == trial["rx_frames"] == 10000 and trial["rx_wrong_frames"] == 0, trial
    directions = trial["generator_stats"]["directions"]
    assert len(directions) == 2
    assert sum(d["rx_verified_frames"] for d in directions) == 10000
    assert all(d["rx_wrong_frames"] == 0 and d["rx_verified_frames"] > 0 for d in directions), directions
    assert_reproducible_and_clean(outcome)


def test_an_unmodified_delivery_is_counted_wrong_not_received(tmp_path, monkeypatch):
    """The generator expects DSCP 46 while the switch forwards plainly: every frame
    arrives, none is right, and the samples say why."""
    from vsbench_plugins.vswitch.ovs import switch

    require(("trafficgen", "trafgen"), ("vswitch", "ovs_dpdk"))
    monkeypatch.setattr(switch, "modification_flow", lambda mod: ("", ""))
    outcome = run(tmp_path, build_plans("phy2phy_cont", "ovs_dpdk", _params("ovs_dpdk", "dscp")))
    assert outcome.code == 0, outcome.console
    [fs] = outcome.results()["tests"][0]["frame_sizes"]
    [trial] = [t for t in outcome.trials() if t["role"] == "continuous"]
    assert trial["rx_frames"] == 0 and trial["rx_wrong_frames"] == trial["tx_frames"] == 10000, trial
    for direction in trial["generator_stats"]["directions"]:
        assert direction["rx_wrong_samples"] and all(
            "IPv4 TOS (DSCP) is 0x0, expected 0xb8" in s["why"] for s in direction["rx_wrong_samples"])
    assert fs["rx_wrong_frames"] >= 10000
    assert_reproducible_and_clean(outcome)
