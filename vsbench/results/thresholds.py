"""Pass/fail gates for CI: thresholds on a run's figures and regressions against a baseline.
Pure: the inputs are a results.json document, the run's figures
(:mod:`vsbench.results.run_metrics`) and the thresholds; the output one :class:`Case` per
test x frame size -- what the JUnit file and the exit code are made of.

Thresholds come from the command line (``--fail-below ndr_fps=1e6``, ``--fail-above
latency_p99_ns=50000``, optionally for one frame size: ``ndr_fps@64=1e6``) and from a
testcase's ``thresholds`` section (same names), which applies to that testcase's plans. A
regression check (``--baseline RUN --max-regression 5%``) fails a figure that got worse than
the baseline by more than the allowed percentage *and* not within noise
(:mod:`vsbench.results.significance`); by default it checks every throughput figure
(``*_fps`` of each goal).

A case is ``error`` when its frame size did not complete (the figures are missing, not
bad), ``skipped`` when it was not run, ``failed`` when a gate failed, else ``passed``. A
threshold on a figure the run did not produce (e.g. a p99 that too few probes back) fails:
a gate that cannot be checked is not passed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from vsbench.results.run_metrics import MetricKey, RunMetrics, unit_of
from vsbench.results.significance import WITHIN_NOISE, compare_values

BELOW, ABOVE = "fail_below", "fail_above"
_SPEC = re.compile(r"^\s*([a-z][a-z0-9_]*)(?:@([0-9]+))?\s*=\s*(\S+)\s*$")
_SUFFIX = {"k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9}


class ThresholdError(ValueError):
    """A threshold cannot be parsed; one line for the user."""


@dataclass(frozen=True)
class Threshold:
    """``metric`` must not be below (``fail_below``) / above (``fail_above``) ``value``, at
    ``frame_size_bytes`` or every frame size (None)."""

    kind: str
    metric: str
    value: float
    frame_size_bytes: int | None = None
    source: str = "command line"

    def describe(self) -> str:
        where = f"@{self.frame_size_bytes}" if self.frame_size_bytes is not None else ""
        op = ">=" if self.kind == BELOW else "<="
        return f"{self.metric}{where} {op} {_fmt(self.value)} {unit_of(self.metric)[0]}".rstrip()


def parse_number(text: str) -> float:
    """A number as typed: ``1e6``, ``1500000``, ``1.5M``, ``200k``."""
    text = str(text).strip()
    scale = 1.0
    if text and text[-1] in _SUFFIX:
        scale, text = _SUFFIX[text[-1]], text[:-1]
    try:
        return float(text) * scale
    except ValueError:
        raise ThresholdError(f"not a number: {text!r}") from None


def parse(spec: str, kind: str, source: str = "command line") -> Threshold:
    """``METRIC[@FRAME_SIZE]=VALUE``."""
    match = _SPEC.match(spec)
    if not match:
        raise ThresholdError(f"threshold {spec!r}: expected METRIC[@FRAME_SIZE]=VALUE, e.g. ndr_fps=1e6 "
                             "or latency_p99_ns@64=50000")
    metric, size, value = match.groups()
    return Threshold(kind, metric, parse_number(value), int(size) if size else None, source)


def parse_percent(text: str) -> float:
    """``5%`` or ``5`` -> 5.0."""
    value = parse_number(str(text).strip().removesuffix("%"))
    if value < 0:
        raise ThresholdError(f"a regression limit cannot be negative: {text!r}")
    return value


def from_testcase(section: Mapping[str, Any] | None) -> tuple[list[Threshold], float | None]:
    """The thresholds and max regression (percent) of a plan's ``thresholds`` section."""
    if not section:
        return [], None
    found = []
    for kind in ("fail_below", "fail_above"):  # BELOW, ABOVE
        for name, value in (section.get(kind) or {}).items():
            found.append(parse(f"{name}={value}", kind, source="testcase"))
    limit = section.get("max_regression_percent")
    return found, None if limit is None else float(limit)


@dataclass
class Case:
    """One test x frame size as CI sees it."""

    test: str
    frame_size_bytes: int
    status: str  # passed | failed | error | skipped
    time_s: float = 0.0
    failures: list[str] = field(default_factory=list)
    passed_checks: list[str] = field(default_factory=list)
    error: str | None = None
    properties: dict[str, str] = field(default_factory=dict)
    #: The JUnit case name when it is not the frame size (an integration step's label).
    name: str | None = None


@dataclass
class Gates:
    """What to check: thresholds for every test, a baseline and the allowed regression."""

    thresholds: list[Threshold] = field(default_factory=list)
    baseline: RunMetrics | None = None
    max_regression_percent: float | None = None
    regression_metrics: Sequence[str] | None = None  # None: every throughput (*_fps) figure

    @property
    def any(self) -> bool:
        return bool(self.thresholds) or self.baseline is not None


def _fmt(value: float) -> str:
    return f"{value:,.6g}" if abs(value) < 1e6 else f"{value:,.0f}"


def _regression_metric(metric: str, chosen: Sequence[str] | None) -> bool:
    if chosen:
        return metric in chosen
    return metric.endswith("_fps") and not metric.endswith("_switched_fps")


def _check_threshold(t: Threshold, key: MetricKey, run: RunMetrics) -> tuple[bool, str]:
    value = run.by_key().get(key)
    if value is None:
        return False, f"{t.describe()}: {key.metric} was not measured at {key.frame_size_bytes} B ({t.source})"
    ok = value.value >= t.value if t.kind == BELOW else value.value <= t.value
    flags = f" [{', '.join(value.flags)}]" if value.flags else ""
    text = f"{key.metric} = {_fmt(value.value)} {value.unit}, threshold {t.describe()} ({t.source}){flags}"
    return ok, text


def _check_regressions(key_test: str, size: int, run: RunMetrics, baseline: RunMetrics, limit: float,
                       chosen: Sequence[str] | None) -> Iterable[tuple[bool, str]]:
    mine = {m.key.metric: m for m in run.metrics if m.key.test == key_test and m.key.frame_size_bytes == size}
    theirs = {m.key.metric: m for m in baseline.metrics if m.key.test == key_test and m.key.frame_size_bytes == size}
    for metric, new in mine.items():
        old = theirs.get(metric)
        if old is None or not _regression_metric(metric, chosen):
            continue
        change = compare_values(old.value, old.samples, old.uncertainty, new.value, new.samples, new.uncertainty,
                                new.higher_is_better)
        if change.percent is None:
            continue
        worse_by = -change.percent if new.higher_is_better else change.percent
        text = (f"{metric} = {_fmt(new.value)} {new.unit} vs baseline {baseline.name} {_fmt(old.value)}: "
                f"{change.percent:+.2f} % ({change.significance}; {change.basis}), "
                f"allowed regression {limit:g} %")
        yield not (worse_by > limit and change.significance != WITHIN_NOISE), text
    if chosen:
        for metric in chosen:
            if metric in mine and metric not in theirs:
                yield True, f"{metric}: not in baseline {baseline.name}, not compared"


def evaluate(results: Mapping[str, Any], run: RunMetrics, gates: Gates,
             plan_configs: Mapping[int, Mapping[str, Any]] | None = None) -> list[Case]:
    """One case per test x frame size of ``results`` (repeats merged, as in ``run``)."""
    plan_configs = plan_configs or {}
    cases: dict[tuple[str, int], Case] = {}
    per_test: dict[str, tuple[list[Threshold], float | None]] = {}
    for test in results.get("tests") or []:
        label = str(test.get("label"))
        config = plan_configs.get(test.get("plan_index")) or {}
        if label not in per_test:
            per_test[label] = from_testcase(config.get("thresholds"))
        for fs in test.get("frame_sizes") or []:
            size = fs.get("frame_size_bytes")
            case = cases.get((label, size))
            if case is None:
                case = cases[(label, size)] = Case(label, size, "passed", properties={
                    k: str(test.get(k)) for k in ("testcase", "vswitch", "trafficgen", "deployment") if test.get(k)})
            case.time_s += float(fs.get("effective_seconds") or fs.get("trial_seconds") or 0.0)
            status = fs.get("status")
            if status == "not-run" and case.status == "passed":
                case.status = "skipped"
                case.error = "; ".join(str(n) for n in fs.get("notes") or []) or "not run"
            elif status not in ("complete", "not-run"):
                case.status = "error"
                case.error = fs.get("error") or test.get("error") or f"frame size {status}"
    for (label, size), case in cases.items():
        if case.status in ("error", "skipped"):
            continue
        own, own_limit = per_test.get(label, ([], None))
        for t in [*gates.thresholds, *own]:
            if t.frame_size_bytes is not None and t.frame_size_bytes != size:
                continue
            ok, text = _check_threshold(t, MetricKey(label, size, t.metric), run)
            (case.passed_checks if ok else case.failures).append(text)
        limit = gates.max_regression_percent if gates.max_regression_percent is not None else own_limit
        if gates.baseline is not None and limit is not None:
            if gates.baseline.test(label) is None:
                case.passed_checks.append(f"{label} is not in baseline {gates.baseline.name}: no regression check")
            for ok, text in _check_regressions(label, size, run, gates.baseline, limit, gates.regression_metrics):
                (case.passed_checks if ok else case.failures).append(text)
        if case.failures:
            case.status = "failed"
    return list(cases.values())


def summary(cases: Sequence[Case]) -> dict[str, int]:
    counts = {"passed": 0, "failed": 0, "error": 0, "skipped": 0}
    for case in cases:
        counts[case.status] = counts.get(case.status, 0) + 1
    return counts
