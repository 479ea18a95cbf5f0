"""results.json / results.csv / config.yaml / trials.jsonl are schema-valid and stable."""

import csv
import json

import numpy as np
import pytest
import yaml

from vsbench.interfaces.traffic import (
    SENDING_CAVEATS, DirectionCounters, LatencyHistogram, ProbeRecords, TrialResult,
)
from vsbench.results import schema, summary, writers
from vsbench.results.model import (
    FrameSizeResult,
    RunResults,
    TestResult,
    TrialIdentity,
    TrialRecord,
)
from vsbench.results.trial_log import TrialLog, read_trials

IDENT = TrialIdentity("a1b2c3", 0, "phy2phy_tput")


def _record(index, load, tx, rx, role="search", probes=None, hist=None, valid=True, reasons=(), kind=None):
    result = TrialResult(
        intended_load_fps=load,
        intended_duration_s=2.0,
        frame_size_bytes=64,
        tx_frames=tx,
        rx_frames=rx,
        directions=(DirectionCounters(0, 1, tx // 2, rx // 2), DirectionCounters(1, 0, tx - tx // 2, rx - rx // 2)),
        tx_duration_s=2.0,
        effective_duration_s=2.6,
        probes=probes,
        latency_histogram=hist,
        valid=valid,
        invalid_reason="; ".join(reasons) or None,
        invalid_kind=kind,
        generator_stats={"np": np.int64(3), "arr": np.arange(2)},
    )
    return TrialRecord(IDENT, index, role, "2026-01-01T00:00:00.000+00:00", probes is not None, result,
                       tuple(reasons), {"cpu": {"busy_s": 1.5}})


def _run_results():
    probes = ProbeRecords(np.arange(4, dtype=np.int64), np.array([10, 20, 30, 40], dtype=np.int64), 5)
    bound = _record(1, 1e6, 2_000_000, 2_000_000)
    upper = _record(0, 2e6, 4_000_000, 3_000_000)
    final = _record(2, 1e6, 2_000_000, 2_000_000, role="final", probes=probes)
    point = summary.search_point(
        name="NDR", frame_size_bytes=64, nominal_line_rate_fps=29_761_904.76,
        lower_bound_fps=1e6, upper_bound_fps=2e6, bound_trial=bound, upper_trial=upper,
        latency_trial=final, goal_loss_ratio=0.0, goal_exceed_ratio=0.5,
    )
    t = summary.tally([upper, bound, final])
    fs = FrameSizeResult(64, "complete", 29_761_904.76, 2e6, 1e3, [point], t.trial_count,
                         t.invalid_trial_count, t.trial_seconds, t.effective_seconds, list(t.notes))
    test = TestResult(0, "phy2phy_tput", "phy2phy_tput", "d", {}, "p2p", 1, "ovs_dpdk", "trafgen",
                      "rfc2544_throughput", 10.0, True, 1, "complete", None, [], [fs, FrameSizeResult(128)])
    return RunResults("a1b2c3", "2026-01-01T00:00:00Z", "0.1.0", "2026-01-01T00:10:00Z", "complete", [test]), [upper, bound, final]


def test_results_json_is_schema_valid_and_carries_units(tmp_path):
    results, _ = _run_results()
    doc = writers.write_results_json(tmp_path / "results.json", results)
    on_disk = json.loads((tmp_path / "results.json").read_text())
    assert on_disk == doc
    schema.validate(on_disk, "results.schema.json")
    point = on_disk["tests"][0]["frame_sizes"][0]["points"][0]
    assert point["throughput_fps"] == 1e6
    assert point["throughput_l1_mbps"] == pytest.approx(1e6 * 84 * 8 / 1e6)
    assert point["throughput_l2_mbps"] == pytest.approx(1e6 * 64 * 8 / 1e6)
    assert point["latency"] == {"source": "probes", "samples": 4, "min_ns": 10.0, "avg_ns": 25.0,
                                "max_ns": 40.0, "probes_sent": 5}
    assert point["trial_index"] == 1 and point["latency_trial_index"] == 2


def test_schema_rejects_a_misspelled_field():
    results, _ = _run_results()
    doc = results.to_json()
    doc["tests"][0]["frame_sizes"][0]["points"][0]["throughput_pps"] = 1
    with pytest.raises(schema.SchemaViolation, match="throughput_pps"):
        schema.validate(doc, "results.schema.json")


def test_csv_has_the_documented_column_order_and_one_row_per_frame_size(tmp_path):
    results, _ = _run_results()
    writers.write_results_csv(tmp_path / "results.csv", results)
    with open(tmp_path / "results.csv", newline="") as f:
        rows = list(csv.reader(f))
    assert tuple(rows[0]) == writers.CSV_COLUMNS
    assert len(rows) == 3  # header + 64 B + 128 B (not run)
    row = dict(zip(rows[0], rows[1]))
    assert row["frame_size_bytes"] == "64" and row["goal"] == "NDR"
    assert float(row["throughput_fps"]) == 1e6
    assert row["latency_min_ns"] == "10.0" and row["valid"] == "true"
    empty = dict(zip(rows[0], rows[2]))
    assert empty["throughput_fps"] == "" and empty["status"] == "running"


def test_csv_column_order_is_pinned():
    # Scripts address columns by position (VSPERF's plot script broke when order drifted).
    assert writers.CSV_COLUMNS[:13] == (
        "run_id", "testcase", "label", "traffic_type", "deployment", "vswitch", "trafficgen",
        "frame_size_bytes", "flows", "directions", "goal", "goal_loss_ratio", "throughput_fps",
    )
    assert len(set(writers.CSV_COLUMNS)) == len(writers.CSV_COLUMNS)
    # every column is documented in the constant's comment block
    import inspect
    source = inspect.getsource(writers)
    for column in writers.CSV_COLUMNS:
        assert f"``{column}``" in source


def test_csv_keeps_tiny_loss_ratios_exactly():
    results, _ = _run_results()
    results.tests[0].frame_sizes[0].points[0].loss_ratio = 1e-9
    text = writers.results_csv_text(results)
    row = dict(zip(writers.CSV_COLUMNS, next(csv.reader(text.splitlines()[1:]))))
    assert float(row["loss_ratio"]) == 1e-9


def test_trial_records_round_trip_and_match_the_schema(tmp_path):
    _, records = _run_results()
    hist = LatencyHistogram([0, 1000, 2000], [0, 5, 1], min_ns=1200.0, max_ns=2500.0, mean_ns=1500.0)
    records.append(_record(3, 5e5, 10, 5, hist=hist, valid=False, reasons=("generator-limited: x",)))
    with TrialLog(tmp_path / "trials.jsonl") as log:
        for rec in records:
            log.append(rec)
    lines = (tmp_path / "trials.jsonl").read_text().splitlines()
    assert len(lines) == 4
    for line in lines:
        schema.validate(json.loads(line), "trial.schema.json")
    back = read_trials(tmp_path / "trials.jsonl")
    assert [r.trial_index for r in back] == [0, 1, 2, 3]
    assert back[2].result.probes.latency_ns.tolist() == [10, 20, 30, 40]
    assert back[3].result.latency_histogram.counts == [0, 5, 1]
    assert not back[3].valid and back[3].result.invalid_reason == "generator-limited: x"
    assert back[0].result.loss_ratio == records[0].result.loss_ratio
    assert back[0].result.generator_stats == {"np": 3, "arr": [0, 1]}
    assert back[0].collectors == {"cpu": {"busy_s": 1.5}}


def test_config_yaml_lists_every_plan_in_order(tmp_path):
    doc = writers.run_config_document("a1b2c3", [
        {"name": "t", "label": "t[flows=1]", "variant": {"flows": 1}, "config": {"traffic": {"flows": 1}}},
        {"name": "t", "label": "t[flows=2]", "variant": {"flows": 2}, "config": {"traffic": {"flows": 2}}},
    ])
    writers.write_config_yaml(tmp_path / "config.yaml", doc)
    back = writers.read_config_yaml(tmp_path / "config.yaml")
    assert [p["index"] for p in back["plans"]] == [0, 1]
    assert back["plans"][1]["config"]["traffic"]["flows"] == 2
    assert yaml.safe_load((tmp_path / "config.yaml").read_text()) == doc


def test_atomic_write_leaves_no_temporary_file(tmp_path):
    writers.write_atomic(tmp_path / "x.json", "{}")
    writers.write_atomic(tmp_path / "x.json", "[]")
    assert [p.name for p in tmp_path.iterdir()] == ["x.json"]
    assert (tmp_path / "x.json").read_text() == "[]"


def test_latency_stats_from_histogram_without_exact_figures():
    hist = LatencyHistogram([1000, 2000, 3000], [1, 0, 3])
    result = TrialResult(1.0, 1.0, 64, 1, 1, latency_histogram=hist)
    stats = summary.latency_stats(result)
    assert (stats.source, stats.samples, stats.min_ns, stats.max_ns) == ("histogram", 4, 1000.0, 3000.0)
    assert stats.avg_ns == pytest.approx((1000 + 9000) / 4)


def test_latency_stats_with_every_probe_lost():
    probes = ProbeRecords(np.array([], dtype=np.int64), np.array([], dtype=np.int64), 100)
    stats = summary.latency_stats(TrialResult(1.0, 1.0, 64, 1, 0, probes=probes))
    assert stats.samples == 0 and stats.min_ns is None and stats.probes_sent == 100


def test_tally_counts_invalid_trials_by_reason():
    recs = [
        _record(0, 1e6, 10, 10, valid=False, reasons=("generator-limited: a",)),
        _record(1, 1e6, 10, 10, valid=False, reasons=("generator-limited: b", "rx-exceeds-tx: c")),
        _record(2, 1e6, 2_000_000, 2_000_000),
    ]
    t = summary.tally(recs)
    assert t.trial_count == 3 and t.invalid_trial_count == 2
    assert t.trial_seconds == 6.0 and t.effective_seconds == pytest.approx(7.8)
    assert t.notes == ("2 of 3 trials invalid (generator-limited x2, rx-exceeds-tx x1)",)



def _bound_with(reasons, kind, caveat):
    rec = _record(1, 1e6, 2_000_000, 2_000_000, valid=not reasons, reasons=reasons, kind=kind)
    return summary.search_point(name="NDR", frame_size_bytes=64, nominal_line_rate_fps=None, lower_bound_fps=1e6,
                                upper_bound_fps=2e6, bound_trial=rec, goal_loss_ratio=0.0, sending_caveat=caveat)


def test_a_point_the_search_measured_by_despite_its_sending_is_valid_and_says_so(tmp_path):
    """The search measures by a disturbed trial that met the goal and by one that sent
    every frame late (filed at a load it delivered): such a point must not read "invalid"
    in the report, yet must say how its trial was sent -- and only the search's word makes
    it so."""
    clean = _bound_with((), None, None)
    disturbed = _bound_with(("pacing: a 10 ms window 4 frames short",), "disturbed", "disturbed")
    late = _bound_with(("generator-limited: sending took 3.1 s in a 1 s trial",), "limited", "late")
    limited = _bound_with(("generator-limited: sent 90 %",), "limited", None)
    assert (clean.valid, clean.sending_caveat) == (True, None)
    assert (disturbed.valid, disturbed.sending_caveat) == (True, "disturbed")
    assert (late.valid, late.sending_caveat) == (True, "late")
    assert (limited.valid, limited.sending_caveat) == (False, None)
    results, _ = _run_results()
    results.tests[0].frame_sizes[0].points = [late]
    doc = writers.write_results_json(tmp_path / "results.json", results)
    schema.validate(doc, "results.schema.json")
    assert doc["tests"][0]["frame_sizes"][0]["points"][0]["sending_caveat"] == "late"
    # the schema names exactly the caveats the code gives
    [enum] = [node["sending_caveat"]["enum"] for node in _walk(schema.load("results.schema.json"))
              if isinstance(node, dict) and "sending_caveat" in node]
    assert enum == [None, *SENDING_CAVEATS]


def _walk(node):
    yield node
    for child in (node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()):
        yield from _walk(child)


def test_csv_carries_every_caveat_of_results_json():
    # Issue 26 item 2: a run whose results.json said at_generator_ceiling had
    # generator_limited=false on every CSV row, and a row's latency came from a trial the
    # generator did not send as asked with nothing in the CSV saying so.
    from vsbench.results.model import LatencyPoint

    results, _ = _run_results()
    fs = results.tests[0].frame_sizes[0]
    point = fs.points[0]
    point.at_generator_ceiling = True
    point.lower_bound_provisional = True
    point.sending_caveat = "late"
    fs.latency_points = [LatencyPoint("NDR", "NDR", 1.0, 1e6, point.latency_trial_index, valid=False,
                                      invalid_reason="generator: trafgen needed 1.06 s")]
    rows = list(csv.DictReader(writers.results_csv_text(results).splitlines()))
    row, not_run = rows
    assert row["generator_limited"] == "true" and row["at_generator_ceiling"] == "true"
    assert row["lower_bound_provisional"] == "true" and row["sending_caveat"] == "late"
    assert row["latency_valid"] == "false" and "1.06 s" in row["latency_invalid_reason"]
    assert row["latency_avg_ns"] == "25.0"  # the figure stays; the flag says what it is
    assert not_run["at_generator_ceiling"] == "" and not_run["latency_valid"] == ""


def test_csv_latency_of_a_trial_sent_as_asked_is_valid():
    from vsbench.results.model import LatencyPoint

    results, _ = _run_results()
    fs = results.tests[0].frame_sizes[0]
    fs.latency_points = [LatencyPoint("NDR", "NDR", 1.0, 1e6, fs.points[0].latency_trial_index)]
    row = next(csv.DictReader(writers.results_csv_text(results).splitlines()))
    assert row["latency_valid"] == "true" and row["latency_invalid_reason"] == ""
    assert row["generator_limited"] == "false" and row["at_generator_ceiling"] == "false"


def test_results_json_reads_back_into_the_model_it_was_written_from(tmp_path):
    # vsbench show prints a run's end-of-run table again from results.json alone
    results, _ = _run_results()
    doc = writers.write_results_json(tmp_path / "results.json", results)
    again = RunResults.from_json(json.loads((tmp_path / "results.json").read_text()))
    assert again.to_json() == doc
    assert type(again.tests[0].frame_sizes[0].points[0].latency).__name__ == "LatencyStats"
    older = json.loads(json.dumps(doc))
    del older["tests"][0]["frame_sizes"][0]["latency_points"]  # a field an older file lacks
    older["tests"][0]["frame_sizes"][0]["some_newer_field"] = 1  # and one a newer file adds
    assert RunResults.from_json(older).tests[0].frame_sizes[0].latency_points == []
