"""Compare two or more runs: per test x frame size x metric, the values side by side, the %
change against the first run (the baseline) and whether it is significant. Pure.

This is the "config A | config B | gain %" table of Intel's optimized-deployment report,
with an honest verdict beside each gain (:mod:`vsbench.results.significance`). Runs of
different switches, topologies or machines compare too: what differs between them -- the
test's plugins and deployment, the system under test of sysinfo.json -- is listed with the
table, and where deployments differ in switching operations each throughput is also shown
multiplied by them (ONP 2.1 section 5.2: the comparable figure across topologies).

Tests are matched by label (testcase plus matrix variant); a test that only one run has is
listed as such, never silently dropped. Runs that share no test at all are refused
(:class:`NotComparable`) unless the caller asks to pair their tests by position (another
topology's testcase, phy2phy_tput against pvp_tput): pairing silently made a comparison of
two unrelated runs look like a valid one. Each run is headed by a letter and its name
(:attr:`Comparison.run_headings`), so a run compared with itself -- which
:func:`compare` notes -- still gets two distinct columns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from vsbench.results.run_metrics import MetricKey, MetricValue, RunMetrics, TestInfo, unit_of
from vsbench.results.significance import Change, compare_values

#: Metric order in a table: throughput first, latency after, then the rest.
_ORDER = ("ndr_fps", "pdr_fps")


@dataclass
class Row:
    """One metric of one test x frame size across the runs (``values[i]`` of run i, None
    when that run lacks it; ``changes[i]`` against run 0, None for run 0 itself)."""

    key: MetricKey
    values: list[MetricValue | None]
    changes: list[Change | None]
    #: Why run i lacks the figure, in a word or two (``skipped``, ``no NDR``), where its
    #: results say; the full reason is among the comparison's notes.
    gaps: list[str | None] = field(default_factory=list)


@dataclass
class Difference:
    """A field whose value differs between the runs (``values[i]`` of run i)."""

    scope: str  # "sut" or a test label
    name: str
    values: list[Any]


class NotComparable(ValueError):
    """The runs cannot be compared as asked; one line for the user."""


#: The letters that head the runs of a comparison, in order (then A2, B2, ...).
SIDE_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def side_label(index: int) -> str:
    """``A`` for the baseline, ``B`` for the next run, ..."""
    letter = SIDE_LETTERS[index % len(SIDE_LETTERS)]
    return letter if index < len(SIDE_LETTERS) else f"{letter}{index // len(SIDE_LETTERS) + 1}"


@dataclass
class Comparison:
    runs: list[RunMetrics]
    rows: list[Row]
    differences: list[Difference] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: Warnings the user must see before reading the table (the same run twice).
    warnings: list[str] = field(default_factory=list)

    @property
    def run_names(self) -> list[str]:
        return [r.name for r in self.runs]

    @property
    def run_headings(self) -> list[str]:
        """``A 20261127-...`` per run: distinct even when one run is compared with itself."""
        return [f"{side_label(i)} {r.name}" for i, r in enumerate(self.runs)]


def same_runs(runs: Sequence[RunMetrics]) -> list[str]:
    """One warning per run that is another side's run again (by run id): its changes are
    zero by construction and say nothing."""
    warnings = []
    for i, run in enumerate(runs):
        for j in range(i):
            if sorted(run.run_ids) == sorted(runs[j].run_ids):
                warnings.append(f"{side_label(i)} and {side_label(j)} are the same run ({run.name}): every change "
                                f"between them is zero by construction")
                break
    return warnings


def _metric_rank(metric: str) -> tuple[int, str]:
    if metric in _ORDER:
        return (_ORDER.index(metric), metric)
    if metric.startswith("latency_"):
        order = ("latency_min_ns", "latency_avg_ns", "latency_p50_ns", "latency_p99_ns", "latency_max_ns")
        return (20 + (order.index(metric) if metric in order else 9), metric)
    if metric.endswith("_switched_fps"):
        return (10, metric)
    if metric.endswith("_fps"):
        return (5, metric)
    return (40, metric)


def _switched(run: RunMetrics) -> list[MetricValue]:
    """Throughput x switching operations of each test that knows its operations (where
    results.json did not already carry it)."""
    out = []
    have = set(run.by_key())
    for m in run.metrics:
        if not m.key.metric.endswith("_fps") or m.key.metric.endswith("_switched_fps"):
            continue
        info = run.test(m.key.test)
        ops = (info.fields.get("switching_operations") if info else None)
        if isinstance(ops, bool) or not isinstance(ops, (int, float)) or ops < 1:
            continue
        key = MetricKey(m.key.test, m.key.frame_size_bytes, m.key.metric[:-len("_fps")] + "_switched_fps")
        if key in have:
            continue
        lo_hi = None if m.interval is None else type(m.interval)(m.interval.low * ops, m.interval.high * ops)
        out.append(MetricValue(key, [s * ops for s in m.samples], lo_hi, m.basis, list(m.flags)))
    return out


def _topologies_differ(runs: Sequence[RunMetrics]) -> bool:
    for label in {t.label for r in runs for t in r.tests}:
        ops = {str((r.test(label).fields.get("switching_operations") if r.test(label) else None)) for r in runs}
        if len(ops) > 1:
            return True
    return False


def differences(runs: Sequence[RunMetrics]) -> list[Difference]:
    """The SUT fields (sysinfo.json) and test fields (switch, deployment, ...) that differ."""
    out: list[Difference] = []
    for name in sorted({k for r in runs for k in r.sut}):
        values = [r.sut.get(name) for r in runs]
        if len({str(v) for v in values}) > 1:
            out.append(Difference("sut", name, values))
    labels: list[str] = []
    for r in runs:
        labels += [t.label for t in r.tests if t.label not in labels]
    for label in labels:
        infos = [r.test(label) for r in runs]
        names: list[str] = []
        for info in infos:
            names += [k for k in (info.fields if info else {}) if k not in names]
        for name in names:
            values = [info.fields.get(name) if info else None for info in infos]
            if len({str(v) for v in values}) > 1:
                out.append(Difference(label, name, values))
        repeats = [info.repeats if info else 0 for info in infos]
        if len(set(repeats)) > 1:
            out.append(Difference(label, "repeats", repeats))
    return out


def align(run: RunMetrics, baseline: RunMetrics, by_position: bool = False) -> tuple[RunMetrics, list[str]]:
    """``run`` itself when it shares a test label with the baseline. When it shares none
    (another topology's testcase: phy2phy_tput against pvp_tput): with ``by_position``
    its tests relabelled as the baseline's, by position, and the notes saying what was
    paired with what; without, :class:`NotComparable`."""
    base_labels = [t.label for t in baseline.tests]
    if not base_labels or not run.tests or {t.label for t in run.tests} & set(base_labels):
        return run, []
    if not by_position:
        theirs, ours = _few(t.label for t in run.tests), _few(base_labels)
        raise NotComparable(f"{run.name} ({theirs}) has no testcase in common with the baseline {baseline.name} "
                            f"({ours}); --pair-by-position compares their tests in run order")
    mapping = {t.label: b for t, b in zip(run.tests, base_labels)}
    notes = [f"{run.name}: {old} compared as {new} (no test label in common: paired by position)"
             for old, new in mapping.items() if old != new]
    tests = []
    for t in run.tests:
        if t.label in mapping:
            fields = dict(t.fields)
            fields.setdefault("testcase", t.label)
            tests.append(TestInfo(mapping[t.label], t.repeats, fields, list(t.statuses), list(t.gaps)))
    metrics = [MetricValue(MetricKey(mapping[m.key.test], m.key.frame_size_bytes, m.key.metric), list(m.samples),
                           m.interval, m.basis, list(m.flags)) for m in run.metrics if m.key.test in mapping]
    aligned = RunMetrics(list(run.run_ids), run.started_at, run.status, run.vsbench_version, dict(run.sut),
                         tests, metrics)
    return aligned, notes


def _few(labels: Iterable[str], shown: int = 3) -> str:
    """The first ``shown`` distinct labels, and how many more (an error stays one readable line)."""
    distinct = list(dict.fromkeys(labels))
    more = f" and {len(distinct) - shown} more" if len(distinct) > shown else ""
    return ", ".join(distinct[:shown]) + more


def compare(runs: Sequence[RunMetrics], metrics: Sequence[str] | None = None,
            pair_by_position: bool = False) -> Comparison:
    """Compare ``runs`` against ``runs[0]``; ``metrics`` limits the metric names shown.
    A run sharing no test with the baseline raises :class:`NotComparable` unless
    ``pair_by_position`` (:func:`align`)."""
    if len(runs) < 2:
        raise ValueError("a comparison needs at least two runs")
    warnings = same_runs(runs)
    pairing: list[str] = []
    aligned = [runs[0]]
    for run in runs[1:]:
        same, notes = align(run, runs[0], pair_by_position)
        aligned.append(same)
        pairing += notes
    runs = aligned
    extra = [_switched(r) for r in runs] if _topologies_differ(runs) else [[] for _ in runs]
    tables = [{**r.by_key(), **{m.key: m for m in e}} for r, e in zip(runs, extra)]
    keys: list[MetricKey] = []
    seen = set()
    for table in tables:
        for key in table:
            if key not in seen and (not metrics or key.metric in metrics):
                seen.add(key)
                keys.append(key)
    test_order = {t: i for i, t in enumerate(dict.fromkeys(k.test for k in keys))}
    keys.sort(key=lambda k: (test_order[k.test], k.frame_size_bytes, _metric_rank(k.metric)))
    rows = []
    for key in keys:
        values = [t.get(key) for t in tables]
        base = values[0]
        changes: list[Change | None] = [None]
        for other in values[1:]:
            changes.append(compare_values(
                base.value if base else None, base.samples if base else [], base.uncertainty if base else None,
                other.value if other else None, other.samples if other else [],
                other.uncertainty if other else None, unit_of(key.metric)[1]))
        rows.append(Row(key, values, changes))
    gap_notes = _gaps(runs, rows)
    comparison = Comparison(list(runs), rows, differences(runs), list(pairing) + gap_notes, warnings)
    for label in test_order:
        missing = [r.name for r in runs if r.test(label) is None]
        if missing:
            comparison.notes.append(f"{label}: not in run(s) {', '.join(missing)}")
    if any(extra):
        comparison.notes.append("deployments differ in switching operations: *_switched_fps rows are throughput x "
                                "switching operations (ONP 2.1 section 5.2), the figure comparable across topologies")
    return comparison


def _gaps(runs: Sequence[RunMetrics], rows: list[Row]) -> list[str]:
    """Fill each row's ``gaps`` where a run has the test but not the figure, and return one
    note per reason (naming the runs, tests and frame sizes it concerns)."""
    grouped: dict[str, list[str]] = {}
    for row in rows:
        row.gaps = [None] * len(runs)
        for i, (run, value) in enumerate(zip(runs, row.values)):
            info = run.test(row.key.test)
            if value is not None or info is None:
                continue
            found = info.gaps_of(row.key.frame_size_bytes, row.key.metric)
            if not found:
                continue
            kinds = list(dict.fromkeys(g.kind for g in found))
            row.gaps[i] = kinds[0] if len(kinds) == 1 else "no figure"
            for reason in dict.fromkeys(f"{g.kind}: {g.reason}" for g in found):
                where = f"{row.key.test} at {row.key.frame_size_bytes} B in {run.name}"
                if where not in grouped.setdefault(reason, []):
                    grouped[reason].append(where)
    return [f"{'; '.join(where)}: {reason}" for reason, where in grouped.items()]


def to_json(comparison: Comparison) -> dict[str, Any]:
    """The comparison as a JSON document (``vsbench compare --format json``)."""

    def value_doc(v: MetricValue | None) -> dict[str, Any] | None:
        if v is None:
            return None
        return {"value": v.value, "samples": v.samples, **v.spread,
                "interval": None if v.uncertainty is None else [v.uncertainty.low, v.uncertainty.high],
                "basis": v.basis, "flags": v.flags}

    def change_doc(c: Change | None) -> dict[str, Any] | None:
        if c is None:
            return None
        return {"percent": c.percent, "percent_interval": None if c.percent_low is None else [c.percent_low, c.percent_high],
                "significance": c.significance, "basis": c.basis, "better": c.better}

    return {
        "schema": "vsbench.compare/1",
        "runs": [{"name": r.name, "label": side_label(i), "run_ids": r.run_ids, "started_at": r.started_at,
                  "status": r.status} for i, r in enumerate(comparison.runs)],
        "rows": [{"test": row.key.test, "frame_size_bytes": row.key.frame_size_bytes, "metric": row.key.metric,
                  "unit": row.key.unit, "higher_is_better": row.key.higher_is_better,
                  "values": [value_doc(v) for v in row.values],
                  "changes": [change_doc(c) for c in row.changes]} for row in comparison.rows],
        "differences": [{"scope": d.scope, "name": d.name, "values": d.values} for d in comparison.differences],
        "notes": list(comparison.notes),
        "warnings": list(comparison.warnings),
    }


CSV_COLUMNS = ("test", "frame_size_bytes", "metric", "unit", "run", "value", "n", "min", "max", "cv",
               "percent_change", "percent_low", "percent_high", "significance", "basis", "flags")


def csv_rows(comparison: Comparison) -> list[dict[str, Any]]:
    """One row per test x frame size x metric x run (long format: any number of runs)."""
    out = []
    for row in comparison.rows:
        for run, value, change in zip(comparison.runs, row.values, row.changes):
            spread = value.spread if value else {}
            out.append({
                "test": row.key.test, "frame_size_bytes": row.key.frame_size_bytes, "metric": row.key.metric,
                "unit": row.key.unit, "run": run.name, "value": value.value if value else None,
                "n": spread.get("n"), "min": spread.get("min"), "max": spread.get("max"), "cv": spread.get("cv"),
                "percent_change": change.percent if change else None,
                "percent_low": change.percent_low if change else None,
                "percent_high": change.percent_high if change else None,
                "significance": change.significance if change else ("baseline" if value else None),
                "basis": change.basis if change else (value.basis if value else None),
                "flags": "; ".join(value.flags) if value else None,
            })
    return out
