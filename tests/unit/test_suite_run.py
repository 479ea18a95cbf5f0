"""A whole suite run in-process on the runner test kit (a modelled generator and DUT whose
capacity each run sets): suite.json, the report's id sections, the store's suite rows and
their trend, two runs compared id by id, and a suite whose every run this host cannot do."""

import json
import re

import pytest
import yaml

from tests.unit.runs_kit import layer, vsbench
from vsbench.results import schema

SUITE = {
    "name": "kit_suite",
    "title": "A suite on the modelled DUT",
    "references": "refs.yaml",
    "description": "Two capacities of the modelled DUT, and a run no host has the hardware for.",
    "profiles": {"quick": {"description": "one frame size", "params": {"frame_sizes": [64], "trial_duration": 1}},
                 "full": {"description": "two frame sizes", "params": {"frame_sizes": [64, 512]}}},
    "runs": [
        {"name": "slow", "test": "phy2phy_tput", "params": {"trafficgen.model_gen.capacity_fps": 400000}},
        {"name": "fast", "test": "phy2phy_tput", "params": {"trafficgen.model_gen.capacity_fps": 800000},
         "repeat": 2},
        {"name": "smartnic", "test": "phy2phy_tput", "requires": {"pci_vendors": ["0x19ee"]}},
    ],
    "tables": [
        {"id": "900/T1", "title": "slow against fast", "series": [{"run": "slow", "label": "slow"},
                                                                  {"run": "fast", "label": "fast"}],
         "columns": ["ndr_fps", "gain_percent"], "gain": {"metric": "ndr_fps", "over": "slow"},
         "plot": {"x": "frame_size", "y": "ndr_fps", "kind": "bar"}},
        {"id": "900/T2", "title": "offloaded", "series": [{"run": "smartnic", "label": "SmartNIC"}],
         "columns": ["ndr_fps"]},
    ],
}
REFS = {"ids": {"900/T1": {"printed": True, "source": "Table 1", "rows": [{"frame_size": 64, "series": "fast",
                                                                          "ndr_fps": 900000}]}}}


@pytest.fixture
def suite_file(tmp_path):
    path = tmp_path / "kit_suite.yaml"
    path.write_text(yaml.safe_dump(SUITE))
    (tmp_path / "refs.yaml").write_text(yaml.safe_dump(REFS))
    return path


def run_suite(tmp_path, testkit, suite_file, *extra):
    conf = layer(tmp_path, testkit)
    before = set(testkit["results"].iterdir()) if testkit["results"].is_dir() else set()
    code = vsbench("--suite", str(suite_file), "--conf-file", str(conf), "--results-dir", str(testkit["results"]),
                   *extra)[0]
    [run_dir] = [p for p in testkit["results"].iterdir() if p not in before and p.is_dir()]
    return code, run_dir


def test_a_suite_run_writes_suite_json_and_a_section_per_id(tmp_path, testkit, suite_file, capsys):
    code, run_dir = run_suite(tmp_path, testkit, suite_file)
    assert code == 0
    doc = json.loads((run_dir / "suite.json").read_text())
    schema.validate(doc, "suite_result.schema.json")
    assert doc["status"] == "complete" and doc["summary"] == {"ids": 2, "measured": 1, "not_measurable": 1,
                                                               "not_measured": 0}
    t1, t2 = doc["ids"]
    rows = {r["series"]: r for r in t1["rows"] if r["status"] == "measured"}
    # the modelled DUT forwards what its capacity allows: the search finds each run's
    assert rows["slow"]["values"]["ndr_fps"] == pytest.approx(400000, rel=0.06)
    assert rows["fast"]["values"]["ndr_fps"] == pytest.approx(800000, rel=0.06)
    assert rows["fast"]["repeats"] == 2
    assert rows["fast"]["values"]["gain_percent"] == pytest.approx(100, abs=12)
    assert rows["fast"]["report"] == {"ndr_fps": 900000}
    assert t2["status"] == "not_measurable" and "0x19ee" in t2["reason"]
    # every plan of the suite says which run of which suite it is
    config = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert [p["config"]["suite"]["run"] for p in config["plans"]] == ["slow", "fast", "fast"]
    html = (run_dir / "report.html").read_text()
    assert re.search(r'<section class="plan" id="suite-900-T1">\s*<h3>900/T1', html)
    assert re.search(r'<section class="plan" id="suite-900-T2">\s*<h3>900/T2', html)
    out = capsys.readouterr().out
    assert "1 of 2 ids measured" in out and "smartnic" in out


def test_suite_runs_in_the_store_trend_and_compare_id_by_id(tmp_path, testkit, suite_file, capsys):
    _, first = run_suite(tmp_path, testkit, suite_file, "--store")
    _, second = run_suite(tmp_path, testkit, suite_file, "--store")
    capsys.readouterr()
    code, out, _ = vsbench("db", "trend", "--suite", "kit_suite", "--id", "900/T1", "--metric", "ndr_fps",
                           "--series", "fast", "--results-dir", str(testkit["results"]), capsys=capsys)
    assert code == 0 and out.count("900/T1 fast") == 2
    code, out, _ = vsbench("compare", str(first), str(second), "--format", "json", capsys=capsys)
    doc = json.loads(out)["suite"]
    assert code == 0 and doc["statuses"]["900/T2"] == ["not_measurable", "not_measurable"]
    fast = next(r for r in doc["rows"] if r["series"] == "fast" and r["metric"] == "ndr_fps")
    assert all(v == pytest.approx(800000, rel=0.06) for v in fast["values"])


def test_a_suite_with_nothing_runnable_here_is_one_line_and_creates_nothing(tmp_path, testkit, suite_file, capsys):
    conf = layer(tmp_path, testkit)
    code, _, err = vsbench("--suite", str(suite_file), "--only", "900/T2", "--conf-file", str(conf),
                           "--results-dir", str(testkit["results"]), capsys=capsys)
    assert code == 2 and "nothing of suite kit_suite" in err
    assert not testkit["results"].exists() or not any(testkit["results"].iterdir())
