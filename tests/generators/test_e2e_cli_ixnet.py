"""End to end: ``vsbench --test phy2phy_tput --trafficgen ixnet --vswitch external`` against
the fake IxNetwork API server process. The search must find the fake's modelled DUT
capacity within its precision, the run must leave nothing on the API server and no secret
anywhere in its output or run directory, and failures must be one line."""

from __future__ import annotations

import csv
import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.fakes.ixnet.launcher import FakeIxNetwork

RELATIVE_WIDTH = 0.005  # conf/10_traffic.yaml search.relative_width
PARAMS = "frame_sizes=[64];trial_duration=0.5;warmup=0.2;search.trial_duration_s=0.25;latency.trial_duration_s=0.25"
PW_ENV = "VSB_E2E_IXNET_PASSWORD"
KEY_ENV = "VSB_E2E_IXNET_API_KEY"
PASSWORD = "e2e-Secret-9c41"
API_KEY = "a7c0ffee00e2e00a7c0ffee00e2e00a7"
CAPACITY_FPS = 300_000
BASE_LATENCY_NS = 5_000


@pytest.fixture
def fake_ixnet(tmp_path, monkeypatch):
    monkeypatch.setenv(PW_ENV, PASSWORD)  # inherited by the vsbench process
    monkeypatch.setenv(KEY_ENV, API_KEY)
    fake = FakeIxNetwork.start(tmp_path / "fake", "--password-env", PW_ENV, "--api-key-env", KEY_ENV,
                               "--capacity-fps", str(CAPACITY_FPS), "--base-latency-ns",
                               str(BASE_LATENCY_NS), "--session-start-s", "0.2",
                               "--assign-ports-s", "0.2", "--stats-lag-s", "0.05",
                               env={PW_ENV: PASSWORD, KEY_ENV: API_KEY})
    yield fake
    fake.stop()


def settings(fake: FakeIxNetwork | None, **overrides) -> dict:
    out = {"api_host": "127.0.0.1", "api_port": fake.port if fake else 1, "password_env": PW_ENV,
           "ports": ["10.9.9.9;1;1", "10.9.9.9;1;2"], "drain_s": 0.1, "poll_interval_s": 0.05,
           "connect_timeout_s": 2.0}
    out.update(overrides)
    return out


def vsbench(tmp_path: Path, gen_settings: dict, params: str = PARAMS) -> subprocess.CompletedProcess:
    conf = tmp_path / "conf.yaml"
    conf.write_text(yaml.safe_dump({"results_dir": str(tmp_path / "results"),
                                    "trafficgen": {"ixnet": gen_settings}}))
    argv = [sys.executable, "-m", "vsbench.cli.main", "--test", "phy2phy_tput",
            "--trafficgen", "ixnet", "--vswitch", "external", "--conf-file", str(conf),
            "--test-params", params]
    return subprocess.run(argv, capture_output=True, text=True, timeout=300)


def run_dir(tmp_path: Path) -> Path:
    (found,) = (tmp_path / "results").iterdir()
    return found


def test_search_finds_the_modelled_capacity_and_leaves_nothing(fake_ixnet, tmp_path):
    done = vsbench(tmp_path, settings(fake_ixnet))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    out = run_dir(tmp_path)
    with open(out / "results.csv", newline="") as f:
        (row,) = list(csv.DictReader(f))
    ndr = float(row["throughput_fps"])
    assert row["status"] == "complete" and row["valid"] == "true"
    assert CAPACITY_FPS * (1 - RELATIVE_WIDTH) <= ndr <= CAPACITY_FPS * 1.001, (
        f"NDR {ndr:.0f} fps, modelled capacity {CAPACITY_FPS} fps")
    assert float(row["upper_bound_fps"]) >= CAPACITY_FPS * 0.999
    assert float(row["latency_min_ns"]) == pytest.approx(0.9 * BASE_LATENCY_NS)  # ns, not us
    sysinfo = json.loads((out / "sysinfo.json").read_text())
    assert "9.30.2212.7" in json.dumps(sysinfo)  # the API server's build, from version()
    state = fake_ixnet.state()
    assert state["sessions"] == [] and state["owned_ports"] == []
    assert state["counters"]["sessions_created"] == state["counters"]["sessions_deleted"] == 1


def test_no_secret_in_output_or_run_directory(fake_ixnet, tmp_path):
    done = vsbench(tmp_path, settings(fake_ixnet, password_env=None, api_key_env=KEY_ENV),
                   params=PARAMS)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    written = "".join(p.read_text(errors="replace") for p in run_dir(tmp_path).rglob("*") if p.is_file())
    assert "ixnet" in written  # the run did record the generator
    for secret in (PASSWORD, API_KEY):
        assert secret not in done.stdout + done.stderr
        assert secret not in written


def test_unreachable_api_server_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv(PW_ENV, PASSWORD)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    done = vsbench(tmp_path, settings(None, api_port=port))
    assert done.returncode == 2  # refused by the run's preflight probe (issue 26), nothing created
    said = " ".join((done.stdout + done.stderr).split())  # the terminal wraps long lines
    assert "Traceback" not in said
    assert f"IxNetwork API server 127.0.0.1:{port}: connection refused" in said, said
    assert "trafficgen.ixnet.api_host" in said
    assert not (tmp_path / "results").exists()


def test_wrong_password_is_one_line_and_leaves_no_session(fake_ixnet, tmp_path, monkeypatch):
    monkeypatch.setenv(PW_ENV, "not-the-password")
    done = vsbench(tmp_path, settings(fake_ixnet))
    assert done.returncode != 0
    said = " ".join((done.stdout + done.stderr).split())
    assert "Traceback" not in said and "not-the-password" not in said
    assert f"IxNetwork API server 127.0.0.1:{fake_ixnet.port} refused the credentials" in said, said
    assert fake_ixnet.state()["sessions"] == []
