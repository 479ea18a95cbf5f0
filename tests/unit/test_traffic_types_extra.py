"""back2back, burst and load_sweep through the runner's trial path, on an in-process DUT model
(a buffer of known size drained at a known rate), and their settings checks."""

import pytest

from vsbench.interfaces.traffic import GeneratorCapabilities, TrafficProfile, TrialResult
from vsbench.interfaces.trafficgen import TrafficGenerator
from vsbench.measurement.trial_runner import TrialRunner, TrialSink
from vsbench.results import summary
from vsbench.results.model import FrameSizeResult, TrialIdentity
from vsbench.results.trial_log import TrialLog
from vsbench.runner import traffic_types
from vsbench.runner.plugins import load


class BufferModel(TrafficGenerator):
    """Bursts arrive at ``burst_fps``; the DUT forwards ``service_fps`` and holds ``buffer``
    frames: a burst of B loses max(0, B x (1 - service/burst) - buffer) frames."""

    name = "buffer-model"
    supports_bursts = True
    burst_fps, service_fps, buffer = 1e6, 2.5e5, 3000

    def __init__(self):  # no plugin context needed in-process
        pass

    def capabilities(self):
        return GeneratorCapabilities(ports=2, max_rate_fps=1e6)

    def start(self):
        pass

    def configure(self, profile, ports):
        pass

    def run_trial(self, load_fps, duration_s, *, latency=False):
        sent = int(round(load_fps * duration_s))
        rx = sent if load_fps <= self.service_fps else int(self.service_fps * duration_s)
        return TrialResult(load_fps, duration_s, 64, sent, rx, tx_duration_s=duration_s)

    def run_burst(self, frames, *, rate_fps=None, latency=False):
        rate = rate_fps or self.burst_fps
        lost = max(0, int(frames * (1 - self.service_fps / rate)) - self.buffer)
        return TrialResult(rate, frames / rate, 64, frames, frames - lost, tx_duration_s=frames / rate,
                           burst_frames=frames)


def job_for(tmp_path, traffic, search=None):
    gen = BufferModel()
    sink = TrialSink(TrialLog(tmp_path / "trials.jsonl"))
    trials = TrialRunner(gen, sink, TrialIdentity("abc123", 0, "t"))
    profile = TrafficProfile(frame_size_bytes=64, bidirectional=False)
    config = {"traffic": {"warmup_s": 0, **traffic}, "search": search or {}, "latency": {"enabled": False}}
    return traffic_types.FrameSizeJob(config=config, profile=profile, generator=gen,
                                      capabilities=gen.capabilities(), trials=trials,
                                      nominal_line_rate_fps=14880952.38, result=FrameSizeResult(64))


def test_back2back_finds_the_model_buffer_and_its_buffer_times(tmp_path):
    job = job_for(tmp_path, {"type": "back2back", "b2b_max_frames": 20000, "b2b_resolution_frames": 10,
                             "b2b_repetitions": 2, "b2b_trials": 2, "b2b_throughput_fps": 2.5e5})
    fs = traffic_types.TRAFFIC_TYPES["back2back"](job)
    b = fs.back2back
    # B x 0.75 <= 3000  <=>  B <= 4000 frames
    assert 3990 <= b.frames_avg <= 4000 and b.bounded
    assert b.max_rate_source == "achieved_burst_rate" and b.burst_rate_fps == pytest.approx(1e6)
    assert b.implied_buffer_time_s == pytest.approx(b.frames_avg / 1e6)
    # the corrected time is the 3000-frame buffer at 1 Mfps: 3 ms
    assert b.corrected_buffer_time_s == pytest.approx(3e-3, rel=0.01)
    assert b.bursts_at_line_rate is False and fs.status == "complete"
    assert any("RFC 9004 asks for at least 50" in n for n in fs.notes)
    assert len(fs.bursts) == fs.trial_count and all(r.result.burst_frames for r in job.trials.records)


def test_back2back_measures_throughput_first_when_asked(tmp_path):
    job = job_for(tmp_path, {"type": "back2back", "b2b_max_frames": 20000, "b2b_resolution_frames": 100,
                             "b2b_measure_throughput": True, "trial_duration_s": 1},
                  search={"mode": "binary", "min_load_fps": 1000, "relative_width": 0.01})
    fs = traffic_types.TRAFFIC_TYPES["back2back"](job)
    b = fs.back2back
    assert b.throughput_source == "search:NDR" and b.throughput_fps == pytest.approx(2.5e5, rel=0.02)
    assert b.corrected_buffer_time_s == pytest.approx(3e-3, rel=0.05)


def test_burst_reports_the_worst_burst(tmp_path):
    job = job_for(tmp_path, {"type": "burst", "burst_frames": 8000, "burst_count": 2})
    fs = traffic_types.TRAFFIC_TYPES["burst"](job)
    assert [b.lost_frames for b in fs.bursts] == [3000, 3000]
    point = fs.primary
    assert point.name == "burst" and point.trial_index == fs.bursts[0].trial_index
    assert point.loss_ratio == pytest.approx(3000 / 8000)


def test_load_sweep_steps_and_points(tmp_path):
    job = job_for(tmp_path, {"type": "load_sweep", "sweep_max_percent": 40, "trial_duration_s": 0.5},
                  search={"max_load_fps": 1e6})
    fs = traffic_types.TRAFFIC_TYPES["load_sweep"](job)
    assert len(fs.sweep) == 10 + 9 + 39 and fs.sweep_reference_fps == 1e6
    assert fs.sweep[-1].offered_load_fps == pytest.approx(4e5)
    names = {p.name: p for p in fs.points}
    assert names[summary.SWEEP_ZERO_LOSS].offered_load_fps == pytest.approx(2.5e5)
    assert names[summary.SWEEP_MAX_RX].rx_fps == pytest.approx(2.5e5)


@pytest.mark.parametrize("traffic, message", [
    ({"type": "burst"}, "needs traffic.burst_frames"),
    ({"type": "load_sweep", "sweep_max_percent": 0.001}, "sweep_max_percent"),
    ({"type": "back2back", "b2b_max_rate": "fast"}, "b2b_max_rate"),
    ({"type": "back2back", "b2b_max_frames": 10, "b2b_min_frames": 20}, "above b2b_max_frames"),
])
def test_check_refuses_in_one_line(traffic, message):
    with pytest.raises(traffic_types.TrafficTypeError, match=message) as info:
        traffic_types.check(traffic)
    assert "\n" not in str(info.value)


def test_generators_without_bursts_are_refused():
    class NoBursts(TrafficGenerator):
        name = "plain"

    with pytest.raises(traffic_types.TrafficTypeError,
                       match=r"trafficgen plain cannot .*generators that do: .*trafgen.*trex"):
        traffic_types.check_generator({"type": "back2back"}, NoBursts)
    traffic_types.check_generator({"type": "continuous"}, NoBursts)
    traffic_types.check_generator({"type": "burst"}, load("trafficgen", "trafgen"))
