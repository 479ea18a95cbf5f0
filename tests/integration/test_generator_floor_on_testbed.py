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

import json
import os
from io import StringIO
from pathlib import Path

import pytest
from rich.console import Console

from vsbench.measurement import recheck
from vsbench.results import recompute, schema
from vsbench.runner import config as cfg
from vsbench.runner import plugins, testcases
from vsbench.runner.run import run_plans
from vsbench.system import cleanup, netlink

pytestmark = pytest.mark.integration

if os.geteuid() != 0:
    pytest.skip("needs root (network namespaces, packet sockets)", allow_module_level=True)

#: Short and cheap on a shared 2-core machine: a coarse search below the bridge's capacity,
#: then probes-only latency (the bridge idle: its own latency, not a queue) and one at NDR.
PARAMS = ("frame_sizes=[64];warmup_s=1;search.max_load_fps=40000;search.relative_width=0.2;"
          "search.trial_duration_s=1;latency.trial_duration_s=2;latency.load_fractions=[0.0];"
          "latency.at_goals=[NDR]")


def _unavailable(kind: str, name: str) -> str | None:
    try:
        cls = plugins.load(kind, name)
    except plugins.UnknownPluginError as exc:
        return str(exc)
    missing = cls.check_prerequisites({})
    return f"{kind} {name}: missing {missing[0]}" if missing else None


def _trafgen_processes_of(run_id: str) -> list[str]:
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if run_id in cmdline and ("trafgen" in cmdline) and str(os.getpid()) != pid:
            found.append(f"{pid}: {cmdline}")
    return found


def test_floor_is_in_results_and_the_bridge_latency_is_end_to_end(tmp_path):
    for kind, name in (("trafficgen", "trafgen"), ("vswitch", "linux_bridge")):
        reason = _unavailable(kind, name)
        if reason:
            pytest.skip(reason)
    base = cfg.load_layers(cfg.default_conf_dir(), [])
    case = testcases.find("phy2phy_tput", testcases.default_testcase_dir())
    plans = testcases.build_plans(case, base, cfg.parse_test_params(PARAMS),
                                  {"vswitch": "linux_bridge", "trafficgen": "trafgen", "vnf": None})
    out = StringIO()
    code = run_plans(plans, tmp_path, Console(file=out, width=200))
    [run_dir] = list(tmp_path.iterdir())
    run_id = run_dir.name.rsplit("-", 1)[1]
    assert code == 0, out.getvalue()

    results = json.loads((run_dir / "results.json").read_text())
    schema.validate(results, "results.schema.json")
    [fs] = results["tests"][0]["frame_sizes"]
    floor = fs["generator_floor"]
    assert floor["measured"], floor
    assert floor["samples"] == floor["probes_sent"] == 2000  # 1000 probes/s x 2 s, a loop loses none
    assert 0 < floor["min_ns"] <= floor["p50_ns"] <= floor["max_ns"]
    assert floor["p99_ns"] is not None and floor["loop"].startswith(f"veth vsb{run_id}fl0 -> vsb{run_id}fl1")
    assert all(lp["generator_floor"] == floor for lp in fs["latency_points"]) and fs["latency_points"]

    trials = [json.loads(line) for line in (run_dir / "trials.jsonl").read_text().splitlines()]
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
    assert bridge["samples"] > 0.99 * 2000
    # two veth hops and a bridge against one veth hop: the floor's p50 is the generator's
    # share; the bridge path's fastest probe is slower than the floor's typical one
    assert bridge["min_ns"] > floor["p50_ns"] or bridge["percentiles_ns"]["p50"] > 2 * floor["p50_ns"], (bridge, floor)

    assert recompute.verify(run_dir) == [] and recheck.verify(run_dir) == []
    assert "generator floor (direct loop, no DUT)" in out.getvalue()

    # nothing left behind
    assert not [n for n in os.listdir(netlink.NETNS_RUN_DIR) if run_id in n]
    assert cleanup.plan(cleanup.snapshot(), live=set(), only={run_id}) == []
    assert _trafgen_processes_of(run_id) == []
