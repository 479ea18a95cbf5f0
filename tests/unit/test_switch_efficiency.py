"""What a trial cost the switch: per-trial datapath deltas, CPU, efficiency and the
starved-PMD warning, from the switch's own counters to results.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vsbench.interfaces import PluginContext
from vsbench.interfaces.traffic import TrialResult
from vsbench.interfaces.vswitch import VSwitch
from vsbench.measurement.trial_runner import TrialRunner, TrialSink
from vsbench.results import schema, summary
from vsbench.results.model import RunResults, TestResult, FrameSizeResult, TrialIdentity, TrialRecord
from vsbench.results.trial_log import TrialLog
from vsbench.results.writers import write_results_json
from vsbench.system import cpu
from vsbench.system.resources import ResourceStack
from vsbench_plugins.vswitch import ovs_kernel
from vsbench_plugins.vswitch.linux_bridge import LinuxBridge
from vsbench_plugins.vswitch.ovs import parse
from vsbench_plugins.vswitch.ovs.switch import trial_cost
from vsbench_plugins.vswitch.ovs_dpdk import OvsDpdk
from vsbench_plugins.vswitch.ovs_tc import OvsTc

DATA = Path(__file__).resolve().parents[1] / "data" / "ovs"


def _scaled_pmd_text(factor: int) -> str:
    """The captured pmd-stats-show with every PMD counter multiplied (a later sample)."""
    out = []
    for line in (DATA / "pmd-stats-show.txt").read_text().splitlines():
        label, sep, value = line.partition(":")
        head = value.split()
        if sep and head and head[0].isdigit() and label.strip() != "pmd thread numa_id 0 core_id 1":
            line = f"{label}: {int(head[0]) * factor}"
        out.append(line)
    return "\n".join(out) + "\n"


def test_pmd_delta_is_the_trials_counters_and_ratios():
    before = parse.parse_pmd_stats((DATA / "pmd-stats-show.txt").read_text())
    after = parse.parse_pmd_stats(_scaled_pmd_text(3))
    delta = parse.pmd_stats_delta(before, after)
    assert delta["packets_received"] == 2_000_000
    assert delta["simple_match_hits"] == 2 * 999_998
    assert delta["megaflow_hits"] == 2 and delta["upcalls"] == 2
    assert delta["emc_hits"] == 0 and delta["emc_hit_ratio"] == 0.0
    assert delta["pmd_threads"] == 1
    # (3x-1x) processing cycles over (3x-1x) packets
    assert delta["avg_processing_cycles_per_packet"] == pytest.approx(1214615452 / 1_000_000)
    assert 0 < delta["processing_cycles_pct"] < 100


def test_pmd_delta_after_a_clear_takes_the_later_sample():
    big = parse.parse_pmd_stats(_scaled_pmd_text(5))
    small = parse.parse_pmd_stats((DATA / "pmd-stats-show.txt").read_text())
    assert parse.pmd_stats_delta(big, small)["packets_received"] == 1_000_000


def _sample(t: float, pmd_s: float, softirq_ticks: int, last_cpu: int = 1) -> cpu.CpuSample:
    ticks = int(pmd_s * cpu.CLK_TCK)
    task = cpu.parse_task_stat("7 (pmd-c01/id:8) R " + " ".join(["0"] * 10) + f" {ticks} 0"
                               + " 0" * 23 + f" {last_cpu}")
    stat = f"cpu 0 0 0 0 0 0 {softirq_ticks * 2} 0\ncpu0 0 0 0 0 0 0 {softirq_ticks} 0\ncpu1 0 0 0 0 0 0 {softirq_ticks} 0\n"
    return cpu.CpuSample(t, {(7, 7): task}, cpu.parse_proc_stat(stat))


def test_trial_cost_flags_a_pmd_that_did_not_get_its_cpu():
    usage = cpu.delta(_sample(0.0, 0.0, 0), _sample(2.0, 1.0, 0))
    doc = trial_cost(usage, usage.threads_busy_s, "threads", {"pmd": {"emc_hits": 5}})
    assert doc["cpu_s"] == pytest.approx(1.0) and doc["elapsed_s"] == pytest.approx(2.0)
    assert doc["threads"][0]["name"] == "pmd-c01/id:8"
    [warning] = doc["warnings"]
    assert warning["code"] == "busy_poll_starved" and warning["oversubscribed"] and warning["cpus"] == [1]
    busy = cpu.delta(_sample(0.0, 0.0, 0), _sample(2.0, 1.98, 0))
    assert trial_cost(busy, busy.threads_busy_s, "threads", {})["warnings"] == []


def _record(index: int, rx: int, switch: dict, duration_s: float = 1.0) -> TrialRecord:
    result = TrialResult(intended_load_fps=rx / duration_s, intended_duration_s=duration_s,
                         frame_size_bytes=86, tx_frames=rx, rx_frames=rx)
    return TrialRecord(TrialIdentity("abc123", 0, "p"), index, "search", "2026-01-01T00:00:00Z",
                       False, result, switch=switch)


def test_efficiency_is_frames_per_core_consumed():
    rec = _record(3, 1_000_000, {"cpu_s": 1.0, "elapsed_s": 2.0, "cpu_source": "threads", "warnings": []})
    eff = summary.efficiency(rec)
    assert eff["switch_cores"] == pytest.approx(0.5)
    assert eff["fps_per_core"] == pytest.approx(2_000_000)
    assert eff["oversubscribed"] is False
    assert summary.efficiency(_record(4, 10, {})) is None
    assert summary.efficiency(_record(5, 10, {"error": "vswitchd gone"})) is None


def test_a_starved_trial_is_an_oversubscription_note_and_marks_the_point():
    warning = {"code": "busy_poll_starved", "message": "pmd got 60% of CPU 1", "cpus": [1], "oversubscribed": True}
    starved = _record(1, 1000, {"cpu_s": 0.6, "elapsed_s": 1.0, "warnings": [warning]})
    fine = _record(2, 1000, {"cpu_s": 1.0, "elapsed_s": 1.0, "warnings": []})
    notes = summary.tally([starved, fine]).notes
    assert notes[0].startswith("CPU oversubscribed (busy_poll_starved) in 1 of 2 trials, e.g. trial 1")
    assert summary.tally([fine]).notes == ()
    point = summary.search_point(name="NDR", frame_size_bytes=86, nominal_line_rate_fps=None,
                                 lower_bound_fps=1000.0, upper_bound_fps=None, bound_trial=starved)
    assert point.efficiency["oversubscribed"] is True


def test_points_carry_efficiency_and_datapath_into_a_valid_results_json(tmp_path):
    rec = _record(0, 500_000, {"cpu_s": 1.0, "elapsed_s": 1.0, "cpu_source": "threads", "warnings": [],
                               "datapath": {"kind": "userspace", "pmd": {"emc_hits": 499_000, "upcalls": 64}}})
    schema.validate(json.loads(json.dumps(rec.to_json())), "trial.schema.json")
    assert TrialRecord.from_json(rec.to_json()).switch == rec.switch
    point = summary.continuous_point(frame_size_bytes=86, nominal_line_rate_fps=None, trial=rec)
    assert point.datapath["pmd"]["upcalls"] == 64 and point.efficiency["fps_per_core"] == pytest.approx(500_000)
    results = RunResults("abc123", "2026-01-01T00:00:00Z", "0", tests=[
        TestResult(0, "p", "rule_complexity", frame_sizes=[FrameSizeResult(86, status="complete", points=[point])])])
    doc = write_results_json(tmp_path / "results.json", results)
    assert doc["tests"][0]["frame_sizes"][0]["points"][0]["efficiency"]["switch_cores"] == 1.0


class _CountingSwitch(VSwitch):
    """A switch whose cost is the CPU time of this test process's own thread."""

    def start(self): ...
    def add_bridge(self, name): ...
    def add_port(self, bridge, spec): ...
    def connect(self, bridge, a, b): ...
    def stop(self): ...

    fail = False

    def trial_begin(self):
        self.before = cpu.sample(pids=[__import__("os").getpid()])

    def trial_end(self):
        if self.fail:
            raise RuntimeError("counters unreadable")
        usage = cpu.delta(self.before, cpu.sample(pids=[__import__("os").getpid()]))
        return {"cpu_s": usage.threads_busy_s, "elapsed_s": usage.elapsed_s, "cpu_source": "threads"}


class _BusyGenerator:
    """Spends its trial busy on this CPU and forwards everything (the DUT is ideal)."""

    name = "busy"

    def run_trial(self, load_fps, duration_s, *, latency=False):
        import time
        end = time.process_time() + 0.3
        while time.process_time() < end:
            pass
        return TrialResult(intended_load_fps=load_fps, intended_duration_s=duration_s, frame_size_bytes=64,
                           tx_frames=int(load_fps * duration_s), rx_frames=int(load_fps * duration_s),
                           effective_duration_s=duration_s)


def test_trial_runner_records_what_the_switch_spent_and_survives_its_failure(tmp_path):
    ctx = PluginContext(run_id="abc123", settings={}, log_dir=tmp_path, resources=ResourceStack())
    switch = _CountingSwitch(ctx)
    log = TrialLog(tmp_path / "trials.jsonl")
    runner = TrialRunner(_BusyGenerator(), TrialSink(log), TrialIdentity("abc123", 0, "p"), vswitch=switch)
    rec = runner.run(1000, 1.0, role="search")
    assert rec.switch["cpu_s"] >= 0.2  # the 0.3 s the trial burned on this process's thread
    switch.fail = True
    failed = runner.run(1000, 1.0, role="search")
    assert failed.valid and failed.switch == {"error": "counters unreadable"}
    log.close()
    lines = [json.loads(line) for line in (tmp_path / "trials.jsonl").read_text().splitlines()]
    for line in lines:
        schema.validate(line, "trial.schema.json")
    assert lines[0]["switch"]["cpu_s"] == rec.switch["cpu_s"]


def test_every_vswitch_has_the_optional_hooks_with_neutral_defaults(tmp_path):
    ctx = PluginContext(run_id="abc123", settings={}, log_dir=tmp_path, resources=ResourceStack())
    plain = _CountingSwitch.__mro__[1]  # VSwitch
    assert plain.trial_end(_CountingSwitch(ctx)) == {}
    assert plain.max_frame_bytes(_CountingSwitch(ctx)) is None
    assert LinuxBridge(ctx).trial_end() == {}  # no trial_begin: nothing to report


def test_kernel_datapath_delta_counts_lookups_and_offload_of_the_trial(tmp_path):
    ctx = PluginContext(run_id="abc123", settings={}, log_dir=tmp_path, resources=ResourceStack())
    before = {"kind": "kernel+tc", "softirq_s": 10.0,
              "dpctl": {"system@ovs-system": {"lookups_hit": 100, "lookups_missed": 4, "lookups_lost": 0, "flows": 4}},
              "offload": {"tc_packets": 50, "offloaded_flows": 4, "kernel_flows": 0}}
    after = {"kind": "kernel+tc", "softirq_s": 10.5,
             "dpctl": {"system@ovs-system": {"lookups_hit": 1100, "lookups_missed": 8, "lookups_lost": 2, "flows": 8}},
             "offload": {"tc_policy": "skip_hw", "offloaded_flows": 8, "kernel_flows": 0, "datapath_flows": 8,
                         "summary": "8 of 8 datapath flows were in TC (tc-policy skip_hw)", "tc_packets": 9050,
                         "dump_tc": {"flows": 8}}}
    delta = OvsTc(ctx).datapath_delta(before, after)
    assert (delta["lookups_hit"], delta["lookups_missed"], delta["lookups_lost"]) == (1000, 4, 2)
    assert delta["tc_packets"] == 9000 and delta["datapath_flows"] == 8
    assert delta["offload"]["summary"].startswith("8 of 8") and "dump_tc" not in delta["offload"]
    usage = cpu.CpuUsage(1.0, [], {"cpu": 0.4, "cpu0": 0.4}, {})
    assert OvsTc(ctx).cpu_cost(usage) == (0.4, "softirq+threads")
    assert ovs_kernel.OvsKernel(ctx).datapath_delta(before, after)["kind"] == "kernel+tc"


def test_userspace_cost_is_the_vswitchd_threads(tmp_path):
    ctx = PluginContext(run_id="abc123", settings={}, log_dir=tmp_path, resources=ResourceStack())
    usage = cpu.delta(_sample(0.0, 0.0, 0), _sample(1.0, 0.9, 10))
    assert OvsDpdk(ctx).cpu_cost(usage) == (pytest.approx(0.9), "threads")
