"""report.html: the noisy neighbour's load table and the log-scale latency histogram.

tests/data/runs/phy2phy_cpu_load_ovs_dpdk is a real run of this branch on the embedded
testbed (``vsbench --test phy2phy_cpu_load --vswitch ovs_dpdk --test-params
"frame_sizes=[64];trial_duration=1;latency.trial_duration_s=1"``): stress-ng on cpu0
beside OvS-DPDK's PMD on cpu1, latency trials with 1000 per-packet probe records each.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.unit.test_report_html import check_page
from vsbench.interfaces.traffic import LatencyHistogram
from vsbench.results import report_html, report_latency_hist as rl, report_load
from vsbench.results.report_data import load_run

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "tests" / "data" / "runs" / "phy2phy_cpu_load_ovs_dpdk"


@pytest.fixture
def run_dir(tmp_path):
    target = tmp_path / RUN.name
    shutil.copytree(RUN, target)
    return target


def test_log_edges_cover_the_range_on_decade_steps():
    edges = rl.log_edges(120.0, 2.5e6)
    assert edges[0] <= 120.0 and edges[-1] >= 2.5e6
    ratios = edges[1:] / edges[:-1]
    assert np.allclose(ratios, 10 ** 0.1)
    assert len(rl.log_edges(500.0, 500.0)) == 2  # one sample: one bucket


def test_bucketed_shares_sum_to_100_and_keep_the_tail():
    values = np.array([100.0] * 90 + [1e6] * 10)
    share = rl.bucketed(values, np.ones(100), rl.log_edges(values.min(), values.max()))
    assert share.sum() == pytest.approx(100.0)
    assert share[0] == pytest.approx(90.0) and share[-1] == pytest.approx(10.0)


def test_recorded_run_series_are_the_latency_trials_probes():
    files = load_run(RUN)
    [test] = files.tests
    frames = rl.series_of(test, {t.trial_index: t for t in files.trials_of(0)})
    [(size, series)] = frames
    assert size == 64
    labels = [s[0] for s in series]
    assert labels[0] == "generator floor (no DUT)" and len(series) == 1 + len(test["frame_sizes"][0]["latency_points"])
    for label, values, weights, source, index in series:
        trial = next(t for t in files.trials if t.trial_index == index)
        assert source == "probes" and len(values) == np.count_nonzero(trial.result.probes.latency_ns > 0)


def test_a_generator_histogram_is_drawn_from_its_own_buckets(run_dir):
    files = load_run(run_dir)
    trial = next(t for t in files.trials if t.result.probes is not None)
    hist_only = dataclasses.replace(trial, result=dataclasses.replace(
        trial.result, probes=None,
        latency_histogram=LatencyHistogram(bucket_lower_ns=[0, 1000, 10000], counts=[5, 0, 3])))
    values, weights, source = rl.trial_distribution(hist_only)
    assert source == "histogram" and list(values) == [1.0, 10000.0] and list(weights) == [5, 3]


def test_report_of_the_recorded_run_has_the_histogram_and_the_measured_load(run_dir):
    report_html.write_report(run_dir)
    page = check_page(run_dir / "report.html")
    text = "".join(page.text)
    images = [v for tag, _, v in page.links if tag == "img"]
    # the histogram is drawn (its SVG is among the page's images) and captioned
    files = load_run(run_dir)
    hist = rl.histogram_figure(files.tests[0], files.trials_of(0))
    assert hist is not None and hist in images
    assert base64.b64decode(hist.split(",", 1)[1]).startswith(b"<?xml")
    assert "Latency histogram per frame size" in text
    doc = json.loads((run_dir / "results.json").read_text())
    [test] = doc["tests"]
    [fs] = test["frame_sizes"]
    measured = fs["load"]["cpus"]["0"]
    assert "Noisy neighbour (stress-ng) beside the throughput" in text
    rows = page.rows_starting_with("64")
    assert ["64", "cpu0", "100", f"{measured['load_percent']:,.1f}"] in [r[:4] for r in rows], rows
    assert "shares cpu0 with the generator" in text


def test_no_load_no_section():
    assert report_load.section({"frame_sizes": []}) == []


def test_show_prints_the_measured_load_beside_the_throughput(capsys):
    from vsbench.cli.main import main

    assert main(["show", str(RUN)]) == 0
    out = capsys.readouterr().out
    load = json.loads((RUN / "results.json").read_text())["tests"][0]["frame_sizes"][0]["load"]
    assert f"64 B stress-ng measured: cpu0 {load['cpus']['0']['load_percent']:.1f} %" in out
