"""The fake TRex's DUT buffer (tests/fakes/trex/dut.py), by hand-computed cases.

A burst of L frames offered at O frames/s into a DUT of capacity C < O and a buffer of B
frames fills the buffer at O - C frames/s for L / O seconds: it loses nothing iff
L <= B / (1 - C / O), and past that loses (O - C) x (L / O - B / (O - C)) frames.
"""

import pytest

from tests.fakes.trex.dut import DutModel, Ledger, StreamRun

C, O = 1_000_000.0, 2_000_000.0  # threshold B / (1 - C / O) = 2 B
T0, LATER = 1000.0, 2000.0  # start of the burst; a time long after it, when counters are read


def burst(frames: int, buffer_frames: float, *, offered: float = O, directions: int = 2) -> tuple[int, int]:
    """(tx, rx) of one burst of ``frames`` split over ``directions`` runs at ``offered`` aggregate."""
    ledger = Ledger(DutModel(capacity_fps=C, buffer_frames=buffer_frames))
    per_dir = offered / directions
    runs = [StreamRun(port=d, stream_id=1, rx_port=d ^ 1, pps=per_dir, pkt_len=60, t0=T0,
                      length=(frames / directions) / per_dir) for d in range(directions)]
    ledger.add(runs)
    return sum(r.tx(LATER) for r in runs), sum(r.rx(LATER, 0.002) for r in runs)


def test_no_buffer_loses_the_excess_share_as_before():
    tx, rx = burst(10_000, 0)
    assert tx == 10_000
    assert rx == pytest.approx(10_000 * C / O, abs=2)  # floor per run


@pytest.mark.parametrize("frames", [1_000, 1_998, 2_000])
def test_a_burst_the_buffer_absorbs_loses_nothing(frames):
    assert burst(frames, 1_000) == (frames, frames)  # 2000 = 1000 / (1 - 1/2)


@pytest.mark.parametrize("frames, lost", [(2_010, 5), (4_000, 1_000), (10_000, 4_000)])
def test_past_the_threshold_the_excess_beyond_the_buffer_is_lost(frames, lost):
    # lost = (O - C) * (L / O - B / (O - C)) = L / 2 - 1000; each direction's count is
    # floored once, so up to one frame per direction of rounding
    tx, rx = burst(frames, 1_000)
    assert tx == frames
    assert tx - rx == pytest.approx(lost, abs=2)


def test_at_capacity_nothing_queues_and_nothing_is_lost():
    assert burst(50_000, 10, offered=C) == (50_000, 50_000)


def test_the_buffer_drains_at_capacity_before_the_next_burst():
    """Two bursts 1.5 ms apart: the first fills the buffer (1000 frames queued as it ends),
    which drains in 1 ms at C (nothing offered), so the second starts with an empty buffer
    and loses nothing."""
    ledger = Ledger(DutModel(capacity_fps=C, buffer_frames=1_000))
    first = StreamRun(port=0, stream_id=1, rx_port=1, pps=O, pkt_len=60, t0=T0, length=0.001)
    ledger.add([first])
    assert ledger.queue_at(T0 + 0.001) == pytest.approx(1_000)
    assert ledger.queue_at(T0 + 0.0015) == pytest.approx(500)
    assert ledger.queue_at(T0 + 0.002) == 0.0
    second = StreamRun(port=0, stream_id=1, rx_port=1, pps=O, pkt_len=60, t0=T0 + 0.0025, length=0.001)
    ledger.add([second])
    assert (second.tx(LATER), second.rx(LATER, 0.002)) == (2_000, 2_000)


def test_a_burst_into_a_partly_filled_buffer_loses_sooner():
    """The second burst starts 0.25 ms after the first ended: 750 frames still queued, so
    only 250 more fit; the buffer is full 0.25 ms into the burst and for the remaining
    0.75 ms half of the offered 2 Mpps is lost: 750 frames."""
    ledger = Ledger(DutModel(capacity_fps=C, buffer_frames=1_000))
    first = StreamRun(port=0, stream_id=1, rx_port=1, pps=O, pkt_len=60, t0=T0, length=0.001)
    ledger.add([first])
    second = StreamRun(port=0, stream_id=1, rx_port=1, pps=O, pkt_len=60, t0=T0 + 0.00125, length=0.001)
    ledger.add([second])
    assert ledger.queue_at(T0 + 0.00125) == pytest.approx(750)
    assert second.tx(LATER) - second.rx(LATER, 0.002) == pytest.approx(750, abs=1)


def test_buffered_frames_mark_latency_as_queued_and_zero_buffer_never_does():
    ledger = Ledger(DutModel(capacity_fps=C, buffer_frames=1_000))
    run = StreamRun(port=0, stream_id=1, rx_port=1, pps=O, pkt_len=60, t0=T0, length=0.002)
    ledger.add([run])
    assert [(p.ratio, p.queueing) for p in run.pieces] == [(1.0, True), (0.5, False)]
    assert all(p.congested for p in run.pieces)
    bare = Ledger(DutModel(capacity_fps=C))
    run0 = StreamRun(port=0, stream_id=1, rx_port=1, pps=C / 2, pkt_len=60, t0=T0, length=0.002)
    bare.add([run0])
    assert [(p.ratio, p.queueing) for p in run0.pieces] == [(1.0, False)]
