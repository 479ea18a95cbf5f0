"""The moongen plugin against the fake MoonGen executable: argv, errors, teardown."""

from __future__ import annotations

import threading
import time

import pytest

from vsbench.conformance.leaks import ResourceSnapshot, still_alive
from vsbench.interfaces.plugin import PluginContext, PluginError
from vsbench.interfaces.traffic import FlowFields, GeneratorPort, TrafficProfile
from vsbench.system.resources import ResourceStack
from vsbench_plugins.trafficgen.moongen import MoonGen

PORTS = [GeneratorPort(0, "0"), GeneratorPort(1, "1")]


def make(tmp_path, settings) -> tuple[MoonGen, ResourceStack]:
    stack = ResourceStack()
    ctx = PluginContext("abc123", settings, tmp_path / "logs", stack)
    return MoonGen(ctx), stack


def test_missing_binary_is_one_line_naming_host_and_binary(tmp_path):
    gen, stack = make(tmp_path, {"binary": "/nonexistent/MoonGen"})
    with stack, pytest.raises(PluginError) as info:
        gen.start()
    assert str(info.value) == "moongen on localhost: MoonGen executable '/nonexistent/MoonGen' not found"
    assert MoonGen.check_prerequisites({"binary": "/nonexistent/MoonGen"})


def test_non_zero_exit_quotes_moongens_fatal_line(tmp_path, moongen_model):
    gen, stack = make(tmp_path, {**moongen_model(), "devices": [0, 7]})
    with stack:
        gen.start()
        gen.configure(TrafficProfile(64), PORTS)
        with pytest.raises(PluginError) as info:
            gen.run_trial(1000, 0.1)
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith("moongen on localhost: MoonGen exited with code 1: ")
    assert "[FATAL] there are only 2 ports, tried to configure port id 7" in msg


def test_trial_arguments_and_counters(tmp_path, moongen_model):
    gen, stack = make(tmp_path, moongen_model(capacity_fps=1e6))
    fields = FlowFields(src_ip="192.168.0.1", vary=("src_port",))
    with stack:
        gen.start()
        gen.configure(TrafficProfile(128, flows=16, bidirectional=False, fields=fields), PORTS)
        r = gen.run_trial(300_000, 0.4, latency=True)
    log = (tmp_path / "logs" / "moongen-trial-0001.log").read_text()
    argv = log.splitlines()[0]
    assert "--size 124 " in argv and "--rate-mpps 0.3 " in argv and "--flows 16 " in argv
    assert "--vary src_port" in argv and "--bidirectional" not in argv
    assert "\x1b[" in log  # the real output is coloured; the parser strips it
    assert r.tx_frames == r.rx_frames == 120_000
    assert r.generator_stats["device_totals"]["Device: id=0 TX"] == 120_000 + r.generator_stats["probes_sent"]
    assert r.latency_histogram.mean_ns == pytest.approx(10_000 * (1 + 0.5 * 0.3 / 0.7), rel=0.02)


def test_a_nic_without_rate_control_makes_the_trial_invalid(tmp_path, moongen_model):
    gen, stack = make(tmp_path, moongen_model(capacity_fps=1e9, rate_control=False))
    with stack:
        gen.start()
        gen.configure(TrafficProfile(64), PORTS)
        r = gen.run_trial(100_000, 0.2)
    assert not r.valid and "rate limit" in r.invalid_reason


def test_vlan_and_mac_variation_are_refused_at_configure(tmp_path, moongen_model):
    gen, stack = make(tmp_path, moongen_model())
    with stack:
        gen.start()
        with pytest.raises(PluginError, match="cannot vary src_mac"):
            gen.configure(TrafficProfile(64, fields=FlowFields(vary=("src_mac",))), PORTS)
        with pytest.raises(PluginError, match="untagged"):
            gen.configure(TrafficProfile(64, fields=FlowFields(vary=(), vlan_id=10)), PORTS)


def test_closing_the_run_ends_a_running_trial(tmp_path, moongen_model):
    gen, stack = make(tmp_path, moongen_model())
    gen.start()
    gen.configure(TrafficProfile(64), PORTS)
    errors: list[Exception] = []

    def trial():
        try:
            gen.run_trial(100_000, 30.0)
        except PluginError as exc:
            errors.append(exc)

    worker = threading.Thread(target=trial)
    worker.start()
    deadline = time.monotonic() + 10
    seen: dict = {}
    while not seen and time.monotonic() < deadline:
        seen = ResourceSnapshot.take().descendants
        time.sleep(0.05)
    assert seen, "MoonGen never started"
    stack.close()  # what the runner does on Ctrl-C / SIGTERM
    worker.join(timeout=10)
    assert not worker.is_alive() and errors
    assert not still_alive(seen)


def test_a_generator_host_lost_mid_run_is_named_not_blamed_on_moongen(tmp_path, moongen_model, monkeypatch):
    """ssh's own failure (exit 255: the host went down between two trials) is reported as
    the host lost, with the trial; MoonGen's exit codes keep their own message (above)."""
    from generator_fakes import ssh_settings

    gen, stack = make(tmp_path, {**moongen_model(capacity_fps=1e6), "ssh": ssh_settings()})
    with stack:
        gen.start()
        gen.configure(TrafficProfile(64), PORTS)
        assert gen.run_trial(10_000, 0.1).rx_frames > 0
        monkeypatch.setenv("FAKE_SSH_REFUSE", "1")  # the fake client now fails as ssh does
        with pytest.raises(PluginError) as info:
            gen.run_trial(10_000, 0.1)
    msg = str(info.value)
    assert "\n" not in msg
    assert msg.startswith("moongen: generator host bench@gen1.example:22 lost during trial 2 (ssh exit 255): "
                          "ssh: connect to host gen1.example port 22: Connection refused"), msg
