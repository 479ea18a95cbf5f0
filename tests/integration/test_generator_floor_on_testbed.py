"""The generator's latency floor on the real testbed, and the Linux bridge's real latency.

A short phy2phy run through the Linux bridge with trafgen: results.json carries the floor
measured on the generator's own veth loop (no DUT) beside every latency figure, the
figures recompute, and nothing is left behind (no vsb* namespace, no trafgen process).

It also pins the probe timestamps: the bridge forwards the probe's own buffer, which the
kernel then stamps a second time at the bridge's egress veth. Taking that stamp as the send
time measured only the last veth hop (min ~90 ns, the floor's own figure); with the
generator port's stamp the bridge path is end to end and clearly above the floor.
"""

from __future__ import annotations

import os

import pytest

from run_helpers import assert_reproducible_and_clean, build_plans, require, run

pytestmark = pytest.mark.integration

if os.geteuid() != 0:
    pytest.skip("needs root (network namespaces, packet sockets)", allow_module_level=True)

#: Short and cheap on a shared 2-core machine: a coarse search below the bridge's capacity,
#: then probes-only latency (the bridge idle: its own latency, not a queue) and one at NDR.
PARAMS = ("frame_sizes=[64];warmup_s=1;search.max_load_fps=40000;search.relative_width=0.2;"
          "search.trial_duration_s=1;latency.trial_duration_s=1;latency.load_fractions=[0.0];"
          "latency.at_goals=[NDR]")


def test_floor_is_in_results_and_the_bridge_latency_is_end_to_end(tmp_path):
    require(("trafficgen", "trafgen"), ("vswitch", "linux_bridge"))
    outcome = run(tmp_path, build_plans("phy2phy_tput", "linux_bridge", PARAMS))
    run_id = outcome.run_id
    assert outcome.code == 0, outcome.console

    results = outcome.results()
    [fs] = results["tests"][0]["frame_sizes"]
    floor = fs["generator_floor"]
    assert floor["measured"], floor
    assert floor["samples"] == floor["probes_sent"] == 1000  # 1000 probes/s x 1 s, a loop loses none
    assert 0 < floor["min_ns"] <= floor["p50_ns"] <= floor["max_ns"]
    assert floor["p99_ns"] is not None and floor["loop"].startswith(f"veth vsb{run_id}fl0 -> vsb{run_id}fl1")
    assert all(lp["generator_floor"] == floor for lp in fs["latency_points"]) and fs["latency_points"]

    trials = outcome.trials()
    floor_trial = trials[floor["trial_index"]]
    assert floor_trial["role"] == "floor" and floor_trial["intended_load_fps"] == 0
    # one TX stamp per probe on the direct loop ...
    assert floor_trial["generator_stats"]["probes"]["tx_timestamps_after_first"] == 0

    [idle] = [lp for lp in fs["latency_points"] if lp["label"] == "probes only"]
    idle_trial = trials[idle["trial_index"]]["generator_stats"]["probes"]
    # ... and, through the bridge forwarding a learned MAC, a second one at its egress veth,
    # which must not be taken as the send time
    assert idle_trial["tx_timestamps_after_first"] > 0, idle_trial
    bridge = idle["summary"]
    assert bridge["samples"] > 0.99 * 1000
    # two veth hops and a bridge against one veth hop: the floor's p50 is the generator's
    # share; the bridge path's fastest probe is slower than the floor's typical one
    assert bridge["min_ns"] > floor["p50_ns"] or bridge["percentiles_ns"]["p50"] > 2 * floor["p50_ns"], (bridge, floor)

    assert "generator floor (direct loop, no DUT)" in outcome.console
    assert_reproducible_and_clean(outcome)
