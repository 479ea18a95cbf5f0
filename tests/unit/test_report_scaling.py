"""Switch efficiency and rule/flow scaling curves in report.html and on the console.

The run directory under tests/data/runs/rule_complexity_ovs_tc is a real run, captured from
the kernel lab (tools/kernel-lab: Debian's kernel under QEMU with openvswitch and
cls_flower): ``rule_complexity`` on ``ovs_tc`` (tc-policy skip_hw) at 64 and 1000 rules per
direction, short trials. Its results.json carries per point the switch's cores, frames per
second per core, the kernel datapath's lookups and the flows that were in TC.
"""

from __future__ import annotations

import base64
import copy
import dataclasses
import json
import shutil
import xml.etree.ElementTree as ET
from io import StringIO
from pathlib import Path

import pytest
from rich.console import Console

from tests.unit.test_report_html import Page
from vsbench.cli.main import main
from vsbench.results import report_html, scaling, switch_figures
from vsbench.results.model import FrameSizeResult, ReportedPoint, RunResults, TestResult
from vsbench.runner import display_efficiency
from vsbench.runner.display import RunDisplay

ROOT = Path(__file__).resolve().parents[2]
OVS_TC_RUN = ROOT / "tests" / "data" / "runs" / "rule_complexity_ovs_tc"

#: A point as ovs_dpdk reports it (the shape of results.json; counters of a real trial).
DPDK_POINT = {
    "name": "NDR", "throughput_fps": 230295.5, "rx_fps": 230296.0, "trial_index": 7, "regular": True,
    "efficiency": {"switch_cpu_s": 1.26, "cpu_source": "threads", "elapsed_s": 2.5337,
                   "switch_cores": 0.4973, "fps_per_core": 463095.2, "oversubscribed": False},
    "datapath": {"kind": "userspace", "rules_installed": 128,
                 "pmd": {"emc_hits": 460592, "smc_hits": 0, "megaflow_hits": 1045, "upcalls": 12,
                         "emc_hit_ratio": 0.99}},
}


# --------------------------------------------------------------- picking the figures


def test_userspace_point_says_cores_per_core_rate_and_pmd_counters():
    assert switch_figures.switch_cores(DPDK_POINT) == pytest.approx(0.4973)
    assert switch_figures.cpu_text(DPDK_POINT) == "0.50 cores (threads), 0.463 Mpps per core"
    assert switch_figures.pmd_text(DPDK_POINT) == "PMD: EMC hits 460,592, SMC hits 0, megaflow hits 1,045, upcalls 12"
    assert switch_figures.kernel_text(DPDK_POINT) is None and switch_figures.offload_text(DPDK_POINT) is None
    assert switch_figures.rules_installed(DPDK_POINT) == 128


def test_kernel_tc_point_says_lookups_and_flows_in_tc():
    point = json.loads((OVS_TC_RUN / "results.json").read_text())["tests"][0]["frame_sizes"][0]["points"][0]
    assert switch_figures.kernel_text(point) == "kernel datapath lookups: hit 0, missed 0, lost 0"
    assert switch_figures.offload_text(point) == "128 of 128 flows offloaded to TC (tc-policy skip_hw)"
    assert switch_figures.cpu_source(point) == "softirq+threads"
    assert "Mpps per core" in switch_figures.point_text(point)


def test_a_point_without_switch_figures_says_nothing():
    bare = {"name": "NDR", "throughput_fps": 1e6}
    assert not switch_figures.has_figures(bare)
    assert switch_figures.point_text(bare) is None
    starved = copy.deepcopy(DPDK_POINT)
    starved["efficiency"]["oversubscribed"] = True
    assert "CPU oversubscribed" in switch_figures.cpu_text(starved)
    assert switch_figures.switch_cores({"efficiency": {"switch_cores": float("nan")}}) is None


def _test(index, testcase, variant, *, sizes=(86,), fps=1e6, vswitch="ovs_dpdk", flows=None):
    return {
        "plan_index": index, "label": f"{testcase}{variant}", "testcase": testcase, "variant": variant,
        "vswitch": vswitch, "trafficgen": "trafgen", "deployment": "p2p", "status": "complete",
        "flows": flows if flows is not None else variant.get("dut.rules", variant.get("traffic.flows", 1)),
        "frame_sizes": [{"frame_size_bytes": s, "status": "complete",
                         "points": [{**copy.deepcopy(DPDK_POINT), "name": "PDR", "throughput_fps": 2 * fps},
                                    {**copy.deepcopy(DPDK_POINT), "throughput_fps": fps / s * 86}]}
                        for s in sizes],
    }


def test_plans_of_a_matrix_become_one_curve_per_testcase_and_fixed_values():
    tests = [
        _test(0, "rule_complexity", {"dut.rules": 1000}, fps=0.5e6),
        _test(1, "rule_complexity", {"dut.rules": 64}, fps=1e6),
        _test(2, "flow_scalability", {"traffic.flows": 1000}, sizes=(64, 128)),
        _test(3, "flow_scalability", {"traffic.flows": 1000000}, sizes=(64, 128), fps=0.1e6),
        _test(4, "rule_complexity", {"dut.rules": 64, "traffic.bidirectional": False}),
        _test(5, "phy2phy_tput", {}),
    ]
    found = scaling.curves(tests)
    assert [(c.testcase, c.axis, c.fixed) for c in found] == [
        ("rule_complexity", "dut.rules", ()),
        ("flow_scalability", "traffic.flows", ()),
        ("rule_complexity", "dut.rules", (("traffic.bidirectional", False),)),
    ]
    rules = found[0]
    [series] = rules.series.values()
    assert [p.count for p in series] == [64, 1000]            # sorted by count, not run order
    assert [p.goal for p in series] == ["NDR", "NDR"]         # NDR preferred over the first point
    assert [p.throughput_fps for p in series] == pytest.approx([1e6, 0.5e6])
    assert series[0].mpps_per_core == pytest.approx(0.4630952)
    assert rules.plottable() and scaling.drop_ratio(series) == pytest.approx(2.0)
    flows = found[1]
    assert sorted(flows.series) == [64, 128] and flows.counts() == [1000, 1000000]
    assert not found[2].plottable()                           # one count is a dot, not a curve


def test_repeats_of_a_plan_are_one_median_point_in_the_grid_and_the_drop():
    """--repeat K runs each plan K times: the curve's value at a count is the median of its
    repeats (and flagged when any repeat was), never the first or last repeat alone."""
    tests = [_test(i, "vrouter_route_scaling", {"dut.routes": routes}, fps=fps)
             for i, (routes, fps) in enumerate([(1, 1.0e6), (1000000, 0.5e6), (1, 1.2e6), (1000000, 0.4e6),
                                                (1, 3.0e6), (1000000, 0.45e6)])]
    tests[3]["frame_sizes"][0]["points"][1]["regular"] = False
    [curve] = scaling.curves(tests)
    assert len(curve.series[86]) == 6                          # the detail table keeps every repeat
    one, million = curve.per_count(86)
    assert (one.count, one.repeats, one.throughput_fps) == (1, 3, pytest.approx(1.2e6))
    assert (million.count, million.throughput_fps, million.flagged) == (1000000, pytest.approx(0.45e6), True)
    assert not one.flagged
    _, _, cells = curve.grid()
    assert cells[(1, 86)].throughput_fps == pytest.approx(1.2e6)
    [drop] = scaling.drops(curve)
    assert drop.ratio == pytest.approx(1.2 / 0.45)
    assert "1.200 Mpps at 1 route → 0.450 Mpps at 1M routes, 2.67× lower" in scaling.drop_sentence(curve, drop)


# --------------------------------------------------------------- report.html


@pytest.fixture
def tc_run(tmp_path):
    run_dir = tmp_path / OVS_TC_RUN.name
    shutil.copytree(OVS_TC_RUN, run_dir)
    return run_dir


def _section(html: str, start: str, end: str = "<h2") -> str:
    i = html.index(start)
    j = html.find(end, i + len(start))
    return html[i:] if j < 0 else html[i:j]


def _table_after(html: str, heading: str) -> str:
    """The first table after ``heading``, closing tag included."""
    return _section(html, heading, "</table>") + "</table>"


def _rows(html: str) -> list[list[str]]:
    return [row for t in Page(html).tables for row in t]


def test_report_of_a_rule_complexity_run_shows_the_curve_and_the_efficiency(tc_run):
    assert main(["report", str(tc_run)]) == 0
    html = (tc_run / "report.html").read_text()
    page = Page(html)
    assert page.errors == []

    curve = _section(html, "<h2>Scaling</h2>")
    assert "rule_complexity on ovs_tc (trafgen, p2p)" in curve
    rows = _rows(curve)
    by_rules = {row[0]: row for row in rows if row and row[0] in ("64", "1,000")}
    # rules, flows, frame size, NDR Mpps, cores, Mpps per core, datapath, plan
    assert by_rules["64"][1:6] == ["64", "86", "0.020", "0.13", "0.149"]
    assert by_rules["1,000"][1:6] == ["1,000", "86", "0.010", "0.33", "0.030"]
    assert "128 of 128 flows offloaded to TC (tc-policy skip_hw)" in by_rules["64"][6]
    assert "2,000 of 2,000 flows offloaded to TC" in by_rules["1,000"][6]
    assert "kernel datapath lookups: hit 0, missed 0, lost 0" in by_rules["64"][6]
    text = " ".join(curve.split())
    assert ("86 B: NDR 0.020 Mpps at 64 rules → 0.010 Mpps at 1K rules, 2.00× lower (-50.0 %) "
            "(an end is flagged: see the table)") in text
    # the seed's shape: one row per count, per frame size Mpps, % line rate, change vs the first count
    grid = _table_after(curve, "<h4>NDR frame rate per frame size and number of rules</h4>")
    rows = {r[0]: r for r in _rows(grid) if r}
    assert rows["64 rules"][1] == "0.020 *" and rows["64 rules"][3] == "+0.0"        # both ends flagged here
    assert rows["1K rules"][1] == "0.010 *" and rows["1K rules"][3] == "-50.0"   # irregular: flagged
    assert rows["drop 64 rules → 1K rules"][1] == "2.00×"

    # the plot: an SVG with both panels' titles drawn (text as paths, so check the alt text
    # and that the image is a well-formed SVG)
    [img] = [v for tag, attr, v in Page(curve).links if tag == "img" and attr == "src"]
    svg = base64.b64decode(img.split(",", 1)[1])
    assert ET.fromstring(svg).tag.endswith("svg")
    assert "OpenFlow rules per direction versus NDR frame rate (Mpps, aggregate) and Mpps per core" in curve

    # each plan's section: the efficiency table of its point
    plan = _section(html, 'id="plan-0"', "</section>")
    assert "Switch efficiency" in plan
    [row] = [r for r in _rows(_table_after(plan, "<h3>Switch efficiency</h3>")) if r and r[0] == "86"]
    assert row[1:6] == ["NDR", "0.020", "0.13", "0.149", "softirq+threads"]
    assert row[6:9] == ["0", "0", "0"]                     # hit, missed, lost
    assert row[9] == "128 of 128"                          # flows offloaded of datapath flows
    assert row[10] == "128"                                # rules installed, both directions


def test_report_without_a_matrix_or_switch_figures_has_neither_section(tc_run):
    doc = json.loads((tc_run / "results.json").read_text())
    for test in doc["tests"]:
        test["variant"] = {}
        for fs in test["frame_sizes"]:
            for p in fs["points"]:
                p["efficiency"] = p["datapath"] = None
    (tc_run / "results.json").write_text(json.dumps(doc))
    html = report_html.build_report(tc_run)
    assert "<h2>Scaling</h2>" not in html and "Switch efficiency" not in html


def test_report_shows_pmd_counters_of_a_userspace_switch(tc_run):
    doc = json.loads((tc_run / "results.json").read_text())
    for test in doc["tests"]:
        test["vswitch"] = "ovs_dpdk"
        for fs in test["frame_sizes"]:
            fs["points"] = [{**p, "efficiency": DPDK_POINT["efficiency"], "datapath": DPDK_POINT["datapath"]}
                            for p in fs["points"]]
    (tc_run / "results.json").write_text(json.dumps(doc))
    html = report_html.build_report(tc_run)
    plan = _section(html, 'id="plan-0"', "</section>")
    table = _table_after(plan, "<h3>Switch efficiency</h3>")
    assert "PMD (OvS-DPDK)" in table and "Kernel datapath lookups" not in table
    [row] = [r for r in _rows(table) if r and r[0] == "86"]
    # simple-match (not in this OvS's output), EMC, SMC, megaflow hits, upcalls
    assert row[6:11] == ["–", "460,592", "0", "1,045", "12"]
    curve = _section(html, "<h2>Scaling</h2>")
    assert "PMD: EMC hits 460,592, SMC hits 0, megaflow hits 1,045, upcalls 12" in curve


# --------------------------------------------------------------- the console


def _model(doc: dict) -> RunResults:
    """results.json -> the result model the runner prints from."""
    point_fields = {f.name for f in dataclasses.fields(ReportedPoint)} - {"latency"}
    tests = []
    for t in doc["tests"]:
        sizes = [FrameSizeResult(frame_size_bytes=fs["frame_size_bytes"], status=fs["status"],
                                 trial_count=fs.get("trial_count", 0),
                                 points=[ReportedPoint(**{k: v for k, v in p.items() if k in point_fields})
                                         for p in fs["points"]])
                 for fs in t["frame_sizes"]]
        tests.append(TestResult(plan_index=t["plan_index"], label=t["label"], testcase=t["testcase"],
                                variant=t["variant"], deployment=t["deployment"], vswitch=t["vswitch"],
                                trafficgen=t["trafficgen"], traffic_type=t["traffic_type"], flows=t["flows"],
                                status=t["status"], frame_sizes=sizes))
    return RunResults(run_id=doc["run_id"], started_at=doc["started_at"], vsbench_version="test",
                      status=doc["status"], tests=tests)


def test_console_summary_prints_efficiency_lines_and_the_scaling_table():
    results = _model(json.loads((OVS_TC_RUN / "results.json").read_text()))
    out = StringIO()
    RunDisplay(Console(file=out, width=250)).summary(results, Path("/nowhere"))
    text = out.getvalue()
    assert ("switch at 86 B NDR: 0.13 cores (softirq+threads), 0.149 Mpps per core; kernel datapath lookups: "
            "hit 0, missed 0, lost 0; 128 of 128 flows offloaded to TC (tc-policy skip_hw)") in text
    assert "rule_complexity on ovs_tc (trafgen, p2p): OpenFlow rules per direction versus NDR frame rate" in text
    lines = [" ".join(line.replace("│", " ").split()) for line in text.splitlines()]
    assert any(line.startswith("64 86 0.020 0.13 0.149 kernel datapath lookups") for line in lines), text
    assert any(line.startswith("1,000 86 0.010 0.33 0.030 kernel datapath lookups") for line in lines), text


def test_console_line_after_a_frame_size():
    fs = FrameSizeResult(frame_size_bytes=86, status="complete", points=[ReportedPoint(**{
        k: v for k, v in DPDK_POINT.items()})])
    assert display_efficiency.point_line(fs) == (
        "0.50 cores (threads), 0.463 Mpps per core; PMD: EMC hits 460,592, SMC hits 0, megaflow hits 1,045, upcalls 12")
    out = StringIO()
    RunDisplay(Console(file=out, width=250)).frame_size_finished(fs)
    assert "86 B switch: 0.50 cores (threads), 0.463 Mpps per core; PMD: EMC hits 460,592" in out.getvalue()
    assert display_efficiency.point_line(FrameSizeResult(frame_size_bytes=64, status="failed")) is None
