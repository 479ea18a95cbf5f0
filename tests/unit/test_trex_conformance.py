"""The shared traffic-generator conformance suite, run against the trex plugin + fake TRex."""

import pytest

from tests.fakes.trex.launcher import FakeTrex, unused_tcp_port
from tests.unit.test_trex_fake_server import Raw
from vsbench.conformance import ConformanceTarget
from vsbench.conformance.suite import TrafficGeneratorConformance
from vsbench.interfaces.traffic import FlowFields, TrafficProfile
from vsbench_plugins.trafficgen.trex import Trex

CAPACITY_FPS = 1_000_000
MAX_TX_PPS_PER_PORT = 1_000_000  # the fake generator's own limit: 2 Mfps aggregate


@pytest.fixture(scope="module")
def fake(tmp_path_factory):
    with FakeTrex(tmp_path_factory.mktemp("trex-conformance"), capacity_fps=CAPACITY_FPS,
                  max_tx_pps=MAX_TX_PPS_PER_PORT, dut_delay_ms=1, latency_us=20,
                  latency_spread_us=2) as f:
        yield f


def ports_left_acquired(fake: FakeTrex) -> list[str]:
    raw = Raw(fake.sync_port).sync()
    try:
        owners = [raw.call("get_port_status", port_id=p)["result"]["owner"] for p in (0, 1)]
    finally:
        raw.close()
    return [f"TRex port {p} still acquired by {o!r}" for p, o in enumerate(owners) if o]


@pytest.fixture
def conformance_generator(fake):
    refused = unused_tcp_port()
    return ConformanceTarget(
        name="trex",
        plugin=Trex,
        settings=fake.settings(drain_s=0.02),
        dut_capacity_fps=CAPACITY_FPS,
        profile=TrafficProfile(64, flows=16, fields=FlowFields(vary=("src_ip", "dst_ip"))),
        trial_duration_s=0.3,
        rate_tolerance=0.01,
        generator_limit_fps=2 * MAX_TX_PPS_PER_PORT,
        unreachable_settings={"host": "127.0.0.1", "sync_port": refused, "async_port": refused + 1},
        unreachable_address=f"tcp://127.0.0.1:{refused}",
        dut_latency_ns=(15_000, 25_000),
        leak_check=lambda: ports_left_acquired(fake),
    )


class TestTrexConformance(TrafficGeneratorConformance):
    """Every check of vsbench.conformance against Trex and the fake TRex."""
