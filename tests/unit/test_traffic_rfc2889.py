"""The RFC 2889 traffic types through the runner's trial path, on an in-process model:
a generator whose "switch" forwards at most ``capacity_fps``, holds ``table_size``
addresses and learns at most ``learn_fps`` new addresses per second. The figures written
to the result (and to results.json/CSV through the writers) must be the model's."""

from __future__ import annotations

import json

import pytest

from vsbench.interfaces.traffic import GeneratorCapabilities, GeneratorPort, TrafficProfile, TrialResult
from vsbench.interfaces.trafficgen import TrafficGenerator
from vsbench.measurement.trial_runner import TrialRunner, TrialSink
from vsbench.results import schema, writers
from vsbench.results.model import FrameSizeResult, RunResults, TestResult, TrialIdentity
from vsbench.results.trial_log import TrialLog
from vsbench.runner import traffic_job, traffic_rfc2889, traffic_types


class LearningModel(TrafficGenerator):
    name = "learning-model"
    supports_bursts = True

    def __init__(self, capacity_fps=3e5, table_size=300, learn_fps=40_000.0):
        self.capacity_fps, self.table_size, self.learn_fps = capacity_fps, table_size, learn_fps
        self.table: set[int] = set()
        self.profile: TrafficProfile | None = None

    def capabilities(self):
        return GeneratorCapabilities(ports=3, max_rate_fps=1e6, port_streams=True, monitor_ports=True)

    def start(self):
        pass

    def configure(self, profile, ports):
        self.profile = profile

    def flush(self):
        self.table.clear()

    def run_trial(self, load_fps, duration_s, *, latency=False):
        sent = int(round(load_fps * duration_s))
        rx = sent if load_fps <= self.capacity_fps else int(self.capacity_fps * duration_s)
        return TrialResult(load_fps, duration_s, 64, sent, rx, tx_duration_s=duration_s)

    def run_burst(self, frames, *, rate_fps=None, latency=False):
        stream = self.profile.streams[0]
        if "src_mac" in stream.fields.vary:  # learning frames: learn what the rate and table allow
            learnable = frames if rate_fps <= self.learn_fps else int(frames * self.learn_fps / rate_fps)
            for a in range(learnable):
                if len(self.table) < self.table_size:
                    self.table.add(a)
            flooded = 0
        else:  # test frames: an unknown destination is flooded (reaches the monitor too)
            flooded = sum(1 for a in range(frames) if a not in self.table)
        return TrialResult(rate_fps, frames / rate_fps, 64, frames, frames, tx_duration_s=frames / rate_fps,
                           burst_frames=frames, rx_monitor_frames=flooded)


class Topology:
    """What the traffic types ask the deployment for."""

    def __init__(self, gen):
        self.gen = gen
        self.flushes = 0
        self.test_mac = "02:00:00:00:00:aa"

    def flush_learned(self):
        self.flushes += 1
        self.gen.flush()


def job_for(tmp_path, kind, rfc2889, gen=None):
    gen = gen or LearningModel()
    trials = TrialRunner(gen, TrialSink(TrialLog(tmp_path / "trials.jsonl")), TrialIdentity("abc123", 0, "t"))
    trials.frame_size_bytes = 64
    config = {"test": {"deployment": "p2p" if kind == "rfc2889_forwarding" else "p2p_learning"},
              "traffic": {"type": kind, "warmup_s": 0, "trial_duration_s": 0.5, "rfc2889": rfc2889},
              "search": {"max_load_fps": 5e5}, "latency": {"enabled": False}}
    ports = tuple(GeneratorPort(index=i, iface=f"p{i}") for i in range(3))
    return traffic_job.FrameSizeJob(config=config, profile=TrafficProfile(frame_size_bytes=64), generator=gen,
                                    capabilities=gen.capabilities(), trials=trials, nominal_line_rate_fps=1.488e7,
                                    result=FrameSizeResult(64), ports=ports, deployment=Topology(gen))


def test_forwarding_reports_frmol_and_mfr(tmp_path):
    job = job_for(tmp_path, "rfc2889_forwarding", {"load_percents": [20, 40, 60, 80, 100]})
    fs = traffic_types.TRAFFIC_TYPES["rfc2889_forwarding"](job)
    r = fs.rfc2889
    assert r.test == "forwarding" and [s.offered_load_fps for s in r.steps] == pytest.approx([1e5, 2e5, 3e5, 4e5, 5e5])
    assert r.forwarding_rate_fps == pytest.approx(3e5) and r.max_offered_load_fps == pytest.approx(5e5)
    assert r.max_forwarding_rate_fps == pytest.approx(3e5) and r.max_forwarding_rate_offered_fps == pytest.approx(3e5)
    assert [p.name for p in fs.points] == ["FRMOL", "MFR"] and fs.status == "complete"
    row = writers.csv_row("abc123", TestResult(0, "t", "x", traffic_type="rfc2889_forwarding"), fs)
    assert float(row["forwarding_rate_fps"]) == pytest.approx(3e5) and float(row["max_forwarding_rate_fps"]) == pytest.approx(3e5)


def test_caching_finds_the_table_size(tmp_path):
    job = job_for(tmp_path, "rfc2889_caching", {"min_addresses": 16, "max_addresses": 1024, "resolution_addresses": 1,
                                                 "learning_rate_fps": 1000.0, "test_rate_fps": 1000.0, "settle_s": 0})
    fs = traffic_types.TRAFFIC_TYPES["rfc2889_caching"](job)
    r = fs.rfc2889
    assert r.caching_capacity_addresses == 300 and r.bounded
    assert r.first_fail_addresses == 301 and r.flooded_frames == 1
    assert job.deployment.flushes == len(r.iterations)  # every iteration starts from an empty table
    roles = [rec.role for rec in job.trials.records]
    assert roles == ["learning", "search"] * len(r.iterations)
    row = writers.csv_row("abc123", TestResult(0, "t", "x", traffic_type="rfc2889_caching"), fs)
    assert row["caching_capacity_addresses"] == "300" and row["flooded_frames"] == "1"
    assert "address caching capacity 300 addresses" in traffic_rfc2889.line(fs)


def test_learning_finds_the_learning_rate(tmp_path):
    job = job_for(tmp_path, "rfc2889_learning", {"addresses": 200, "min_learning_rate_fps": 1000.0,
                                                  "max_learning_rate_fps": 200_000.0, "resolution_fps": 500.0,
                                                  "test_rate_fps": 1000.0, "settle_s": 0})
    fs = traffic_types.TRAFFIC_TYPES["rfc2889_learning"](job)
    r = fs.rfc2889
    assert 39_500 <= r.learning_rate_addresses_per_s <= 40_000 and r.bounded
    assert r.first_fail_rate_fps > r.learning_rate_addresses_per_s and r.flooded_frames > 0
    assert "addresses/s" in traffic_rfc2889.line(fs)


def test_learning_above_range_is_a_lower_bound_with_a_note(tmp_path):
    job = job_for(tmp_path, "rfc2889_learning", {"addresses": 100, "max_learning_rate_fps": 20_000.0, "settle_s": 0},
                  gen=LearningModel(learn_fps=1e9))
    fs = traffic_types.TRAFFIC_TYPES["rfc2889_learning"](job)
    assert fs.rfc2889.learning_rate_addresses_per_s == 20_000.0 and fs.rfc2889.bounded is False
    assert any("lower bound" in n for n in fs.notes) and len(fs.rfc2889.iterations) == 1


def test_results_json_of_each_type_matches_its_schema(tmp_path):
    for kind, settings in (("rfc2889_forwarding", {"load_percents": [50, 100]}),
                           ("rfc2889_caching", {"min_addresses": 16, "max_addresses": 64, "settle_s": 0}),
                           ("rfc2889_learning", {"addresses": 50, "max_learning_rate_fps": 10_000.0, "settle_s": 0})):
        sub = tmp_path / kind
        sub.mkdir()
        fs = traffic_types.TRAFFIC_TYPES[kind](job_for(sub, kind, settings))
        test = TestResult(plan_index=0, label="t", testcase="x", traffic_type=kind, frame_sizes=[fs], status="complete")
        doc = RunResults(run_id="abc123", started_at="2026-01-01T00:00:00Z", vsbench_version="0", tests=[test]).to_json()
        schema.validate(doc, "results.schema.json")
        again = RunResults.from_json(json.loads(json.dumps(doc)))
        assert again.tests[0].frame_sizes[0].rfc2889 == fs.rfc2889


@pytest.mark.parametrize("config, message", [
    ({"test": {"deployment": "p2p"}, "traffic": {"type": "rfc2889_caching"}}, "runs on deployment p2p_learning"),
    ({"test": {"deployment": "p2p_learning"}, "traffic": {"type": "rfc2889_forwarding"}}, "not on p2p_learning"),
    ({"test": {"deployment": "p2p_learning"}, "traffic": {"type": "rfc2889_caching",
                                                           "rfc2889": {"min_addresses": 9, "max_addresses": 8}}},
     "is above max_addresses"),
    ({"test": {"deployment": "p2p"}, "traffic": {"type": "rfc2889_forwarding", "rfc2889": {"load_percents": [120]}}},
     "must lie in (0, 100]"),
])
def test_settings_refused_in_one_line(config, message):
    with pytest.raises(traffic_job.TrafficTypeError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[").replace("]", r"\]")):
        traffic_rfc2889.check_plan(config)


def test_trafgen_counts_monitor_ports_only_where_no_stream_goes():
    """A monitor port must be a given port no stream sends from or arrives at, on a plain
    streams profile (the counter tells a stream's frames apart only there)."""
    from vsbench.interfaces.plugin import PluginError
    from vsbench.measurement import rfc2889_profiles as phases
    from vsbench_plugins.trafficgen.trafgen.plugin import Trafgen

    ports = [GeneratorPort(index=i, iface=f"p{i}") for i in range(3)]
    base = TrafficProfile(frame_size_bytes=64)
    learning = phases.learning_profile(base, 10, "02:00:00:00:00:aa")
    assert learning.streams[0].tx_port == 1 and learning.streams[0].fields.vary == ("src_mac",)
    assert Trafgen._monitor_ifaces(learning, ports) == ("p2",)
    test = phases.test_profile(base, 10, None)
    assert test.streams[0].fields.dst_mac == "02:28:89:00:00:00" and test.streams[0].fields.vary == ("dst_mac",)
    import dataclasses
    with pytest.raises(PluginError, match="no stream uses"):
        Trafgen._monitor_ifaces(dataclasses.replace(test, monitor_ports=(1,)), ports)
    with pytest.raises(PluginError, match="plain port-to-port streams"):
        Trafgen._monitor_ifaces(dataclasses.replace(base, monitor_ports=(2,)), ports)
    assert Trafgen._monitor_ifaces(base, ports) == ()


@pytest.mark.parametrize("kind, settings, figure", [
    ("rfc2889_forwarding", {"load_percents": [50, 100]}, "max_forwarding_rate_fps"),
    ("rfc2889_caching", {"min_addresses": 16, "max_addresses": 512, "settle_s": 0}, "caching_capacity_addresses"),
    ("rfc2889_learning", {"addresses": 100, "max_learning_rate_fps": 100_000.0, "settle_s": 0},
     "learning_rate_addresses_per_s"),
])
def test_every_figure_recomputes_from_the_trials_and_a_changed_one_does_not(tmp_path, kind, settings, figure):
    from vsbench.results import recompute_rfc2889
    from vsbench.results.trial_log import read_trials

    job = job_for(tmp_path, kind, settings)
    fs = traffic_types.TRAFFIC_TYPES[kind](job)
    test = TestResult(plan_index=0, label="t", testcase="x", traffic_type=kind, frame_sizes=[fs], status="complete")
    doc = RunResults(run_id="abc123", started_at="2026-01-01T00:00:00Z", vsbench_version="0", tests=[test]).to_json()
    fs_doc = doc["tests"][0]["frame_sizes"][0]
    trials = {rec.trial_index: rec for rec in read_trials(tmp_path / "trials.jsonl")}
    assert recompute_rfc2889.verify(fs_doc, lambda i, what: trials.get(i), "t") == []
    fs_doc["rfc2889"][figure] = (fs_doc["rfc2889"][figure] or 0) + 1
    [problem] = recompute_rfc2889.verify(fs_doc, lambda i, what: trials.get(i), "t")
    assert figure in problem


def test_learning_rate_above_which_only_the_generator_failed_is_a_lower_bound(tmp_path):
    """Learning bursts the generator cannot pace (invalid) are not the device failing: the
    figure below them is a lower bound, with a note saying the generator limited it."""

    class Limited(LearningModel):
        def run_burst(self, frames, *, rate_fps=None, latency=False):
            import dataclasses
            result = super().run_burst(frames, rate_fps=rate_fps, latency=latency)
            if rate_fps > 50_000:
                return dataclasses.replace(result, valid=False, invalid_reason="generator too slow")
            return result

    job = job_for(tmp_path, "rfc2889_learning", {"addresses": 100, "max_learning_rate_fps": 200_000.0, "settle_s": 0},
                  gen=Limited(learn_fps=1e9))
    fs = traffic_types.TRAFFIC_TYPES["rfc2889_learning"](job)
    r = fs.rfc2889
    assert 45_000 <= r.learning_rate_addresses_per_s <= 50_000 and r.bounded is False and r.first_fail_rate_fps is None
    assert any("generator-limited" in n for n in fs.notes)
