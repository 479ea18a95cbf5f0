"""The prox plugin against the fake PROX process: what it sends, errors, launch modes."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from generator_fakes import FAKE_PROX, ssh_settings
from vsbench.conformance.leaks import ResourceSnapshot, still_alive
from vsbench.interfaces.plugin import PluginContext, PluginError
from vsbench.interfaces.traffic import GeneratorPort, TrafficProfile
from vsbench.system.resources import ResourceStack
from vsbench_plugins.trafficgen.prox import Prox

PORTS = [GeneratorPort(0, "0"), GeneratorPort(1, "1")]


def make(tmp_path, settings) -> tuple[Prox, ResourceStack]:
    stack = ResourceStack()
    (tmp_path / "logs").mkdir(exist_ok=True)
    ctx = PluginContext("abc123", settings, tmp_path / "logs", stack, work_dir=tmp_path)
    return Prox(ctx), stack


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _frames_sent(load_fps: float, r) -> float:
    """What PROX sends at ``load_fps`` between the plugin's ``start`` and ``stop``: that span
    (``tx_duration_s``), not the trial's nominal length, which a busy host overruns (0.316 s
    of a 0.3 s trial under xdist: 63,224 frames where 60,000 were expected)."""
    assert r.tx_duration_s >= r.intended_duration_s
    return load_fps * r.tx_duration_s


def test_unix_socket_and_commands_follow_prox_conventions(fake_prox, tmp_path):
    fake = fake_prox("--dut-capacity-fps", "1e6", unix=True)
    gen, stack = make(tmp_path, fake.settings())
    with stack:
        gen.start()
        gen.configure(TrafficProfile(1518, flows=1), PORTS)
        r = gen.run_trial(200_000, 0.3)
    assert r.rx_frames == r.tx_frames and r.tx_frames == pytest.approx(_frames_sent(200_000, r), rel=0.05)
    sent = fake.commands_received()
    assert "pkt_size 1 0 1514" in sent and "pkt_size 2 0 1514" in sent  # size without FCS
    pct = 100_000 * (1518 + 20) / 12_500_000  # per core, % of 10 Gb/s, wire bytes
    assert f"speed 1 0 {pct:.9g}" in sent and f"speed 2 0 {pct:.9g}" in sent
    reset = sent.index("reset stats")
    assert reset < sent.index("start 1,2 0", reset) < sent.index("stop 1,2 0", reset)


def test_unidirectional_profile_uses_one_generator(fake_prox, tmp_path):
    fake = fake_prox("--dut-capacity-fps", "1e6")
    gen, stack = make(tmp_path, fake.settings())
    with stack:
        gen.start()
        gen.configure(TrafficProfile(64, bidirectional=False), PORTS)
        r = gen.run_trial(300_000, 0.3)
    assert [(d.tx_port, d.rx_port) for d in r.directions] == [(0, 1)]
    assert r.tx_frames == pytest.approx(_frames_sent(300_000, r), rel=0.05)
    assert "start 1 0" in fake.commands_received()


def test_prox_started_with_o_none_never_refreshes_its_statistics(fake_prox, tmp_path):
    """Real PROX with ``-o none`` has no statistics consumer: counters stay as they were at
    start-up, so a trial cannot get a fresh sample (the plugin launches with ``-o cli``)."""
    fake = fake_prox("-o", "none")
    gen, stack = make(tmp_path, {**fake.settings(), "stats_timeout_s": 0.5})
    with stack:
        gen.start()
        gen.configure(TrafficProfile(64, bidirectional=False), PORTS)
        with pytest.raises(PluginError, match="published no new statistics") as err:
            gen.run_trial(100_000, 0.2)
    assert "\n" not in str(err.value)


def test_version_is_the_real_prox_reply_decoded(fake_prox, tmp_path):
    fake = fake_prox()
    gen, stack = make(tmp_path, fake.settings())
    with stack:
        gen.start()
        assert gen.version() == {"prox": "22.12", "dpdk": "22.11.11.99"}


def test_a_silent_prox_is_a_one_line_error_and_nothing_stays_open(fake_prox, tmp_path):
    fake = fake_prox("--no-replies")
    before = ResourceSnapshot.take()
    gen, stack = make(tmp_path, fake.settings(reply_timeout_s=0.3))
    with pytest.raises(PluginError) as info:
        gen.start()
    stack.close()
    msg = str(info.value)
    assert "\n" not in msg and f"127.0.0.1:{fake.port}" in msg and "'tot stats'" in msg
    assert not ResourceSnapshot.take().new_open_fds(before, [tmp_path])


def test_refused_connection_names_the_address(tmp_path):
    port = free_port()
    gen, stack = make(tmp_path, {"port": port, "connect_timeout_s": 1})
    with stack, pytest.raises(PluginError, match=rf"^prox: cannot connect to PROX at 127.0.0.1:{port}: "):
        gen.start()


def test_prox_dying_mid_run_is_a_plugin_error(fake_prox, tmp_path):
    fake = fake_prox()
    gen, stack = make(tmp_path, fake.settings())
    with stack:
        gen.start()
        gen.configure(TrafficProfile(64), PORTS)
        threading.Timer(0.2, fake.proc.stop).start()
        with pytest.raises(PluginError, match="PROX at 127.0.0.1"):
            gen.run_trial(100_000, 1.0)


def test_rate_beyond_prox_range_is_clamped_and_marked_invalid(fake_prox, tmp_path):
    fake = fake_prox("--link-gbps", "400", "--dut-capacity-fps", "1e9")
    gen, stack = make(tmp_path, fake.settings())
    with stack:
        gen.start()
        gen.configure(TrafficProfile(64), PORTS)
        r = gen.run_trial(500e6, 0.2)  # 250 Mfps per core > 1000 % of 10 Gb/s
    assert not r.valid and "1000 %" in r.invalid_reason
    # the clamped rate (1000 % of 10 Gb/s on each of 2 cores), over the time PROX really
    # sent: on a loaded host the stop command arrives later than 0.2 s
    assert r.tx_duration_s and r.tx_duration_s >= 0.2
    assert r.tx_frames / r.tx_duration_s == pytest.approx(2 * 1000 * 12_500_000 / 84, rel=0.1)


def test_real_prox_stats_cadence_still_gives_this_trials_counters(fake_prox, tmp_path):
    fake = fake_prox("--stats-interval", "0.5", "--dut-capacity-fps", "1e6")
    gen, stack = make(tmp_path, fake.settings())
    with stack:
        gen.start()
        gen.configure(TrafficProfile(64), PORTS)
        first = gen.run_trial(1_500_000, 0.4)
        second = gen.run_trial(400_000, 0.4)
    assert first.rx_frames == pytest.approx(400_000, rel=0.1)  # capacity x duration
    assert second.loss_ratio == 0 and second.tx_frames == pytest.approx(160_000, rel=0.1)


def test_launch_local_renders_the_shipped_config_and_quits_prox(tmp_path):
    port = free_port()
    settings = {"launch": "local", "binary": str(FAKE_PROX), "port": port,
                "extra_args": ["--tcp-port", str(port), "--stats-interval", "0.05"],
                "stats_poll_s": 0.02, "drain_s": 0.05}
    gen, stack = make(tmp_path, settings)
    gen.start()
    seen = ResourceSnapshot.take().descendants
    assert seen, "PROX was not started"
    gen.configure(TrafficProfile(64), PORTS)
    r = gen.run_trial(400_000, 0.3, latency=True)
    cfg = (tmp_path / "prox-gen.cfg").read_text()
    stack.close()
    assert "@@" not in cfg and "[core 1]" in cfg and "mode=gen" in cfg
    assert r.tx_frames == pytest.approx(_frames_sent(400_000, r), rel=0.05) and r.latency_histogram is not None
    deadline = time.monotonic() + 5
    while still_alive(seen) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not still_alive(seen)
    assert "quit" in (tmp_path / "logs" / "prox.log").read_text()


def test_launch_over_ssh_copies_the_config(tmp_path):
    port = free_port()
    remote_cfg = tmp_path / "remote" / "gen.cfg"
    remote_cfg.parent.mkdir()
    settings = {"launch": "ssh", "ssh": ssh_settings(), "binary": str(FAKE_PROX), "port": port,
                "remote_config_path": str(remote_cfg),
                "extra_args": ["--tcp-port", str(port), "--stats-interval", "0.05"],
                "stats_poll_s": 0.02, "drain_s": 0.05}
    gen, stack = make(tmp_path, settings)
    with stack:
        gen.start()
        gen.configure(TrafficProfile(64), PORTS)
        r = gen.run_trial(200_000, 0.2)
    assert remote_cfg.read_text() == (tmp_path / "prox-gen.cfg").read_text()
    assert r.rx_frames == r.tx_frames > 0


def test_launch_of_a_missing_binary_is_reported_before_anything_starts():
    missing = Prox.check_prerequisites({"launch": "local", "binary": "/nonexistent/prox"})
    assert missing and "/nonexistent/prox" in str(missing[0])


@pytest.mark.parametrize("unmeasured_share", [0.0, 1.0])
def test_a_latency_trial_records_how_many_samples_prox_measured(fake_prox, tmp_path, unmeasured_share):
    """PROX counts the latency packets it received and those it measured (a packet whose
    transmit time it cannot vouch for is not): the trial records both, so a latency trial
    without a histogram although its frames arrived says why (CI's real PROX, starved of its
    generator core, measured none)."""
    fake = fake_prox("--dut-capacity-fps", "1e6", "--stats-interval", "0.05",
                     "--lat-unmeasured-share", str(unmeasured_share))
    gen, stack = make(tmp_path, {**fake.settings(), "stats_poll_s": 0.02, "drain_s": 0.05})
    with stack:
        gen.start()
        gen.configure(TrafficProfile(64), PORTS)
        r = gen.run_trial(200_000, 0.3, latency=True)
        plain = gen.run_trial(200_000, 0.1)
    samples = r.generator_stats["latency_samples"]
    assert r.rx_frames == r.tx_frames > 0
    assert samples["received"] == pytest.approx(r.rx_frames, rel=0.05)
    if unmeasured_share:
        assert samples["measured"] == 0 and r.latency_histogram is None
    else:
        assert samples["measured"] == samples["received"] and r.latency_histogram is not None
    assert "latency_samples" not in plain.generator_stats
    assert sum(c.startswith("stats latency(0).tot.used,latency(0).tot.total") for c in fake.commands_received()) == 1
