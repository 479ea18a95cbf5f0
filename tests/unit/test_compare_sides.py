"""``vsbench compare`` heads its runs distinctly, warns about one run compared with itself,
orders frame sizes as numbers and refuses runs without a testcase in common (issue 26 item 7)."""

import json
import shutil

import pytest

from tests.unit.runs_kit import make_run, vsbench
from vsbench.cli import compare_cmd
from vsbench.results import compare, run_metrics


def _run(name, label="phy2phy_tput", sizes=(64,), flags=()):
    metrics = [run_metrics.MetricValue(run_metrics.MetricKey(label, size, "ndr_fps"), [1e6], None, "single",
                                       list(flags)) for size in sizes]
    return run_metrics.RunMetrics([name], None, "complete", "0", {}, [
        run_metrics.TestInfo(label, 1, {"testcase": label}, ["complete"])], metrics)


def test_runs_without_a_testcase_in_common_are_refused_unless_paired_on_purpose():
    with pytest.raises(compare.NotComparable, match="no testcase in common.*--pair-by-position"):
        compare.compare([_run("a"), _run("b", "pvp_tput")])
    paired = compare.compare([_run("a"), _run("b", "pvp_tput")], pair_by_position=True)
    assert any("compared as phy2phy_tput" in n for n in paired.notes)


def test_one_run_twice_is_warned_about_and_headed_distinctly():
    comparison = compare.compare([_run("r1"), _run("r1")])
    assert comparison.run_headings == ["A r1", "B r1"]
    assert comparison.warnings == ["B and A are the same run (r1): every change between them is zero by construction"]
    assert compare.compare([_run("r1"), _run("r2")]).warnings == []
    assert [r["label"] for r in compare.to_json(comparison)["runs"]] == ["A", "B"]


def test_flagged_frame_sizes_are_listed_in_numeric_order():
    sizes = (1024, 128, 1518, 256, 512, 64)
    comparison = compare.compare([_run("r1", sizes=sizes, flags=["at generator ceiling"]), _run("r2", sizes=sizes)])
    [note] = compare_cmd.flag_notes(comparison)
    assert note == "* A r1: at generator ceiling at 64 B, 128 B, 256 B, 512 B, 1024 B, 1518 B"


def test_compare_cli_same_run_and_different_testcases(tmp_path, testkit, capsys):
    run = make_run(tmp_path, testkit, testkit["results"], "--no-store")
    capsys.readouterr()
    code, out, err = vsbench("compare", str(run), str(run), capsys=capsys)
    run_id = run.name.rsplit("-", 1)[1]
    assert code == 0, err
    assert f"warning: B and A are the same run ({run_id})" in err
    assert f"A {run_id}" in out and f"B {run_id}" in out

    other = tmp_path / "other" / run.name.replace(run_id, "0ther1")
    shutil.copytree(run, other)
    doc = json.loads((other / "results.json").read_text())
    doc["run_id"] = "0ther1"
    for test in doc["tests"]:
        test["label"] = test["testcase"] = "pvp_tput"
    (other / "results.json").write_text(json.dumps(doc))
    code, out, err = vsbench("compare", str(run), str(other), capsys=capsys)
    assert code == 2 and err.count("\n") == 1 and "no testcase in common" in err and out == ""
    code, out, err = vsbench("compare", str(run), str(other), "--pair-by-position", capsys=capsys)
    assert code == 0 and "pvp_tput compared as phy2phy_tput" in out
