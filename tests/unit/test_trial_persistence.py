"""Nothing measured is lost: a trial is on disk before the next one starts, even if the
process is killed (DESIGN.md principle 4)."""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from vsbench.interfaces import GeneratorCapabilities, PluginContext, TrafficGenerator, TrialResult
from vsbench.results.model import TrialIdentity
from vsbench.results.trial_log import TrialLog, read_trials
from vsbench.measurement.trial_runner import TrialRunner, TrialSink
from vsbench.system.resources import ResourceStack


class CountingGenerator(TrafficGenerator):
    """Before each trial, looks at trials.jsonl the way a reader in another process would."""

    def __init__(self, context, log_path: Path):
        super().__init__(context)
        self.log_path = log_path
        self.lines_seen: list[int] = []

    def capabilities(self):
        return GeneratorCapabilities(ports=2)

    def start(self): ...

    def configure(self, profile, ports): ...

    def run_trial(self, load_fps, duration_s, *, latency=False):
        text = self.log_path.read_bytes() if self.log_path.exists() else b""
        self.lines_seen.append(text.count(b"\n"))
        tx = int(load_fps * duration_s)
        return TrialResult(load_fps, duration_s, 64, tx, tx - 1)


def _context(tmp_path):
    return PluginContext(run_id="abcdef", settings={}, log_dir=tmp_path, resources=ResourceStack())


def test_each_trial_is_on_disk_before_the_next_starts(tmp_path):
    path = tmp_path / "trials.jsonl"
    gen = CountingGenerator(_context(tmp_path), path)
    seen = []
    with TrialLog(path) as log:
        sink = TrialSink(log, [lambda rec: seen.append(rec.trial_index)])
        runner = TrialRunner(gen, sink, TrialIdentity("abcdef", 0, "t"))
        trial = runner.trial_fn()
        for load in (1000.0, 2000.0, 3000.0):
            trial(load, 1.0)
    assert gen.lines_seen == [0, 1, 2]
    assert seen == [0, 1, 2]
    assert [r.intended_load_fps for r in (rec.result for rec in read_trials(path))] == [1000.0, 2000.0, 3000.0]


def test_the_search_sees_the_validity_checked_result(tmp_path):
    class ShortGenerator(CountingGenerator):
        def run_trial(self, load_fps, duration_s, *, latency=False):
            return TrialResult(load_fps, duration_s, 64, 10, 10)

    gen = ShortGenerator(_context(tmp_path), tmp_path / "x")
    with TrialLog(tmp_path / "trials.jsonl") as log:
        runner = TrialRunner(gen, TrialSink(log), TrialIdentity("abcdef", 0, "t"))
        result = runner.trial_fn()(1000.0, 1.0)
        assert not result.valid and result.invalid_reason.startswith("generator-limited")
        assert runner.record_of(result).trial_index == 0
        assert result.effective_duration_s is not None  # wall time filled in
    [rec] = read_trials(tmp_path / "trials.jsonl")
    assert rec.invalid_reasons[0].startswith("generator-limited")


def test_trial_indices_are_unique_across_plans_of_a_run(tmp_path):
    gen = CountingGenerator(_context(tmp_path), tmp_path / "x")
    with TrialLog(tmp_path / "trials.jsonl") as log:
        sink = TrialSink(log)
        a = TrialRunner(gen, sink, TrialIdentity("abcdef", 0, "a"))
        b = TrialRunner(gen, sink, TrialIdentity("abcdef", 1, "b"))
        a.run(1.0, 1.0, role="warmup")
        b.run(1.0, 1.0, role="search")
        a.run(1.0, 1.0, role="final", latency=True)
    recs = read_trials(tmp_path / "trials.jsonl")
    assert [(r.trial_index, r.identity.plan_index, r.role) for r in recs] == [
        (0, 0, "warmup"), (1, 1, "search"), (2, 0, "final")]
    assert recs[2].latency_requested


CRASHING_RUN = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    from vsbench.interfaces import GeneratorCapabilities, PluginContext, TrafficGenerator, TrialResult
    from vsbench.results.model import TrialIdentity
    from vsbench.results.trial_log import TrialLog
    from vsbench.measurement.trial_runner import TrialRunner, TrialSink
    from vsbench.system.resources import ResourceStack

    class Gen(TrafficGenerator):
        calls = 0
        def capabilities(self): return GeneratorCapabilities(ports=2)
        def start(self): ...
        def configure(self, profile, ports): ...
        def run_trial(self, load_fps, duration_s, *, latency=False):
            Gen.calls += 1
            if Gen.calls == 4:
                os.kill(os.getpid(), signal.SIGKILL)  # dies in the middle of trial 4
            return TrialResult(load_fps, duration_s, 64, int(load_fps), int(load_fps))

    path = Path(sys.argv[1])
    gen = Gen(PluginContext("abcdef", {}, path.parent, ResourceStack()))
    runner = TrialRunner(gen, TrialSink(TrialLog(path)), TrialIdentity("abcdef", 0, "t"))
    for load in range(1, 10):
        runner.run(load * 1000.0, 1.0, role="search")
    """
)


def test_a_killed_run_keeps_every_finished_trial(tmp_path):
    path = tmp_path / "trials.jsonl"
    proc = subprocess.run([sys.executable, "-c", CRASHING_RUN, str(path)], capture_output=True, timeout=60)
    assert proc.returncode == -9, proc.stderr.decode()
    recs = read_trials(path)
    assert [r.result.intended_load_fps for r in recs] == [1000.0, 2000.0, 3000.0]


def test_a_torn_last_line_is_skipped_but_earlier_lines_are_kept(tmp_path, caplog):
    path = tmp_path / "trials.jsonl"
    gen = CountingGenerator(_context(tmp_path), tmp_path / "x")
    with TrialLog(path) as log:
        TrialRunner(gen, TrialSink(log), TrialIdentity("abcdef", 0, "t")).run(1000.0, 1.0, role="search")
    with open(path, "ab") as f:
        f.write(b'{"schema": "vsbench.trial/1", "run_id": "abc')  # kill -9 mid-write
    assert len(read_trials(path)) == 1
    assert "partial last line" in caplog.text


def test_a_corrupt_line_in_the_middle_is_an_error(tmp_path):
    path = tmp_path / "trials.jsonl"
    path.write_text("{not json}\n{}\n")
    with pytest.raises(ValueError, match=":1: not a JSON line"):
        read_trials(path)
