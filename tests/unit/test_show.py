"""``vsbench show RUN`` and ``summary.txt`` (issue 26 item 8).

There was no text view of a run that was not stored (``db show DIR`` failed) and the table a
run ends with was lost with its terminal. ``show`` prints it again from the run's files with
validity, caveats and gates; every run leaves it as ``summary.txt``.
"""

import json
import shutil

import yaml

from tests.unit.runs_kit import make_run, vsbench


def _gated_run(tmp_path, testkit, *extra):
    gate = tmp_path / "gate.yaml"
    gate.write_text(yaml.safe_dump({"thresholds": {"fail_below": {"ndr_fps": 1000}}}))
    return make_run(tmp_path, testkit, testkit["results"], "--conf-file", str(gate), *extra)


def test_a_run_leaves_its_summary_table_as_summary_txt(tmp_path, testkit, capsys):
    run = _gated_run(tmp_path, testkit, "--no-store")
    printed = capsys.readouterr().out
    text = (run / "summary.txt").read_text()
    run_id = run.name.rsplit("-", 1)[1]
    assert "phy2phy_tput (rfc2544_throughput, marker_switch, model_gen) NDR" in text
    assert "Throughput fps" in text and text.rstrip().endswith(f"results in {run}")
    assert f"run {run_id}: complete" in text and f"run {run_id}: complete" in printed
    assert all(line == line.rstrip() for line in text.splitlines())


def test_show_prints_an_unstored_run_with_validity_caveats_and_gates(tmp_path, testkit, capsys):
    run = _gated_run(tmp_path, testkit, "--no-store")
    capsys.readouterr()
    code, out, err = vsbench("show", str(run), capsys=capsys)
    assert code == 0, err
    assert "Throughput fps" in out and "validity:" in out and "caveats: none" in out
    assert "gates (the testcases' thresholds, config.yaml): 2 passed" in out
    assert "PASSED phy2phy_tput 64 B: ndr_fps" in out

    code, db_out, err = vsbench("db", "show", str(run), capsys=capsys)  # used to need a store
    assert code == 0 and db_out == out, err


def test_show_names_the_caveats_results_json_carries(tmp_path, testkit, capsys):
    run = make_run(tmp_path, testkit, testkit["results"], "--no-store")
    capsys.readouterr()
    copy = tmp_path / "copy" / run.name
    shutil.copytree(run, copy)
    doc = json.loads((copy / "results.json").read_text())
    fs = doc["tests"][0]["frame_sizes"][0]
    point = fs["points"][0]
    point["at_generator_ceiling"] = True
    for lp in fs["latency_points"]:
        if lp["trial_index"] == point["latency_trial_index"]:
            lp["valid"], lp["invalid_reason"] = False, "generator: trafgen needed 1.06 s"
    (copy / "results.json").write_text(json.dumps(doc))
    code, out, err = vsbench("show", str(copy), capsys=capsys)
    assert code == 0, err
    assert "at the generator's ceiling: a lower bound" in out
    assert "not at this load: the generator did not send it as asked (generator: trafgen needed 1.06 s)" in out
    assert "generator-limited latency-invalid" in out  # the table's status says it too


def test_show_a_stored_run_by_id(tmp_path, testkit, capsys):
    run = make_run(tmp_path, testkit, testkit["results"], "--store")
    capsys.readouterr()
    run_id = run.name.rsplit("-", 1)[1]
    code, out, err = vsbench("show", run_id, "--results-dir", str(testkit["results"]), capsys=capsys)
    assert code == 0, err
    assert f"run {run_id}: complete ({run_id} in sqlite" in out and "Throughput fps" in out


def test_show_an_unknown_run_is_one_line_exit_2(tmp_path, testkit, capsys):
    for ref in (str(tmp_path / "nope"), "abcdef"):
        code, out, err = vsbench("show", ref, "--results-dir", str(tmp_path), capsys=capsys)
        assert code == 2 and out == "" and err.count("\n") == 1 and err.startswith("vsbench: error: "), err
    (tmp_path / "empty").mkdir()
    code, _, err = vsbench("show", str(tmp_path / "empty"), capsys=capsys)
    assert code == 2 and "not a run directory" in err and err.count("\n") == 1
