"""vsbench compare and --repeat: real run directories of the runner test kit (a modelled DUT of
chosen capacity), compared through the CLI; significance checked on the pure functions."""

import csv
import io
import json

import pytest

from tests.unit.runs_kit import make_run, results_of, vsbench
from vsbench.results import compare, run_metrics, significance
from vsbench.results.report_data import load_run
from vsbench.results.significance import SIGNIFICANT, UNKNOWN, WITHIN_NOISE, Interval


# -- significance (pure) ------------------------------------------------------------------------


def test_welch_calls_a_clear_difference_significant_and_overlap_noise():
    a = [100.0, 101.0, 99.0]
    worse = significance.compare_values(100.0, a, None, 90.0, [90.0, 91.0, 89.0], None, higher_is_better=True)
    assert worse.significance == SIGNIFICANT and worse.better is False
    assert worse.percent == pytest.approx(-10.0)
    assert worse.percent_low < -10.0 < worse.percent_high < 0  # the interval excludes zero
    noisy = significance.compare_values(100.0, a, None, 100.5, [96.0, 100.5, 104.0], None, higher_is_better=True)
    assert noisy.significance == WITHIN_NOISE and noisy.percent_low < 0 < noisy.percent_high


def test_single_measurements_use_their_intervals_and_say_so():
    disjoint = significance.compare_values(100.0, [100.0], Interval(100.0, 100.5), 90.0, [90.0], Interval(90.0, 90.4),
                                           higher_is_better=True)
    assert disjoint.significance == SIGNIFICANT and "single runs" in disjoint.basis
    overlap = significance.compare_values(100.0, [100.0], Interval(100.0, 100.5), 100.3, [100.3],
                                          Interval(100.3, 100.8), higher_is_better=True)
    assert overlap.significance == WITHIN_NOISE
    unknown = significance.compare_values(100.0, [100.0], None, 50.0, [50.0], Interval(50, 51), higher_is_better=True)
    assert unknown.significance == UNKNOWN and "--repeat" in unknown.basis
    # lower is better for latency: an increase is worse
    latency = significance.compare_values(1000.0, [1000.0, 1010.0], None, 2000.0, [2000.0, 2010.0], None,
                                          higher_is_better=False)
    assert latency.better is False and latency.significance == SIGNIFICANT


def test_negligible_changes_are_never_significant():
    change = significance.compare_values(1000.0, [1000.0, 1000.0, 1000.0], None, 1000.5, [1000.5] * 3, None, True)
    assert change.significance == WITHIN_NOISE


def test_quantile_interval_brackets_the_median_and_needs_enough_samples():
    samples = list(range(1, 1001))
    ci = significance.quantile_interval(samples, 0.5)
    assert ci.low < 500 < ci.high and ci.high - ci.low < 80
    assert significance.quantile_interval(samples[:50], 0.99) is None  # too few for a p99 interval


def test_t_quantiles():
    assert significance.t975(1) == pytest.approx(12.706)
    assert significance.t975(2.7) == pytest.approx(4.303)  # rounded down: conservative
    assert significance.t975(1000) == pytest.approx(1.962, abs=1e-3)


# -- runs ---------------------------------------------------------------------------------------


def test_repeat_runs_each_plan_k_times_and_reports_median_and_spread(tmp_path, testkit, capsys):
    run = make_run(tmp_path, testkit, testkit["results"], "--repeat", "3", "--no-store", noise=0.01)
    tests = results_of(run)["tests"]
    assert [t["repeat"] for t in tests] == [{"index": i, "count": 3} for i in (1, 2, 3)]
    assert {t["label"] for t in tests} == {"phy2phy_tput"}
    files = load_run(run)
    figures = run_metrics.extract(files.results, files.sysinfo, files.plans, files.trials)
    ndr = figures.by_key()[run_metrics.MetricKey("phy2phy_tput", 64, "ndr_fps")]
    ndrs = sorted(t["frame_sizes"][0]["points"][0]["throughput_fps"] for t in tests)
    assert ndr.samples and sorted(ndr.samples) == ndrs and ndr.value == ndrs[1]
    assert ndr.spread["n"] == 3 and 0.005 < ndr.spread["cv"] < 0.02  # the kit's +-1 % capacity
    assert ndr.basis == "3 repeats"
    out = capsys.readouterr().out
    assert "repeat 2 of 3" in out
    summary = out[out.index("Over the repeats: median and spread"):]
    ndr_line = next(line for line in summary.splitlines() if " 64 " in line and "ndr_fps" in line)
    assert f"{ndr.value:,.0f}" in ndr_line and f"{100 * ndr.spread['cv']:.2f} %" in ndr_line
    report = (run / "report.html").read_text()
    section = report[report.index("<h2>Repeats</h2>"):]
    assert f"<td class=\"num\">{ndr.value:,.0f}</td>" in section.split("</table>")[0]
    assert "repeat 3 of 3" in report


def test_compare_two_switches_prints_the_change_with_significance(tmp_path, testkit, capsys):
    results = testkit["results"]
    base = make_run(tmp_path, testkit, results, "--repeat", "3", noise=0.01)
    worse = make_run(tmp_path, testkit, results, "--repeat", "3", noise=0.01, capacity_fps=0.8e6,
                     vswitch="rule_marker_switch")
    capsys.readouterr()
    html = tmp_path / "compare.html"
    code, out, err = vsbench("compare", str(base), str(worse), "--html", str(html), capsys=capsys)
    assert code == 0, err
    lines = [line for line in out.splitlines() if "ndr_fps" in line]
    assert len(lines) == 2, out  # 64 and 512 B
    assert "-20." in lines[0] and "significant" in lines[0], lines[0]
    assert "vswitch" in out and "rule_marker_switch" in out  # what differs is listed
    page = html.read_text()
    assert "data:image/svg+xml;base64," in page and "Gain" in page and "significant" in page

    code, out, _ = vsbench("compare", str(base), str(worse), "--format", "json", "--metric", "ndr_fps",
                           capsys=capsys)
    doc = json.loads(out)
    assert {r["metric"] for r in doc["rows"]} == {"ndr_fps"}
    change = doc["rows"][0]["changes"][1]
    assert change["significance"] == "significant" and change["better"] is False
    assert change["percent"] == pytest.approx(-20.0, abs=0.6)
    assert change["percent_interval"][0] < change["percent"] < change["percent_interval"][1]
    assert doc["rows"][0]["values"][0]["n"] == 3

    code, out, _ = vsbench("compare", str(base), str(worse), "--format", "csv", capsys=capsys)
    rows = list(csv.DictReader(io.StringIO(out)))
    assert list(rows[0]) == list(compare.CSV_COLUMNS)
    assert {r["run"] for r in rows} == {base.name.rsplit("-", 1)[1], worse.name.rsplit("-", 1)[1]}


def test_an_unchanged_run_is_within_noise_and_pooled_runs_are_repeats(tmp_path, testkit, capsys):
    results = testkit["results"]
    runs = [make_run(tmp_path, testkit, results, noise=0.01) for _ in range(4)]
    capsys.readouterr()
    side_a = ",".join(str(r) for r in runs[:2])
    side_b = ",".join(str(r) for r in runs[2:])
    code, out, _ = vsbench("compare", side_a, side_b, "--format", "json", "--metric", "ndr_fps", capsys=capsys)
    doc = json.loads(out)
    assert code == 0 and doc["runs"][0]["name"].count("+") == 1
    for row in doc["rows"]:
        assert row["values"][0]["n"] == 2
        assert row["changes"][1]["significance"] == "within noise", row


def test_different_topologies_get_switching_operations_normalised_rows():
    def run(ops, fps):
        key = run_metrics.MetricKey("t", 64, "ndr_fps")
        return run_metrics.RunMetrics(["r%d" % ops], None, "complete", "0", {}, [
            run_metrics.TestInfo("t", 1, {"deployment": "p2p" if ops == 1 else "pvp", "switching_operations": ops},
                                 ["complete"])], [run_metrics.MetricValue(key, [fps])])

    comparison = compare.compare([run(1, 1e6), run(2, 0.6e6)])
    assert not any("compared as" in n for n in comparison.notes)  # same label: no pairing
    metrics = {row.key.metric: row for row in comparison.rows}
    assert metrics["ndr_switched_fps"].values[1].value == pytest.approx(1.2e6)
    assert metrics["ndr_switched_fps"].changes[1].percent == pytest.approx(20.0)
    assert any(d.name == "switching_operations" for d in comparison.differences)
    assert any("switching operations" in n for n in comparison.notes)


def test_compare_refuses_what_it_cannot_compare(tmp_path, testkit, capsys):
    run = make_run(tmp_path, testkit, testkit["results"], "--no-store")
    capsys.readouterr()
    code, _, err = vsbench("compare", str(run), capsys=capsys)
    assert code == 2 and "at least two runs" in err
    code, _, err = vsbench("compare", str(run), str(tmp_path / "nope"), capsys=capsys)
    assert code == 2 and err.count("\n") == 1 and "nope" in err
    code, _, err = vsbench("compare", str(run), "abcdef", "--results-dir", str(testkit["results"]), capsys=capsys)
    assert code == 2 and "no run 'abcdef'" in err


def test_tests_of_other_topologies_pair_by_position_and_results_switched_fps_is_used():
    def run(name, label, ops, fps, switched=None):
        metrics = [run_metrics.MetricValue(run_metrics.MetricKey(label, 64, "ndr_fps"), [fps])]
        if switched:
            metrics.append(run_metrics.MetricValue(run_metrics.MetricKey(label, 64, "ndr_switched_fps"), [switched]))
        return run_metrics.RunMetrics([name], None, "complete", "0", {}, [
            run_metrics.TestInfo(label, 1, {"testcase": label, "switching_operations": ops,
                                            "topology": {"topology": "pvp" if ops > 1 else "p2p"}},
                                 ["complete"])], metrics)

    comparison = compare.compare([run("a", "phy2phy_tput", 1, 1e6), run("b", "pvp_tput", 2, 0.4e6, switched=0.8e6)],
                                 pair_by_position=True)
    rows = {row.key.metric: row for row in comparison.rows}
    assert rows["ndr_fps"].changes[1].percent == pytest.approx(-60.0)
    assert rows["ndr_switched_fps"].values[1].value == 0.8e6  # results.json's own, not recomputed
    assert rows["ndr_switched_fps"].changes[1].percent == pytest.approx(-20.0)
    assert any("pvp_tput compared as phy2phy_tput" in n for n in comparison.notes)
    names = {d.name for d in comparison.differences}
    assert {"testcase", "switching_operations", "topology"} <= names


def test_extract_reads_the_fields_a_pvp_results_json_adds():
    point = {"name": "NDR", "throughput_fps": 4e5, "lower_bound_fps": 4e5, "upper_bound_fps": 4.02e5,
             "switched_fps": 8e5, "cpu_oversubscribed": True, "valid": True, "regular": True}
    doc = {"run_id": "abc123", "tests": [{"label": "pvp_tput", "testcase": "pvp_tput", "deployment": "pvp",
                                          "switching_operations": 2, "vnf": "testpmd", "cpu_oversubscribed": True,
                                          "topology": {"topology": "pvp", "vnf_count": 1}, "status": "complete",
                                          "frame_sizes": [{"frame_size_bytes": 64, "status": "complete",
                                                           "points": [point]}]}]}
    figures = run_metrics.extract(doc)
    by_key = figures.by_key()
    switched = by_key[run_metrics.MetricKey("pvp_tput", 64, "ndr_switched_fps")]
    assert switched.value == 8e5 and (switched.interval.low, switched.interval.high) == (8e5, 8.04e5)
    assert "CPU oversubscribed" in switched.flags
    fields = figures.tests[0].fields
    assert fields["vnf"] == "testpmd" and fields["topology"]["vnf_count"] == 1 and fields["cpu_oversubscribed"]


def _matrix_run(run_id: str, ndr: float | None) -> dict:
    """One run of a matrix test (a label with brackets) whose NDR search found ``ndr`` or none."""
    label = "rule_complexity[dut.rules=1000,vswitch.ovs_dpdk.smc_enable=True]"
    point = {"name": "NDR", "throughput_fps": ndr, "lower_bound_fps": ndr, "upper_bound_fps": ndr and ndr * 1.01,
             "valid": True if ndr else None, "regular": bool(ndr),
             "irregular_reason": None if ndr else "time budget exhausted"}
    notes = [] if ndr else ["NDR: no load passed (not even min_load 1000 fps)", "NDR: time budget exhausted"]
    return {"run_id": run_id, "status": "complete", "tests": [{
        "label": label, "testcase": "rule_complexity", "variant": {"dut.rules": 1000, "vswitch.ovs_dpdk.smc_enable": True},
        "status": "complete", "frame_sizes": [{"frame_size_bytes": 64, "status": "complete", "points": [point],
                                               "notes": notes}]}]}


def test_a_figure_one_run_lacks_shows_why_and_matrix_labels_keep_their_brackets():
    from rich.console import Console

    from vsbench.cli import compare_cmd

    runs = [run_metrics.extract(_matrix_run("aaa111", 2e5)), run_metrics.extract(_matrix_run("bbb222", None))]
    comparison = compare.compare(runs)
    ndr = next(row for row in comparison.rows if row.key.metric == "ndr_fps")
    assert ndr.values[1] is None and ndr.gaps == [None, "no NDR"]
    assert any(n.endswith("at 64 B in bbb222: no NDR: no load passed (not even min_load 1000 fps); "
                          "time budget exhausted") for n in comparison.notes), comparison.notes
    out = io.StringIO()
    compare_cmd._print_table(comparison, Console(file=out, width=250, color_system=None))
    text = out.getvalue()
    line = next(line for line in text.splitlines() if " ndr_fps " in line)
    # rich read "[dut.rules=...]" as markup and printed "rule_complexity" for every variant
    assert "rule_complexity[dut.rules=1000,vswitch.ovs_dpdk.smc_enable=True]" in line and "no NDR" in line, text
