"""phy2phy on the real embedded testbed: trafgen -> veth -> switch -> veth -> trafgen.

The whole chain as a user runs it (config layers, testcase, runner, deployment, plugins
through entry points), with 64 B frames and 2 s trials. Every figure must be recomputable
from the run's trials.jsonl and config.yaml, and the run must leave nothing behind.
"""

from __future__ import annotations

import json
import os
from io import StringIO
from pathlib import Path

import pytest
from rich.console import Console

from vsbench.results import recompute, schema
from vsbench.runner import config as cfg
from vsbench.runner import plugins, testcases
from vsbench.runner.run import run_plans
from vsbench.system import cleanup, runstate

pytestmark = pytest.mark.integration

if os.geteuid() != 0:
    pytest.skip("needs root (network namespaces, hugepages)", allow_module_level=True)


def _unavailable(kind: str, name: str) -> str | None:
    try:
        cls = plugins.load(kind, name)
    except plugins.UnknownPluginError as exc:
        return str(exc)
    missing = cls.check_prerequisites({})
    return f"{kind} {name}: missing {missing[0]}" if missing else None


def _plans(test: str, vswitch: str, params: str):
    base = cfg.load_layers(cfg.default_conf_dir(), [])
    case = testcases.find(test, testcases.default_testcase_dir())
    return testcases.build_plans(case, base, cfg.parse_test_params(params),
                                 {"vswitch": vswitch, "trafficgen": "trafgen", "vnf": None})


def _leftovers(run_id: str) -> list:
    """What cleanup would find of this run: must be nothing after a run."""
    return cleanup.plan(cleanup.snapshot(), live=set(), only={run_id})


def _run(tmp_path, plans):
    out = StringIO()
    code = run_plans(plans, tmp_path, Console(file=out, width=200))
    [run_dir] = list(tmp_path.iterdir())
    return code, out.getvalue(), run_dir, run_dir.name.rsplit("-", 1)[1]


@pytest.mark.parametrize("vswitch", ["ovs_dpdk", "linux_bridge"])
def test_phy2phy_tput_64b(tmp_path, vswitch):
    for kind, name in (("trafficgen", "trafgen"), ("vswitch", vswitch)):
        reason = _unavailable(kind, name)
        if reason:
            pytest.skip(reason)
    plans = _plans("phy2phy_tput", vswitch, "frame_sizes=[64];trial_duration=2;warmup_s=1;relative_width=0.05")
    code, out, run_dir, run_id = _run(tmp_path, plans)
    assert code == 0, out

    results = json.loads((run_dir / "results.json").read_text())
    schema.validate(results, "results.schema.json")
    [test] = results["tests"]
    assert test["vswitch"] == vswitch and test["trafficgen"] == "trafgen"
    [fs] = test["frame_sizes"]
    ndr = fs["points"][0]  # NDR first; the default multi-goal search also reports PDR
    assert fs["status"] == "complete", fs
    # a measured figure: above the search floor, loss-free, at a valid trial
    assert ndr["throughput_fps"] is not None and ndr["throughput_fps"] > fs["min_load_fps"], fs
    assert ndr["loss_ratio"] == 0.0 and ndr["valid"]
    assert ndr["throughput_l1_mbps"] == pytest.approx(ndr["throughput_fps"] * 84 * 8 / 1e6)
    if ndr["latency"] is not None:
        lat = ndr["latency"]
        assert lat["samples"] > 0 and 0 < lat["min_ns"] <= lat["avg_ns"] <= lat["max_ns"]

    for line in (run_dir / "trials.jsonl").read_text().splitlines():
        schema.validate(json.loads(line), "trial.schema.json")
    assert recompute.verify(run_dir) == []
    sysinfo = json.loads((run_dir / "sysinfo.json").read_text())
    assert {p["name"] for p in sysinfo["plugins"]} == {vswitch, "trafgen"}
    assert not runstate.is_live(run_id)
    assert _leftovers(run_id) == []


def test_phy2phy_cont_linux_bridge(tmp_path):
    for kind, name in (("trafficgen", "trafgen"), ("vswitch", "linux_bridge")):
        reason = _unavailable(kind, name)
        if reason:
            pytest.skip(reason)
    plans = _plans("phy2phy_cont", "linux_bridge", "frame_sizes=[64];trial_duration=2;warmup_s=0;rate_fps=20000")
    code, out, run_dir, run_id = _run(tmp_path, plans)
    assert code == 0, out
    [fs] = json.loads((run_dir / "results.json").read_text())["tests"][0]["frame_sizes"]
    [point] = fs["points"]
    assert point["offered_load_fps"] == 20000
    assert point["valid"], fs
    assert 0 < point["rx_fps"] <= point["tx_fps"] * 1.0001
    assert recompute.verify(run_dir) == []
    assert _leftovers(run_id) == []
