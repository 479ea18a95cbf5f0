"""The run's last line names why it did not complete (found by tools/bench/faults.py: a
run whose generator or switch was killed ended with only ``run X: failed; results in D``)."""

from io import StringIO
from pathlib import Path

from rich.console import Console

from vsbench.results.model import FrameSizeResult, RunResults, TestResult
from vsbench.runner import display


def _results(status: str, test_status: str, error: str | None, fs_status: str = "failed") -> RunResults:
    test = TestResult(plan_index=0, label="phy2phy_tput", testcase="phy2phy_tput", status=test_status, error=error,
                      frame_sizes=[FrameSizeResult(64, status=fs_status)])
    return RunResults(run_id="abc123", started_at="2026-01-01T00:00:00+00:00", vsbench_version="0", status=status,
                      tests=[test])


def test_a_failed_run_names_what_died():
    line = display.final_line(_results("failed", "failed", "trafficgen trafgen: run_burst: trafgen killed"),
                              Path("/r/x"))
    assert line == "run abc123: failed: phy2phy_tput: trafficgen trafgen: run_burst: trafgen killed; results in /r/x"


def test_an_interrupted_run_names_the_signal():
    line = display.final_line(_results("interrupted", "interrupted", "interrupted by SIGHUP", "interrupted"),
                              Path("/r/x"))
    assert "interrupted: phy2phy_tput: interrupted by SIGHUP;" in line


def test_a_complete_run_is_one_plain_line_and_a_long_reason_is_cut():
    assert display.final_line(_results("complete", "complete", None, "complete"), Path("/r")) == \
        "run abc123: complete; results in /r"
    line = display.final_line(_results("failed", "failed", "x\n" * 400), Path("/r"))
    assert "\n" not in line and len(line) < display.REASON_CHARS + 80 and "..." in line


def test_the_terminal_never_wraps_the_last_line():
    buffer = StringIO()
    shown = display.RunDisplay(Console(file=buffer, width=60, color_system=None))
    shown.summary(_results("failed", "failed", "vswitch ovs_dpdk: run_trial: ovs-vswitchd died " * 3),
                  Path("/nonexistent-run-dir"))
    last = buffer.getvalue().strip().splitlines()[-1]
    assert last.startswith("run abc123: failed: phy2phy_tput: vswitch ovs_dpdk") and last.endswith("/nonexistent-run-dir")
