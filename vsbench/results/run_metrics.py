"""The comparable figures of one run, flat: per test x frame size x metric, with their spread.

Comparisons, thresholds, JUnit, the results store and the trend page all speak this one
model, built by :func:`extract` from a run's parsed files (or read back from the store), so
a metric means the same thing everywhere. Pure: no file is read here.

Metric names carry their unit, as everywhere in vsbench:

* ``<goal>_fps`` -- the reported throughput of each search goal (``ndr_fps``, ``pdr_fps``),
  or ``continuous_fps`` (received rate of a fixed-rate test), aggregate over directions;
* ``<goal>_fps_per_core`` -- frames/s per core the switch consumed at that point's trial;
* ``<goal>_switched_fps`` -- the throughput x the deployment's switching operations, where
  results.json carries it (ONP 2.1 section 5.2, comparable across p2p/pvp/pvvp);
* ``latency_{min,avg,p50,p99,max}_ns`` -- one-way latency of the primary goal's latency
  trial (NDR by default);
* ``b2b_frames_avg`` -- back-to-back frames (RFC 9004);
* ``tcp_gbps``, ``tcp_cores_per_gbps``, ``tcp_retransmits``, ``tcp_rtt_mean_us`` -- a TCP
  workload's goodput, the CPU (endpoints and switch) per Gbit/s, the retransmitted
  segments and the connections' mean round-trip time (traffic type ``tcp``; each run of
  ``tcp.repetitions`` a sample).

Repeats of one test (``--repeat K``; equal labels) become the samples of one
:class:`MetricValue`, whose value is their median. A single measurement carries its own
interval where one exists: the search's bounds of a throughput, or a 95 % interval over
the probes of a latency trial.

A figure a test should have had but did not (a skipped or failed frame size, a search that
found no NDR) is a :class:`Gap` of its :class:`TestInfo`, one per repeat, with the reason
results.json gives: tables show that reason instead of an empty cell.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from vsbench.results.model import TrialRecord
from vsbench.results.significance import Interval, mean_interval, quantile_interval

#: Metric name suffix -> (unit, higher is better).
LATENCY_METRICS = ("latency_min_ns", "latency_avg_ns", "latency_p50_ns", "latency_p99_ns", "latency_max_ns")

#: What a test is, beside its figures: shown where compared runs differ. Fields a newer
#: results.json adds (topology, VNFs) are picked up when present. ``variant`` (the plan's
#: matrix values) places a test on a scaling curve (:mod:`vsbench.results.compare_scaling`).
TEST_FIELDS = ("testcase", "variant", "deployment", "topology", "switching_operations", "vswitch", "trafficgen",
               "vnf", "vnfs", "traffic_type", "flows", "bidirectional", "link_gbps", "cpu_oversubscribed")


#: (name suffix, unit, higher is better), most specific first: ``_fps_per_core`` before ``_fps``.
METRIC_UNITS: tuple[tuple[str, str, bool], ...] = (
    ("_fps_per_core", "fps/core", True),
    ("_cores_per_gbps", "cores/(Gbit/s)", False),
    ("_gbps", "Gbit/s", True),
    ("_retransmits", "segments", False),
    ("_us", "us", False),
    ("_ns", "ns", False),
    ("_fps", "fps", True),
    ("_frames_avg", "frames", True),
)


#: The figures of a TCP workload and of a back-to-back test (no reported points).
TCP_METRICS = ("tcp_gbps", "tcp_cores_per_gbps", "tcp_retransmits", "tcp_rtt_mean_us")
B2B_METRICS = ("b2b_frames_avg",)


def point_metrics(point_name: Any) -> tuple[str, ...]:
    """The metrics a reported point named ``point_name`` (a search goal, ``continuous``,
    ...) can give: its throughput, switched throughput and throughput per core -- the names
    :func:`extract` gives them, for checking a gate's metric before a run
    (:mod:`vsbench.runner.gate_check`)."""
    slug = metric_slug(point_name)
    return f"{slug}_fps", f"{slug}_switched_fps", f"{slug}_fps_per_core"


def unit_of(metric: str) -> tuple[str, bool]:
    """(unit, higher is better) of a metric name, from its suffix."""
    for suffix, unit, higher_is_better in METRIC_UNITS:
        if metric.endswith(suffix):
            return unit, higher_is_better
    return "", True


@dataclass(frozen=True)
class MetricKey:
    """What a figure is: the test's label (testcase plus matrix variant), frame size, metric."""

    test: str
    frame_size_bytes: int
    metric: str

    @property
    def unit(self) -> str:
        return unit_of(self.metric)[0]

    @property
    def higher_is_better(self) -> bool:
        return unit_of(self.metric)[1]


@dataclass
class MetricValue:
    """One figure of a run, with everything needed to judge a change of it.

    ``samples`` holds one value per repeat (at least one); ``value`` is their median.
    ``interval`` is the uncertainty of a single measurement (search bounds, probe CI) and
    ``basis`` says what it is; ``flags`` say why the figure should be read with care
    (invalid trial, irregular search, generator-limited, frame size failed).
    """

    key: MetricKey
    samples: list[float]
    interval: Interval | None = None
    basis: str = ""
    flags: list[str] = field(default_factory=list)

    @property
    def unit(self) -> str:
        return self.key.unit

    @property
    def higher_is_better(self) -> bool:
        return self.key.higher_is_better

    @property
    def value(self) -> float:
        return float(statistics.median(self.samples))

    @property
    def spread(self) -> dict[str, float | int | None]:
        """n, min, max and coefficient of variation of the samples (CV None below 2)."""
        n = len(self.samples)
        mean = statistics.fmean(self.samples)
        cv = statistics.stdev(self.samples) / mean if n >= 2 and mean else None
        return {"n": n, "min": min(self.samples), "max": max(self.samples), "cv": cv}

    @property
    def uncertainty(self) -> Interval | None:
        """The interval a comparison uses: over the repeats when there are any, else the
        single measurement's own."""
        return mean_interval(self.samples) if len(self.samples) >= 2 else self.interval


#: A gap's metric when every figure of the frame size is missing (skipped, failed, not run).
ALL_METRICS = "*"


@dataclass(frozen=True)
class Gap:
    """Why one repeat of a test has no ``metric`` at ``frame_size_bytes``: ``kind`` is a
    word or two for a table cell (``skipped``, ``failed``, ``not run``, ``no NDR``) and
    ``reason`` the sentence results.json gives."""

    frame_size_bytes: int
    metric: str
    kind: str
    reason: str

    def covers(self, frame_size_bytes: int, metric: str) -> bool:
        """Whether this gap explains ``metric``: its own, every metric (``*``), or one
        derived from a missing throughput (``ndr_fps`` -> ``ndr_switched_fps``,
        ``ndr_fps_per_core``)."""
        if self.frame_size_bytes != frame_size_bytes:
            return False
        if self.metric in (metric, ALL_METRICS):
            return True
        return self.metric.endswith("_fps") and metric.startswith(self.metric[:-len("fps")])


@dataclass
class TestInfo:
    """One test of a run (repeats merged): its label, what ran, how often, and the figures
    that some repeat could not give (``gaps``, one per repeat and frame size)."""

    __test__ = False

    label: str
    repeats: int
    fields: dict[str, Any]
    statuses: list[str]
    gaps: list[Gap] = field(default_factory=list)

    def gaps_of(self, frame_size_bytes: int, metric: str) -> list[Gap]:
        """The repeats' reasons for lacking ``metric`` at that frame size."""
        return [g for g in self.gaps if g.covers(frame_size_bytes, metric)]


@dataclass
class RunMetrics:
    """A run (or several runs pooled as one side of a comparison), reduced to its figures."""

    run_ids: list[str]
    started_at: str | None
    status: str | None
    vsbench_version: str | None
    sut: dict[str, Any]
    tests: list[TestInfo]
    metrics: list[MetricValue]

    @property
    def name(self) -> str:
        return "+".join(self.run_ids)

    def by_key(self) -> dict[MetricKey, MetricValue]:
        return {m.key: m for m in self.metrics}

    def test(self, label: str) -> TestInfo | None:
        return next((t for t in self.tests if t.label == label), None)


# -- the system under test, flat ------------------------------------------------------------


def sut_fields(sysinfo: Mapping[str, Any] | None) -> dict[str, Any]:
    """The comparable facts of sysinfo.json as ``section.field`` -> value (plugin versions
    as ``plugin.<kind>.<name>.<component>``)."""
    if not sysinfo:
        return {}
    flat: dict[str, Any] = {}
    host = sysinfo.get("host") or {}
    cpu = sysinfo.get("cpu") or {}
    kernel = sysinfo.get("kernel") or {}
    flat["host.hostname"] = host.get("hostname")
    flat["host.os_release"] = host.get("os_release")
    for key in ("model", "architecture", "online_count", "threads_per_core", "isolated", "governor"):
        flat[f"cpu.{key}"] = cpu.get(key)
    flat["memory.total_bytes"] = (sysinfo.get("memory") or {}).get("total_bytes")
    flat["numa.nodes"] = len(sysinfo.get("numa") or [])
    for pool in sysinfo.get("hugepages") or []:
        if isinstance(pool, Mapping):
            flat[f"hugepages.{pool.get('size_bytes')}.total"] = pool.get("total")
    flat["kernel.release"] = kernel.get("release")
    flat["kernel.cmdline"] = kernel.get("cmdline")
    for key, value in (sysinfo.get("software") or {}).items():
        flat[f"software.{key}"] = value
    for plugin in sysinfo.get("plugins") or []:
        if not isinstance(plugin, Mapping):
            continue
        versions = plugin.get("versions") or {}
        prefix = f"plugin.{plugin.get('kind')}.{plugin.get('name')}"
        if isinstance(versions, Mapping):
            for component, version in versions.items():
                flat[f"{prefix}.{component}"] = version
    return {k: v for k, v in flat.items() if v is not None}


# -- extraction -------------------------------------------------------------------------------


def metric_slug(name: Any) -> str:
    return re.sub(r"[^a-z0-9]+", "_", str(name).lower()).strip("_") or "point"


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if np.isfinite(value) else None


def _point_flags(fs: Mapping[str, Any], point: Mapping[str, Any]) -> list[str]:
    flags = []
    if fs.get("status") not in (None, "complete"):
        flags.append(f"frame size {fs.get('status')}")
    if point.get("valid") is False:
        flags.append("invalid trial")
    if point.get("regular") is False:
        flags.append("irregular search result")
    if point.get("lower_bound_provisional"):
        flags.append("provisional lower bound")
    if point.get("sending_caveat"):
        flags.append(f"{point['sending_caveat']} trial")
    if fs.get("generator_limited"):
        flags.append("generator-limited")
    if point.get("cpu_oversubscribed"):
        flags.append("CPU oversubscribed")
    return flags


def _probe_latencies(trials: Mapping[int, TrialRecord], index: Any) -> np.ndarray | None:
    record = trials.get(index) if isinstance(index, int) else None
    probes = record.result.probes if record is not None else None
    if probes is None or len(probes.latency_ns) == 0:
        return None
    return np.sort(np.asarray(probes.latency_ns, dtype=np.float64))


def _latency_intervals(latencies: np.ndarray | None) -> dict[str, Interval | None]:
    if latencies is None:
        return {}
    ordered = latencies.tolist()
    mean_ci = None
    if len(ordered) >= 2:
        half = 1.959964 * float(np.std(latencies, ddof=1)) / np.sqrt(len(ordered))
        mean = float(np.mean(latencies))
        mean_ci = Interval(mean - half, mean + half)
    return {"latency_avg_ns": mean_ci, "latency_p50_ns": quantile_interval(ordered, 0.5),
            "latency_p99_ns": quantile_interval(ordered, 0.99)}


def _frame_metrics(fs: Mapping[str, Any], trials: Mapping[int, TrialRecord]) -> Iterable[tuple[str, float, Interval | None, str, list[str], list[float] | None]]:
    """(metric, value, interval, basis, flags, repetition samples) of one frame size."""
    points = [p for p in fs.get("points") or [] if isinstance(p, Mapping)]
    for point in points:
        value = _num(point.get("throughput_fps"))
        if value is None:
            continue
        flags = _point_flags(fs, point)
        low, high = _num(point.get("lower_bound_fps")), _num(point.get("upper_bound_fps"))
        interval, basis = None, ""
        if low is not None and high is not None and low <= value <= high:
            interval, basis = Interval(low, high), "search bounds"
        reps = point.get("repetitions") if isinstance(point.get("repetitions"), Mapping) else {}
        rep_samples = [v for v in (_num(x) for x in reps.get("lower_bounds_fps") or []) if v is not None]
        throughput_metric, switched_metric, per_core_metric = point_metrics(point.get("name"))
        yield throughput_metric, value, interval, basis, flags, rep_samples if len(rep_samples) >= 2 else None
        switched = _num(point.get("switched_fps"))  # x switching operations, when results.json has it
        if switched is not None and value:
            ops = switched / value
            yield (switched_metric, switched, None if interval is None else Interval(low * ops, high * ops),
                   basis, flags, [r * ops for r in rep_samples] if len(rep_samples) >= 2 else None)
        per_core = _num((point.get("efficiency") or {}).get("fps_per_core")) if isinstance(point.get("efficiency"), Mapping) else None
        if per_core is not None:
            yield per_core_metric, per_core, None, "", flags, None
    primary = points[0] if points else None
    if primary is not None:
        flags = _point_flags(fs, primary)
        lat = primary.get("latency") if isinstance(primary.get("latency"), Mapping) else {}
        summary = primary.get("latency_summary") if isinstance(primary.get("latency_summary"), Mapping) else {}
        pct = summary.get("percentiles_ns") if isinstance(summary.get("percentiles_ns"), Mapping) else {}
        values = {"latency_min_ns": _num(lat.get("min_ns")), "latency_avg_ns": _num(lat.get("avg_ns")),
                  "latency_p50_ns": _num(pct.get("p50")), "latency_p99_ns": _num(pct.get("p99")),
                  "latency_max_ns": _num(lat.get("max_ns"))}
        intervals = _latency_intervals(_probe_latencies(trials, primary.get("latency_trial_index")))
        samples = lat.get("samples")
        for metric in LATENCY_METRICS:
            if values[metric] is None:
                continue
            interval = intervals.get(metric)
            basis = f"95 % interval over {samples} probes" if interval is not None else ""
            yield metric, values[metric], interval, basis, flags, None
    tcp = fs.get("tcp") if isinstance(fs.get("tcp"), Mapping) else None
    if tcp and _num(tcp.get("gbps")) is not None:
        flags = ["CPU oversubscribed"] if tcp.get("cpu_oversubscribed") else []
        runs = [v for v in (_num(x) for x in tcp.get("gbps_runs") or []) if v is not None]
        yield "tcp_gbps", _num(tcp["gbps"]), None, "", flags, runs if len(runs) >= 2 else None
        for metric, key in (("tcp_cores_per_gbps", "cores_per_gbps"), ("tcp_retransmits", "retransmits"),
                            ("tcp_rtt_mean_us", "rtt_mean_us")):
            if _num(tcp.get(key)) is not None:
                yield metric, _num(tcp[key]), None, "", flags, None
    b2b = fs.get("back2back") if isinstance(fs.get("back2back"), Mapping) else None
    if b2b and _num(b2b.get("frames_avg")) is not None:
        frames = [float(r["frames"]) for r in b2b.get("repetitions") or [] if isinstance(r, Mapping)
                  and _num(r.get("frames")) is not None]
        yield ("b2b_frames_avg", _num(b2b["frames_avg"]), None, "", [] if b2b.get("bounded", True) else ["unbounded"],
               frames if len(frames) >= 2 else None)


def _frame_gaps(test: Mapping[str, Any], fs: Mapping[str, Any], size: int) -> list[Gap]:
    """Why figures of this frame size are missing: the whole frame size (skipped, failed,
    not run: every metric), or a search goal without a throughput (``no NDR``)."""
    status = fs.get("status")
    notes = [str(n) for n in fs.get("notes") or []]
    if status == "not-run":
        skipped = next((n for n in notes if n.startswith("skipped:")), None)
        if skipped is not None:
            return [Gap(size, ALL_METRICS, "skipped", skipped[len("skipped:"):].strip())]
        error = test.get("error")
        if test.get("status") == "failed":
            return [Gap(size, ALL_METRICS, "test failed", str(error or "the test failed before this frame size"))]
        return [Gap(size, ALL_METRICS, "not run", str(error or "frame size not run"))]
    if status in ("failed", "interrupted", "running", "pending"):
        return [Gap(size, ALL_METRICS, str(status), str(fs.get("error") or f"frame size {status}"))]
    gaps = []
    for point in fs.get("points") or []:
        if not isinstance(point, Mapping) or _num(point.get("throughput_fps")) is not None:
            continue
        name = str(point.get("name"))
        said = [n[len(name) + 2:] for n in notes if n.startswith(f"{name}: ")]
        if not said and point.get("irregular_reason"):
            said = [str(point["irregular_reason"])]
        gaps.append(Gap(size, f"{metric_slug(name)}_fps", f"no {name}", "; ".join(said) or "no throughput found"))
    return gaps


def _test_fields(test: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: test.get(k) for k in TEST_FIELDS if test.get(k) not in (None, "", [], {})}
    vnf = config.get("vnf") if isinstance(config.get("vnf"), Mapping) else {}
    if "vnf" not in out and vnf.get("name") not in (None, "none"):
        out["vnf"] = vnf.get("name")
    return out


def extract(results: Mapping[str, Any], sysinfo: Mapping[str, Any] | None = None,
            plans: Sequence[Mapping[str, Any]] = (), trials: Sequence[TrialRecord] = ()) -> RunMetrics:
    """The figures of one run from its results.json document, sysinfo.json, config.yaml
    ``plans`` and trial records (each optional but results.json)."""
    configs = {p.get("index"): p.get("config") or {} for p in plans if isinstance(p, Mapping)}
    by_index: dict[int, TrialRecord] = {t.trial_index: t for t in trials}
    tests: dict[str, TestInfo] = {}
    collected: dict[MetricKey, MetricValue] = {}
    for test in results.get("tests") or []:
        if not isinstance(test, Mapping):
            continue
        label = str(test.get("label"))
        info = tests.get(label)
        if info is None:
            info = tests[label] = TestInfo(label, 0, _test_fields(test, configs.get(test.get("plan_index")) or {}), [])
        info.repeats += 1
        info.statuses.append(str(test.get("status")))
        for fs in test.get("frame_sizes") or []:
            size = fs.get("frame_size_bytes")
            if not isinstance(size, int):
                continue
            info.gaps.extend(_frame_gaps(test, fs, size))
            for metric, value, interval, basis, flags, rep_samples in _frame_metrics(fs, by_index):
                key = MetricKey(label, size, metric)
                samples = rep_samples or [value]
                if key not in collected:
                    collected[key] = MetricValue(key, list(samples), interval, basis, list(flags))
                    if rep_samples:
                        collected[key].basis = "search repetitions"
                else:
                    existing = collected[key]
                    existing.samples.extend(samples)
                    existing.flags.extend(f for f in flags if f not in existing.flags)
    for value in collected.values():
        if len(value.samples) >= 2 and value.basis != "search repetitions":
            value.basis = f"{len(value.samples)} repeats"
    return RunMetrics(
        run_ids=[str(results.get("run_id"))],
        started_at=results.get("started_at"),
        status=results.get("status"),
        vsbench_version=results.get("vsbench_version"),
        sut=sut_fields(sysinfo),
        tests=list(tests.values()),
        metrics=list(collected.values()),
    )


def pool(runs: Sequence[RunMetrics]) -> RunMetrics:
    """Several runs of the same configuration as one side of a comparison: every figure's
    samples are the runs' samples together (repeated runs instead of ``--repeat``)."""
    if len(runs) == 1:
        return runs[0]
    tests: dict[str, TestInfo] = {}
    metrics: dict[MetricKey, MetricValue] = {}
    for run in runs:
        for t in run.tests:
            if t.label in tests:
                tests[t.label].repeats += t.repeats
                tests[t.label].statuses += t.statuses
                tests[t.label].gaps += t.gaps
            else:
                tests[t.label] = TestInfo(t.label, t.repeats, dict(t.fields), list(t.statuses), list(t.gaps))
        for m in run.metrics:
            if m.key in metrics:
                metrics[m.key].samples.extend(m.samples)
                metrics[m.key].flags.extend(f for f in m.flags if f not in metrics[m.key].flags)
            else:
                metrics[m.key] = MetricValue(m.key, list(m.samples), m.interval, m.basis, list(m.flags))
    for m in metrics.values():
        if len(m.samples) >= 2:
            m.basis = f"{len(m.samples)} runs/repeats"
    sut: dict[str, Any] = {}
    for key in {k for run in runs for k in run.sut}:
        values = {str(run.sut.get(key)) for run in runs}
        sut[key] = runs[0].sut.get(key) if len(values) == 1 else " | ".join(sorted(values))
    statuses = {run.status for run in runs}
    return RunMetrics(
        run_ids=[i for run in runs for i in run.run_ids],
        started_at=min((r.started_at for r in runs if r.started_at), default=None),
        status=statuses.pop() if len(statuses) == 1 else "mixed",
        vsbench_version=runs[0].vsbench_version,
        sut=sut,
        tests=list(tests.values()),
        metrics=list(metrics.values()),
    )
