"""CPU accounting: /proc parsers on lines captured on this machine around a 1 s trial with
the OvS-DPDK PMD busy-polling on CPU 1, and the oversubscription verdicts."""

import os
from pathlib import Path

import pytest

from vsbench.system import cpu

DATA = Path(__file__).resolve().parents[1] / "data" / "proc"


def test_task_stat_of_a_pmd_thread():
    before = cpu.parse_task_stat((DATA / "pmd-task-stat.before.txt").read_text(), clk_tck=100)
    after = cpu.parse_task_stat((DATA / "pmd-task-stat.after.txt").read_text(), clk_tck=100)
    assert before.tid == after.tid
    assert before.comm == "pmd-c01/id:8"
    assert after.last_cpu == 1  # pinned by pmd-cpu-mask=0x2
    # a busy-polling PMD: ~1.5 s of user time over the trial, next to no system time
    assert 1.0 < after.user_s - before.user_s < 3.0
    assert after.system_s - before.system_s < 0.1


def test_task_stat_comm_with_spaces_and_parentheses():
    line = "42 (we(ird) name) S 1 42 42 0 -1 4194560 10 0 0 0 250 50 0 0 20 0 1 0 5 0 0 " + " ".join(["0"] * 22) + " 3 0"
    stat = cpu.parse_task_stat(line, clk_tck=100)
    assert (stat.tid, stat.comm, stat.state) == (42, "we(ird) name", "S")
    assert (stat.user_s, stat.system_s, stat.total_s) == (2.5, 0.5, 3.0)


def test_proc_stat_softirq_and_busy_delta():
    before = cpu.parse_proc_stat((DATA / "stat.before.txt").read_text(), clk_tck=100)
    after = cpu.parse_proc_stat((DATA / "stat.after.txt").read_text(), clk_tck=100)
    assert {"cpu", "cpu0", "cpu1"} <= set(before)
    d1 = after["cpu1"].minus(before["cpu1"])
    # the PMD kept CPU 1 busy for the whole interval
    assert d1.busy_s / d1.total_s > 0.9
    d_all = after["cpu"].minus(before["cpu"])
    assert d_all.softirq_s >= 0
    assert d_all.total_s == pytest.approx(
        sum(after[c].minus(before[c]).total_s for c in ("cpu0", "cpu1")), abs=0.05)


def test_cpu_list_and_masks():
    assert cpu.parse_cpu_list("0-3,6,8-9\n") == {0, 1, 2, 3, 6, 8, 9}
    assert cpu.parse_cpu_list("0") == {0}
    assert cpu.mask_to_cpus("0x2") == {1}
    assert cpu.mask_to_cpus("0xA") == {1, 3}
    assert cpu.mask_to_cpus("6") == {1, 2}  # OvS reads masks as hex with or without 0x
    assert cpu.mask_to_cpus(0) == set()
    assert cpu.cpus_to_mask({0, 2}) == "0x5"


def test_live_sample_and_delta_of_own_busy_thread():
    """Burn CPU in this thread and see it in the delta (a real /proc read, no fixture)."""
    me = (os.getpid(), __import__("threading").get_native_id())
    before = cpu.sample(threads=[me])
    x, start = 0, __import__("time").process_time()
    while __import__("time").process_time() - start < 0.3:
        x += 1
    usage = cpu.delta(before, cpu.sample(threads=[me]))
    (mine,) = usage.threads
    assert mine.tid == me[1]
    assert 0.1 <= mine.busy_s <= usage.elapsed_s + 0.02
    assert usage.to_dict()["threads_busy_s"] == pytest.approx(mine.busy_s)
    assert set(usage.softirq_s) >= {"cpu"}


def test_default_two_core_placement_is_tight_but_not_oversubscribed():
    warnings = cpu.check_oversubscription({"ovs_dpdk pmd": {1}}, generator_cpus={0}, online={0, 1})
    assert [w.code for w in warnings] == ["no_spare_cpu"]
    assert not cpu.is_oversubscribed(warnings)


def test_pmd_sharing_the_generator_cpu_is_oversubscribed():
    warnings = cpu.check_oversubscription({"ovs_dpdk pmd": {1}}, generator_cpus={0, 1}, online={0, 1})
    codes = {w.code for w in warnings}
    assert "busy_poll_shares_generator" in codes
    assert cpu.is_oversubscribed(warnings)
    shared = next(w for w in warnings if w.code == "busy_poll_shares_generator")
    assert shared.cpus == (1,) and shared.to_dict()["cpus"] == [1]


def test_two_busy_pollers_on_one_cpu_and_all_cpus_busy():
    warnings = cpu.check_oversubscription(
        {"ovs_dpdk pmd": {0, 1}, "testpmd": {1}}, generator_cpus=set(), online={0, 1})
    codes = {w.code for w in warnings}
    assert {"busy_poll_overlap", "busy_poll_all_cpus"} <= codes


def test_offline_cpu_and_roomy_machine():
    assert {w.code for w in cpu.check_oversubscription({"pmd": {5}}, {0}, online={0, 1})} >= {"cpu_offline"}
    assert cpu.check_oversubscription({"pmd": {2}}, {0}, online={0, 1, 2, 3}) == []


def test_starved_pmd_is_detected_from_measured_utilization():
    def usage(util, softirq_cpu1=0.0):
        return cpu.CpuUsage(2.0, [cpu.ThreadUsage(1, 2, "pmd-c01/id:8", util * 2.0, 0.0, util, 1),
                                  cpu.ThreadUsage(1, 1, "ovs-vswitchd", 0.1, 0.0, 0.05, 0)],
                            {"cpu": softirq_cpu1, "cpu0": 0.0, "cpu1": softirq_cpu1}, {})
    assert cpu.starved_busy_pollers(usage(0.99)) == []
    (warning,) = cpu.starved_busy_pollers(usage(0.32))
    assert warning.code == "busy_poll_starved" and warning.oversubscribed
    assert "32% of CPU 1" in warning.message and warning.cpus == (1,)
    # the PMD's transmit work shows up as softirq on its CPU: still the PMD's time
    assert cpu.starved_busy_pollers(usage(0.80, softirq_cpu1=0.35)) == []
    assert cpu.starved_busy_pollers(usage(0.50, softirq_cpu1=0.35))


def test_captured_pmd_interval_is_not_starved():
    before = cpu.parse_task_stat((DATA / "pmd-task-stat.before.txt").read_text(), clk_tck=100)
    after = cpu.parse_task_stat((DATA / "pmd-task-stat.after.txt").read_text(), clk_tck=100)
    t0 = cpu.parse_proc_stat((DATA / "stat.before.txt").read_text(), clk_tck=100)["cpu1"]
    t1 = cpu.parse_proc_stat((DATA / "stat.after.txt").read_text(), clk_tck=100)["cpu1"]
    elapsed = t1.minus(t0).total_s  # wall time seen by CPU 1
    util = (after.total_s - before.total_s) / elapsed
    usage = cpu.CpuUsage(elapsed, [cpu.ThreadUsage(1, after.tid, after.comm, after.user_s - before.user_s,
                                                   after.system_s - before.system_s, util)], {}, {})
    assert cpu.starved_busy_pollers(usage) == []
