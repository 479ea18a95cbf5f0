"""A feature matrix: the plans of one testcase that differ only in their matrix variant
(switch features swept with ``--test-params`` lists), as one table with the % gain of each
against a chosen baseline variant and the switch's flow-cache behaviour beside it. Pure.

This is Intel's optimized-deployment report's chain of "config A | config B | gain %"
tables in one: every combination ran with its own switch instance in the same run. The
figures and their uncertainty are those of :mod:`vsbench.results.run_metrics` (the same
``ndr_fps`` a comparison of two runs shows) and each gain's verdict is
:func:`vsbench.results.significance.compare_values`, as in ``vsbench compare``. The
cache columns come from the reported point's ``datapath`` (the switch's counters over the
trial that point was measured in): for OvS-DPDK the share of lookups each cache answered
(simple match, EMC, SMC, megaflow/dpcls) and the upcalls; for a kernel datapath its
hit/missed lookups.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from vsbench.results.run_metrics import MetricKey, MetricValue, RunMetrics
from vsbench.results.significance import Change, compare_values

#: Cache columns (OvS-DPDK PMD counters), in lookup order, and their labels.
PMD_CACHES = (("simple_match_hits", "simple"), ("emc_hits", "EMC"), ("smc_hits", "SMC"),
              ("megaflow_hits", "megaflow"))


class MatrixError(ValueError):
    """A baseline that names no variant, or a run without a matrix; one line."""


@dataclass(frozen=True)
class Variant:
    """One plan of the matrix: its label and its settings (dotted path -> value)."""

    label: str
    settings: dict[str, Any]
    status: str

    def short(self) -> str:
        """``emc_insert_inv_prob=0, smc_enable=True``: the settings by their last name."""
        return ", ".join(f"{k.rsplit('.', 1)[-1]}={v}" for k, v in self.settings.items()) or "(defaults)"


@dataclass
class Cell:
    """One variant at one frame size: the throughput, its change against the baseline and
    the switch's cache figures at that point's trial."""

    value: MetricValue | None
    change: Change | None
    cache_percent: dict[str, float] = field(default_factory=dict)
    upcalls: float | None = None
    switch_cores: float | None = None
    fps_per_core: float | None = None
    oversubscribed: bool = False
    #: Further figures of the variant at this size, by label (a TCP workload's
    #: retransmits and cores per Gbit/s).
    extra: dict[str, float] = field(default_factory=dict)


@dataclass
class FeatureMatrix:
    testcase: str
    metric: str
    dimensions: list[str]
    variants: list[Variant]
    baseline: int
    frame_sizes: list[int]
    cells: dict[tuple[int, int], Cell]
    notes: list[str] = field(default_factory=list)


def parse_baseline(text: str | None) -> dict[str, str]:
    """``"smc_enable=false,emc_insert_inv_prob=100"`` -> ``{"smc_enable": "false", ...}``."""
    if not text:
        return {}
    out = {}
    for item in text.split(","):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise MatrixError(f"--baseline-variant: expected KEY=VALUE[,KEY=VALUE], got {item!r}")
        out[key.strip()] = value.strip()
    return out


def _same(value: Any, wanted: str) -> bool:
    return str(value).lower() == wanted.lower() or (isinstance(value, int) and not isinstance(value, bool)
                                                    and wanted.lower() == hex(value))


def _matches(variant: Variant, wanted: Mapping[str, str]) -> bool:
    for key, value in wanted.items():
        found = [k for k in variant.settings if k == key or k.endswith("." + key)]
        if len(found) != 1 or not _same(variant.settings[found[0]], value):
            return False
    return True


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def cache_figures(point: Mapping[str, Any]) -> tuple[dict[str, float], float | None]:
    """(share of lookups each cache answered in percent, upcalls) at a point's trial."""
    datapath = point.get("datapath") if isinstance(point.get("datapath"), Mapping) else {}
    pmd = datapath.get("pmd") if isinstance(datapath.get("pmd"), Mapping) else None
    if pmd:
        hits = {label: _number(pmd.get(key)) or 0.0 for key, label in PMD_CACHES}
        upcalls = _number(pmd.get("upcalls")) or 0.0
        total = sum(hits.values()) + upcalls
        if total <= 0:
            return {}, upcalls
        return {label: 100.0 * n / total for label, n in hits.items()}, upcalls
    hit, missed = _number(datapath.get("lookups_hit")), _number(datapath.get("lookups_missed"))
    if hit is not None and missed is not None and hit + missed > 0:
        return {"megaflow": 100.0 * hit / (hit + missed)}, missed
    return {}, None


def _points(test: Mapping[str, Any], goal: str) -> dict[int, Mapping[str, Any]]:
    out = {}
    for fs in test.get("frame_sizes") or []:
        for point in fs.get("points") or []:
            if str(point.get("name", "")).lower() == goal:
                out[int(fs["frame_size_bytes"])] = point
    return out


#: Figures shown beside the headline when a variant has them: (metric, label).
EXTRA_METRICS = (("tcp_retransmits", "retransmits"), ("tcp_cores_per_gbps", "cores/(Gbit/s)"),
                 ("tcp_rtt_mean_us", "RTT us"))

#: The figure a matrix compares, by preference: the NDR, a TCP workload's goodput, the
#: received rate of a fixed-rate test.
HEADLINE_METRICS = ("ndr_fps", "tcp_gbps", "continuous_fps")


def _tcp_points(test: Mapping[str, Any]) -> dict[int, Mapping[str, Any]]:
    """A TCP test's figures in the shape of a point (switch cores, oversubscription)."""
    out = {}
    for fs in test.get("frame_sizes") or []:
        tcp = fs.get("tcp")
        if isinstance(tcp, Mapping):
            out[int(fs["frame_size_bytes"])] = {"efficiency": {"switch_cores": tcp.get("switch_cores")},
                                                "cpu_oversubscribed": tcp.get("cpu_oversubscribed")}
    return out


def matrices(results: Mapping[str, Any], metrics: RunMetrics, baseline: Mapping[str, str] | None = None,
             metric: str | None = None) -> list[FeatureMatrix]:
    """One :class:`FeatureMatrix` per testcase of the run with two or more variants.
    ``baseline`` picks the baseline variant by its settings (keys by full or last name);
    default: each matrix's first variant (the first value of every dimension). ``metric``
    defaults to the first of :data:`HEADLINE_METRICS` the run has."""
    if metric is None:
        have = {k.metric for k in metrics.by_key()}
        metric = next((m for m in HEADLINE_METRICS if m in have), HEADLINE_METRICS[0])
    by_case: dict[str, list[Mapping[str, Any]]] = {}
    for test in results.get("tests") or []:
        if test.get("variant"):
            by_case.setdefault(str(test.get("testcase")), []).append(test)
    values = metrics.by_key()
    goal = metric[:-len("_fps")] if metric.endswith("_fps") else metric
    out = []
    for case, tests in by_case.items():
        variants: list[Variant] = []
        seen: dict[str, int] = {}
        for test in tests:  # repeats share a label: one variant
            label = str(test.get("label"))
            if label not in seen:
                seen[label] = len(variants)
                variants.append(Variant(label, dict(test.get("variant") or {}), str(test.get("status"))))
        if len(variants) < 2:
            continue
        dimensions = list(dict.fromkeys(k for v in variants for k in v.settings))
        if baseline:
            chosen = [i for i, v in enumerate(variants) if _matches(v, baseline)]
            if len(chosen) != 1:
                names = "; ".join(v.short() for v in variants)
                raise MatrixError(f"{case}: the baseline {dict(baseline)} matches {len(chosen)} variants "
                                  f"(they are: {names})")
            base = chosen[0]
        else:
            base = 0
        sizes = sorted({k.frame_size_bytes for k in values if k.test in seen and k.metric == metric})
        cells: dict[tuple[int, int], Cell] = {}
        last_points, tcp_points = {}, {}
        for test in tests:
            last_points[seen[str(test.get("label"))]] = _points(test, goal)
            tcp_points[seen[str(test.get("label"))]] = _tcp_points(test)
        for i, variant in enumerate(variants):
            for size in sizes:
                value = values.get(MetricKey(variant.label, size, metric))
                base_value = values.get(MetricKey(variants[base].label, size, metric))
                change = None
                if i != base:
                    change = compare_values(
                        base_value.value if base_value else None, base_value.samples if base_value else [],
                        base_value.uncertainty if base_value else None, value.value if value else None,
                        value.samples if value else [], value.uncertainty if value else None, True)
                point = last_points.get(i, {}).get(size) or {}
                if not point and tcp_points.get(i, {}).get(size):
                    point = tcp_points[i][size]
                caches, upcalls = cache_figures(point)
                efficiency = point.get("efficiency") if isinstance(point.get("efficiency"), Mapping) else {}
                extra = {label: values[MetricKey(variant.label, size, name)].value
                         for name, label in EXTRA_METRICS if MetricKey(variant.label, size, name) in values}
                cells[(i, size)] = Cell(value, change, caches, upcalls, _number(efficiency.get("switch_cores")),
                                        _number(efficiency.get("fps_per_core")),
                                        bool(point.get("cpu_oversubscribed")), extra)
        fm = FeatureMatrix(case, metric, dimensions, variants, base, sizes, cells)
        if any(c.oversubscribed for c in cells.values()):
            fm.notes.append("figures marked * measure CPU contention (more busy pollers than CPUs, or one starved)")
        out.append(fm)
    return out


def to_json(fm: FeatureMatrix) -> dict[str, Any]:
    """The matrix as a JSON document (``vsbench compare RUN --format json``)."""
    rows = []
    for (i, size), cell in sorted(fm.cells.items(), key=lambda item: (item[0][1], item[0][0])):
        v = fm.variants[i]
        rows.append({
            "variant": v.settings, "label": v.label, "baseline": i == fm.baseline, "frame_size_bytes": size,
            fm.metric: None if cell.value is None else cell.value.value,
            "flags": [] if cell.value is None else list(cell.value.flags),
            "gain_percent": None if cell.change is None else cell.change.percent,
            "significance": "baseline" if i == fm.baseline else (None if cell.change is None else cell.change.significance),
            "cache_hit_percent": dict(cell.cache_percent), "upcalls": cell.upcalls,
            "switch_cores": cell.switch_cores, "fps_per_core": cell.fps_per_core,
            "cpu_oversubscribed": cell.oversubscribed, **({"extra": dict(cell.extra)} if cell.extra else {}),
        })
    return {"schema": "vsbench.feature-matrix/1", "testcase": fm.testcase, "metric": fm.metric,
            "dimensions": fm.dimensions, "baseline": fm.variants[fm.baseline].settings, "rows": rows,
            "notes": list(fm.notes)}


def cache_columns(fm: FeatureMatrix) -> list[str]:
    """The cache labels any cell of the matrix has, in lookup order."""
    present = {label for cell in fm.cells.values() for label in cell.cache_percent}
    return [label for _, label in PMD_CACHES if label in present]


def ordered_cells(fm: FeatureMatrix) -> Sequence[tuple[int, int, Cell]]:
    """(variant, frame size, cell): frame size by frame size, the baseline first."""
    order = [fm.baseline] + [i for i in range(len(fm.variants)) if i != fm.baseline]
    return [(i, size, fm.cells[(i, size)]) for size in fm.frame_sizes for i in order if (i, size) in fm.cells]
