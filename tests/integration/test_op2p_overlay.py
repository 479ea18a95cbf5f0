"""op2p on the real embedded testbed: VXLAN through the switch as tunnel endpoint.

trafgen sends VXLAN into the switch's underlay port (decap) or plain frames into its plain
port (encap), with 4 inner flows; the switch is a private OvS-DPDK (native userspace
tunnelling) or a Linux bridge with a vxlan device. A short fixed-rate trial must arrive
loss-free with every received frame verified (outer and inner headers, payload), and the
results must say the inner and outer frame sizes. A DUT that encapsulates with another
VNI than the generator expects must show up as frames delivered wrong, not as received.
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

PARAMS = "frame_sizes=[64];type=continuous;trial_duration=1;warmup_s=1;rate_fps=10000;latency.enabled=false;flows=4"


@pytest.mark.parametrize("vswitch", ["linux_bridge", "ovs_dpdk"])
@pytest.mark.parametrize("test", ["op2p_tput_encap", "op2p_tput_decap"])
def test_overlay_forwards_and_every_frame_is_verified(tmp_path, vswitch, test):
    require(("trafficgen", "trafgen"), ("vswitch", vswitch))
    outcome = run_fixed_rate(tmp_path, build_plans(test, vswitch, PARAMS))
    assert outcome.code == 0, outcome.console
    [result] = outcome.results()["tests"]
    assert result["topology"]["encapsulation"] == "vxlan"
    assert result["topology"]["operation"] == test.rsplit("_", 1)[1]
    [fs] = result["frame_sizes"]
    assert (fs["frame_size_bytes"], fs["outer_frame_size_bytes"], fs["rx_wrong_frames"]) == (64, 114, 0), fs
    [point] = fs["points"]
    [trial] = [t for t in outcome.trials() if t["role"] == "continuous"]
    assert point["loss_ratio"] == 0.0 and (point["valid"] or only_its_sending_was_off(trial)), point
    [direction] = trial["generator_stats"]["directions"]
    assert direction["rx_verified_frames"] == trial["tx_frames"] == 10000
    assert direction["rx_wrong_frames"] == 0 and trial["rx_wrong_frames"] == 0
    assert_reproducible_and_clean(outcome)


def test_frames_with_a_wrong_vni_are_counted_wrong_not_received(tmp_path, monkeypatch):
    """The generator expects VNI 100 while the switch encapsulates with 99: every frame
    arrives, none is right."""
    from vsbench.deployment import op2p

    require(("trafficgen", "trafgen"), ("vswitch", "linux_bridge"))
    real_profile = op2p.Op2p.profile

    def other_vni(self, profile):
        out = real_profile(self, profile)
        return dataclasses.replace(out, tunnel=dataclasses.replace(out.tunnel, vni=out.tunnel.vni + 1))

    monkeypatch.setattr(op2p.Op2p, "profile", other_vni)
    outcome = run(tmp_path, build_plans("op2p_tput_encap", "linux_bridge", PARAMS))
    assert outcome.code == 0, outcome.console
    [fs] = outcome.results()["tests"][0]["frame_sizes"]
    [trial] = [t for t in outcome.trials() if t["role"] == "continuous"]
    assert trial["rx_frames"] == 0 and trial["rx_wrong_frames"] == trial["tx_frames"] == 10000
    [direction] = trial["generator_stats"]["directions"]
    assert direction["rx_wrong_samples"] and all("VNI is 0x6300, expected 0x6400" in s["why"]
                                                 for s in direction["rx_wrong_samples"])
    assert fs["rx_wrong_frames"] >= 10000 and any("arrived other than" in n for n in fs["notes"])
    assert_reproducible_and_clean(outcome)
