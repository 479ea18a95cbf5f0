"""The trex plugin against the fake TRex server process (loopback, free ports).

Each test starts its own fake with the DUT and failure mode it needs, drives the plugin
through the TrafficGenerator contract and checks figures against the fake's model.
"""

import base64
import os
import re
import time
from pathlib import Path

import pytest
from scapy.layers.inet import IP
from scapy.layers.l2 import Ether

from tests.fakes.trex import vm as fe
from tests.fakes.trex.launcher import FakeTrex, unused_tcp_port
from tests.unit.test_trex_fake_server import Raw
from vsbench.interfaces.plugin import PluginContext, PluginError
from vsbench.interfaces.traffic import FlowFields, GeneratorPort, TrafficProfile
from vsbench.measurement.search import Goal, SearchConfig, search
from vsbench.system.resources import ResourceStack
from vsbench_plugins.trafficgen.trex import Trex
from vsbench.runner.plugin_context import run_parameters

PORTS = [GeneratorPort(0, "0"), GeneratorPort(1, "1")]


@pytest.fixture
def start_fake(tmp_path):
    fakes = []

    def start(**options):
        fake = FakeTrex(tmp_path / f"fake{len(fakes)}", **options).start()
        fakes.append(fake)
        return fake

    yield start
    for fake in fakes:
        fake.stop()


@pytest.fixture
def make_gen(tmp_path):
    stacks = []

    def make(fake_or_settings, run_config=None, **overrides):
        settings = (fake_or_settings.settings(**overrides) if isinstance(fake_or_settings, FakeTrex)
                    else {**fake_or_settings, **overrides})
        stack = ResourceStack()
        stacks.append(stack)
        ctx = PluginContext(run_id="abc123", settings=settings, log_dir=tmp_path,
                            resources=stack, run=run_parameters(run_config or {}))
        return Trex(ctx), stack

    yield make
    for stack in stacks:
        stack.close()


def one_line(exc: Exception) -> str:
    text = str(exc)
    assert "\n" not in text and "Traceback" not in text
    return text


def owners(fake):
    raw = Raw(fake.sync_port).sync(fake.options.get("api_major", 5), fake.options.get("api_minor", 0))
    try:
        return [raw.call("get_port_status", port_id=p)["result"]["owner"] for p in (0, 1)]
    finally:
        raw.close()


def tcp_connections_to(port: int) -> int:
    """Established TCP connections this process holds to ``port`` on loopback."""
    ours = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        m = re.match(r"socket:\[(\d+)\]", target)
        if m:
            ours.add(m.group(1))
    count = 0
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        cols = line.split()
        remote_port = int(cols[2].split(":")[1], 16)
        if remote_port == port and cols[3] == "01" and cols[9] in ours:
            count += 1
    return count


def settle_connections(*ports: int, timeout_s: float = 3.0) -> int:
    """Connections left to ``ports`` once ZMQ's I/O thread had time to close them."""
    deadline = time.monotonic() + timeout_s
    while True:
        left = sum(tcp_connections_to(p) for p in ports)
        if left == 0 or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


# --------------------------------------------------------------------------- connecting


def test_connect_reports_capabilities_and_version(start_fake, make_gen):
    fake = start_fake(speed_gbps=10)
    gen, _ = make_gen(fake)
    gen.start()
    caps = gen.capabilities()
    assert caps.ports == 2 and caps.latency and caps.bidirectional
    assert caps.max_rate_fps == pytest.approx(2 * 10e9 / (84 * 8))  # two 10G ports, 64 B
    assert gen.version()["trex"] == "v3.08"
    assert owners(fake) == ["vsbench", "vsbench"]
    gen.configure(TrafficProfile(1518, bidirectional=False), PORTS)
    assert gen.capabilities().max_rate_fps == pytest.approx(10e9 / (1538 * 8))


@pytest.mark.parametrize("major,server,advice", [(4, "STL 4.8", "v2.88 or newer"),
                                                 (6, "STL 6.0", "newer than vsbench")])
def test_major_version_mismatch_is_one_line_naming_both_versions(start_fake, make_gen, major, server, advice):
    fake = start_fake(api_major=major, api_minor=8 if major == 4 else 0)
    gen, stack = make_gen(fake)
    with pytest.raises(PluginError) as err:
        gen.start()
    text = one_line(err.value)
    assert f"server speaks {server}" in text and "client speaks STL 5.0" in text
    assert advice in text and f"tcp://127.0.0.1:{fake.sync_port}" in text
    assert owners(fake) == ["", ""]
    stack.close()
    assert settle_connections(fake.sync_port, fake.async_port) == 0


def test_server_in_astf_mode_is_named(start_fake, make_gen):
    fake = start_fake(mode="ASTF")
    gen, _ = make_gen(fake)
    with pytest.raises(PluginError, match="runs in ASTF mode"):
        gen.start()


def test_refused_connection_is_one_line_and_leaves_nothing(make_gen):
    port = unused_tcp_port()
    gen, stack = make_gen({"host": "127.0.0.1", "sync_port": port, "async_port": port + 1})
    with pytest.raises(PluginError) as err:
        gen.start()
    text = one_line(err.value)
    assert f"trex generator at tcp://127.0.0.1:{port}" in text and "connection refused" in text
    stack.close()


def test_port_owned_by_someone_else(start_fake, make_gen):
    fake = start_fake()
    alice = Raw(fake.sync_port).sync()
    alice.call("acquire", port_id=1, user="alice", session_id=1, force=False)
    try:
        gen, _ = make_gen(fake)
        with pytest.raises(PluginError) as err:
            gen.start()
        text = one_line(err.value)
        assert "cannot acquire port 1" in text and "alice" in text and "force_acquire" in text
        assert owners(fake) == ["", "alice"]  # port 0 was given back
        gen, _ = make_gen(fake, force_acquire=True)
        gen.start()
        assert owners(fake) == ["vsbench", "vsbench"]
    finally:
        alice.close()


def test_unknown_port_id_is_a_config_error(start_fake, make_gen):
    fake = start_fake()
    gen, _ = make_gen(fake, ports=[0, 5])
    with pytest.raises(PluginError, match=r"no port\(s\) \[5\].*ports"):
        gen.start()


# --------------------------------------------------------------------------- trials


def test_trial_below_capacity_has_no_loss_and_exact_counters(start_fake, make_gen):
    fake = start_fake(capacity_fps=1_000_000)
    gen, _ = make_gen(fake, drain_s=0.05)
    gen.start()
    gen.configure(TrafficProfile(64, flows=100), PORTS)
    r = gen.run_trial(600_000, 0.5)
    assert r.valid and r.invalid_reason is None
    assert [(d.tx_port, d.rx_port) for d in r.directions] == [(0, 1), (1, 0)]
    assert [d.tx_frames for d in r.directions] == [150_000, 150_000]
    assert r.rx_frames == r.tx_frames == 300_000
    assert r.frame_size_bytes == 64 and r.latency_histogram is None
    assert 0.5 <= r.tx_duration_s < 1.5 and r.effective_duration_s >= 0.55


def test_trial_above_capacity_loses_what_the_model_drops(start_fake, make_gen):
    capacity = 1_000_000
    fake = start_fake(capacity_fps=capacity)
    gen, _ = make_gen(fake, drain_s=0.05)
    gen.start()
    gen.configure(TrafficProfile(64, flows=10), PORTS)
    load = 1_600_000
    r = gen.run_trial(load, 0.5)
    assert r.valid and r.tx_frames == 800_000
    assert r.loss_ratio == pytest.approx(1 - capacity / load, abs=0.002)
    assert r.rx_frames == pytest.approx(capacity * 0.5, rel=0.002)


def test_unidirectional_profile_sends_from_port_0_only(start_fake, make_gen):
    fake = start_fake(capacity_fps=1_000_000)
    gen, _ = make_gen(fake, drain_s=0.05)
    gen.start()
    gen.configure(TrafficProfile(128, bidirectional=False), PORTS)
    r = gen.run_trial(300_000, 0.3)
    assert len(r.directions) == 1 and r.directions[0].tx_frames == 90_000 == r.rx_frames
    assert r.generator_stats["port_counters"]["1"]["opackets"] == 0


def test_latency_is_reported_in_nanoseconds(start_fake, make_gen):
    fake = start_fake(capacity_fps=1_000_000, latency_us=40, latency_spread_us=4)
    gen, _ = make_gen(fake, drain_s=0.05, latency_pps=2000)
    gen.start()
    gen.configure(TrafficProfile(64), PORTS)
    r = gen.run_trial(200_000, 0.5, latency=True)
    h = r.latency_histogram
    assert h is not None and sum(h.counts) == 2 * 1000  # 2000 pps x 0.5 s, both directions
    assert 30_000 <= h.mean_ns <= 50_000  # 40 µs modelled, reported in ns
    assert h.min_ns >= 20_000 and h.max_ns <= 70_000
    assert set(h.bucket_lower_ns) <= {20_000, 30_000, 40_000, 50_000, 60_000}
    # probes are not bulk frames
    assert r.tx_frames == 100_000 and r.rx_frames == 100_000
    assert r.generator_stats["probes"] == {"sent": 2000, "received": 2000, "rate_pps": 2000.0,
                                           "frame_size_bytes": 64}


def test_overload_latency_and_probe_loss_show_up(start_fake, make_gen):
    fake = start_fake(capacity_fps=500_000, latency_us=20, overload_latency_us=300,
                      ooo_ratio=0.02, dup_ratio=0.01)
    gen, _ = make_gen(fake, drain_s=0.05, latency_pps=1000)
    gen.start()
    gen.configure(TrafficProfile(64), PORTS)
    r = gen.run_trial(1_000_000, 0.5, latency=True)
    assert r.latency_histogram.mean_ns > 150_000
    errors = r.generator_stats["latency_errors"]
    assert errors["dropped"] > 0 and errors["out_of_order"] > 0 and errors["duplicates"] > 0


def test_generator_limited_trial_is_invalid_with_real_counters(start_fake, make_gen):
    fake = start_fake(capacity_fps=10_000_000, max_tx_pps=400_000)
    gen, _ = make_gen(fake, drain_s=0.05)
    gen.start()
    gen.configure(TrafficProfile(64), PORTS)
    r = gen.run_trial(2_000_000, 0.5)  # 1 Mpps asked per port, 400 kpps possible
    assert not r.valid
    assert "could not send the offered load" in r.invalid_reason
    assert [d.tx_frames for d in r.directions] == [200_000, 200_000]
    assert r.rx_frames == r.tx_frames  # the DUT lost nothing: not DUT loss
    assert r.achieved_tx_fps == pytest.approx(800_000)


def test_counters_are_read_after_the_drain(start_fake, make_gen):
    fake = start_fake(capacity_fps=1_000_000, dut_delay_ms=300)
    gen, _ = make_gen(fake, drain_s=0.0)
    gen.start()
    gen.configure(TrafficProfile(64), PORTS)
    hurried = gen.run_trial(200_000, 0.3)
    assert hurried.rx_frames < hurried.tx_frames  # frames still in flight
    time.sleep(0.4)  # let them land before the next trial's baseline
    gen_d, _ = make_gen(fake, drain_s=0.4, force_acquire=True)
    gen_d.start()
    gen_d.configure(TrafficProfile(64), PORTS)
    drained = gen_d.run_trial(200_000, 0.3)
    assert drained.rx_frames == drained.tx_frames == 60_000


def test_drain_defaults_to_the_run_config(start_fake, make_gen):
    fake = start_fake(capacity_fps=1_000_000, dut_delay_ms=200)
    gen, _ = make_gen(fake, run_config={"traffic": {"drain_s": 0.3}})
    gen.start()
    gen.configure(TrafficProfile(64), PORTS)
    r = gen.run_trial(100_000, 0.2)
    assert r.rx_frames == r.tx_frames == 20_000


def test_pgid_counters_agree_with_port_counters(start_fake, make_gen):
    fake = start_fake(capacity_fps=600_000)
    gen, _ = make_gen(fake, drain_s=0.05, bulk_counters="pgid")
    gen.start()
    gen.configure(TrafficProfile(256, flows=50), PORTS)
    r = gen.run_trial(800_000, 0.4, latency=True)
    ports = r.generator_stats["port_counters"]
    probes = r.generator_stats["probes"]
    assert r.tx_frames == 320_000
    assert r.tx_frames + probes["sent"] == ports["0"]["opackets"] + ports["1"]["opackets"]
    assert r.rx_frames + probes["received"] == ports["0"]["ipackets"] + ports["1"]["ipackets"]


def test_streams_on_the_server_are_the_profile(start_fake, make_gen):
    fake = start_fake()
    gen, _ = make_gen(fake)
    gen.start()
    profile = TrafficProfile(128, flows=20, fields=FlowFields(vary=("src_ip", "dst_port")))
    gen.configure(profile, PORTS)
    raw = Raw(fake.sync_port).sync()
    try:
        for port, first_src in ((0, "10.0.0.1"), (1, "10.1.0.1")):
            streams = raw.call("get_all_streams", port_id=port)["result"]["streams"]
            bulk = streams["1"]
            pkt = base64.b64decode(bulk["packet"]["binary"])
            assert len(pkt) == 124 and Ether(pkt)[IP].src == first_src
            program = fe.compile_vm(bulk["vm"], len(pkt))
            assert fe.distinct_packets(program, pkt, 60) == 20
            assert streams["2"]["flow_stats"]["rule_type"] == "latency"
    finally:
        raw.close()


def test_bad_profile_is_a_one_line_error_before_any_trial(start_fake, make_gen):
    fake = start_fake()
    gen, _ = make_gen(fake)
    gen.start()
    with pytest.raises(PluginError) as err:
        gen.configure(TrafficProfile(64, flows=100_000, fields=FlowFields(vary=("src_port",))), PORTS)
    assert "do not fit in src_port" in one_line(err.value)


def test_small_frames_with_vlan_get_a_larger_latency_probe(start_fake, make_gen):
    fake = start_fake(capacity_fps=1_000_000)
    gen, _ = make_gen(fake, drain_s=0.05)
    gen.start()
    gen.configure(TrafficProfile(64, fields=FlowFields(vlan_id=7)), PORTS)
    r = gen.run_trial(100_000, 0.2, latency=True)
    assert r.generator_stats["probes"]["frame_size_bytes"] == 66  # 46 B headers + 16 B signature + FCS
    assert r.latency_histogram is not None


def test_search_through_the_plugin_finds_the_modelled_capacity(start_fake, make_gen):
    capacity = 800_000
    fake = start_fake(capacity_fps=capacity, speed_gbps=1, dut_delay_ms=1)
    gen, _ = make_gen(fake, drain_s=0.02)
    gen.start()
    gen.configure(TrafficProfile(64, flows=8), PORTS)
    config = SearchConfig(mode="binary", goals=(Goal("NDR", 0.0),), min_load_fps=10_000,
                          max_load_fps=gen.capabilities().max_rate_fps, relative_width=0.01,
                          trial_duration_s=0.1, final_trial_duration_s=0.1, full_trial_duration_s=0.1)
    result = search(lambda load, duration: gen.run_trial(load, duration), config)
    ndr = result.goals[0]
    assert ndr.lower_bound_fps <= capacity < ndr.upper_bound_fps
    assert ndr.lower_bound_fps >= capacity * (1 - 0.01)


# --------------------------------------------------------------------------- failures and teardown


def test_teardown_releases_ports_and_closes_sockets(start_fake, make_gen):
    fake = start_fake(capacity_fps=1_000_000)
    gen, stack = make_gen(fake, drain_s=0.0)
    gen.start()
    gen.configure(TrafficProfile(64), PORTS)
    gen.run_trial(100_000, 0.1)
    assert owners(fake) == ["vsbench", "vsbench"]
    assert tcp_connections_to(fake.sync_port) >= 1 and tcp_connections_to(fake.async_port) >= 1
    stack.close()  # what the runner does at the end of a run
    assert owners(fake) == ["", ""]
    assert settle_connections(fake.sync_port, fake.async_port) == 0
    raw = Raw(fake.sync_port).sync()
    try:
        for port in (0, 1):
            status = raw.call("get_port_status", port_id=port)["result"]
            assert status["state"] == "IDLE"  # streams removed too
    finally:
        raw.close()
    gen.stop()  # idempotent


def test_stuck_server_times_out_with_one_line_and_teardown_is_quick(start_fake, make_gen):
    fake = start_fake(hang_on=["start_traffic"])
    gen, stack = make_gen(fake, timeout_s=0.5, drain_s=0.0)
    gen.start()
    gen.configure(TrafficProfile(64), PORTS)
    with pytest.raises(PluginError) as err:
        gen.run_trial(10_000, 0.1)
    text = one_line(err.value)
    assert f"tcp://127.0.0.1:{fake.sync_port}" in text and "no reply to" in text and "0.5 s" in text
    t0 = time.monotonic()
    stack.close()
    assert time.monotonic() - t0 < 1.0  # nothing waits on a dead channel
    with pytest.raises(PluginError, match="not connected"):
        gen.run_trial(10_000, 0.1)


def test_server_dying_mid_run_is_a_plugin_error(start_fake, make_gen):
    fake = start_fake(capacity_fps=1_000_000)
    gen, _ = make_gen(fake, timeout_s=0.5, drain_s=0.0)
    gen.start()
    gen.configure(TrafficProfile(64), PORTS)
    fake.stop()
    with pytest.raises(PluginError) as err:
        gen.run_trial(10_000, 0.1)
    assert "no reply" in one_line(err.value)


def test_run_trial_needs_configure_and_positive_inputs(start_fake, make_gen):
    fake = start_fake()
    gen, _ = make_gen(fake)
    with pytest.raises(PluginError, match="not connected"):
        gen.configure(TrafficProfile(64), PORTS)
    gen.start()
    with pytest.raises(PluginError, match="before configure"):
        gen.run_trial(1000, 1)
    gen.configure(TrafficProfile(64), PORTS)
    with pytest.raises(PluginError, match="positive"):
        gen.run_trial(0, 1)


# --------------------------------------------------------------------------- line rate


def test_probes_fit_into_the_headroom_left_by_the_bulk_load(start_fake, make_gen):
    fake = start_fake(speed_gbps=1, capacity_fps=10_000_000)
    gen, _ = make_gen(fake, drain_s=0.05, latency_pps=1000)
    gen.start()
    gen.configure(TrafficProfile(1518), PORTS)
    line = gen.capabilities().max_rate_fps  # both ports, 1 Gb/s each
    r = gen.run_trial(0.995 * line, 0.5, latency=True)
    assert r.valid, r.invalid_reason  # bulk exactly as asked
    probes = r.generator_stats["probes"]
    assert 300 < probes["rate_pps"] < 1000  # lowered to what the link still carries
    assert probes["received"] == pytest.approx(probes["rate_pps"] * 2 * 0.5, abs=2)
    assert "lowered" in r.generator_stats["rate_notes"][0]


def test_bulk_at_line_rate_plus_probes_is_forced_and_comes_back_generator_limited(start_fake, make_gen):
    fake = start_fake(speed_gbps=1, capacity_fps=10_000_000)
    gen, _ = make_gen(fake, drain_s=0.05, latency_pps=1000)
    gen.start()
    gen.configure(TrafficProfile(1518), PORTS)
    line = gen.capabilities().max_rate_fps
    r = gen.run_trial(line, 0.5, latency=True)  # TRex would refuse this start without force
    assert not r.valid and "could not send" in r.invalid_reason
    assert r.tx_frames < line * 0.5 and r.latency_histogram is not None


def test_load_above_line_rate_is_sent_at_line_rate_and_flagged(start_fake, make_gen):
    fake = start_fake(speed_gbps=1, capacity_fps=10_000_000)
    gen, _ = make_gen(fake, drain_s=0.05)
    gen.start()
    gen.configure(TrafficProfile(64), PORTS)
    line = gen.capabilities().max_rate_fps
    r = gen.run_trial(2 * line, 0.3)
    assert not r.valid
    assert r.tx_frames == pytest.approx(line * 0.3, rel=1e-3)  # what the links carried
    assert "Gb/s asked of a 1 Gb/s link" in r.generator_stats["rate_notes"][0]


# --------------------------------------------------------------------------- a busy or lossy server


def test_lost_event_falls_back_to_port_state(start_fake, make_gen, caplog):
    # events 1-2 are the two acquisitions, 3-6 the ports' "started" events of the trial:
    # losing #4 makes the seq jump while the plugin waits for the end of the trial
    fake = start_fake(capacity_fps=1_000_000, lose_event=[4])
    gen, _ = make_gen(fake, drain_s=0.02)
    gen.start()
    gen.configure(TrafficProfile(64), PORTS)
    r = gen.run_trial(100_000, 0.3)
    assert r.valid and r.tx_frames == r.rx_frames == 30_000
    assert "events lost" in caplog.text
    assert r.tx_duration_s < 0.3 + 1.0


def test_try_again_and_work_in_progress_are_followed(start_fake, make_gen):
    fake = start_fake(capacity_fps=1_000_000, busy_on=["api_sync_v2", "acquire"],
                      wip_on=["get_system_info", "get_pgid_stats"])
    gen, _ = make_gen(fake, drain_s=0.02)
    gen.start()
    gen.configure(TrafficProfile(64), PORTS)
    r = gen.run_trial(100_000, 0.2, latency=True)
    assert r.valid and r.tx_frames == 20_000 and r.latency_histogram is not None
