"""The generator's own latency floor: probe TX stamps, the floor summary, and the runner.

The runner cases go through the real run loop with the testkit distribution's generator
(``model_gen``), which models its own floor as a vendor's generator would; nothing of the
runner is mocked. The probe helper's stamp selection is exercised on the kernel's real
behaviour in tests/integration/test_generator_floor_on_testbed.py.
"""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from vsbench.interfaces.traffic import ProbeRecords, TrialResult
from vsbench.measurement import recheck
from vsbench.measurement.latency_report import generator_floor
from vsbench.results import recompute, schema
from vsbench.results.model import RunResults, TestResult, FrameSizeResult, TrialIdentity, TrialRecord
from vsbench.runner.display import RunDisplay
from vsbench_plugins.trafficgen.trafgen_probe import TxStamps

from test_runner import make_plans, only_run_dir, run, trials_of


# -- the probe helper keeps the generator port's TX stamp ------------------------------------


def test_the_first_tx_stamp_of_a_probe_is_its_send_time():
    stamps = TxStamps()
    stamps.add(7, 1_000)      # generator port's veth
    stamps.add(7, 2_300)      # the same buffer leaving a kernel bridge's egress veth
    stamps.add(8, 5_000)
    assert stamps.get(7) == 1_000 and stamps.get(8) == 5_000 and stamps.get(9) is None
    assert len(stamps) == 2 and stamps.after_first == 1


def test_the_earliest_stamp_wins_whatever_order_they_arrive_in():
    stamps = TxStamps()
    stamps.add(1, 2_300)
    stamps.add(1, 1_000)
    stamps.add(1, 1_700)
    assert stamps.get(1) == 1_000 and stamps.after_first == 2


# -- the floor summary ------------------------------------------------------------------------


def _floor_record(latency_ns, sent=None, valid=True, reason=None, index=3) -> TrialRecord:
    lat = np.asarray(latency_ns, dtype=np.int64)
    result = TrialResult(
        intended_load_fps=0.0, intended_duration_s=2.0, frame_size_bytes=64, tx_frames=0, rx_frames=0,
        probes=ProbeRecords(np.arange(lat.size, dtype=np.int64), lat, lat.size if sent is None else sent),
        valid=valid, invalid_reason=reason, generator_stats={"loop": "veth a -> b"},
    )
    return TrialRecord(TrialIdentity("abc123", 0, "t"), index, "floor", "2026-01-01T00:00:00Z", True, result,
                       invalid_reasons=() if valid else (reason,))


def test_floor_figures_are_the_probe_statistics():
    lat = 100 + np.arange(2000) % 200  # 100..299 ns, 10 of each
    floor = generator_floor(_floor_record(lat))
    assert floor.measured and floor.reason is None
    assert (floor.trial_index, floor.loop, floor.samples, floor.probes_sent) == (3, "veth a -> b", 2000, 2000)
    assert (floor.min_ns, floor.max_ns) == (100, 299)
    assert floor.mean_ns == pytest.approx(199.5)
    assert floor.p50_ns == pytest.approx(np.percentile(lat, 50), abs=1)
    assert floor.p99_ns == pytest.approx(np.percentile(lat, 99), abs=1)


def test_too_few_samples_leave_p99_unbacked():
    floor = generator_floor(_floor_record([500] * 100))
    assert floor.measured and floor.p50_ns == 500 and floor.p99_ns is None


def test_a_floor_without_samples_or_from_an_invalid_trial_is_not_measured():
    empty = generator_floor(_floor_record([], sent=1000))
    assert not empty.measured and "no probe came back" in empty.reason and empty.probes_sent == 1000
    invalid = generator_floor(_floor_record([100] * 50, valid=False, reason="generator: loop down"))
    assert not invalid.measured and "loop down" in invalid.reason and invalid.min_ns is None


# -- through the runner ----------------------------------------------------------------------

PARAMS = "frame_sizes=[64];trial_duration=1;latency.trial_duration_s=1"


def _results(testkit):
    run_dir = only_run_dir(testkit)
    results = json.loads((run_dir / "results.json").read_text())
    schema.validate(results, "results.schema.json")
    return run_dir, results["tests"][0]["frame_sizes"][0]


def test_the_floor_is_measured_once_per_frame_size_and_sits_beside_every_latency_figure(tmp_path, testkit):
    plans = make_plans(tmp_path, testkit, params="frame_sizes=[64,128];trial_duration=1;latency.trial_duration_s=1",
                       gen={"latency_floor": True, "floor_ns": 3000})
    code, out = run(plans, testkit)
    assert code == 0, out
    run_dir = only_run_dir(testkit)
    results = json.loads((run_dir / "results.json").read_text())
    schema.validate(results, "results.schema.json")
    docs = trials_of(run_dir)
    for fs in results["tests"][0]["frame_sizes"]:
        floor = fs["generator_floor"]
        # the model's own latency: 3000 + 0..900 ns in 100 ns steps, 1000 probes
        assert floor["measured"] and floor["samples"] == 1000 and floor["min_ns"] == 3000
        assert floor["max_ns"] == 3900 and floor["p50_ns"] == pytest.approx(3450, abs=50)
        assert floor["p99_ns"] is not None and floor["loop"] == "modelled port 0 -> port 1 cable"
        # a floor trial in trials.jsonl, before the frame size's latency trials
        floor_doc = docs[floor["trial_index"]]
        assert floor_doc["role"] == "floor" and floor_doc["frame_size_bytes"] == fs["frame_size_bytes"]
        assert floor_doc["intended_load_fps"] == 0 and floor_doc["latency_requested"]
        assert all(lp["trial_index"] > floor["trial_index"] for lp in fs["latency_points"])
        assert [lp["generator_floor"] for lp in fs["latency_points"]] == [floor] * len(fs["latency_points"])
        assert not any("floor" in n for n in fs["notes"])
    assert [d["role"] for d in docs].count("floor") == 2
    assert recompute.verify(run_dir) == [] and recheck.verify(run_dir) == []

    with open(run_dir / "results.csv", newline="") as f:
        row = next(csv.DictReader(f))
    assert (row["generator_floor_min_ns"], row["generator_floor_p50_ns"]) == ("3000.0", repr(
        results["tests"][0]["frame_sizes"][0]["generator_floor"]["p50_ns"]))
    assert "Gen floor min" in out and "generator floor (direct loop, no DUT): min 3.0 us" in out and "trial_index" in out
    report = (run_dir / "report.html").read_text()
    assert "generator floor (no DUT)" in report and "Generator floor (no DUT)" in report


def test_a_tampered_floor_is_caught_by_recompute(tmp_path, testkit):
    code, out = run(make_plans(tmp_path, testkit, params=PARAMS, gen={"latency_floor": True}), testkit)
    assert code == 0, out
    run_dir, _ = _results(testkit)
    doc = json.loads((run_dir / "results.json").read_text())
    fs = doc["tests"][0]["frame_sizes"][0]
    fs["generator_floor"]["p50_ns"] = 1.0
    (run_dir / "results.json").write_text(json.dumps(doc))
    problems = recheck.verify(run_dir)
    assert any("generator floor differs from trial" in p for p in problems)
    assert any("generator floor differs from the frame size's" in p for p in problems)


def test_switched_off_no_floor_trial_and_says_so(tmp_path, testkit):
    params = PARAMS + ";latency.generator_floor=false"
    code, out = run(make_plans(tmp_path, testkit, params=params, gen={"latency_floor": True}), testkit)
    assert code == 0, out
    run_dir, fs = _results(testkit)
    assert fs["generator_floor"] == {**fs["generator_floor"], "measured": False,
                                     "reason": "switched off (latency.generator_floor: false)"}
    assert "floor" not in [d["role"] for d in trials_of(run_dir)]
    assert recheck.verify(run_dir) == []


def test_a_generator_without_the_capability_reports_not_measured(tmp_path, testkit):
    code, out = run(make_plans(tmp_path, testkit, params=PARAMS), testkit)
    assert code == 0, out
    run_dir, fs = _results(testkit)
    floor = fs["generator_floor"]
    assert not floor["measured"] and floor["reason"] == "model_gen cannot measure its latency without the DUT"
    assert floor["trial_index"] is None and floor["p50_ns"] is None
    # said in results.json and on the console, not a validity note: the generator simply has no loop
    assert not any("floor" in n for n in fs["notes"])
    assert "generator latency floor not measured: model_gen cannot measure its latency without the DUT" in out
    report = (run_dir / "report.html").read_text()
    assert "generator floor not measured: model_gen cannot measure its latency without the DUT" in report
    assert "floor" not in [d["role"] for d in trials_of(run_dir)]


def test_a_failing_floor_measurement_is_said_and_the_run_goes_on(tmp_path, testkit):
    code, out = run(make_plans(tmp_path, testkit, params=PARAMS, gen={"latency_floor": True, "floor_fails": True}),
                    testkit)
    assert code == 0, out
    _, fs = _results(testkit)
    assert not fs["generator_floor"]["measured"]
    assert "the loop port is down" in fs["generator_floor"]["reason"]
    assert any(n.startswith("generator latency floor not measured: model_gen failed") for n in fs["notes"])
    assert fs["latency_points"] and fs["points"][0]["latency"] is not None


def test_no_latency_no_floor(tmp_path, testkit):
    code, out = run(make_plans(tmp_path, testkit, params=PARAMS + ";latency.enabled=false",
                               gen={"latency_floor": True}), testkit)
    assert code == 0, out
    run_dir, fs = _results(testkit)
    assert fs["generator_floor"] is None and "floor" not in [d["role"] for d in trials_of(run_dir)]


def test_continuous_with_latency_measures_the_floor_first(tmp_path, testkit):
    plans = make_plans(tmp_path, testkit, test="phy2phy_cont", params="frame_sizes=[1518];trial_duration=1",
                       gen={"latency_floor": True})
    code, out = run(plans, testkit)
    assert code == 0, out
    run_dir, fs = _results(testkit)
    assert [d["role"] for d in trials_of(run_dir)] == ["warmup", "floor", "continuous"]
    assert fs["generator_floor"]["measured"] and fs["generator_floor"]["trial_index"] == 1
    assert recompute.verify(run_dir) == [] and recheck.verify(run_dir) == []


def test_results_of_older_versions_still_validate():
    old = RunResults(run_id="abc123", started_at="x", vsbench_version="0",
                     tests=[TestResult(plan_index=0, label="t", testcase="t",
                                       frame_sizes=[FrameSizeResult(64, status="complete")])]).to_json()
    fs = old["tests"][0]["frame_sizes"][0]
    del fs["generator_floor"]
    fs["generator_floor_ns"] = None  # what results.json files written before the floor carry
    schema.validate(old, "results.schema.json")


def test_console_table_has_floor_columns_only_when_a_floor_was_measured():
    from rich.console import Console

    from vsbench.results.model import GeneratorFloor

    fs = FrameSizeResult(64, status="complete")
    test = TestResult(plan_index=0, label="t", testcase="t", frame_sizes=[fs])
    console = Console(width=300, record=True)
    console.print(RunDisplay.table(test))
    assert "Gen floor" not in console.export_text()
    fs.generator_floor = GeneratorFloor(measured=True, trial_index=2, samples=1000, min_ns=95.0, p50_ns=310.0,
                                        p99_ns=900.0)
    console.print(RunDisplay.table(test))
    text = console.export_text()
    assert "Gen floor min" in text and "95 ns" in text and "310 ns" in text


def test_a_load_sweep_with_latency_measures_the_floor_before_its_steps(tmp_path, testkit):
    plans = make_plans(tmp_path, testkit, test="phy2phy_load_sweep",
                       params="frame_sizes=[64];sweep_max_percent=0.03;trial_duration=0.2",
                       gen={"latency_floor": True})
    code, out = run(plans, testkit)
    assert code == 0, out
    run_dir, fs = _results(testkit)
    roles = [d["role"] for d in trials_of(run_dir)]
    assert roles[:2] == ["warmup", "floor"] and set(roles[2:]) == {"continuous"} and len(roles) == 5
    assert fs["generator_floor"]["measured"] and fs["generator_floor"]["trial_index"] == 1
    # every step carries the latency of the probes its own trial sent (the vRouter report's figure 8)
    steps = fs["sweep"]
    assert len(steps) == 3 and all(s["latency"]["source"] == "probes" and s["latency"]["samples"] > 0 for s in steps)
    assert [s["trial_index"] for s in steps] == [2, 3, 4]
    assert recheck.verify(run_dir) == []
