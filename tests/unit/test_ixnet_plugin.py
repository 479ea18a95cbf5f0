"""The ixnet plugin against the fake IxNetwork REST API server process (loopback, free port).

The plugin drives the fake through ixnetwork-restpy exactly as it would drive a real API
server; every figure asserted here is the fake's DUT model (capacity, line rate, latency),
computed independently in the test.
"""

import http.server
import logging
import socket
import threading
import time
from pathlib import Path

import pytest

from tests.fakes.ixnet.launcher import FakeIxNetwork
from vsbench.interfaces.plugin import PluginContext, PluginError
from vsbench.interfaces.traffic import FlowFields, GeneratorPort, TrafficProfile, line_rate_fps
from vsbench.measurement.search import Goal, SearchConfig, search
from vsbench.system.resources import ResourceStack
from vsbench_plugins.trafficgen.ixnet import IxNet
from vsbench.runner.plugin_context import run_parameters

PASSWORD = "Pw-7f3c1e-not-admin"
API_KEY = "5e1f0c2d9a8b47c6b3e2d1f0a9b8c7d6"
PW_ENV = "VSB_TEST_IXNET_PASSWORD"
KEY_ENV = "VSB_TEST_IXNET_API_KEY"
PORTS = [GeneratorPort(0, "p0"), GeneratorPort(1, "p1")]
CHASSIS_PORTS = ["10.9.9.9;1;1", "10.9.9.9;1;2"]
#: Session start and port assignment finish at once: ixnetwork-restpy polls an operation
#: still IN_PROGRESS once a second, 2 s a test. SLOW_START is the asynchronous server.
FAST = ("--session-start-s", "0", "--assign-ports-s", "0", "--stats-lag-s", "0.05")
SLOW_START = ("--session-start-s", "0.2", "--assign-ports-s", "0.2")


@pytest.fixture(autouse=True)
def secrets_in_environment(monkeypatch):
    monkeypatch.setenv(PW_ENV, PASSWORD)
    monkeypatch.setenv(KEY_ENV, API_KEY)


@pytest.fixture
def start_fake(tmp_path):
    fakes = []

    def start(*args):
        fake = FakeIxNetwork.start(tmp_path / f"fake{len(fakes)}", "--password-env", PW_ENV,
                                   "--api-key-env", KEY_ENV, *FAST, *args,
                                   env={PW_ENV: PASSWORD, KEY_ENV: API_KEY})
        fakes.append(fake)
        return fake

    yield start
    for fake in fakes:
        fake.stop()


@pytest.fixture
def make_gen(tmp_path):
    stacks = []

    def make(fake=None, run_id="abc123", run_config=None, **overrides):
        settings = {"ports": CHASSIS_PORTS, "password_env": PW_ENV, "drain_s": 0.1,
                    "poll_interval_s": 0.05, "connect_timeout_s": 2.0, "link_up_timeout_s": 10.0}
        if fake is not None:
            settings.update(api_host=fake.host, api_port=fake.port)
        settings.update(overrides)
        stack = ResourceStack()
        stacks.append(stack)
        ctx = PluginContext(run_id=run_id, settings=settings, log_dir=tmp_path, resources=stack,
                            run=run_parameters(run_config or {}))
        return IxNet(ctx), stack

    yield make
    for stack in stacks:
        stack.close()


def one_line(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text and text.startswith("ixnet: "), text
    return text


# --------------------------------------------------------------------------- connecting


def test_start_logs_in_creates_a_named_session_and_connects_the_ports(start_fake, make_gen):
    fake = start_fake(*SLOW_START)
    gen, _ = make_gen(fake)
    gen.start()
    state = fake.state()
    [session] = state["sessions"]
    assert session["name"] == "vsb-abc123-ixnet" and session["state"] == "ACTIVE"
    assert session["vports"] == ["vsb-abc123-p0", "vsb-abc123-p1"]
    assert [p["location"] for p in state["owned_ports"]] == CHASSIS_PORTS
    assert state["counters"]["logins"] == 1
    assert state["counters"]["polls"] >= 2  # session start and assignPorts were polled to SUCCESS
    caps = gen.capabilities()
    assert caps.ports == 2 and caps.latency and not caps.per_packet_latency
    assert caps.max_rate_fps == pytest.approx(2 * line_rate_fps(10e9, 64))  # ports report 10 Gb/s
    assert gen.version()["ixnetwork"] == "9.30.2212.7"


def test_api_key_login(start_fake, make_gen):
    fake = start_fake()
    gen, _ = make_gen(fake, password_env=None, api_key_env=KEY_ENV)
    gen.start()
    assert fake.state()["counters"]["logins"] == 0  # the key was used as is
    assert len(fake.state()["sessions"]) == 1


@pytest.mark.parametrize("fake_args, overrides", [
    ((), {"password_env": None, "password": "wrong-password"}),
    (("--reject-auth",), {}),
    ((), {"password_env": None, "api_key": "0000deadbeef"}),
])
def test_auth_failure_is_one_line_naming_the_server_and_leaves_nothing(start_fake, make_gen,
                                                                     fake_args, overrides):
    fake = start_fake(*fake_args)
    gen, _ = make_gen(fake, **overrides)
    with pytest.raises(PluginError) as err:
        gen.start()
    text = one_line(err.value)
    assert f"IxNetwork API server 127.0.0.1:{fake.port} refused the credentials (HTTP 401)" in text
    assert PASSWORD not in text and "wrong-password" not in text and "0000deadbeef" not in text
    assert fake.state()["sessions"] == []


def test_refused_connection_is_one_line(make_gen):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    gen, _ = make_gen(api_host="127.0.0.1", api_port=port)
    with pytest.raises(PluginError) as err:
        gen.start()
    assert one_line(err.value) == (f"ixnet: cannot reach IxNetwork API server 127.0.0.1:{port}: "
                                   "connection refused")


def test_a_server_that_is_not_ixnetwork_is_named_as_such(make_gen):
    class NotFound(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.send_error(404)

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), NotFound)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        gen, _ = make_gen(api_host="127.0.0.1", api_port=httpd.server_address[1])
        with pytest.raises(PluginError) as err:
            gen.start()
        assert "answers as an IxNetwork API server" in one_line(err.value)
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_hung_server_times_out_and_the_session_is_still_removed(start_fake, make_gen):
    fake = start_fake("--stall", r"^POST /api/v1/sessions/\d+/operations/start$")
    gen, stack = make_gen(fake, request_timeout_s=1.0)
    started = time.monotonic()
    with pytest.raises(PluginError) as err:
        gen.start()
    assert time.monotonic() - started < 10
    assert one_line(err.value) == (f"ixnet: start session: IxNetwork API server 127.0.0.1:{fake.port} "
                                   "did not answer in time (trafficgen.ixnet.request_timeout_s)")
    assert fake.state()["sessions"] == []  # removed although it never started


def test_bad_settings_fail_before_touching_the_server(start_fake, make_gen):
    fake = start_fake()
    gen, _ = make_gen(fake, ports=["10.9.9.9;1;1"])
    with pytest.raises(PluginError, match="at least two chassis ports"):
        gen.start()
    gen, _ = make_gen(fake, password_env="VSB_TEST_UNSET_VARIABLE")
    with pytest.raises(PluginError, match="environment variable VSB_TEST_UNSET_VARIABLE"):
        gen.start()
    assert fake.state()["counters"]["requests"] == 0


def test_ports_of_another_session_need_force_and_a_failed_start_leaves_nothing(start_fake, make_gen):
    fake = start_fake()
    first, _ = make_gen(fake, run_id="aaaaaa")
    first.start()
    second, _ = make_gen(fake, run_id="bbbbbb")
    with pytest.raises(PluginError) as err:
        second.start()
    text = one_line(err.value)
    assert "owned by session" in text and f"127.0.0.1:{fake.port}" in text
    assert [s["name"] for s in fake.state()["sessions"]] == ["vsb-aaaaaa-ixnet"]  # ours is gone
    forced, _ = make_gen(fake, run_id="cccccc", force_ownership=True)
    forced.start()
    assert {p["session"] for p in fake.state()["owned_ports"]} == {3}


def test_a_port_the_chassis_does_not_have(start_fake, make_gen):
    fake = start_fake("--cards", "1")
    gen, _ = make_gen(fake, ports=["10.9.9.9;1;1", "10.9.9.9;4;1"])
    with pytest.raises(PluginError) as err:
        gen.start()
    assert "does not exist" in one_line(err.value)
    assert fake.state()["sessions"] == [] and fake.state()["owned_ports"] == []


# --------------------------------------------------------------------------- trials


@pytest.fixture
def dut_100k(start_fake, make_gen):
    """A started generator, configured for 64 B bidirectional, on a 100 kfps DUT."""
    fake = start_fake("--capacity-fps", "100000", "--base-latency-ns", "7000")
    gen, stack = make_gen(fake)
    gen.start()
    gen.configure(TrafficProfile(64, flows=100), PORTS)
    return fake, gen, stack


def test_trial_below_capacity_loses_nothing(dut_100k):
    _, gen, _ = dut_100k
    result = gen.run_trial(80_000, 0.5)
    assert result.valid and result.tx_frames == 40_000 and result.rx_frames == 40_000
    assert [(d.tx_port, d.rx_port, d.tx_frames, d.rx_frames) for d in result.directions] == \
        [(0, 1, 20_000, 20_000), (1, 0, 20_000, 20_000)]
    assert result.latency_histogram is None  # not asked for
    assert result.intended_load_fps == 80_000 and result.intended_duration_s == 0.5
    assert [p["frames_tx"] for p in result.generator_stats["ports"]] == [20_000, 20_000]


def test_trial_above_capacity_loses_per_the_model(dut_100k):
    _, gen, _ = dut_100k
    result = gen.run_trial(160_000, 0.5)
    # The DUT forwards 100 kfps of the 160 kfps offered: each direction keeps 5/8.
    assert result.tx_frames == 80_000 and result.rx_frames == 50_000
    assert [d.rx_frames for d in result.directions] == [25_000, 25_000]
    assert result.loss_ratio == pytest.approx(0.375)


@pytest.mark.parametrize("unit", ["ns", "us"])
def test_latency_is_reported_in_ns_whatever_unit_the_server_shows(start_fake, make_gen, unit):
    fake = start_fake("--capacity-fps", "100000", "--base-latency-ns", "7000", "--latency-unit", unit)
    gen, _ = make_gen(fake)
    gen.start()
    gen.configure(TrafficProfile(128), PORTS)
    low = gen.run_trial(40_000, 0.3, latency=True).latency_histogram
    # Model: 7000 ns up to 80 % load; min 0.9x base, max 1.5x avg + base.
    assert (low.min_ns, low.mean_ns, low.max_ns) == pytest.approx((6_300, 7_000, 17_500))
    busy = gen.run_trial(90_000, 0.3, latency=True).latency_histogram
    expected_avg = 7_000 + (0.9 - 0.8) / 0.2 * (250_000 - 7_000)
    assert busy.mean_ns == pytest.approx(expected_avg, rel=1e-3)
    assert fake.state()["sessions"][0]["latency"] == {"enabled": True, "mode": "storeForward"}
    assert gen.run_trial(40_000, 0.3).latency_histogram is None
    assert fake.state()["sessions"][0]["latency"]["enabled"] is False


def test_a_rate_above_line_rate_shows_as_frames_not_sent(start_fake, make_gen):
    fake = start_fake("--port-speed-mbps", "100")
    gen, _ = make_gen(fake)
    gen.start()
    gen.configure(TrafficProfile(64), PORTS)
    result = gen.run_trial(400_000, 0.5)  # 200 kfps per port asked; 100 Mb/s carries 148.8 k
    per_port = line_rate_fps(100e6, 64) * 0.5
    assert [d.tx_frames for d in result.directions] == [round(per_port)] * 2
    assert result.tx_frames < 0.75 * result.intended_frames  # the engine marks this invalid


def test_profile_becomes_headers_flows_and_rates_on_the_chassis(start_fake, make_gen):
    fake = start_fake()
    gen, _ = make_gen(fake)
    gen.start()
    fields = FlowFields(l4_proto="tcp", vlan_id=42, src_port=1000, dst_port=2000,
                        vary=("src_ip", "dst_port"))
    gen.configure(TrafficProfile(256, flows=500, fields=fields), PORTS)
    gen.run_trial(10_000, 0.2)
    forward, reverse = fake.state()["sessions"][0]["applied"]
    assert (forward["tx_port"], forward["rx_port"]) == ("vsb-abc123-p0", "vsb-abc123-p1")
    assert (reverse["tx_port"], reverse["rx_port"]) == ("vsb-abc123-p1", "vsb-abc123-p0")
    for stream in (forward, reverse):
        assert stream["frame_size_bytes"] == 256 and stream["flows"] == 500
        assert stream["rate_fps"] == 5_000 and stream["control"] == "fixedDuration"
        assert stream["duration_s"] == pytest.approx(0.2)
        assert stream["headers"]["vlan.header.vlanTag.vlanID"] == "42"
    assert forward["headers"]["ipv4.header.srcIp"] == "10.0.0.1 increment 0.0.0.1 x500"
    assert forward["headers"]["ipv4.header.dstIp"] == "10.1.0.1"
    assert forward["headers"]["tcp.header.dstPort"] == "2000 increment 1 x500"
    assert reverse["headers"]["ipv4.header.srcIp"] == "10.1.0.1 increment 0.0.0.1 x500"
    assert reverse["headers"]["tcp.header.dstPort"] == "1000 increment 1 x500"
    assert reverse["headers"]["ethernet.header.sourceAddress"] == "02:00:00:00:00:02"


def test_unidirectional_profile_and_reconfigure(start_fake, make_gen):
    fake = start_fake()
    gen, _ = make_gen(fake)
    gen.start()
    gen.configure(TrafficProfile(64, bidirectional=False), PORTS)
    result = gen.run_trial(10_000, 0.3)
    assert [(d.tx_port, d.rx_port, d.tx_frames) for d in result.directions] == [(0, 1, 3_000)]
    gen.configure(TrafficProfile(1518), PORTS)  # replaces the traffic item
    assert fake.state()["sessions"][0]["traffic_items"] == ["vsb-abc123-1518B-1f"]
    assert gen.run_trial(10_000, 0.3).tx_frames == 3_000


def test_drain_defaults_to_the_run_configuration(start_fake, make_gen):
    # The fake's Rx counters trail Tx by 0.4 s (frames in flight): read too early, frames
    # still in flight look lost.
    fake = start_fake("--stats-lag-s", "0.4", "--capacity-fps", "1000000")
    hasty, _ = make_gen(fake, drain_s=None, run_config={"traffic": {"drain_s": 0.0}})
    hasty.start()
    hasty.configure(TrafficProfile(64), PORTS)
    early = hasty.run_trial(20_000, 0.3)
    assert early.tx_frames == 6_000 and early.rx_frames < 6_000
    hasty.stop()
    patient, _ = make_gen(fake, drain_s=None, run_config={"traffic": {"drain_s": 0.5}})
    patient.start()
    patient.configure(TrafficProfile(64), PORTS)
    assert patient.run_trial(20_000, 0.3).rx_frames == 6_000


def test_search_through_the_plugin_finds_the_modelled_capacity(start_fake, make_gen):
    capacity = 300_000
    fake = start_fake("--capacity-fps", str(capacity))
    gen, _ = make_gen(fake, drain_s=0.06)
    gen.start()
    gen.configure(TrafficProfile(64, flows=16), PORTS)
    config = SearchConfig(mode="binary", goals=(Goal("NDR", 0.0),), min_load_fps=10_000,
                          max_load_fps=1_000_000, relative_width=0.01, trial_duration_s=0.2,
                          final_trial_duration_s=0.2, full_trial_duration_s=0.2)
    ndr = search(lambda load, duration: gen.run_trial(load, duration), config).goals[0]
    assert ndr.lower_bound_fps <= capacity < ndr.upper_bound_fps
    assert ndr.lower_bound_fps >= capacity * (1 - 0.01)


def test_an_api_error_is_one_line_and_the_half_built_item_is_removed(start_fake, make_gen):
    fake = start_fake()
    gen, _ = make_gen(fake)
    gen.start()
    with pytest.raises(PluginError) as err:
        gen.configure(TrafficProfile(60), PORTS)  # the chassis refuses frames under 64 B
    text = one_line(err.value)
    assert f"failed on IxNetwork API server 127.0.0.1:{fake.port} (HTTP 400)" in text
    assert "60 B" in text
    assert fake.state()["sessions"][0]["traffic_items"] == []
    with pytest.raises(PluginError, match="before configure"):
        gen.run_trial(1_000, 0.1)
    gen.configure(TrafficProfile(64), PORTS)
    assert gen.run_trial(10_000, 0.2).rx_frames == 2_000


def test_an_interrupted_trial_stops_the_chassis(start_fake, make_gen, monkeypatch):
    fake = start_fake()
    gen, stack = make_gen(fake)
    gen.start()
    gen.configure(TrafficProfile(64), PORTS)

    def interrupted(*args, **kwargs):
        assert fake.state()["sessions"][0]["transmitting"]
        raise KeyboardInterrupt  # Ctrl-C while the trial runs

    monkeypatch.setattr(gen, "_wait_stopped", interrupted)
    with pytest.raises(KeyboardInterrupt):
        gen.run_trial(10_000, 60)
    assert fake.state()["sessions"][0]["transmitting"] is False
    stack.close()
    assert fake.state()["sessions"] == []


def test_calls_out_of_order_are_one_line_errors(start_fake, make_gen):
    fake = start_fake()
    gen, _ = make_gen(fake)
    with pytest.raises(PluginError, match="not started"):
        gen.configure(TrafficProfile(64), PORTS)
    gen.start()
    with pytest.raises(PluginError, match="before configure"):
        gen.run_trial(1_000, 0.1)
    with pytest.raises(PluginError, match="vxlan"):
        gen.configure(TrafficProfile(64, encapsulation="vxlan"), PORTS)
    with pytest.raises(PluginError, match="generator port 5 has no chassis port"):
        gen.configure(TrafficProfile(64), [GeneratorPort(0, "a"), GeneratorPort(5, "b")])


# --------------------------------------------------------------------------- teardown, secrets


def test_teardown_releases_the_ports_and_deletes_the_session(start_fake, make_gen):
    fake = start_fake()
    gen, stack = make_gen(fake)
    gen.start()
    gen.configure(TrafficProfile(64), PORTS)
    gen.run_trial(10_000, 0.2)
    assert len(fake.state()["sessions"]) == 1
    stack.close()  # what the runner does at the end of a run
    state = fake.state()
    assert state["sessions"] == [] and state["owned_ports"] == []
    assert state["counters"]["sessions_deleted"] == 1
    gen.stop()  # idempotent


def test_stop_removes_everything_and_is_idempotent(start_fake, make_gen):
    fake = start_fake()
    gen, _ = make_gen(fake)
    gen.start()
    gen.stop()
    gen.stop()
    assert fake.state()["sessions"] == [] and fake.state()["owned_ports"] == []


def test_credentials_never_reach_logs_errors_or_results(start_fake, make_gen, tmp_path):
    log_file = tmp_path / "run.log"
    handler = logging.FileHandler(log_file)
    handler.setLevel(logging.DEBUG)
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        fake = start_fake("--capacity-fps", "50000")
        texts = []
        bad, _ = make_gen(fake, password_env=None, password=PASSWORD + "x")  # a near miss
        with pytest.raises(PluginError) as err:
            bad.start()
        texts.append(str(err.value))
        gen, stack = make_gen(fake)  # inline-free: the password comes from the environment
        gen.start()
        gen.configure(TrafficProfile(64, flows=10), PORTS)
        result = gen.run_trial(60_000, 0.3, latency=True)
        texts += [repr(result), repr(gen.capabilities()), repr(gen.version()), repr(gen)]
        stack.close()
        keyed, stack2 = make_gen(fake, password_env=None, api_key_env=KEY_ENV)
        keyed.start()
        stack2.close()
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)
        handler.close()
    logged = log_file.read_text()
    assert "ixnet: connected to IxNetwork" in logged  # the log did record the run
    every_file = "".join(p.read_text(errors="replace") for p in Path(tmp_path).rglob("*")
                         if p.is_file())
    for secret in (PASSWORD, API_KEY):
        assert secret not in logged
        assert secret not in every_file
        assert not any(secret in t for t in texts)


def test_port_speeds_are_the_vports_actual_speed(dut_100k):
    """The line rate of a run on IxNetwork is against the ports' ActualSpeed (the fake's
    10GE ports), not a nominal figure."""
    _, gen, _ = dut_100k
    speeds = gen.port_speeds()
    assert [s.speed_bps for s in speeds] == [10e9, 10e9]
    assert all("ActualSpeed" in s.source for s in speeds)
