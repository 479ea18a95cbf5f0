"""The conformance kit against the ixnet plugin and the fake IxNetwork API server process."""

from __future__ import annotations

import socket

import pytest

from tests.fakes.ixnet.launcher import FakeIxNetwork
from vsbench.conformance import ConformanceTarget
from vsbench.conformance.suite import TrafficGeneratorConformance
from vsbench_plugins.trafficgen.ixnet import IxNet

CAPACITY_FPS = 100_000
BASE_LATENCY_NS = 5_000
PW_ENV = "VSB_CONFORMANCE_IXNET_PASSWORD"
PASSWORD = "conformance-pw-4d2a"


def closed_tcp_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def leftovers(fake: FakeIxNetwork) -> list[str]:
    """Sessions or port ownerships the plugin left on the API server."""
    state = fake.state()
    return ([f"IxNetwork session {s['name']} still exists" for s in state["sessions"]]
            + [f"chassis port {p['location']} still owned" for p in state["owned_ports"]])


def ixnet_target(fake: FakeIxNetwork, **settings) -> ConformanceTarget:
    base = {"api_host": fake.host, "api_port": fake.port, "password_env": PW_ENV,
            "ports": ["10.9.9.9;1;1", "10.9.9.9;1;2"], "drain_s": 0.1, "poll_interval_s": 0.05}
    port = closed_tcp_port()
    return ConformanceTarget(
        name="ixnet",
        plugin=IxNet,
        settings={**base, **settings},
        dut_capacity_fps=CAPACITY_FPS,
        trial_duration_s=0.5,
        unreachable_settings={**base, "api_port": port, "connect_timeout_s": 1.0},
        unreachable_address=f"127.0.0.1:{port}",
        dut_latency_ns=(0.9 * BASE_LATENCY_NS, 1.1 * BASE_LATENCY_NS),
        leak_check=lambda: leftovers(fake),
    )


@pytest.fixture
def fake_ixnet(tmp_path, monkeypatch):
    monkeypatch.setenv(PW_ENV, PASSWORD)
    started = []

    def start(*args: str) -> FakeIxNetwork:
        # session start and port assignment finish at once: ixnetwork-restpy polls an
        # operation still in progress once a second (test_ixnet_plugin.py has the slow server)
        fake = FakeIxNetwork.start(tmp_path / f"fake-ixnet{len(started)}", "--password-env", PW_ENV,
                                   "--capacity-fps", str(CAPACITY_FPS), "--base-latency-ns",
                                   str(BASE_LATENCY_NS), "--session-start-s", "0",
                                   "--assign-ports-s", "0", "--stats-lag-s", "0.05", *args,
                                   env={PW_ENV: PASSWORD})
        started.append(fake)
        return fake

    yield start
    for fake in started:
        fake.stop()


@pytest.fixture
def conformance_generator(fake_ixnet) -> ConformanceTarget:
    return ixnet_target(fake_ixnet())


class TestIxNetConformance(TrafficGeneratorConformance):
    """10 Gb/s chassis ports, latency reported in ns."""


class TestIxNetMicrosecondsLineRateLimited(TrafficGeneratorConformance):
    """100 Mb/s chassis ports the plugin believes are 1 Gb/s (a wrong port_speed_gbps), and
    latency shown in microseconds: a trial above line rate must come back with the frames
    really sent, and latency must still be nanoseconds."""

    @pytest.fixture
    def conformance_generator(self, fake_ixnet) -> ConformanceTarget:
        fake = fake_ixnet("--port-speed-mbps", "100", "--latency-unit", "us")
        target = ixnet_target(fake, port_speed_gbps=1.0)
        target.generator_limit_fps = 2 * 100e6 / ((64 + 20) * 8)
        return target
