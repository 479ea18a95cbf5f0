"""End to end: ``vsbench --trafficgen trex --vswitch external`` against the fake TRex.

The fake models a DUT of known capacity; the CLI runs in a subprocess exactly as a user
runs it, with a conf file pointing at the fake, and the throughput it writes to
results.json must be the modelled capacity within the search's precision.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.fakes.trex.launcher import FakeTrex, REPO_ROOT

CAPACITY_FPS = 1_000_000


def vsbench(*args: str, timeout_s: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vsbench.cli.main", *args], capture_output=True,
                          text=True, timeout=timeout_s, cwd=REPO_ROOT)


@pytest.fixture
def fake(tmp_path):
    with FakeTrex(tmp_path / "fake", capacity_fps=CAPACITY_FPS, speed_gbps=1, dut_delay_ms=1,
                  latency_us=25, latency_spread_us=2) as f:
        yield f


def conf_for(fake: FakeTrex, path: Path) -> Path:
    path.write_text(yaml.safe_dump({"trafficgen": {"trex": {
        "host": "127.0.0.1", "sync_port": fake.sync_port, "async_port": fake.async_port,
        "drain_s": 0.02}}}))
    return path


def test_phy2phy_tput_finds_the_modelled_capacity(fake, tmp_path):
    results = tmp_path / "results"
    proc = vsbench("--test", "phy2phy_tput", "--trafficgen", "trex", "--vswitch", "external",
                   "--conf-file", str(conf_for(fake, tmp_path / "trex.yaml")),
                   "--results-dir", str(results),
                   # the testcase asks for 60 s trials over 7 sizes: keep the search, shorten it
                   "--test-params", "frame_sizes=[64];trial_duration=0.2;latency.trial_duration_s=0.5")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    run_dir = next(results.iterdir())
    doc = json.loads((run_dir / "results.json").read_text())
    test = doc["tests"][0]
    assert test["trafficgen"] == "trex" and test["status"] == "complete"
    (fs,) = test["frame_sizes"]
    (ndr,) = [p for p in fs["points"] if p["name"] == "NDR"]
    precision = doc.get("config", {}).get("search", {}).get("relative_width", 0.005)
    assert ndr["lower_bound_fps"] <= CAPACITY_FPS <= ndr["upper_bound_fps"]
    assert ndr["throughput_fps"] == pytest.approx(CAPACITY_FPS, rel=max(precision, 0.005))
    assert ndr["loss_ratio"] == 0
    lat = ndr["latency"]  # measured by TRex in µs, reported in ns
    assert 15_000 <= lat["avg_ns"] <= 35_000 and lat["samples"] > 0
    trials = [json.loads(line) for line in (run_dir / "trials.jsonl").read_text().splitlines()]
    assert len(trials) == fs["trial_count"]
    assert all(t["generator_stats"]["trex_ports"] for t in trials)
    sysinfo = json.loads((run_dir / "sysinfo.json").read_text())
    assert "v3.08" in json.dumps(sysinfo)  # the TRex version reached sysinfo.json
    # % of line rate is against the 1 Gb/s the TRex ports report, not testbed.link_gbps (10)
    assert fs["link_speed_source"] == "port" and fs["link_speeds_bps"] == [1e9, 1e9]
    assert fs["nominal_line_rate_fps"] == pytest.approx(2 * 1e9 / (84 * 8))
    assert ndr["line_rate_percent"] == pytest.approx(100 * ndr["throughput_fps"] / fs["nominal_line_rate_fps"])
    assert "link_speed_source" in (run_dir / "results.csv").read_text().splitlines()[0]
    again = vsbench("recompute", str(run_dir))
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]


def test_unreachable_trex_is_one_line_exit_2_and_nothing_is_created(tmp_path):
    """The run's preflight probes the server (issue 26): the run refuses to start instead
    of creating its directory and failing at the first trial."""
    from tests.fakes.trex.launcher import unused_tcp_port

    port = unused_tcp_port()
    conf = tmp_path / "trex.yaml"
    conf.write_text(yaml.safe_dump({"trafficgen": {"trex": {"sync_port": port, "async_port": port + 1}}}))
    proc = vsbench("--test", "phy2phy_tput", "--trafficgen", "trex", "--vswitch", "external",
                   "--conf-file", str(conf), "--results-dir", str(tmp_path / "results"),
                   "--test-params", "frame_sizes=[64];trial_duration=0.2", timeout_s=120)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr + proc.stdout
    assert f"trex generator at tcp://127.0.0.1:{port}" in proc.stderr + proc.stdout
    assert "connection refused" in proc.stderr + proc.stdout
    assert not (tmp_path / "results").exists()


def test_a_typo_in_the_trex_section_is_a_config_error(tmp_path):
    conf = tmp_path / "trex.yaml"
    conf.write_text(yaml.safe_dump({"trafficgen": {"trex": {"sync_prot": 4501}}}))
    proc = vsbench("--test", "phy2phy_tput", "--trafficgen", "trex", "--vswitch", "external",
                   "--conf-file", str(conf), "--results-dir", str(tmp_path / "results"), timeout_s=120)
    assert proc.returncode != 0
    out = proc.stderr + proc.stdout
    assert "Traceback" not in out and "sync_prot" in out


def test_phy2phy_back2back_finds_the_modelled_buffer(tmp_path):
    """A DUT of capacity C with a buffer of B frames, bursts at the 1 Gb/s line rate R:
    the back-to-back length is B / (1 - C / R), and the corrected buffer time is B / R."""
    buffer_frames, line_fps = 1_000, 1e9 / (84 * 8)
    with FakeTrex(tmp_path / "fake", capacity_fps=CAPACITY_FPS, speed_gbps=1, dut_delay_ms=1,
                  buffer_frames=buffer_frames) as fake:
        conf = conf_for(fake, tmp_path / "trex.yaml")
        conf.write_text(yaml.safe_dump({**yaml.safe_load(conf.read_text()), "testbed": {"link_gbps": 1}}))
        results = tmp_path / "results"
        proc = vsbench("--test", "phy2phy_back2back", "--trafficgen", "trex", "--vswitch", "external",
                       "--conf-file", str(conf), "--results-dir", str(results), "--test-params",
                       f"b2b_throughput_fps={CAPACITY_FPS};b2b_max_frames=20000;b2b_min_frames=1;"
                       "b2b_resolution_frames=1;b2b_repetitions=2;warmup=0", timeout_s=120)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    doc = json.loads((next(results.iterdir()) / "results.json").read_text())
    (fs,) = doc["tests"][0]["frame_sizes"]
    b2b = fs["back2back"]
    assert b2b["frames_avg"] == pytest.approx(buffer_frames / (1 - CAPACITY_FPS / line_fps), abs=2)
    assert b2b["bursts_at_line_rate"] is True and b2b["bounded"] is True
    assert b2b["corrected_buffer_time_s"] == pytest.approx(buffer_frames / line_fps, rel=0.002)
