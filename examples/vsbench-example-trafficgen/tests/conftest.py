"""The conformance kit's targets for toygen: its own fake (model mode, no root needed) and,
with root, the real thing on the kit's testbed against a reference DUT of known capacity."""

from __future__ import annotations

import os

import pytest

from vsbench.conformance import ConformanceTarget
from vsbench.conformance.bench import KitTestbed, reference_dut
from vsbench.interfaces import GeneratorPort, TrafficProfile

from vsbench_example_trafficgen.plugin import ToyGen

MODEL_CAPACITY_FPS = 200_000
PER_PORT_FPS = 20_000


@pytest.fixture
def model_target() -> ConformanceTarget:
    return ConformanceTarget(
        name="toygen",
        plugin=ToyGen,
        settings={"model_capacity_fps": MODEL_CAPACITY_FPS, "drain_s": 0},
        dut_capacity_fps=MODEL_CAPACITY_FPS,
        trial_duration_s=0.2,
        unreachable_settings={"server": {"host": "127.0.0.1", "port": 1}, "connect_timeout_s": 1},
        unreachable_address="127.0.0.1:1",
    )


@pytest.fixture
def testbed_target():
    if os.geteuid() != 0:
        pytest.skip("the testbed needs root (network namespaces)")
    kit = KitTestbed.create()
    try:
        reference_dut(kit, PER_PORT_FPS)
        yield ConformanceTarget(
            name="toygen",
            plugin=ToyGen,
            settings={"drain_s": 0.2},
            dut_capacity_fps=2 * PER_PORT_FPS,
            ports=[GeneratorPort(index=l.index, iface=l.tg_iface, netns=kit.testbed.tg_netns, mac=l.tg_mac)
                   for l in kit.testbed.links],
            profile=TrafficProfile(frame_size_bytes=64),
            trial_duration_s=1.0,
            rate_tolerance=0.1,  # Python pacing on a shared machine
            loss_tolerance=0.001,
        )
    finally:
        kit.close()
