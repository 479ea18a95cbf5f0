"""Bursts on the trex plugin against the fake TRex server process with a buffered DUT.

The fake (a separate process speaking TRex's protocol) sends each direction's
``single_burst`` stream at the plugin's rate and models a DUT of capacity C with a buffer
of B frames: a burst of L frames at O > C loses nothing iff L <= B / (1 - C / O). The
back-to-back search over the plugin's bursts must find that length.
"""

import time

import pytest

from tests.unit.test_trex_fake_server import Raw, _stream
from tests.unit.test_trex_plugin import PORTS, make_gen, start_fake  # noqa: F401 - fixtures
from vsbench.interfaces.plugin import PluginError
from vsbench.interfaces.traffic import TrafficProfile, line_rate_fps
from vsbench.measurement import back2back as b2b

SPEED_GBPS = 1.0
CAPACITY_FPS = 1_000_000.0
BUFFER_FRAMES = 1_000
LINE_FPS = line_rate_fps(SPEED_GBPS * 1e9, 64)  # one 1 Gb/s port, 64 B: 1 488 095 fps


def lossless_limit(offered_fps: float) -> float:
    return BUFFER_FRAMES / (1 - CAPACITY_FPS / offered_fps)


@pytest.fixture
def burst_gen(start_fake, make_gen):  # noqa: F811 - pytest fixtures by name
    def make(bidirectional: bool):
        fake = start_fake(speed_gbps=SPEED_GBPS, capacity_fps=CAPACITY_FPS,
                          buffer_frames=BUFFER_FRAMES, dut_delay_ms=1)
        gen, _ = make_gen(fake, drain_s=0.02)
        gen.start()
        gen.configure(TrafficProfile(64, bidirectional=bidirectional), PORTS)
        return gen

    return make


def burst_stream(pps: float, **mode_fields) -> dict:
    stream = _stream(pps)
    stream["mode"] = {"type": "single_burst", "rate": {"type": "pps", "value": pps}, **mode_fields}
    return stream


def test_fake_single_burst_over_raw_rpc_sends_exactly_total_pkts_then_finishes(start_fake):  # noqa: F811
    fake = start_fake(capacity_fps=CAPACITY_FPS)
    raw = Raw(fake.sync_port).sync()
    h = raw.call("acquire", port_id=0, user="t", session_id=77, force=True)["result"]
    try:
        err = raw.call("add_stream", port_id=0, handler=h, stream_id=1, stream=burst_stream(1e5))["error"]
        assert err["code"] == -32602 and "total_pkts" in err["specific_err"]
        multi = burst_stream(1e5, pkts_per_burst=10, ibg=0.0, count=2)
        multi["mode"]["type"] = "multi_burst"
        err = raw.call("add_stream", port_id=0, handler=h, stream_id=1, stream=multi)["error"]
        assert "not modelled" in err["specific_err"]
        raw.call("get_async_events", session_id=77)
        assert "result" in raw.call("add_stream", port_id=0, handler=h, stream_id=1,
                                    stream=burst_stream(100_000, total_pkts=12_345))
        raw.call("start_traffic", port_id=0, handler=h, profile_id="_", duration=-1.0, force=False,
                 mul={"type": "raw", "op": "abs", "value": 1.0})
        err = raw.call("pause_traffic", port_id=0, handler=h)["error"]
        assert "not modelled" in err["specific_err"]
        deadline, events = time.monotonic() + 3, []
        while not any(e["type"] == 14 for e in events) and time.monotonic() < deadline:
            time.sleep(0.02)
            events += raw.call("get_async_events", session_id=77)["result"]["data"]
        assert [e["type"] for e in events if e["type"] in (4, 14)] == [14, 4]  # finished tx, job done
        assert raw.call("get_port_status", port_id=0)["result"]["state"] == "STREAMS"
        time.sleep(0.01)  # the DUT's 2 ms delay
        assert raw.call("get_port_stats", port_id=0)["result"]["opackets"] == 12_345
        assert raw.call("get_port_stats", port_id=1)["result"]["ipackets"] == 12_345
    finally:
        raw.call("remove_all_streams", port_id=0, handler=h)
        raw.call("release", port_id=0, handler=h)
        raw.close()


def test_trex_declares_bursts(burst_gen):
    assert burst_gen(True).supports_bursts is True


def test_unpaced_burst_goes_out_at_line_rate_and_counts_exactly(burst_gen):
    gen = burst_gen(True)  # O = 2 x line rate = 2.976 Mpps: lossless up to 1506 frames
    short = gen.run_burst(1_500)
    assert (short.tx_frames, short.rx_frames, short.burst_frames) == (1_500, 1_500, 1_500)
    assert [(d.tx_frames, d.rx_frames) for d in short.directions] == [(750, 750), (750, 750)]
    assert short.intended_load_fps == pytest.approx(2 * LINE_FPS)
    assert short.tx_duration_s == pytest.approx(750 / LINE_FPS)
    assert short.intended_duration_s * short.intended_load_fps == pytest.approx(1_500)
    assert short.valid
    long = gen.run_burst(20_000)
    lost = (2 * LINE_FPS - CAPACITY_FPS) * (20_000 / (2 * LINE_FPS) - BUFFER_FRAMES / (2 * LINE_FPS - CAPACITY_FPS))
    assert long.tx_frames == 20_000
    assert long.tx_frames - long.rx_frames == pytest.approx(lost, abs=2)


def test_paced_burst_under_capacity_loses_nothing(burst_gen):
    gen = burst_gen(True)
    result = gen.run_burst(50_000, rate_fps=900_000)  # under C: the buffer never fills
    assert (result.tx_frames, result.rx_frames) == (50_000, 50_000)
    assert result.intended_load_fps == 900_000
    assert result.intended_duration_s == pytest.approx(50_000 / 900_000)
    assert result.tx_duration_s == pytest.approx(25_000 / 450_000)


def test_bursts_that_cannot_be_sent_are_one_line_errors(burst_gen):
    gen = burst_gen(True)
    with pytest.raises(PluginError, match="cannot be split evenly over 2 direction"):
        gen.run_burst(1_001)
    with pytest.raises(PluginError, match="latency during a burst is not supported"):
        gen.run_burst(1_000, latency=True)
    with pytest.raises(PluginError, match="cannot pace a burst at 0 fps"):
        gen.run_burst(1_000, rate_fps=0)
    # the generator is still usable after refusing
    assert gen.run_trial(500_000, 0.05).rx_frames == 25_000


def test_back2back_search_finds_the_modelled_buffer(burst_gen):
    gen = burst_gen(False)  # one direction at line rate: lossless up to 3049 frames

    def passes(frames: int) -> bool:
        result = gen.run_burst(frames)
        return result.tx_frames == frames and result.rx_frames == frames

    found = [b2b.search_burst_length(passes, max_frames=20_000).frames for _ in range(2)]
    stats = b2b.frame_stats(found)
    print(f"back2back frames {found}, modelled {lossless_limit(LINE_FPS):.1f}")
    assert stats.avg == pytest.approx(lossless_limit(LINE_FPS), abs=2)
