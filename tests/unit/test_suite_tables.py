"""Each id's rows from planned plans and results.json (vsbench.suite.tables, pure)."""

from pathlib import Path

import pytest

from vsbench.suite import tables
from vsbench.suite.model import from_document

SUITE_DOC = {
    "name": "t",
    "title": "t",
    "description": "t",
    "profiles": {"quick": {"description": "q"}, "full": {"description": "f"}},
    "runs": [{"name": "one", "test": "phy2phy_tput"}, {"name": "two", "test": "phy2phy_tput"},
             {"name": "far", "test": "phy2phy_tput"}],
    "tables": [
        {"id": "000/T1", "title": "by size", "rows": ["frame_size"],
         "series": [{"run": "one", "label": "1 core", "report_series": "1C"}, {"run": "two", "label": "2 cores"}],
         "columns": ["ndr_mpps", "latency_avg_ns", "gain_percent", "ratio"],
         "gain": {"metric": "ndr_mpps", "over": "1 core"},
         "reference": {"printed": True, "source": "Table 1",
                       "rows": [{"frame_size": 64, "series": "1C", "ndr_mpps": 11.6},
                                {"frame_size": 1518, "series": "1C", "ndr_mpps": 3.25}]}},
        {"id": "000/T2", "title": "elsewhere", "series": [{"run": "far", "label": "4 cores", "key": {"cores": 4}}],
         "rows": ["cores", "frame_size"], "columns": ["ndr_mpps"]},
    ],
}


def point(fps, name="NDR", latency_avg=None, **extra):
    return {"name": name, "throughput_fps": fps, "latency": {"avg_ns": latency_avg} if latency_avg else None, **extra}


def a_test(plan_index, sizes):
    return {"plan_index": plan_index, "status": "complete",
            "frame_sizes": [{"frame_size_bytes": s, "status": "complete", "points": pts} for s, pts in sizes]}


@pytest.fixture
def suite():
    return from_document(SUITE_DOC, Path("t.yaml"))


def plans():
    return [
        {"run": "one", "label": "p", "status": "runnable", "plan_index": 0, "frame_sizes": [64], "keys": {}},
        {"run": "one", "label": "p", "status": "runnable", "plan_index": 1, "frame_sizes": [64], "keys": {}},
        {"run": "one", "label": "p", "status": "runnable", "plan_index": 2, "frame_sizes": [64], "keys": {}},
        {"run": "two", "label": "q", "status": "runnable", "plan_index": 3, "frame_sizes": [64], "keys": {}},
        {"run": "far", "label": "r", "status": "not_runnable", "reason": "this host has 2 CPUs, the row needs 5",
         "plan_index": None, "frame_sizes": [64, 1518], "keys": {}},
    ]


def results():
    return {"tests": [a_test(0, [(64, [point(1.0e6, latency_avg=9000)])]),
                      a_test(1, [(64, [point(3.0e6, latency_avg=7000, at_generator_ceiling=True)])]),
                      a_test(2, [(64, [point(2.0e6)])]),
                      a_test(3, [(64, [point(3.0e6)])])]}


def test_repeats_are_one_row_with_median_and_spread(suite):
    entry = tables.build_table(suite.tables[0], plans(), results())
    row = next(r for r in entry["rows"] if r["series"] == "1 core" and r["status"] == "measured")
    assert row["values"]["ndr_mpps"] == pytest.approx(2.0)
    assert row["spread"]["ndr_mpps"] == [pytest.approx(1.0), pytest.approx(3.0)]
    assert row["repeats"] == 3
    assert row["values"]["latency_avg_ns"] == pytest.approx(8000)  # the median of the two that have one
    assert any("generator ceiling" in c for c in row["caveats"])


def test_gain_is_against_the_named_series_row_of_the_same_key(suite):
    entry = tables.build_table(suite.tables[0], plans(), results())
    two = next(r for r in entry["rows"] if r["series"] == "2 cores")
    assert two["values"]["gain_percent"] == pytest.approx(50.0)
    assert two["values"]["ratio"] == pytest.approx(1.5)


def test_report_figures_sit_beside_ours_and_unmatched_ones_are_listed(suite):
    entry = tables.build_table(suite.tables[0], plans(), results())
    ours = next(r for r in entry["rows"] if r["series"] == "1 core" and r["status"] == "measured")
    assert ours["report"] == {"ndr_mpps": 11.6}
    only = [r for r in entry["rows"] if r["status"] == "report_only"]
    assert [(r["key"]["frame_size"], r["series"], r["report"]) for r in only] == [(1518, "1 core", {"ndr_mpps": 3.25})]
    assert entry["status"] == "measured" and entry["complete"] is True


def test_a_row_the_host_cannot_run_carries_its_reason_and_the_id_is_not_measurable(suite):
    entry = tables.build_table(suite.tables[1], plans(), results())
    assert entry["status"] == "not_measurable"
    assert [r["key"] for r in entry["rows"]] == [{"cores": 4, "frame_size": 64}, {"cores": 4, "frame_size": 1518}]
    assert all(r["status"] == "not_runnable" and "2 CPUs" in r["reason"] for r in entry["rows"])
    assert "2 CPUs" in entry["reason"]


def test_a_plan_that_never_ran_is_failed_not_measurable(suite):
    records = plans()
    records[3]["plan_index"] = 7  # planned to run, absent from results.json (the run ended first)
    entry = tables.build_table(suite.tables[0], records, results())
    two = next(r for r in entry["rows"] if r["series"] == "2 cores")
    assert two["status"] == "failed" and "ended before" in two["reason"]
    assert entry["status"] == "measured" and entry["complete"] is False


def test_an_id_whose_only_plan_failed_is_not_measured(suite):
    broken = {"tests": [{"plan_index": 0, "status": "failed", "error": "vswitch crashed",
                         "frame_sizes": [{"frame_size_bytes": 64, "status": "failed", "error": "vswitch crashed",
                                          "points": []}]}]}
    records = [{"run": "one", "label": "p", "status": "runnable", "plan_index": 0, "frame_sizes": [64], "keys": {}}]
    entry = tables.build_table(suite.tables[0], records, broken)
    assert entry["status"] == "not_measured"
    assert "vswitch crashed" in entry["reason"]


def test_summary_counts_each_status(suite):
    ids = tables.build(suite, plans(), results())
    assert tables.summary(ids) == {"ids": 2, "measured": 1, "not_measurable": 1, "not_measured": 0}


def test_sweep_rows_one_per_step_with_output_and_drop():
    doc = {**SUITE_DOC, "tables": [{"id": "002/F6", "title": "sweep", "rows": ["frame_size", "load_percent"],
                                    "series": [{"run": "one", "label": "router"}],
                                    "columns": ["offered_percent", "output_percent", "drop_percent", "latency_avg_ns"]}]}
    suite = from_document(doc, Path("t.yaml"))
    steps = [{"percent": 10.0, "offered_load_fps": 1e5, "rx_fps": 1e5, "loss_ratio": 0.0, "latency": {"avg_ns": 20000}},
             {"percent": 100.0, "offered_load_fps": 1e6, "rx_fps": 8e5, "loss_ratio": 0.2, "latency": None}]
    res = {"tests": [{"plan_index": 0, "frame_sizes": [{"frame_size_bytes": 64, "sweep": steps,
                                                        "sweep_reference_fps": 1e6, "points": []}]}]}
    records = [{"run": "one", "label": "p", "status": "runnable", "plan_index": 0, "frame_sizes": [64], "keys": {}}]
    entry = tables.build_table(suite.tables[0], records, res)
    assert [r["key"]["load_percent"] for r in entry["rows"]] == [10.0, 100.0]
    last = entry["rows"][1]["values"]
    assert last["output_percent"] == pytest.approx(80.0) and last["drop_percent"] == pytest.approx(20.0)
    assert entry["rows"][0]["values"]["latency_avg_ns"] == 20000


def test_gain_against_baseline_key_values_pairs_rows_by_their_other_keys():
    doc = {**SUITE_DOC, "runs": [{"name": n, "test": "pvp_tput"} for n in ("p1", "v1", "p2", "v2")],
           "tables": [{"id": "000/F7-22", "title": "overhead", "rows": ["cores", "tunnel", "frame_size"],
                       "series": [{"run": "p1", "label": "PVP 1 core", "key": {"cores": 1, "tunnel": "none"}},
                                  {"run": "v1", "label": "VXLAN 1 core", "key": {"cores": 1, "tunnel": "vxlan"}},
                                  {"run": "p2", "label": "PVP 2 cores", "key": {"cores": 2, "tunnel": "none"}},
                                  {"run": "v2", "label": "VXLAN 2 cores", "key": {"cores": 2, "tunnel": "vxlan"}}],
                       "columns": ["ndr_fps", "overhead_percent"], "gain": {"metric": "ndr_fps",
                                                                            "baseline": {"tunnel": "none"}}}]}
    suite = from_document(doc, Path("t.yaml"))
    records = [{"run": n, "label": n, "status": "runnable", "plan_index": i, "frame_sizes": [64], "keys": {}}
               for i, n in enumerate(("p1", "v1", "p2", "v2"))]
    res = {"tests": [a_test(i, [(64, [point(fps)])]) for i, fps in enumerate((1.0e6, 0.6e6, 2.0e6, 1.0e6))]}
    entry = tables.build_table(suite.tables[0], records, res)
    overhead = {r["series"]: r["values"]["overhead_percent"] for r in entry["rows"]}
    assert overhead["VXLAN 1 core"] == pytest.approx(40.0) and overhead["VXLAN 2 cores"] == pytest.approx(50.0)
    assert overhead["PVP 1 core"] == pytest.approx(0.0)


def test_a_frame_size_the_runner_skipped_for_the_testbed_is_not_runnable_with_its_note(suite):
    res = {"tests": [{"plan_index": 0, "status": "complete",
                      "frame_sizes": [{"frame_size_bytes": 64, "status": "not-run", "points": [],
                                       "notes": ["skipped: tcp.tso=true cannot cross ovs_dpdk as built here"]}]}]}
    records = [{"run": "one", "label": "p", "status": "runnable", "plan_index": 0, "frame_sizes": [64], "keys": {}}]
    entry = tables.build_table(suite.tables[0], records, res)
    row = next(r for r in entry["rows"] if r["status"] != "report_only")
    assert row["status"] == "not_runnable" and row["reason"] == "tcp.tso=true cannot cross ovs_dpdk as built here"


def test_a_search_that_found_nothing_says_why_in_its_own_words(suite):
    res = {"tests": [{"plan_index": 0, "status": "complete",
                      "frame_sizes": [{"frame_size_bytes": 64, "status": "complete",
                                       "points": [{"name": "NDR", "throughput_fps": None}],
                                       "notes": ["generator-limited: max_load lowered",
                                                 "NDR: no load passed (not even min_load 1000 fps)"]}]}]}
    records = [{"run": "one", "label": "p", "status": "runnable", "plan_index": 0, "frame_sizes": [64], "keys": {}}]
    row = next(r for r in tables.build_table(suite.tables[0], records, res)["rows"] if r["status"] != "report_only")
    assert row["status"] == "failed" and row["reason"] == "NDR: no load passed (not even min_load 1000 fps)"
