"""phy2phy on the real embedded testbed: trafgen -> veth -> switch -> veth -> trafgen.

The whole chain as a user runs it (config layers, testcase, runner, deployment, plugins
through entry points), with 64 B frames and 1 s trials (a coarse 10 % search: its precision
is test_measurement_engine.py's). Every figure must be recomputable
from the run's trials.jsonl and config.yaml, and the run must leave nothing behind.
"""

from __future__ import annotations

import json
import os

import pytest

from run_helpers import (
    a_search_trial_came_back_whole, assert_reproducible_and_clean, build_plans, require, run, run_fixed_rate,
)

pytestmark = pytest.mark.integration

if os.geteuid() != 0:
    pytest.skip("needs root (network namespaces, hugepages)", allow_module_level=True)


@pytest.mark.parametrize("vswitch", ["ovs_dpdk", "linux_bridge"])
def test_phy2phy_tput_64b(tmp_path, vswitch, request):
    require(("trafficgen", "trafgen"), ("vswitch", vswitch))
    if vswitch == "ovs_dpdk":
        # the run test_measurement_engine.py checks for the search (conftest.py), not a second one
        outcome = request.getfixturevalue("phy2phy_tput_ovs_dpdk")
    else:
        outcome = run(tmp_path, build_plans(
            "phy2phy_tput", vswitch, "frame_sizes=[64];trial_duration=1;warmup_s=1;relative_width=0.1;"
                                     "search.max_trials_per_load=3;latency.trial_duration_s=1;latency.load_fractions=[0.0, 0.5]"))
    assert outcome.code == 0, outcome.console

    results = outcome.results()
    [test] = results["tests"]
    assert test["vswitch"] == vswitch and test["trafficgen"] == "trafgen"
    [fs] = test["frame_sizes"]
    ndr = fs["points"][0]  # NDR first; the default multi-goal search also reports PDR
    assert fs["status"] == "complete", fs
    # a measured figure: above the search floor, at a valid trial; its loss is its load's
    # exceed-ratio median trial's (docs/search.rst), which the neighbourhood may pass with a
    # few frames lost on this shared host (real PROX once: 38 of 253k), so whole trials back
    # is what shows the counters right
    assert ndr["throughput_fps"] is not None and ndr["throughput_fps"] > fs["min_load_fps"], fs
    assert ndr["valid"] and ndr["loss_ratio"] is not None, ndr
    assert a_search_trial_came_back_whole(outcome)
    assert ndr["throughput_l1_mbps"] == pytest.approx(ndr["throughput_fps"] * 84 * 8 / 1e6)
    if ndr["latency"] is not None:
        lat = ndr["latency"]
        assert lat["samples"] > 0 and 0 < lat["min_ns"] <= lat["avg_ns"] <= lat["max_ns"]

    assert outcome.trials()  # each line valid against trial.schema.json
    sysinfo = json.loads((outcome.run_dir / "sysinfo.json").read_text())
    assert {p["name"] for p in sysinfo["plugins"]} == {vswitch, "trafgen"}
    assert_reproducible_and_clean(outcome)


def test_phy2phy_cont_linux_bridge(tmp_path):
    require(("trafficgen", "trafgen"), ("vswitch", "linux_bridge"))
    outcome = run_fixed_rate(tmp_path, build_plans(
        "phy2phy_cont", "linux_bridge", "frame_sizes=[64];trial_duration=1;warmup_s=0;rate_fps=20000;latency.trial_duration_s=1"))
    assert outcome.code == 0, outcome.console
    [fs] = outcome.results()["tests"][0]["frame_sizes"]
    [point] = fs["points"]
    assert point["offered_load_fps"] == 20000
    assert point["valid"], point
    assert 0 < point["rx_fps"] <= point["tx_fps"] * 1.0001
    assert_reproducible_and_clean(outcome)
