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


# -- repeats, a baseline without a figure, and cells that say why they are empty ----------------

NO_NDR_NOTES = ["NDR: no load passed (not even min_load 1000 fps)", "NDR: time budget exhausted"]


def _no_ndr() -> dict:
    """The NDR point of a search that found no passing load (as results.json writes it)."""
    return {"name": "NDR", "throughput_fps": None, "lower_bound_fps": None, "upper_bound_fps": None, "valid": None,
            "regular": False, "irregular_reason": "time budget exhausted", "efficiency": None, "datapath": None,
            "cpu_oversubscribed": False}


def _repeated(per_variant: list[list[dict]]) -> dict:
    """--repeat K in rounds: every variant once, then again; ``per_variant[v][r]`` is the
    NDR point of variant v in repeat r."""
    variants = [{"vswitch.ovs_dpdk.emc_insert_inv_prob": emc, "vswitch.ovs_dpdk.smc_enable": smc}
                for emc in (1, 0) for smc in (False, True)]
    count = len(per_variant[0])
    tests = []
    for r in range(count):
        for variant, points in zip(variants, per_variant):
            point = points[r]
            label = "rule_complexity[" + ",".join(f"{k}={v}" for k, v in variant.items()) + "]"
            tests.append({"plan_index": len(tests), "label": label, "testcase": "rule_complexity", "variant": variant,
                          "status": "complete", "traffic_type": "rfc2544_throughput",
                          "repeat": {"index": r + 1, "count": count},
                          "frame_sizes": [{"frame_size_bytes": 64, "status": "complete", "points": [point],
                                           "notes": [] if point["throughput_fps"] else list(NO_NDR_NOTES)}]})
    return {"run_id": "rep333", "status": "complete", "tests": tests}


def _table(fm) -> str:
    out = StringIO()
    console = Console(file=out, width=250, color_system=None)
    compare_cmd.print_matrices([fm], console)
    return out.getvalue()


def test_repeats_fold_per_variant_and_the_baseline_carries_its_medians():
    """--repeat 3: every column of a variant is its repeats' median, the baseline's too,
    even when its last repeat found no NDR (its cache figures used to be that last
    repeat's: none, an empty baseline row)."""
    results = _repeated([
        [_point(1.00e6, 900, 0, 100), _point(1.10e6, 800, 0, 200), _no_ndr()],       # baseline
        [_point(1.20e6, 900, 100, 0), _point(1.22e6, 900, 100, 0), _point(1.24e6, 900, 100, 0)],
        [_point(0.90e6, 0, 0, 1000)] * 3,
        [_point(1.00e6, 0, 1000, 0)] * 3,
    ])
    [fm] = feature_matrix.matrices(results, run_metrics.extract(results))
    assert len(fm.variants) == 4 and fm.baseline == 0
    base = fm.cells[(0, 64)]
    assert base.value.samples == [1.00e6, 1.10e6] and base.value.value == pytest.approx(1.05e6)
    assert base.cache_percent["EMC"] == pytest.approx(85.0) and base.cache_percent["megaflow"] == pytest.approx(15.0)
    assert base.switch_cores == 1.0 and base.fps_per_core == pytest.approx(1.05e6)
    assert fm.baseline_of(64) == 0
    assert (base.measured, base.repeats) == (2, 3)
    smc = fm.cells[(1, 64)]
    assert smc.value.value == pytest.approx(1.22e6) and (smc.measured, smc.repeats) == (3, 3) and not smc.reasons
    assert smc.change.percent == pytest.approx(100 * (1.22e6 - 1.05e6) / 1.05e6)
    text = _table(fm)
    base_row = next(line for line in text.splitlines() if "emc_insert_inv_prob=1, smc_enable=False" in line
                    and "baseline" in line)
    assert "1.0500 (2/3)" in base_row and "85.0" in base_row, text
    assert "(ndr_fps from 2 of 3 repeats; 1 had none): no NDR: no load passed" in text


def test_a_baseline_no_repeat_measured_says_why_and_the_gains_use_the_next_variant():
    results = _repeated([[_no_ndr()] * 3, [_point(1.2e6, 900, 100, 0)] * 3, [_point(0.9e6, 0, 0, 1000)] * 3,
                         [_point(1.0e6, 0, 1000, 0)] * 3])
    [fm] = feature_matrix.matrices(results, run_metrics.extract(results))
    base = fm.cells[(0, 64)]
    assert base.value is None and base.gap == "no NDR" and base.measured == 0
    assert base.reasons == ["no NDR: no load passed (not even min_load 1000 fps); time budget exhausted"]
    assert fm.baseline == 0 and fm.baseline_of(64) == 1
    assert fm.cells[(2, 64)].change.percent == pytest.approx(-25.0)
    text = _table(fm)
    assert "against emc_insert_inv_prob=1, smc_enable=True" in text
    assert "the chosen baseline emc_insert_inv_prob=1, smc_enable=False has none (no NDR: " in text
    assert " no NDR " in next(line for line in text.splitlines() if "smc_enable=False" in line and "│" in line)


def _tcp_results() -> dict:
    """tcp_tput on OvS-DPDK with --test-params "vswitch.ovs_dpdk.n_rxq=[1,2]": TSO x n_rxq,
    the TSO-on plans skipped (af_packet ports cannot carry offloaded frames)."""
    skip = ("skipped: tcp.tso=true cannot cross ovs_dpdk as built here (ovs_dpdk reads frames as bytes from "
            "packet sockets: a TSO segment is cut at the port's largest frame)")
    tests = []
    for tso in (True, False):
        for rxq, gbps in ((1, 1.5), (2, 1.75)):
            variant = {"tcp.tso": tso, "vswitch.ovs_dpdk.n_rxq": rxq}
            fs = {"frame_size_bytes": 1518, "status": "not-run", "points": [], "notes": [skip], "tcp": None}
            if not tso:
                fs = {"frame_size_bytes": 1518, "status": "complete", "points": [], "notes": [],
                      "tcp": {"gbps": gbps, "gbps_runs": [gbps * 0.99, gbps, gbps * 1.01], "retransmits": 0,
                              "cores_per_gbps": 0.7, "rtt_mean_us": 2000.0, "switch_cores": 0.8,
                              "cpu_oversubscribed": False}}
            tests.append({"plan_index": len(tests), "testcase": "tcp_tput", "traffic_type": "tcp",
                          "label": "tcp_tput[" + ",".join(f"{k}={v}" for k, v in variant.items()) + "]",
                          "variant": variant, "status": "complete", "frame_sizes": [fs]})
    return {"run_id": "tcp111", "status": "complete", "tests": tests}


def test_a_skipped_baseline_gives_gains_against_the_first_variant_that_ran_and_says_so():
    results = _tcp_results()
    for chosen in (None, "tso=true,n_rxq=2"):  # the default baseline, and one asked for
        [fm] = feature_matrix.matrices(results, run_metrics.extract(results), feature_matrix.parse_baseline(chosen))
        assert fm.metric == "tcp_gbps" and fm.baseline_of(1518) == 2  # tso=False, n_rxq=1
        gain = fm.cells[(3, 1518)].change
        assert gain.percent == pytest.approx(100 * 0.25 / 1.5) and gain.significance == "significant"
        skipped = fm.cells[(fm.baseline, 1518)]
        assert skipped.value is None and skipped.gap == "skipped" and "cannot cross ovs_dpdk" in skipped.reasons[0]
        [note] = [n for n in fm.notes if n.startswith("baseline at 1518 B")]
        assert "tso=False, n_rxq=1, the first variant with a figure (tcp_gbps)" in note
        assert f"the chosen baseline {fm.variants[fm.baseline].short()} has none (skipped: tcp.tso=true" in note
        doc = feature_matrix.to_json(fm)
        assert doc["baseline"] == {"tcp.tso": False, "vswitch.ovs_dpdk.n_rxq": 1}
        assert doc["baseline_chosen"] == fm.variants[fm.baseline].settings and note in doc["notes"]
        assert [r["baseline"] for r in doc["rows"]] == [False, False, True, False]
        assert [r["gap"] for r in doc["rows"]] == ["skipped", "skipped", None, None]
        text = _table(fm)
        assert "tcp_gbps against tso=False, n_rxq=1" in text and "+16.7 %" in text
        assert text.count(" skipped ") == 2 and "Mfps/core" not in text  # no frame-rate column for TCP


def test_a_matrix_without_any_figure_still_lists_every_variant_and_why():
    """Not a table of headers only: every variant, its reason, and why there are no gains."""
    results = _repeated([[_no_ndr()]] * 4)
    results["tests"][3]["status"] = "failed"
    results["tests"][3]["error"] = "ovs-vswitchd did not start"
    results["tests"][3]["frame_sizes"][0].update(status="not-run", points=[], notes=[])
    [fm] = feature_matrix.matrices(results, run_metrics.extract(results))
    assert fm.metric == "ndr_fps" and fm.frame_sizes == [64] and len(fm.cells) == 4 and fm.baseline_of(64) is None
    assert [fm.cells[(i, 64)].gap for i in range(4)] == ["no NDR"] * 3 + ["test failed"]
    text = _table(fm)
    assert text.count("no NDR ") == 3 and "test failed" in text
    assert "note: no gains at 64 B: no variant has a figure (ndr_fps) there" in text
    assert "emc_insert_inv_prob=0, smc_enable=True: test failed: ovs-vswitchd did not start" in text


def test_flagged_figures_say_what_the_star_means():
    results = _results()
    results["tests"][1]["frame_sizes"][0]["points"][0]["regular"] = False
    [fm] = feature_matrix.matrices(results, run_metrics.extract(results))
    text = _table(fm)
    assert "* irregular search result: emc_insert_inv_prob=100, smc_enable=True" in text


def test_plan_tables_and_headings_keep_the_variant_of_their_label():
    """A label is ``testcase[variant]``: printed as rich markup, the bracket vanished and every
    plan of a matrix was titled with the bare testcase name."""
    from vsbench.results.model import FrameSizeResult, TestResult
    from vsbench.runner.display import RunDisplay

    label = "tcp_tput[tcp.tso=True,vswitch.ovs_dpdk.n_rxq=2]"
    out = StringIO()
    console = Console(file=out, width=250, color_system=None)
    for traffic_type in ("tcp", "rfc2544_throughput"):
        test = TestResult(plan_index=0, label=label, testcase="tcp_tput", traffic_type=traffic_type,
                          frame_sizes=[FrameSizeResult(1518, status="not-run")])
        console.print(RunDisplay.table(test))
    display = RunDisplay(console)
    display.plan_started(0, 4, label, "")
    assert out.getvalue().count(label) == 3, out.getvalue()


def test_the_csv_of_a_matrix_whose_first_rows_were_skipped(tmp_path, capsys):
    """The rows' columns differ (a skipped variant has no TCP extras): the CSV took its
    header from the first row and failed with an internal error."""
    from vsbench.cli.main import main

    run = tmp_path / "20261125-000000-tcp111"
    run.mkdir()
    (run / "results.json").write_text(json.dumps(_tcp_results()))
    assert main(["compare", str(run), "--format", "csv"]) == 0
    import csv as csv_module

    rows = list(csv_module.DictReader(StringIO(capsys.readouterr().out)))
    assert [r["gap"] for r in rows] == ["skipped", "skipped", "", ""]
    assert [r["baseline"] for r in rows] == ["false", "false", "true", "false"]
    assert rows[0]["significance"] == "" and "cannot cross ovs_dpdk" in rows[0]["reasons"]
    assert json.loads(rows[3]["extra"])["retransmits"] == 0 and float(rows[3]["gain_percent"]) > 16


def test_the_run_scaling_table_says_which_counts_found_no_ndr():
    from vsbench.results.model import FrameSizeResult, ReportedPoint, RunResults, TestResult
    from vsbench.runner import display_efficiency

    tests = []
    for i, (rules, ndr) in enumerate(((1000, 2e5), (8000, None))):
        point = ReportedPoint(name="NDR", throughput_fps=ndr, regular=ndr is not None)
        tests.append(TestResult(plan_index=i, label=f"rule_complexity[dut.rules={rules}]", testcase="rule_complexity",
                                variant={"dut.rules": rules}, vswitch="ovs_dpdk", trafficgen="trafgen",
                                deployment="p2p", status="complete",
                                frame_sizes=[FrameSizeResult(64, status="complete", points=[point])]))
    [table] = display_efficiency.scaling_tables(RunResults(run_id="abc123", started_at="x", vsbench_version="0",
                                                           tests=tests))
    out = StringIO()
    Console(file=out, width=250, color_system=None).print(table)
    rows = [line for line in out.getvalue().splitlines() if " 64 " in line]
    assert "no NDR" not in rows[0] and "complete, no NDR, irregular" in rows[1], out.getvalue()


def test_compare_of_one_run_refuses_html_instead_of_ignoring_it(tmp_path, capsys):
    """One run directory gives its matrices on the terminal; --html (a page of runs side by
    side) was silently ignored, and no file appeared."""
    from vsbench.cli.main import main

    run = tmp_path / "20261125-000000-tcp111"
    run.mkdir()
    (run / "results.json").write_text(json.dumps(_tcp_results()))
    page = tmp_path / "page.html"
    assert main(["compare", str(run), "--html", str(page)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "report.html" in err and not page.exists()


def test_what_the_switch_said_was_in_effect_is_a_column_of_the_matrix():
    """Each point's datapath ``active`` labels (OvS-DPDK: the implementations and the
    vhost-user packed ring at that trial) are shown per variant: a setting that did not
    take effect is seen there; repeats that differ show both values."""
    results = _results()
    impls = [{"dpcls": "generic", "dpif": "dpif_scalar"}, {"dpcls": "avx512_gather", "dpif": "dpif_scalar"},
             {"dpcls": "generic", "dpif": "dpif_avx512"}, {"dpcls": "generic", "dpif": "dpif_scalar"}]
    for test, active in zip(results["tests"], impls):
        test["frame_sizes"][0]["points"][0]["datapath"]["active"] = active
    repeat = json.loads(json.dumps(results["tests"][3]))
    repeat["frame_sizes"][0]["points"][0]["datapath"]["active"] = {"dpcls": "avx512_gather", "dpif": "dpif_scalar"}
    results["tests"].append(repeat)
    [fm] = feature_matrix.matrices(results, run_metrics.extract(results))
    assert feature_matrix.active_columns(fm) == ["dpcls", "dpif"]
    assert fm.cells[(1, 64)].active == {"dpcls": "avx512_gather", "dpif": "dpif_scalar"}
    assert fm.cells[(3, 64)].active["dpcls"] == "generic/avx512_gather"  # the repeats disagree
    assert feature_matrix.to_json(fm)["rows"][2]["active"] == {"dpcls": "generic", "dpif": "dpif_avx512"}
    out = StringIO()
    Console(file=out, width=240, color_system=None).print(compare_cmd.matrix_table(fm))
    text = out.getvalue()
    assert "dpcls" in text and "avx512_gather" in text and "dpif_avx512" in text
    assert feature_matrix.active_figures([{"datapath": None}, {}]) == {}
    # what every variant shares is a line under the table, not a column
    for test in results["tests"]:
        test["frame_sizes"][0]["points"][0]["datapath"]["active"]["mfex"] = "scalar (DPIF)"
    [fm] = feature_matrix.matrices(results, run_metrics.extract(results))
    assert feature_matrix.active_split(fm) == (["dpcls", "dpif"], {"mfex": "scalar (DPIF)"})
    out = StringIO()
    compare_cmd.print_matrices([fm], Console(file=out, width=240, color_system=None))
    text = out.getvalue()
    assert "in effect in every variant (the switch's account): mfex=scalar (DPIF)" in text
    assert "mfex " not in text.split("in effect")[0]  # no column for it
