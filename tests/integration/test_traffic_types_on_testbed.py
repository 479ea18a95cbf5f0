"""back2back, burst and load_sweep on the real embedded testbed (trafgen, a real switch).

Short: a few bursts and a handful of sweep steps. back2back runs on OvS-DPDK, whose PMD
polls the ports' packet rings and loses frames of a burst faster than it (linux_bridge does
its forwarding in the sender's own system call and never loses a burst here); burst and
load_sweep run on linux_bridge. Each run is validated against its schemas, recomputed from
trials.jsonl, and leaves no namespace or process behind.
"""

from __future__ import annotations

import csv
import os

import pytest

from vsbench.measurement import ceiling

from run_helpers import Outcome, assert_reproducible_and_clean, build_plans, require, run

pytestmark = pytest.mark.integration

if os.geteuid() != 0:
    pytest.skip("needs root (network namespaces)", allow_module_level=True)


def _run(tmp_path, test, vswitch, params) -> tuple[Outcome, dict]:
    """Run ``test`` on ``vswitch``; its schemas hold and its one frame size completed."""
    require(("trafficgen", "trafgen"), ("vswitch", vswitch))
    outcome = run(tmp_path, build_plans(test, vswitch, params))
    results = outcome.results()
    assert outcome.code == 0, outcome.console
    assert outcome.trials()  # every line valid against trial.schema.json
    [fs] = results["tests"][0]["frame_sizes"]
    assert fs["status"] == "complete", fs
    return outcome, fs


def test_back2back_on_ovs_dpdk_reports_frames_and_buffer_times(tmp_path):
    outcome, fs = _run(
        tmp_path, "phy2phy_back2back", "ovs_dpdk",
        "b2b_repetitions=1;b2b_measure_throughput=false;b2b_throughput_fps=100000;"
        "b2b_max_frames=200000;b2b_resolution_frames=5000")
    b = fs["back2back"]
    assert b["repetitions"] and b["repetitions"][0]["trial_indices"]
    assert b["burst_rate_fps"] > 10_000 and b["max_rate_source"] == "achieved_burst_rate"
    assert b["bursts_at_line_rate"] is False  # veth: far below the nominal 10 Gb/s
    # the generator's ceiling (when measured) and its calibration bursts
    calibration = ceiling.CALIBRATION_BURSTS if fs.get("generator_ceiling_trial") is not None else 0
    # every trial but the warm-up (and the ceiling's calibration bursts) is a burst
    assert len(fs["bursts"]) == fs["trial_count"] - 1 - calibration
    assert all(x["send_time_s"] and x["burst_frames"] >= 5000 for x in fs["bursts"])
    if b["bounded"]:
        assert 0 <= b["frames_avg"] < 200000
        assert b["implied_buffer_time_s"] == pytest.approx(b["frames_avg"] / b["max_rate_fps"])
    else:
        assert b["implied_buffer_time_s"] is None
    assert "back2back:" in outcome.console
    row = next(csv.DictReader((outcome.run_dir / "results.csv").open()))
    assert float(row["b2b_frames_avg"]) == b["frames_avg"]
    assert "Back-to-back frames" in (outcome.run_dir / "report.html").read_text()
    assert_reproducible_and_clean(outcome)


def test_burst_on_linux_bridge_reports_every_burst(tmp_path):
    outcome, fs = _run(tmp_path, "phy2phy_burst", "linux_bridge",
                                    "frame_sizes=[64];burst_frames=20000;burst_count=2;latency.enabled=true;latency.trial_duration_s=1")
    assert [x["burst_frames"] for x in fs["bursts"]] == [20000, 20000]
    assert all(x["tx_frames"] == 20000 and x["burst_rate_fps"] > 10_000 for x in fs["bursts"])
    [point] = fs["points"]
    assert point["name"] == "burst" and point["trial_index"] in {x["trial_index"] for x in fs["bursts"]}
    assert point["latency"] is not None and point["latency"]["samples"] > 0
    assert_reproducible_and_clean(outcome)


@pytest.mark.long  # tools/test.sh --long (CI runs it after the test command): see setup.cfg
def test_load_sweep_on_linux_bridge_steps_up_the_ladder(tmp_path):
    outcome, fs = _run(tmp_path, "phy2phy_load_sweep", "linux_bridge",
                                    "sweep_max_percent=0.3;trial_duration=0.5;search.max_load_fps=200000;latency.trial_duration_s=1;"
                                    "traffic.generator_ceiling=false")  # 100 % is the configured rate, not the ceiling
    assert [s["percent"] for s in fs["sweep"]] == [0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09, 0.1,
                                                   0.2, 0.3]
    assert fs["sweep_reference_fps"] == 200000
    for s in fs["sweep"]:
        assert s["offered_load_fps"] == pytest.approx(2000 * s["percent"])
        assert s["rx_fps"] > 0 and s["latency"]["samples"] > 0
    assert {p["name"] for p in fs["points"]} <= {"sweep_zero_loss", "sweep_max_rx"}
    assert "Load sweep" in (outcome.run_dir / "report.html").read_text()
    assert_reproducible_and_clean(outcome)
