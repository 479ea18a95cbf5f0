"""Feature matrices: --test-params lists on scalar settings become matrix dimensions (each
combination its own plan), and the run's variants become one table of gains against a
chosen baseline with the flow-cache figures beside them."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from rich.console import Console

from vsbench.cli import compare_cmd
from vsbench.results import feature_matrix, run_metrics
from vsbench.runner import config as cfg
from vsbench.runner import testcases

ROOT = Path(__file__).resolve().parents[2]
FLAGS = {"vswitch": "ovs_dpdk", "trafficgen": None, "vnf": None}


def _plans(params: str, flags=FLAGS, test: str = "phy2phy_tput"):
    base = cfg.load_layers(ROOT / "conf", [])
    case = testcases.find(test, ROOT / "testcases")
    return testcases.build_plans(case, base, cfg.parse_test_params(params), flags)


def test_lists_on_scalar_settings_sweep_every_combination():
    plans = _plans("frame_sizes=[64,128];vswitch.ovs_dpdk.emc_insert_inv_prob=[0,100];"
                   "vswitch.ovs_dpdk.smc_enable=[true,false]")
    got = [(p.config["vswitch"]["ovs_dpdk"]["emc_insert_inv_prob"], p.config["vswitch"]["ovs_dpdk"]["smc_enable"])
           for p in plans]
    assert got == [(0, True), (0, False), (100, True), (100, False)]
    assert all(p.config["traffic"]["frame_sizes"] == [64, 128] for p in plans)  # a list-typed key: its value
    assert plans[0].variant == {"vswitch.ovs_dpdk.emc_insert_inv_prob": 0, "vswitch.ovs_dpdk.smc_enable": True}
    assert plans[0].label == "phy2phy_tput[vswitch.ovs_dpdk.emc_insert_inv_prob=0,vswitch.ovs_dpdk.smc_enable=True]"


def test_sweep_rules():
    assert testcases.is_sweep("traffic.flows", [1, 10], 1)
    assert not testcases.is_sweep("traffic.frame_sizes", [64, 128], [64])
    assert testcases.is_sweep("traffic.frame_sizes", [[64], [128]], [64])
    assert not testcases.is_sweep("traffic.fields.vary", ["src_ip"], None)  # the schema says: a list
    assert testcases.is_sweep("vswitch.ovs_dpdk.n_rxq", [1, 2], None)  # a plugin's key: by its value
    assert not testcases.is_sweep("vswitch.ovs_dpdk.socket_mem_mb", [1024], [512])
    assert not testcases.is_sweep("traffic.flows", 4, 1)
    plans = _plans("flows=[1,100]")
    assert [p.config["traffic"]["flows"] for p in plans] == [1, 100]


def test_a_sweep_of_another_plugins_setting_is_refused():
    with pytest.raises(testcases.TestcaseError, match="sweeps a setting of vswitch ovs_dpdk, but the test runs "
                                                      "vswitch linux_bridge"):
        _plans("vswitch.ovs_dpdk.smc_enable=[true,false]", {"vswitch": "linux_bridge", "trafficgen": None, "vnf": None})


def _point(ndr: float, emc: int, smc: int, megaflow: int, upcalls: int = 0, low: float | None = None,
           high: float | None = None) -> dict:
    return {"name": "NDR", "throughput_fps": ndr, "lower_bound_fps": low or ndr, "upper_bound_fps": high or ndr * 1.01,
            "valid": True, "regular": True, "cpu_oversubscribed": False,
            "efficiency": {"switch_cores": 1.0, "fps_per_core": ndr},
            "datapath": {"kind": "userspace", "pmd": {"simple_match_hits": 0, "emc_hits": emc, "smc_hits": smc,
                                                      "megaflow_hits": megaflow, "upcalls": upcalls}}}


def _results() -> dict:
    variants = [({"vswitch.ovs_dpdk.emc_insert_inv_prob": 100, "vswitch.ovs_dpdk.smc_enable": False}, 1.00e6, 900, 0, 100),
                ({"vswitch.ovs_dpdk.emc_insert_inv_prob": 100, "vswitch.ovs_dpdk.smc_enable": True}, 1.20e6, 900, 100, 0),
                ({"vswitch.ovs_dpdk.emc_insert_inv_prob": 0, "vswitch.ovs_dpdk.smc_enable": False}, 0.90e6, 0, 0, 1000),
                ({"vswitch.ovs_dpdk.emc_insert_inv_prob": 0, "vswitch.ovs_dpdk.smc_enable": True}, 1.005e6, 0, 1000, 0)]
    tests = []
    for i, (variant, ndr, emc, smc, mega) in enumerate(variants):
        label = "phy2phy_tput[" + ",".join(f"{k}={v}" for k, v in variant.items()) + "]"
        tests.append({"plan_index": i, "label": label, "testcase": "phy2phy_tput", "variant": variant,
                      "status": "complete", "switching_operations": 1,
                      "frame_sizes": [{"frame_size_bytes": 64, "status": "complete",
                                       "points": [_point(ndr, emc, smc, mega)]}]})
    return {"run_id": "abc123", "status": "complete", "tests": tests}


def test_the_matrix_gives_gains_against_the_baseline_and_cache_shares():
    results = _results()
    [fm] = feature_matrix.matrices(results, run_metrics.extract(results))
    assert fm.testcase == "phy2phy_tput" and fm.baseline == 0 and fm.frame_sizes == [64]
    assert fm.dimensions == ["vswitch.ovs_dpdk.emc_insert_inv_prob", "vswitch.ovs_dpdk.smc_enable"]
    smc = fm.cells[(1, 64)]
    assert smc.change.percent == pytest.approx(20.0) and smc.change.significance == "significant"
    assert smc.cache_percent == {"simple": 0.0, "EMC": 90.0, "SMC": 10.0, "megaflow": 0.0}
    assert fm.cells[(0, 64)].upcalls == 0 and fm.cells[(0, 64)].change is None
    # +0.5 % with overlapping search bounds is noise, not a gain
    [fm] = feature_matrix.matrices(results, run_metrics.extract(results),
                                   feature_matrix.parse_baseline("emc_insert_inv_prob=0,smc_enable=false"))
    assert fm.baseline == 2 and fm.variants[2].short() == "emc_insert_inv_prob=0, smc_enable=False"
    assert fm.cells[(3, 64)].change.percent == pytest.approx(100 * (1.005e6 - 0.9e6) / 0.9e6)
    doc = feature_matrix.to_json(fm)
    assert doc["baseline"] == {"vswitch.ovs_dpdk.emc_insert_inv_prob": 0, "vswitch.ovs_dpdk.smc_enable": False}
    assert [r["baseline"] for r in doc["rows"]].count(True) == 1
    json.dumps(doc, allow_nan=False)


def test_a_baseline_that_names_no_single_variant_is_one_line():
    results = _results()
    for text in ("smc_enable=maybe", "smc_enable=true"):  # none; two
        with pytest.raises(feature_matrix.MatrixError) as exc:
            feature_matrix.matrices(results, run_metrics.extract(results), feature_matrix.parse_baseline(text))
        assert "\n" not in str(exc.value)
    with pytest.raises(feature_matrix.MatrixError, match="KEY=VALUE"):
        feature_matrix.parse_baseline("smc_enable")


def test_the_table_shows_every_variant_with_gain_and_caches():
    results = _results()
    [fm] = feature_matrix.matrices(results, run_metrics.extract(results))
    out = StringIO()
    Console(file=out, width=220, color_system=None).print(compare_cmd.matrix_table(fm))
    text = out.getvalue()
    assert "baseline" in text and "+20.0 %" in text and "EMC %" in text and "SMC %" in text
    assert text.count("smc_enable=") == 4 + 1  # four rows and the title


def test_cache_figures_of_a_kernel_datapath():
    caches, missed = feature_matrix.cache_figures({"datapath": {"kind": "kernel", "lookups_hit": 990, "lookups_missed": 10}})
    assert caches == {"megaflow": 99.0} and missed == 10
    assert feature_matrix.cache_figures({}) == ({}, None)
