"""Scaling curves in vsbench compare: the seed reports' count x frame size tables with a column
per run and each run's drop from the smallest count to the largest (pure, then through the CLI
on real runs of the runner test kit)."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from rich.console import Console

from tests.unit.runs_kit import make_run, vsbench
from tests.unit.test_report_html import Page
from vsbench.cli import compare_cmd
from vsbench.results import compare, compare_page, compare_scaling, run_metrics, scaling


def _results(run_id: str, rates: dict[int, dict[int, float]], *, axis: str = "dut.routes",
             testcase: str = "vrouter_route_scaling", extra: dict | None = None) -> dict:
    """A results.json document: one test per count, ``rates[count][frame size]`` its NDR."""
    tests = []
    for i, (count, by_size) in enumerate(rates.items()):
        variant = {axis: count, **(extra or {})}
        inner = ",".join(f"{k}={v}" for k, v in variant.items())
        tests.append({
            "plan_index": i, "label": f"{testcase}[{inner}]", "testcase": testcase, "variant": variant,
            "vswitch": "none", "vnf": "vrouter", "trafficgen": "trafgen", "deployment": "phy_router_phy",
            "status": "complete", "flows": count,
            "frame_sizes": [{"frame_size_bytes": size, "status": "complete",
                             "points": [{"name": "NDR", "throughput_fps": fps, "lower_bound_fps": fps * 0.99,
                                         "upper_bound_fps": fps * 1.01, "valid": True, "regular": True}]}
                            for size, fps in by_size.items()],
        })
    return {"run_id": run_id, "started_at": "2026-11-25T12:00:00Z", "status": "complete", "tests": tests}


KERNEL = {1: {64: 600e3, 256: 580e3}, 1000: {64: 560e3, 256: 550e3}, 1_000_000: {64: 300e3, 256: 290e3}}
FASTER = {1: {64: 900e3, 256: 880e3}, 1000: {64: 880e3, 256: 860e3}, 1_000_000: {64: 600e3, 256: 590e3}}


def _comparison(*docs: dict) -> compare.Comparison:
    return compare.compare([run_metrics.extract(d) for d in docs])


def test_curves_fold_the_rows_back_into_count_by_frame_size():
    comparison = _comparison(_results("aaaaaa", KERNEL), _results("bbbbbb", FASTER))
    [curve] = compare_scaling.curves(comparison)
    assert curve.axis.key == "dut.routes" and curve.testcase == "vrouter_route_scaling" and curve.metric == "ndr_fps"
    assert curve.counts() == [1, 1000, 1_000_000] and curve.frame_sizes() == [64, 256]
    assert curve.value(1_000_000, 64, 0) == 300e3 and curve.value(1_000_000, 64, 1) == 600e3
    drops = {(d.run, d.frame_size_bytes): d for d in curve.drops()}
    assert drops[("aaaaaa", 64)].ratio == pytest.approx(2.0)
    assert drops[("bbbbbb", 64)].ratio == pytest.approx(1.5)
    assert drops[("aaaaaa", 64)].percent == pytest.approx(-50.0)
    assert curve.drop_sentence(drops[("aaaaaa", 64)]) == (
        "aaaaaa: 64 B NDR 0.600 Mpps at 1 route → 0.300 Mpps at 1M routes, 2.00× lower (-50.0 %)")
    doc = compare_scaling.to_json([curve])[0]
    assert doc["axis"] == "dut.routes" and doc["counts"] == [1, 1000, 1_000_000]
    assert {"run": "bbbbbb", "frame_size_bytes": 256, "count": 1000, "value": 860e3} in doc["values"]
    assert json.dumps(doc)  # JSON-able


def test_each_other_matrix_value_is_its_own_curve_and_plain_tests_none():
    a = _results("aaaaaa", {1: {64: 1e6}, 64: {64: 0.5e6}}, axis="dut.nexthops", testcase="vrouter_nexthop_scaling",
                 extra={"traffic.bidirectional": True})
    b = _results("aaaaaa", {1: {64: 1e6}, 64: {64: 0.6e6}}, axis="dut.nexthops", testcase="vrouter_nexthop_scaling",
                 extra={"traffic.bidirectional": False})
    doc = {**a, "tests": a["tests"] + [{**t, "plan_index": t["plan_index"] + 2} for t in b["tests"]]}
    curves = compare_scaling.curves(_comparison(doc, doc))
    assert [c.fixed for c in curves] == [(("traffic.bidirectional", True),), (("traffic.bidirectional", False),)]
    assert curves[0].axis.label == "next hops per router port"
    plain = {"run_id": "cccccc", "status": "complete", "tests": [
        {**_results("x", {1: {64: 1e6}})["tests"][0], "variant": {}, "label": "phy2phy_tput"}]}
    assert compare_scaling.curves(_comparison(plain, plain)) == []


def test_the_compare_page_and_terminal_carry_the_scaling_table_and_drops():
    comparison = _comparison(_results("aaaaaa", KERNEL), _results("bbbbbb", FASTER))
    html = compare_page.render_html(comparison, generated_at="now")
    page = Page(html)
    assert page.errors == []
    section = html[html.index("<h2>Scaling</h2>"):html.index("<h2>Every figure</h2>")]
    text = " ".join(section.split())
    assert "bbbbbb: 64 B NDR 0.900 Mpps at 1 route → 0.600 Mpps at 1M routes, 1.50× lower (-33.3 %)" in text
    rows = {r[0]: r for t in Page(section).tables for r in t if r}
    # 64 B: baseline Mpps, other run's Mpps, change; then 256 B likewise
    assert rows["1M routes"][1:4] == ["0.300", "0.600", "+100.00 %"]
    assert rows["drop 1 route → 1M routes"][1] == "2.00× (-50.0 %)"
    assert any(tag == "img" for tag, _attr, _v in Page(section).links)
    out = StringIO()
    compare_cmd._print_table(comparison, Console(file=out, width=250, color_system=None))
    printed = out.getvalue()
    assert "Scaling: vrouter_route_scaling: routes per router port versus NDR frame rate" in printed
    assert "aaaaaa: 256 B NDR 0.580 Mpps at 1 route → 0.290 Mpps at 1M routes, 2.00× lower (-50.0 %)" in printed
    lines = [" ".join(line.replace("│", " ").split()) for line in printed.splitlines()]
    assert any(line.startswith("1M routes 0.300 0.600 +100.00 % 0.290 0.590") for line in lines), printed


def test_compare_cli_on_real_runs_over_a_flow_matrix(tmp_path, testkit, capsys):
    """Two runs of the kit's modelled DUT (1 and 2 Mfps) over traffic.flows = [1, 1000]:
    the JSON has the curve with both runs' values, the HTML page its table."""
    params = "frame_sizes=[64];trial_duration=1;traffic.flows=[1,1000]"
    a = make_run(tmp_path, testkit, testkit["results"], "--no-store", capacity_fps=1e6, params=params,
                 test="flow_scalability")
    b = make_run(tmp_path, testkit, testkit["results"], "--no-store", capacity_fps=2e6, params=params,
                 test="flow_scalability")
    capsys.readouterr()
    html = tmp_path / "cmp.html"
    code, out, _ = vsbench("compare", str(a), str(b), "--format", "json", "--html", str(html), capsys=capsys)
    assert code == 0
    [curve] = json.loads(out)["scaling"]
    assert curve["axis"] == "traffic.flows" and curve["counts"] == [1, 1000]
    values = {(v["run"], v["count"]): v["value"] for v in curve["values"]}
    runs = sorted({v["run"] for v in curve["values"]})
    assert len(runs) == 2 and all(values[(r, c)] for r in runs for c in (1, 1000))
    assert "<h2>Scaling</h2>" in html.read_text() and "flows per direction" in html.read_text()


def test_split_variant_prefers_known_axes_and_takes_any_integer_key():
    ax, count, fixed = scaling.split_variant({"traffic.flows": 10, "dut.routes": 1000})
    assert (ax.key, count, fixed) == ("dut.routes", 1000, (("traffic.flows", 10),))
    ax, count, fixed = scaling.split_variant({"vswitch.ovs_dpdk.pmd_cores": 4, "traffic.bidirectional": True})
    assert (ax.key, ax.label, count) == ("vswitch.ovs_dpdk.pmd_cores", "vswitch.ovs_dpdk.pmd_cores", 4)
    assert scaling.split_variant({"traffic.bidirectional": True}) is None and scaling.split_variant(None) is None
    assert [scaling.short_count(c) for c in (1, 64, 1000, 64000, 1_000_000, 1500)] == ["1", "64", "1K", "64K", "1M",
                                                                                         "1,500"]
    assert scaling.axis("dut.nexthops").count_text(1) == "1 next hop"
    assert scaling.axis("dut.nexthops").count_text(64) == "64 next hops"
