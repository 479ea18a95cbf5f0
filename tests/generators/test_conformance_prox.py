"""The conformance kit against the prox plugin and the fake PROX process."""

from __future__ import annotations

import socket

import pytest

from vsbench.conformance import ConformanceTarget
from vsbench.conformance.suite import TrafficGeneratorConformance
from vsbench_plugins.trafficgen.prox import Prox

CAPACITY_FPS = 1_000_000
GEN_CORE_MAX_FPS = 2_000_000  # two generator cores: the generator tops out at 4 Mfps
LATENCY_NS = 10_000


def closed_tcp_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def prox_target(fake, **settings) -> ConformanceTarget:
    port = closed_tcp_port()
    return ConformanceTarget(
        name="prox",
        plugin=Prox,
        settings=fake.settings(**settings),
        dut_capacity_fps=CAPACITY_FPS,
        trial_duration_s=0.5,
        generator_limit_fps=2 * GEN_CORE_MAX_FPS,
        unreachable_settings={"host": "127.0.0.1", "port": port, "connect_timeout_s": 1.0},
        unreachable_address=f"127.0.0.1:{port}",
        dut_latency_ns=(LATENCY_NS, 2 * LATENCY_NS),
    )


def start_fake(fake_prox, *extra: str):
    return fake_prox("--dut-capacity-fps", str(CAPACITY_FPS), "--gen-core-max-fps",
                     str(GEN_CORE_MAX_FPS), "--dut-latency-ns", str(LATENCY_NS), *extra)


@pytest.fixture
def conformance_generator(fake_prox) -> ConformanceTarget:
    return prox_target(start_fake(fake_prox))


class TestProxConformance(TrafficGeneratorConformance):
    """Newest PROX reply formats (12-field lat stats, lat all stats buckets), TCP."""


class TestOldProxConformance(TrafficGeneratorConformance):
    """A pre-2021 PROX: 7-field lat stats, no 'lat all stats' and no 'version'."""

    @pytest.fixture
    def conformance_generator(self, fake_prox) -> ConformanceTarget:
        return prox_target(start_fake(fake_prox, "--lat-format", "7"), latency_buckets=False)
