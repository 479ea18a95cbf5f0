"""The soak's pure parts (tools/bench/soak.py): host figures parsed right, growth caught,
noise not taken for growth."""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[2] / "tools" / "bench" / "soak.py"
_spec = importlib.util.spec_from_file_location("vsbench_soak_tool", _PATH)
soak = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = soak
_spec.loader.exec_module(soak)

NETNS = soak.Metric("netns_vsb", "netns", 0.5)
FDS = next(m for m in soak.METRICS if m.name == "fds_system")


def test_parsers_read_proc_formats():
    assert soak.parse_file_nr("1907\t0\t2466183\n") == 1907
    meminfo = "MemTotal: 1 kB\nHugePages_Total:     328\nHugePages_Free:       72\nHugepagesize: 2048 kB\n"
    assert soak.parse_hugepages(meminfo) == (328, 72)
    assert soak.parse_hugepages("MemTotal: 1 kB\n") == (0, 0)
    assert soak.count_prefixed(["vsb12tg0", "lo", "eth0", "vsb-3-dut"]) == 2
    mounts = ("proc /proc proc rw 0 0\nhugetlbfs /run/vsbsoak-x/123/huge hugetlbfs rw 0 0\n"
              "tmpfs /run/vsb7 tmpfs rw 0 0\n\n")
    assert soak.count_mounts(mounts, ("/vsb",)) == (3, 2)
    assert soak.count_processes(["ovs-vswitchd\n", "bash\n", "qemu-system-x86\n", "trafgen\n", "python3\n"]) == 3
    assert soak.tree_size([(True, 100), (False, 4096), (True, 5)]) == (3, 105)


def test_theil_sen_ignores_outliers_and_follows_a_trend():
    assert soak.theil_sen_slope([0, 1, 2, 3, 4]) == pytest.approx(1.0)
    assert soak.theil_sen_slope([5, 5, 500, 5, 5, 5]) == 0.0
    assert soak.theil_sen_slope([7]) == 0.0


def test_a_steady_leak_is_caught():
    values = [2 + i for i in range(51)]  # one netns more after every run
    verdict = soak.judge(NETNS, values)
    assert verdict.grew and verdict.slope_per_run == pytest.approx(1.0)
    assert (verdict.first, verdict.last) == (2, 52)


def test_a_slow_leak_of_one_per_ten_runs_is_caught():
    assert soak.judge(NETNS, [i // 10 for i in range(51)]).grew


def test_one_resource_left_once_is_caught():
    # Run 5 leaves a netns nobody removes: a step, not a slope (most pairwise slopes are 0).
    values = [0] * 5 + [1] * 46
    verdict = soak.judge(NETNS, values)
    assert soak.theil_sen_slope(values) == 0.0
    assert verdict.grew


def test_a_noisy_flat_series_is_not_growth():
    rng = random.Random(28)
    base = 3000
    values = [base + rng.randint(-200, 200) for _ in range(51)]
    values[10] = 9000  # a sample taken while something else on the host held many files
    values[40] = 9000
    assert not soak.judge(FDS, values).grew


def test_fds_growing_past_the_relative_tolerance_is_caught():
    rng = random.Random(5)
    values = [3000 + 30 * i + rng.randint(-100, 100) for i in range(51)]  # +1500 over the soak
    assert soak.judge(FDS, values).grew


def test_a_transient_spike_in_a_count_is_not_growth():
    values = [0] * 51
    values[20] = 3  # another run's netns seen once
    assert not soak.judge(NETNS, values).grew


def test_summary_line_names_what_grew():
    samples = [{"netns_vsb": i, "fds_system": 3000} for i in range(10)]
    verdicts = soak.judge_all(samples, (NETNS, FDS))
    assert soak.summary_line(10, 1, verdicts) == "soak_runs=10 failed=1 growth=netns_vsb"
    flat = soak.judge_all([{"netns_vsb": 0, "fds_system": 3000}] * 10, (NETNS, FDS))
    assert soak.summary_line(10, 0, flat) == "soak_runs=10 failed=0 growth=none"
    assert flat[0].line() == "netns_vsb: first=0 last=0 slope=+0.000/run unit=netns tolerance=0.5 flat"


def test_every_sampled_metric_has_a_judgement():
    assert {m.name for m in soak.METRICS} == set(soak.sample_host(Path("/nonexistent"), Path("/nonexistent")))


def test_the_plan_mixes_switches_and_testcases_and_argv_is_a_list():
    plan = soak.run_plan(4)
    assert {s.vswitch for s in plan} == {"linux_bridge", "ovs_dpdk"}
    assert len({s.test for s in plan}) >= 2
    argv = soak.vsbench_argv(plan[2], Path("/r"), "frame_sizes=[64]", ["vsbench"])
    assert argv[:3] == ["vsbench", "--test", "phy2phy_tput"]
    assert argv[-3:] == ["--results-dir", "/r", "--no-store"]


def test_too_few_runs_is_one_line_error(capsys):
    with pytest.raises(SystemExit) as exc:
        soak.parse_args(["--runs", "1"])
    assert exc.value.code == 2
    assert "--runs must be at least 2" in capsys.readouterr().err
