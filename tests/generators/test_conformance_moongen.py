"""The conformance kit against the moongen plugin and the fake MoonGen executable."""

from __future__ import annotations

import pytest

from generator_fakes import ssh_settings
from vsbench.conformance import ConformanceTarget
from vsbench.conformance.suite import TrafficGeneratorConformance
from vsbench_plugins.trafficgen.moongen import MoonGen

CAPACITY_FPS = 1_000_000
GEN_MAX_FPS_PER_DIRECTION = 2_000_000
LATENCY_NS = 10_000


def moongen_target(settings: dict) -> ConformanceTarget:
    # A real ssh client to a closed loopback port: refused at once, like a host that is down.
    unreachable = {**settings, "ssh": {"host": "127.0.0.1", "user": "bench", "port": 1}}
    return ConformanceTarget(
        name="moongen",
        plugin=MoonGen,
        settings=settings,
        dut_capacity_fps=CAPACITY_FPS,
        trial_duration_s=0.5,
        generator_limit_fps=2 * GEN_MAX_FPS_PER_DIRECTION,
        unreachable_settings=unreachable,
        unreachable_address="bench@127.0.0.1:1",
        dut_latency_ns=(LATENCY_NS, 2 * LATENCY_NS),
    )


def model(moongen_model) -> dict:
    return moongen_model(capacity_fps=CAPACITY_FPS, gen_max_fps=GEN_MAX_FPS_PER_DIRECTION,
                         latency_ns=LATENCY_NS)


@pytest.fixture
def conformance_generator(moongen_model) -> ConformanceTarget:
    return moongen_target(model(moongen_model))


class TestMoonGenConformance(TrafficGeneratorConformance):
    """MoonGen run locally."""


class TestMoonGenOverSshConformance(TrafficGeneratorConformance):
    """MoonGen on a generator host reached with ssh/scp (fake clients running it locally)."""

    @pytest.fixture
    def conformance_generator(self, moongen_model) -> ConformanceTarget:
        return moongen_target({**model(moongen_model), "ssh": ssh_settings()})
