"""The Xtesting adapter's pure half: a testcases.yaml ``args`` block to a vsbench argv, and
a run directory's results.json to Xtesting's ``details`` (the whole path through
``run_tests`` is tests/integration/test_xtesting.py)."""

from __future__ import annotations

import json
import sys

import pytest

from vsbench.xtesting.arguments import ArgumentsError, newest_run_dir, result_details, vsbench_argv


def test_args_become_options_values_never_pass_a_shell(tmp_path):
    argv = vsbench_argv({"test": "phy2phy_tput", "vswitch": "ovs_dpdk", "test_params": "frame_sizes=[64];x=$(id)",
                         "fail_below": ["ndr_fps@64=1M", "pdr_fps@64=2M"], "tag": "nic=e810"}, tmp_path)
    assert argv[:3] == [sys.executable, "-m", "vsbench.cli.main"]
    assert argv[3:] == ["--test", "phy2phy_tput", "--vswitch", "ovs_dpdk", "--test-params", "frame_sizes=[64];x=$(id)",
                        "--fail-below", "ndr_fps@64=1M", "--fail-below", "pdr_fps@64=2M", "--tag", "nic=e810",
                        "--results-dir", str(tmp_path)]


@pytest.mark.parametrize("args, message", [
    ({"test": "a", "suite": "b"}, "exactly one of 'test' and 'suite'"),
    ({"vswitch": "ovs_dpdk"}, "exactly one of 'test' and 'suite'"),
    ({"test": "a", "vswich": "x"}, "unknown argument(s) vswich"),
    ({"test": ["a", "b"]}, "'test' takes one value"),
])
def test_a_wrong_args_block_is_one_line(args, message, tmp_path):
    with pytest.raises(ArgumentsError, match=message.replace("(", r"\(").replace(")", r"\)")) as err:
        vsbench_argv(args, tmp_path)
    assert "\n" not in str(err.value)


def test_details_carry_every_goal_of_every_frame_size(tmp_path):
    run = tmp_path / "20261127-000000-abcdef"
    run.mkdir()
    point = {"name": "NDR", "throughput_fps": 1e6, "line_rate_percent": 6.7, "valid": True,
             "latency": {"avg_ns": 9000.0, "max_ns": 20000.0}}
    (run / "results.json").write_text(json.dumps({"run_id": "abcdef", "status": "complete", "tests": [
        {"label": "phy2phy_tput", "status": "complete", "frame_sizes": [
            {"frame_size_bytes": 64, "status": "complete",
             "points": [point, {"name": "PDR", "throughput_fps": 1.1e6, "valid": True}]}]}]}))
    assert newest_run_dir(tmp_path) == run
    details = result_details(run, 0)
    assert details["run_id"] == "abcdef" and details["exit_code"] == 0 and details["run_dir"] == str(run)
    fs = details["tests"]["phy2phy_tput"]["frame_sizes"]["64"]
    assert fs["ndr_fps"] == 1e6 and fs["ndr_latency_avg_ns"] == 9000.0 and fs["ndr_valid"] is True
    assert fs["pdr_fps"] == 1.1e6 and "pdr_latency_avg_ns" not in fs


def test_no_run_directory_is_none(tmp_path):
    assert newest_run_dir(tmp_path) is None
