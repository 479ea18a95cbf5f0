"""CI gates: thresholds, --baseline --max-regression, exit codes, --junit (validated against the
JUnit schema CI servers read) and --json, on real runs of the runner test kit."""

import json
from pathlib import Path

import pytest
import yaml
from lxml import etree

from tests.unit.runs_kit import layer, make_run, vsbench
from vsbench.cli import main as cli
from vsbench.results import junit, thresholds

XSD = Path(__file__).resolve().parents[1] / "data" / "junit" / "jenkins-junit.xsd"


def validate_junit(path: Path) -> etree._ElementTree:
    schema = etree.XMLSchema(etree.parse(str(XSD)))
    doc = etree.parse(str(path))
    schema.assertValid(doc)
    return doc


def test_the_schema_rejects_what_a_ci_server_would(tmp_path):
    bad = tmp_path / "bad.xml"
    bad.write_text('<testsuites><testsuite name="x" tests="1"><testcase/></testsuite></testsuites>')
    with pytest.raises(etree.DocumentInvalid):
        validate_junit(bad)


def test_thresholds_parse_with_units_and_frame_sizes():
    t = thresholds.parse("ndr_fps@64=1.5M", thresholds.BELOW)
    assert (t.metric, t.frame_size_bytes, t.value) == ("ndr_fps", 64, 1.5e6)
    assert thresholds.parse("latency_p99_ns=50k", thresholds.ABOVE).value == 50_000
    assert thresholds.parse_percent("5%") == 5.0
    with pytest.raises(thresholds.ThresholdError):
        thresholds.parse("ndr_fps>1", thresholds.BELOW)
    with pytest.raises(thresholds.ThresholdError):
        thresholds.parse("ndr_fps=fast", thresholds.BELOW)


def test_a_failed_threshold_exits_3_with_a_junit_failure_and_json(tmp_path, testkit, capsys):
    report = tmp_path / "junit.xml"
    conf = layer(tmp_path, testkit)
    code, out, err = vsbench("--test", "phy2phy_tput", "--conf-file", str(conf), "--test-params",
                             "frame_sizes=[64,512];trial_duration=1", "--results-dir", str(testkit["results"]),
                             "--fail-below", "ndr_fps@64=2e6", "--fail-above", "latency_p99_ns=1e9",
                             "--fail-below", "pdr_fps=1000", "--junit", str(report), "--json", "--no-store",
                             capsys=capsys)
    assert code == cli.EXIT_THRESHOLD == 3, err
    doc = json.loads(out)  # stdout is only the JSON document
    assert doc["exit_code"] == 3 and doc["status"] == "complete"
    cases = {(c["test"], c["frame_size_bytes"]): c for c in doc["gates"]["cases"]}
    assert cases[("phy2phy_tput", 64)]["status"] == "failed"
    assert any("ndr_fps = 999,738" in f and ">= 2,000,000" in f for f in cases[("phy2phy_tput", 64)]["failures"])
    # the p99 of 100 probes is not defined: a gate that cannot be checked is not passed
    assert any("latency_p99_ns was not measured" in f for f in cases[("phy2phy_tput", 512)]["failures"])
    assert any(m["metric"] == "ndr_fps" and m["frame_size_bytes"] == 64 for m in doc["metrics"])
    assert "gate failed: phy2phy_tput 64 B" in err

    tree = validate_junit(report)
    suite = tree.getroot().find("testsuite")
    assert suite.get("name") == "phy2phy_tput" and suite.get("tests") == "2" and suite.get("failures") == "2"
    names = [c.get("name") for c in suite.findall("testcase")]
    assert names == ["64B", "512B"]
    failure = suite.find("testcase").find("failure")
    assert failure.get("type") == "threshold" and "ndr_fps" in failure.get("message")
    props = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert props["testcase"] == "phy2phy_tput" and len(props["run_id"]) == 6


def test_passing_gates_exit_0_and_every_case_passes(tmp_path, testkit, capsys):
    report = tmp_path / "junit.xml"
    run = make_run(tmp_path, testkit, testkit["results"], "--fail-below", "ndr_fps=9e5",
                   "--fail-above", "latency_max_ns@64=1e6", "--junit", str(report), "--no-store")
    tree = validate_junit(report)
    assert tree.getroot().get("failures") == "0" and tree.getroot().get("tests") == "2"
    out = tree.getroot().find("testsuite").find("testcase").find("system-out").text
    assert "ok: ndr_fps = 999,738 fps, threshold ndr_fps >= 900,000 fps" in out
    assert run.is_dir()


def test_baseline_regression_fails_a_worse_run_and_passes_an_unchanged_one(tmp_path, testkit, capsys):
    results = testkit["results"]
    baseline = make_run(tmp_path, testkit, results, "--store")
    conf_worse = layer(tmp_path, testkit, capacity_fps=0.9e6, name="worse.yaml")
    args = ["--test", "phy2phy_tput", "--test-params", "frame_sizes=[64,512];trial_duration=1",
            "--results-dir", str(results), "--baseline", str(baseline), "--max-regression", "5%"]
    capsys.readouterr()
    code, _, err = vsbench(*args, "--conf-file", str(conf_worse), capsys=capsys)
    assert code == 3, err
    assert "-9.99 %" in err and "allowed regression 5 %" in err and "significant" in err
    code, _, err = vsbench(*args, "--conf-file", str(layer(tmp_path, testkit, name="same.yaml")), capsys=capsys)
    assert code == 0, err
    # the baseline by run id, from the results store it was recorded in (--store)
    run_id = baseline.name.rsplit("-", 1)[1]
    code, _, err = vsbench(*args[:-4], "--baseline", run_id, "--max-regression", "5",
                           "--conf-file", str(conf_worse), capsys=capsys)
    assert code == 3, err


def test_testcase_thresholds_apply_to_its_plans(tmp_path, testkit, capsys):
    cases = tmp_path / "testcases"
    cases.mkdir()
    doc = yaml.safe_load((Path(__file__).resolve().parents[2] / "testcases" / "phy2phy_tput.yaml").read_text())
    doc["thresholds"] = {"fail_below": {"ndr_fps@512": 5e6}}
    (cases / "phy2phy_tput.yaml").write_text(yaml.safe_dump(doc))
    code, out, err = vsbench("--test", "phy2phy_tput", "--testcase-dir", str(cases),
                             "--conf-file", str(layer(tmp_path, testkit)), "--test-params",
                             "frame_sizes=[64,512];trial_duration=1", "--results-dir", str(testkit["results"]),
                             "--json", "--no-store", capsys=capsys)
    assert code == 3, err
    failed = [c for c in json.loads(out)["gates"]["cases"] if c["status"] == "failed"]
    assert [(c["frame_size_bytes"], "(testcase)" in c["failures"][0]) for c in failed] == [(512, True)]


def test_gate_input_errors_exit_2_before_anything_runs(tmp_path, testkit, capsys):
    conf = str(layer(tmp_path, testkit))
    base = ["--test", "phy2phy_tput", "--conf-file", conf, "--results-dir", str(testkit["results"])]
    for extra, text in ((["--fail-below", "ndr_fps"], "expected METRIC"),
                        (["--max-regression", "5%"], "needs --baseline"),
                        (["--baseline", str(tmp_path / "missing"), "--max-regression", "5"], "no such run directory"),
                        (["--repeat", "0"], "--repeat must be at least 1"),
                        (["--junit", str(tmp_path / "no" / "dir.xml")], "no directory")):
        code, out, err = vsbench(*base, *extra, "--json", capsys=capsys)
        assert code == 2 and text in err and err.count("\n") == 1, (extra, err)
        assert json.loads(out) == {"schema": "vsbench.run-summary/1", "exit_code": 2, "run_dir": None,
                                   "error": err.strip().removeprefix("vsbench: error: ")}
    assert not testkit["results"].exists()  # nothing ran


def test_a_failed_frame_size_is_a_junit_error_and_exit_1_wins_over_3():
    cases = [thresholds.Case("t", 64, "error", error="frame size failed: generator lost"),
             thresholds.Case("t", 128, "skipped", error="skipped: too large"),
             thresholds.Case("t", 256, "failed", failures=["ndr_fps = 1 fps, threshold ndr_fps >= 2 fps",
                                                           "second\x01reason"])]
    text = junit.render(cases, run_id="abc123", hostname="h")
    root = __import__("xml.etree.ElementTree", fromlist=["x"]).fromstring(text.encode())
    suite = root.find("testsuite")
    assert (suite.get("errors"), suite.get("failures"), suite.get("skipped")) == ("1", "1", "1")
    assert "\x01" not in text
    from vsbench.runner import after_run
    assert after_run.EXIT_THRESHOLD == 3 and after_run.EXIT_FAILED == 1
