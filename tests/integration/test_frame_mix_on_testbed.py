"""IMIX and ``--rate`` on the real embedded testbed (trafgen, OvS-DPDK), short trials.

The IMIX search must report an aggregate NDR and its per-size figures, and the frames must
really be the mix on the wire: the sending ports' byte counters over a search trial give
the mean frame size trafgen put out, which is the mix's (353.8 B with FCS, 349.8 B without),
not any single size. ``--rate 50%`` must run one fixed-rate trial per frame size and report
its offered and received rate and its loss. Every figure recomputes and nothing is left.
"""

from __future__ import annotations

import os

import pytest

from vsbench.interfaces.frame_mix import imix
from vsbench.results import recompute
from vsbench.runner import config as cfg
from vsbench.runner import testcases
from vsbench.runner.rate_option import overrides

from run_helpers import assert_reproducible_and_clean, build_plans, require, run, run_fixed_rate

pytestmark = pytest.mark.integration

if os.geteuid() != 0:
    pytest.skip("needs root (network namespaces)", allow_module_level=True)

#: A short search: binary below 100 kfps, no latency follow-ups (the mix is what is tested).
SHORT = "trial_duration=1;search.mode=binary;search.max_load_fps=100000;latency.enabled=false"


@pytest.mark.parametrize("engine", ["trafgen", "pacer"])
def test_imix_search_on_ovs_dpdk_reports_aggregate_and_per_size_ndr(tmp_path, engine):
    require(("trafficgen", "trafgen"), ("vswitch", "ovs_dpdk"))
    plans = build_plans("phy2phy_tput", "ovs_dpdk", f"frame_sizes=[imix];{SHORT};trafficgen.trafgen.engine={engine}")
    outcome = run(tmp_path, plans)
    assert outcome.code == 0, outcome.console
    results = outcome.results()
    [fs] = results["tests"][0]["frame_sizes"]
    mix = imix()
    assert fs["status"] == "complete" and fs["frame_size_bytes"] == 354 and fs["frame_mix"]["name"] == "imix"
    ndr = fs["points"][0]
    assert ndr["name"] == "NDR" and ndr["throughput_fps"] > 1000 and ndr["loss_ratio"] == 0
    assert ndr["throughput_l1_mbps"] == pytest.approx(mix.l1_bps(ndr["throughput_fps"]) / 1e6)
    rows = {r["frame_size_bytes"]: r for r in ndr["per_size"]}
    assert set(rows) == {64, 570, 1518}
    assert sum(r["throughput_fps"] for r in rows.values()) == pytest.approx(ndr["throughput_fps"])
    trials = outcome.trials()
    bound = trials[ndr["trial_index"]]
    assert sum(r["tx_frames"] for r in rows.values()) == bound["tx_frames"]
    # what arrived, per size, counted by trafgen's own per-size sockets: the whole NDR trial
    assert sum(r["rx_frames"] for r in rows.values()) == bound["rx_frames"]
    for size, r in rows.items():  # zero loss: every size arrived as often as it was sent
        assert abs(r["rx_frames"] - r["tx_frames"]) <= 2, (size, r)
    # measured, not assumed: the bytes the generator ports sent over the NDR trial, per
    # frame, are the mix's mean (no FCS on a veth); a plain 354 B stream would give 350
    directions = bound["generator_stats"]["directions"]
    sent_bytes = sum(d["tx_bytes"] for d in directions)
    mean_wire = sent_bytes / bound["tx_frames"]
    assert mean_wire == pytest.approx(mix.mean_frame_size_bytes - 4, rel=0.01), mean_wire
    assert "imix (354)" in outcome.console and "NDR" in outcome.console
    assert "Frame mix per size" in (outcome.run_dir / "report.html").read_text()
    assert recompute.verify(outcome.run_dir) == []
    assert_reproducible_and_clean(outcome)


def _only_disturbed(outcome) -> bool:
    """The fixed-rate trial is invalid only for its pacing: every frame went out in time but
    a 10 ms window was off, a stall of this shared host, not of the DUT or the rate."""
    [trial] = [t for t in outcome.trials() if t["role"] == "continuous"]
    reasons = trial["invalid_reasons"]
    return bool(reasons) and all(r.startswith("pacing:") for r in reasons)


def test_rate_50_percent_on_ovs_dpdk_runs_one_fixed_rate_trial_and_reports_its_loss(tmp_path):
    require(("trafficgen", "trafgen"), ("vswitch", "ovs_dpdk"))
    # the line rate of a 20 Mbit/s link (testbed.link_gbps; a veth has no speed of its own):
    # 50 % is 29,762 fps at 64 B over both directions, which the pacer engine sends evenly on
    # this shared 2-core host (148,810 fps at 100 Mbit/s took the trafgen engine 1.05 s, and
    # 74,405 fps at 50 Mbit/s was invalid too: a trial not sent as asked, never DUT loss)
    base = cfg.load_layers(cfg.default_conf_dir(), [])
    case = testcases.find("phy2phy_tput", testcases.default_testcase_dir())
    params = {**cfg.parse_test_params("frame_sizes=[64];trial_duration=1;latency.enabled=false;"
                                      "testbed.link_gbps=0.02;trafficgen.trafgen.engine=pacer"),
              **overrides("50%")}
    plans = testcases.build_plans(case, base, params, {"vswitch": "ovs_dpdk", "trafficgen": "trafgen", "vnf": None})
    # repeated once when the host stalled the pacer (CI saw a 10 ms window 43 % off once)
    outcome = run_fixed_rate(tmp_path, plans)
    assert outcome.code == 0, outcome.console
    results = outcome.results()
    test = results["tests"][0]
    assert test["traffic_type"] == "continuous"
    [fs] = test["frame_sizes"]
    [point] = fs["points"]
    assert point["name"] == "continuous"
    assert point["offered_load_fps"] == pytest.approx(0.5 * 2 * 0.02e9 / (84 * 8))
    trials = outcome.trials()
    assert [t["role"] for t in trials].count("continuous") == 1  # one fixed-rate trial, no search
    trial = trials[point["trial_index"]]
    # valid, or only its pacing was off (every frame sent in its time: what this test is
    # about, one trial at the asked rate and its loss, holds; a 2-core CI host stalls the
    # pacer now and then even on a repeat)
    assert point["valid"] or _only_disturbed(outcome), trial["invalid_reasons"]
    assert point["tx_fps"] == pytest.approx(point["offered_load_fps"], rel=0.02)
    assert point["loss_ratio"] == pytest.approx((trial["tx_frames"] - trial["rx_frames"]) / trial["tx_frames"])
    assert point["rx_fps"] == pytest.approx(trial["rx_frames"] / trial["intended_duration_s"])
    assert "fixed rate 64 B: offered" in outcome.console
    assert recompute.verify(outcome.run_dir) == []
    assert_reproducible_and_clean(outcome)
