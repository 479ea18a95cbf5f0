"""The noisy neighbour's pure parts: the load section, which CPUs are loaded, stress-ng's
argv, /proc parsing and what a trial's and a frame size's measured load are."""

import pytest

from vsbench.runner import noisy_load as nl
from vsbench.system import stress_ng
from vsbench.system.stress_ng import GroupSample


def test_no_section_no_load():
    assert nl.settings_from_config({}) is None
    assert nl.settings_from_config({"load": None}) is None


def test_defaults_and_mem_settings():
    cpu = nl.settings_from_config({"load": {"pattern": "cpu"}})
    assert (cpu.pattern, cpu.load_percent, cpu.cpus, cpu.memory_percent) == ("cpu", 100.0, None, None)
    mem = nl.settings_from_config({"load": {"pattern": "mem", "load_percent": 50, "memory_percent": 80,
                                            "cpus": [1, 0, 1]}})
    assert (mem.load_percent, mem.memory_percent, mem.cpus, mem.memory_max_mb) == (50.0, 80.0, (0, 1), 1024.0)


@pytest.mark.parametrize("section, words", [
    ({"tool": "stress"}, "not supported"),
    ({"pattern": "io"}, "not one of cpu, mem"),
    ({"load_percent": 0}, "(0, 100]"),
    ({"load_percent": 150}, "(0, 100]"),
    ({"cpus": "all"}, "'unreserved' or a list"),
    ({"cpus": [-1]}, "'unreserved' or a list"),
    ({"pattern": "mem", "memory_percent": 99}, "(0, 95]"),
])
def test_bad_sections_are_one_line_errors(section, words):
    with pytest.raises(nl.LoadError, match=None) as info:
        nl.settings_from_config({"load": section})
    assert words in str(info.value) and "\n" not in str(info.value)


def test_check_refuses_cpus_that_are_not_online():
    with pytest.raises(nl.LoadError, match=r"CPU\(s\) \[7\]"):
        nl.check_config({"load": {"cpus": [0, 7]}}, online=[0, 1])


def test_unreserved_is_every_cpu_the_dut_pollers_do_not_hold():
    s = nl.settings_from_config({"load": {"pattern": "cpu"}})
    assert nl.choose_cpus(s, [0, 1], [1])[0] == (0,)  # ovs_dpdk: PMD on cpu1
    assert nl.choose_cpus(s, [0, 1], [])[0] == (0, 1)  # linux_bridge: no busy poller
    cpus, why = nl.choose_cpus(s, [0, 1], [0, 1])
    assert cpus == (0, 1) and "hold every CPU" in why
    asked = nl.settings_from_config({"load": {"cpus": [1]}})
    assert nl.choose_cpus(asked, [0, 1], [1]) == ((1,), "load.cpus")


def test_reserved_cpus_come_from_the_cpu_plan_not_the_generator():
    plan = {"online_cpus": [0, 1], "threads": [
        {"owner": "ovs_dpdk pmd", "cpus": [1], "role": "vswitch"},
        {"owner": "generator trafgen", "cpus": [0], "role": "generator"}]}
    assert nl.reserved_cpus(plan) == (1,)


def test_vm_bytes_is_capped_and_split():
    s = nl.settings_from_config({"load": {"pattern": "mem", "memory_percent": 80}})
    assert nl.vm_bytes_per_cpu(s, 20 * 1024 ** 3, 2) == 512 * 1024 ** 2  # the 1024 MiB cap, over 2 CPUs
    uncapped = nl.settings_from_config({"load": {"pattern": "mem", "memory_percent": 50, "memory_max_mb": None}})
    assert nl.vm_bytes_per_cpu(uncapped, 1000 * 1024 ** 2, 1) == 500 * 1024 ** 2
    assert nl.vm_bytes_per_cpu(nl.settings_from_config({"load": {"pattern": "cpu"}}), 10 ** 9, 1) is None


def test_argv_pins_each_instance_and_never_goes_through_a_shell():
    assert stress_ng.stress_argv("cpu", 0, 100, None, 600) == [
        "stress-ng", "--cpu", "1", "--cpu-load", "100", "--taskset", "0", "--timeout", "600s"]
    mem = stress_ng.stress_argv("mem", 1, 50, 4096, 600)
    assert mem[:6] == ["stress-ng", "--vm", "1", "--vm-bytes", "4096", "--vm-keep"] and "--taskset" in mem
    with pytest.raises(ValueError):
        stress_ng.stress_argv("mem", 1, 50, None, 600)


def test_proc_parsing():
    line = "4242 (stress-ng (x)) R 1 4240 4240 0 -1 4194560 99 0 0 0 250 50 10 5 20 0 1 0 1 1 1"
    assert stress_ng.parse_stat_line(line, clk_tck=100) == (4240, 3.15)
    rss, cpus = stress_ng.parse_status("Name:\tstress-ng\nVmRSS:\t   2048 kB\nCpus_allowed_list:\t0,2-3\n")
    assert rss == 2 * 1024 * 1024 and cpus == frozenset({0, 2, 3})


def _s(cpu_s, t, rss=0, cpus=(0,)):
    return GroupSample(cpu_s, rss, 2, frozenset(cpus), t)


def test_load_between_is_cpu_time_over_wall_time_per_cpu():
    doc = nl.load_between({0: _s(10.0, 100.0)}, {0: _s(10.5, 101.0, rss=3 * 1024 ** 2)})
    assert doc["cpus"]["0"] == {"cpu_s": 0.5, "wall_s": 1.0, "load_percent": 50.0, "processes": 2, "pinned": True}
    assert doc["pss_bytes"] == 3 * 1024 ** 2
    floating = nl.load_between({1: _s(0, 0, cpus=(0, 1))}, {1: _s(1, 1, cpus=(0, 1))})
    assert floating["cpus"]["1"]["pinned"] is False


def test_aggregate_weights_by_wall_time_and_keeps_the_lowest_trial():
    trials = [
        {"cpus": {"0": {"cpu_s": 1.0, "wall_s": 1.0, "load_percent": 100.0}}, "pss_bytes": 10},
        {"cpus": {"0": {"cpu_s": 0.5, "wall_s": 2.0, "load_percent": 25.0}}, "pss_bytes": 30},
        {},
    ]
    agg = nl.aggregate(trials)
    assert agg["trials"] == 2 and agg["pss_bytes"] == 30
    assert agg["cpus"]["0"]["load_percent"] == 50.0 and agg["cpus"]["0"]["min_trial_load_percent"] == 25.0
    assert agg["mean_load_percent"] == 50.0
    assert nl.aggregate([]) is None
    assert "cpu0 50.0 %" in nl.summary_text(agg)


def test_a_load_on_a_cpu_that_is_not_there_is_one_line_exit_2_and_nothing_created(tmp_path, capsys):
    from vsbench.cli.main import main
    from vsbench.system import cpu

    missing = max(cpu.online_cpus()) + 1
    code = main(["--test", "phy2phy_cpu_load", "--vswitch", "linux_bridge", "--results-dir", str(tmp_path / "r"),
                 "--test-params", f"frame_sizes=[64];load.cpus=[{missing}]"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert f"load.cpus names CPU(s) [{missing}] that are not online" in err and "Traceback" not in err
    assert not (tmp_path / "r").exists()
