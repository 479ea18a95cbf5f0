"""Two runs of one suite compared id by id (vsbench.results.compare_suite and the CLI)."""

import json

from vsbench.cli.main import main
from vsbench.results import compare_suite


def doc(run_id, value, four_cores="not_runnable"):
    rows = [{"series": "1 core", "key": {"frame_size": 64}, "status": "measured", "values": {"ndr_mpps": value}},
            {"series": "4 cores", "key": {"frame_size": 64}, "status": four_cores,
             "reason": None if four_cores == "measured" else "this host has 2 CPUs, the row needs 5",
             "values": {"ndr_mpps": 4.0} if four_cores == "measured" else {}},
            {"series": "1 core", "key": {"frame_size": 1518}, "status": "report_only", "report": {"ndr_mpps": 3.2}}]
    return {"suite": "s", "profile": "quick", "run_id": run_id,
            "ids": [{"id": "000/T1", "status": "measured",
                     "reason": None if four_cores == "measured" else "this host has 2 CPUs, the row needs 5",
                     "columns": [{"name": "ndr_mpps", "label": "NDR frame rate", "unit": "Mpps"}], "rows": rows}]}


def test_rows_match_by_series_and_key_and_changes_are_against_the_first():
    comparison = compare_suite.compare([("a", doc("r1", 2.0)), ("b", doc("r2", 3.0, four_cores="measured"))])
    one, four = comparison.rows
    assert (one.series, one.values, one.changes_percent) == ("1 core", [2.0, 3.0], [None, 50.0])
    assert four.values == [None, 4.0] and four.gaps == ["not runnable", None]
    assert comparison.reasons["000/T1"][0].startswith("this host has 2 CPUs")
    assert not comparison.notes


def test_the_same_run_twice_is_said():
    comparison = compare_suite.compare([("a", doc("r1", 2.0)), ("a again", doc("r1", 2.0))])
    assert any("same run" in n for n in comparison.notes)


def test_cli_compares_suite_run_directories(tmp_path, capsys):
    for name, value in (("a", 2.0), ("b", 3.0)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "suite.json").write_text(json.dumps(doc(f"r{name}", value)))
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["suite"]["rows"][0]["changes_percent"] == [None, 50.0]
