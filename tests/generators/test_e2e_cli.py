"""End to end: ``vsbench --test phy2phy_tput --trafficgen prox|moongen --vswitch external``
against the fakes; the search must find the fake's modelled DUT capacity within its
precision, and a generator that cannot be reached must be one line on stderr."""

from __future__ import annotations

import csv
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from vsbench.conformance.leaks import ResourceSnapshot

RELATIVE_WIDTH = 0.005  # conf/10_traffic.yaml search.relative_width
PARAMS = "frame_sizes=[64];trial_duration=0.5;warmup=0.2;search.trial_duration_s=0.25;latency.trial_duration_s=0.25"


def vsbench(tmp_path: Path, trafficgen: str, settings: dict, params: str = PARAMS):
    conf = tmp_path / "conf.yaml"
    conf.write_text(yaml.safe_dump({"results_dir": str(tmp_path / "results"),
                                    "trafficgen": {trafficgen: settings}}))
    argv = [sys.executable, "-m", "vsbench.cli.main", "--test", "phy2phy_tput",
            "--trafficgen", trafficgen, "--vswitch", "external", "--conf-file", str(conf),
            "--test-params", params]
    return subprocess.run(argv, capture_output=True, text=True, timeout=240)


def result_row(tmp_path: Path) -> dict:
    (run_dir,) = (tmp_path / "results").iterdir()
    with open(run_dir / "results.csv", newline="") as f:
        (row,) = list(csv.DictReader(f))
    return row


def assert_found_capacity(row: dict, capacity: float) -> None:
    ndr = float(row["throughput_fps"])
    assert row["status"] == "complete" and row["valid"] == "true"
    assert capacity * (1 - RELATIVE_WIDTH) <= ndr <= capacity * 1.001, (
        f"NDR {ndr:.0f} fps, modelled capacity {capacity:.0f} fps")
    assert float(row["upper_bound_fps"]) >= capacity * 0.999


def test_prox_search_finds_the_modelled_capacity(fake_prox, tmp_path):
    capacity = 1_000_000
    fake = fake_prox("--dut-capacity-fps", str(capacity), "--dut-latency-ns", "10000")
    done = vsbench(tmp_path, "prox", fake.settings())
    assert done.returncode == 0, done.stderr[-2000:]
    row = result_row(tmp_path)
    assert_found_capacity(row, capacity)
    assert float(row["latency_min_ns"]) == pytest.approx(8_000)  # 0.8 x base, in ns


def test_moongen_search_finds_the_modelled_capacity(moongen_model, tmp_path):
    capacity = 2_000_000
    before = ResourceSnapshot.take()
    done = vsbench(tmp_path, "moongen", moongen_model(capacity_fps=capacity, latency_ns=5000))
    assert done.returncode == 0, done.stderr[-2000:]
    assert_found_capacity(result_row(tmp_path), capacity)
    assert not ResourceSnapshot.take().new_open_fds(before, [tmp_path])


def test_unreachable_prox_is_one_line_and_refused_before_anything_is_created(tmp_path):
    """PROX already running (launch: none) is probed by the run's preflight (issue 26):
    exit 2 naming the address, no run directory."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    done = vsbench(tmp_path, "prox", {"host": "127.0.0.1", "port": port, "connect_timeout_s": 1})
    assert done.returncode == 2
    said = " ".join((done.stdout + done.stderr).split())  # the terminal wraps long lines
    assert "Traceback" not in said
    assert f"PROX control port 127.0.0.1:{port}: connection refused" in said, said
    assert not list(tmp_path.glob("results/*"))


def test_moongen_binary_missing_is_a_usage_error_before_anything_starts(tmp_path):
    done = vsbench(tmp_path, "moongen", {"binary": str(tmp_path / "no-such-MoonGen")})
    said = " ".join((done.stdout + done.stderr).split())
    assert done.returncode != 0 and "Traceback" not in said
    assert "MoonGen executable" in said and "no-such-MoonGen" in said, said
