"""The conformance kit fails for the defects it promises to catch, and runs as documented
(``pytest -p <fixtures module> --pyargs vsbench.conformance``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def run_kit(tmp_path: Path, mutant: str, select: str | None = None) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "pytest", "-p", "kit_mutants", "--pyargs", "vsbench.conformance",
            "-q", "-p", "no:cacheprovider", "--basetemp", str(tmp_path / "inner")]
    if select:
        argv += ["-k", select]
    env = {**os.environ, "KIT_MUTANT": mutant,
           "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))}
    return subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)


def test_the_correct_plugin_passes_the_installed_suite(tmp_path):
    done = run_kit(tmp_path, "Prox")
    assert done.returncode == 0, done.stdout[-3000:]
    assert " passed" in done.stdout and "failed" not in done.stdout


@pytest.mark.parametrize("mutant, check", [
    ("PerDirectionLoad", "test_load_is_aggregate_frames_per_second"),
    ("MicrosecondLatency", "test_latency_is_in_nanoseconds"),
    ("ComputedCounters", "test_generator_limited_trial_keeps_real_counters"),
    ("LeakySocket", "test_stop_releases_everything"),
    ("MultiLineError", "test_unreachable_generator_is_a_one_line_error"),
])
def test_the_kit_catches(tmp_path, mutant, check):
    done = run_kit(tmp_path, mutant, check)
    assert done.returncode == 1, done.stdout[-3000:]
    assert "1 failed" in done.stdout, done.stdout[-3000:]


def test_a_late_stop_the_plugin_reports_is_not_a_units_error(tmp_path):
    """A generator stopped late sends more frames in a longer tx_duration_s at the asked
    rate: the aggregate-load check accepts it (PerDirectionLoad above still fails it)."""
    done = run_kit(tmp_path, "LateStop", "test_load_is_aggregate_frames_per_second")
    assert done.returncode == 0, done.stdout[-3000:]
    assert "1 passed" in done.stdout, done.stdout[-3000:]


def test_a_missing_fixture_is_a_clear_failure(tmp_path):
    argv = [sys.executable, "-m", "pytest", "--pyargs", "vsbench.conformance", "-q",
            "-p", "no:cacheprovider", "-k", "capabilities", "--basetemp", str(tmp_path / "inner")]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 1
    assert "no fixture 'conformance_generator'" in done.stdout
