"""Back-to-back frames (RFC 2544 26.4 / RFC 9004): the burst-length search and the buffer-time
arithmetic against hand-computed cases, and the figures rebuilt from trial records."""

import math

import pytest

from vsbench.interfaces.traffic import TrialResult
from vsbench.measurement import back2back as b2b
from vsbench.results import summary
from vsbench.results.model import TrialIdentity, TrialRecord


def buffer_dut(capacity_frames):
    """A DUT that loses frames once a burst exceeds its buffer; counts the bursts it saw."""
    seen = []

    def passes(frames):
        seen.append(frames)
        return frames <= capacity_frames

    return passes, seen


def test_search_finds_the_buffer_exactly_at_resolution_one():
    passes, seen = buffer_dut(300)
    out = b2b.search_burst_length(passes, max_frames=1000, min_frames=1, resolution_frames=1)
    assert out.frames == 300 and out.bounded
    assert seen[:2] == [1000, 1]  # the longest first (RFC 2544), then the shortest
    assert (300, True) in out.tried and (301, False) in out.tried
    assert len(seen) <= b2b.search_trial_count(1000, 1, 1)


@pytest.mark.parametrize("capacity", [17, 250, 999, 5000 - 1])
def test_search_stops_within_the_resolution_below_the_buffer(capacity):
    passes, _ = buffer_dut(capacity)
    out = b2b.search_burst_length(passes, max_frames=5000, min_frames=10, resolution_frames=50)
    assert capacity - 50 <= out.frames <= capacity


def test_search_unbounded_when_the_longest_burst_passes():
    passes, seen = buffer_dut(10**9)
    out = b2b.search_burst_length(passes, max_frames=2000, resolution_frames=10)
    assert out == b2b.BurstLengthSearch(2000, False, ((2000, True),))
    assert seen == [2000]


def test_search_reports_zero_when_even_the_shortest_loses():
    passes, _ = buffer_dut(5)
    out = b2b.search_burst_length(passes, max_frames=2000, min_frames=100, resolution_frames=10)
    assert out.frames == 0 and out.bounded
    assert out.tried == ((2000, False), (100, False))


def test_search_rejects_bad_settings():
    with pytest.raises(b2b.Back2BackError):
        b2b.search_burst_length(lambda n: True, max_frames=10, min_frames=20)
    with pytest.raises(b2b.Back2BackError):
        b2b.search_burst_length(lambda n: True, max_frames=10, resolution_frames=0)


def test_frame_stats_hand_computed():
    s = b2b.frame_stats([10, 20, 30])
    assert (s.avg, s.min, s.max, s.count) == (20.0, 10, 30, 3)
    assert s.stdev == pytest.approx(10.0)  # sample stdev: sqrt((100 + 0 + 100) / 2)
    one = b2b.frame_stats([7])
    assert one.avg == 7.0 and one.stdev is None
    assert b2b.frame_stats([]).avg is None


def test_buffer_times_hand_computed():
    # 1000 frames at 1 Mfps: 1 ms implied; the DUT forwarded 400 kfps x 1 ms = 400 frames
    # during the burst, so 600 frames were buffered: 0.6 ms at 1 Mfps.
    assert b2b.implied_buffer_time_s(1000, 1e6) == pytest.approx(1e-3)
    assert b2b.corrected_buffer_time_s(1000, 1e6, 4e5) == pytest.approx(0.6e-3)
    # 14880 frames of 64 B at 10GbE line rate (14.88 Mfps): 1 ms; throughput half line rate
    assert b2b.corrected_buffer_time_s(14880, 14.88e6, 7.44e6) == pytest.approx(0.5e-3)
    assert b2b.corrected_buffer_time_s(1000, 1e6, 1e6) is None  # no buffer needed at T = R
    assert b2b.corrected_buffer_time_s(1000, 1e6, 0) is None
    with pytest.raises(b2b.Back2BackError):
        b2b.implied_buffer_time_s(1000, 0)


def test_at_line_rate():
    assert b2b.at_line_rate(14.8e6, 14.88e6) is True
    assert b2b.at_line_rate(1e6, 14.88e6) is False
    assert b2b.at_line_rate(None, 14.88e6) is None


def burst_record(index, frames, rx, send_time_s=0.001, valid=True):
    rate = frames / send_time_s
    result = TrialResult(intended_load_fps=rate, intended_duration_s=frames / rate, frame_size_bytes=64,
                         tx_frames=frames, rx_frames=rx, tx_duration_s=send_time_s, valid=valid,
                         burst_frames=frames)
    return TrialRecord(identity=TrialIdentity("abc123", 0, "t"), trial_index=index, role="search",
                       started_at="2026-01-01T00:00:00.000+00:00", latency_requested=False, result=result)


def test_back2back_frames_from_records_is_the_longest_all_clean_length():
    recs = [burst_record(0, 1000, 900), burst_record(1, 500, 500), burst_record(2, 750, 749),
            burst_record(3, 625, 625), burst_record(4, 625, 625)]
    assert summary.back2back_frames(recs) == 625
    # a length is clean only if every trial of it was
    assert summary.back2back_frames([burst_record(0, 625, 625), burst_record(1, 625, 600)]) == 0
    assert summary.back2back_frames([burst_record(0, 625, 625, valid=False)]) == 0


def test_back2back_result_from_two_repetitions():
    rep1 = [burst_record(0, 1000, 900, 0.002), burst_record(1, 500, 500, 0.001)]   # 500 frames
    rep2 = [burst_record(2, 1000, 990, 0.002), burst_record(3, 700, 700, 0.0014)]  # 700 frames
    res = summary.back2back_result(
        repetitions=[rep1, rep2], trials_per_length=1, max_frames=1000, resolution_frames=100,
        nominal_line_rate_fps=1e6, max_rate_source="achieved_burst_rate", throughput_fps=250e3,
        throughput_source="config")
    assert res.frames_avg == 600.0 and (res.frames_min, res.frames_max) == (500, 700)
    assert [r.frames for r in res.repetitions] == [500, 700]
    assert [r.trial_indices for r in res.repetitions] == [[0, 1], [2, 3]]
    # every burst went out at 500 kfps: total frames / total send time
    assert res.burst_rate_fps == pytest.approx(500e3)
    assert res.bursts_at_line_rate is False and res.bounded
    assert res.implied_buffer_time_s == pytest.approx(600 / 500e3)
    assert res.corrected_buffer_time_s == pytest.approx((600 - 600 / 500e3 * 250e3) / 500e3)
    nominal = summary.back2back_result(
        repetitions=[rep1, rep2], trials_per_length=1, max_frames=1000, resolution_frames=100,
        nominal_line_rate_fps=1e6, max_rate_source="nominal_line_rate", throughput_fps=None,
        throughput_source=None)
    assert nominal.max_rate_fps == 1e6 and nominal.implied_buffer_time_s == pytest.approx(600e-6)
    assert nominal.corrected_buffer_time_s is None


def test_back2back_result_unbounded_gives_no_buffer_time():
    rep = [burst_record(0, 1000, 1000)]
    res = summary.back2back_result(
        repetitions=[rep], trials_per_length=1, max_frames=1000, resolution_frames=10,
        nominal_line_rate_fps=1e6, max_rate_source="achieved_burst_rate", throughput_fps=1e5,
        throughput_source="config")
    assert res.frames_avg == 1000 and res.bounded is False
    assert res.implied_buffer_time_s is None and res.corrected_buffer_time_s is None


def test_burst_point_and_trial_json_round_trip():
    rec = burst_record(3, 2000, 1990, 0.004)
    point = summary.burst_point(rec)
    assert (point.burst_frames, point.lost_frames, point.trial_index) == (2000, 10, 3)
    assert point.burst_rate_fps == pytest.approx(500e3) and math.isclose(point.loss_ratio, 0.005)
    doc = rec.to_json()
    assert doc["burst_frames"] == 2000
    assert TrialRecord.from_json(doc).result.burst_frames == 2000
    plain = burst_record(4, 10, 10)
    plain = TrialRecord(**{**plain.__dict__, "result": TrialResult(1.0, 1.0, 64, 1, 1)})
    assert "burst_frames" not in plain.to_json()
