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

Repeats (``--repeat K``) fold per variant: the figure is the median of the repeats'
samples (:mod:`run_metrics`), and each column beside it (cache shares, upcalls, cores) the
median over the repeats that measured the figure. A cell without a figure says why (the
:class:`vsbench.results.run_metrics.Gap` of its repeats: skipped, failed, no NDR), and so
does a figure that fewer repeats gave than ran.

When the chosen baseline has no figure at a frame size (a TSO-on TCP plan skipped on a
switch whose ports cannot carry offloaded frames, a search that found no NDR), the gains
at that size are against the first variant, in matrix order, that has one; a note says
which and why. With no variant measured at a size there are no gains there, and a note
says that too.
"""

from __future__ import annotations

import difflib
import re
import statistics
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from vsbench.results.run_metrics import Gap, MetricKey, MetricValue, RunMetrics, unit_of
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
    the switch's cache figures at that point's trial (medians over the repeats)."""

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
    #: How many repeats of the variant ran, and how many of them gave the figure.
    repeats: int = 1
    measured: int = 1
    #: Why there is no figure (or why fewer repeats gave it than ran): a word or two for
    #: the cell (``skipped``, ``no NDR``) and the reasons results.json gives.
    gap: str | None = None
    reasons: list[str] = field(default_factory=list)
    #: What the switch said was in effect at the point's trial (its datapath's ``active``:
    #: OvS-DPDK's dpcls/DPIF/parser implementations, packed ring...), by label; values
    #: that differ between repeats are joined with ``/``.
    active: dict[str, str] = field(default_factory=dict)


@dataclass
class FeatureMatrix:
    testcase: str
    metric: str
    dimensions: list[str]
    variants: list[Variant]
    #: The baseline chosen (``--baseline-variant``, else the first variant).
    baseline: int
    frame_sizes: list[int]
    cells: dict[tuple[int, int], Cell]
    notes: list[str] = field(default_factory=list)
    #: The variant the gains at each frame size are against: the chosen baseline where it
    #: has a figure, else the first variant that has one; absent where none has.
    baseline_at: dict[int, int] = field(default_factory=dict)

    def baseline_of(self, size: int) -> int | None:
        return self.baseline_at.get(size)

    def effective_baseline(self) -> int:
        """The one variant every size's gains are against, else the chosen baseline."""
        used = set(self.baseline_at.values())
        return used.pop() if len(used) == 1 else self.baseline


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
    return _settings_match(variant.settings, wanted)


def _settings_match(settings: Mapping[str, Any], wanted: Mapping[str, str]) -> bool:
    for key, value in wanted.items():
        found = _keys_named(settings, key)
        if len(found) != 1 or not _same(settings[found[0]], value):
            return False
    return True


def _keys_named(settings: Iterable[str], key: str) -> list[str]:
    """The dimensions ``key`` names: by full dotted path or by its last part(s)."""
    return [k for k in settings if k == key or k.endswith("." + key)]


def check_baseline(wanted: Mapping[str, str], variants_by_case: Mapping[str, Sequence[Mapping[str, Any]]],
                   text: str) -> None:
    """Refuse a ``--baseline-variant`` (``wanted``, as typed: ``text``) that cannot pick a
    baseline in this run, before it runs: a key that is no dimension of any matrix (the
    closest one offered), or a matrix none of whose variants -- or more than one -- has the
    settings asked. ``variants_by_case`` maps each testcase to its plans' matrix settings.

    Why before: the matrix table is drawn after the last trial, and a typo there used to
    cost the whole run its table ("feature matrix not shown") for a one-character mistake.
    A matrix whose dimensions do not include every key asked is left alone: the key is for
    another testcase of the run."""
    if not wanted:
        return
    matrices: dict[str, list[Mapping[str, Any]]] = {}
    for case, variants in variants_by_case.items():
        distinct: dict[str, Mapping[str, Any]] = {}
        for settings in variants:
            distinct.setdefault(repr(sorted(settings.items())), settings)
        if len(distinct) >= 2:
            matrices[case] = list(distinct.values())
    if not matrices:
        raise MatrixError(f"--baseline-variant {text}: no test of this run has variants to compare (a matrix, "
                          f"or --test-params lists)")
    dimensions = list(dict.fromkeys(k for variants in matrices.values() for v in variants for k in v))
    for key in wanted:
        if not _keys_named(dimensions, key):
            names = list(dict.fromkeys([*dimensions, *(d.rsplit(".", 1)[-1] for d in dimensions)]))
            close = difflib.get_close_matches(key, names, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise MatrixError(f"--baseline-variant {text}: {key!r} is not a dimension of this run's matrices"
                              f"{hint} (dimensions: {', '.join(dimensions)})")
    for case, variants in matrices.items():
        dims = list(dict.fromkeys(k for v in variants for k in v))
        if not all(_keys_named(dims, key) for key in wanted):
            continue
        chosen = [v for v in variants if _settings_match(v, wanted)]
        if len(chosen) != 1:
            values = "; ".join(f"{d}: {', '.join(dict.fromkeys(str(v.get(d)) for v in variants))}"
                               for d in dims if any(_keys_named([d], k) for k in wanted))
            raise MatrixError(f"--baseline-variant {text}: matches {len(chosen)} of the {len(variants)} variants "
                              f"of {case}, not one ({values})")


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
            if str(point.get("name", "")).lower() == goal and _number(point.get("throughput_fps")) is not None:
                out[int(fs["frame_size_bytes"])] = point
    return out


#: Figures shown beside the headline when a variant has them: (metric, label).
EXTRA_METRICS = (("tcp_retransmits", "retransmits"), ("tcp_cores_per_gbps", "cores/(Gbit/s)"),
                 ("tcp_rtt_mean_us", "RTT us"))

#: The figure a matrix compares, by preference: the NDR, a TCP workload's goodput, the
#: received rate of a fixed-rate test.
HEADLINE_METRICS = ("ndr_fps", "tcp_gbps", "continuous_fps")

#: The headline of a matrix none of whose variants gave a figure, by traffic type.
_METRIC_OF_TYPE = {"tcp": "tcp_gbps", "continuous": "continuous_fps"}


def _tcp_points(test: Mapping[str, Any]) -> dict[int, Mapping[str, Any]]:
    """A TCP test's figures in the shape of a point (switch cores, oversubscription)."""
    out = {}
    for fs in test.get("frame_sizes") or []:
        tcp = fs.get("tcp")
        if isinstance(tcp, Mapping):
            out[int(fs["frame_size_bytes"])] = {"efficiency": {"switch_cores": tcp.get("switch_cores")},
                                                "cpu_oversubscribed": tcp.get("cpu_oversubscribed")}
    return out


def active_figures(points: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """The ``active`` labels of the repeats' points (their datapath's own account of what
    was in effect), each label's distinct values joined with ``/``."""
    values: dict[str, list[str]] = {}
    for point in points:
        datapath = point.get("datapath") if isinstance(point.get("datapath"), Mapping) else {}
        active = datapath.get("active") if isinstance(datapath.get("active"), Mapping) else {}
        for label, value in active.items():
            found = values.setdefault(str(label), [])
            if str(value) not in found:
                found.append(str(value))
    return {label: "/".join(found) for label, found in values.items()}


def _median(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return float(statistics.median(present)) if present else None


def _folded_point(points: Sequence[Mapping[str, Any]]) -> tuple[dict[str, float], float | None, float | None,
                                                                 float | None, bool]:
    """(cache shares, upcalls, switch cores, fps per core, oversubscribed) over the
    repeats' points: each the median of the repeats that have it; oversubscribed if any."""
    figures = [cache_figures(p) for p in points]
    labels = list(dict.fromkeys(label for caches, _ in figures for label in caches))
    caches = {label: _median([c.get(label) for c, _ in figures]) for label in labels}
    efficiency = [p.get("efficiency") if isinstance(p.get("efficiency"), Mapping) else {} for p in points]
    return ({k: v for k, v in caches.items() if v is not None}, _median([u for _, u in figures]),
            _median([_number(e.get("switch_cores")) for e in efficiency]),
            _median([_number(e.get("fps_per_core")) for e in efficiency]),
            any(bool(p.get("cpu_oversubscribed")) for p in points))


def _headline(tests: Sequence[Mapping[str, Any]], labels: set[str], have: set[MetricKey]) -> str:
    found = {k.metric for k in have if k.test in labels}
    chosen = next((m for m in HEADLINE_METRICS if m in found), None)
    if chosen is not None:
        return chosen
    return _METRIC_OF_TYPE.get(str(tests[0].get("traffic_type")), HEADLINE_METRICS[0])


def _gap_text(gaps: Sequence[Gap]) -> tuple[str | None, list[str]]:
    """(the word for the cell, the distinct reasons) of the repeats' gaps."""
    if not gaps:
        return None, []
    kinds = list(dict.fromkeys(g.kind for g in gaps))
    reasons = list(dict.fromkeys(f"{g.kind}: {g.reason}" for g in gaps))
    return (kinds[0] if len(kinds) == 1 else "no figure"), reasons


def matrices(results: Mapping[str, Any], metrics: RunMetrics, baseline: Mapping[str, str] | None = None,
             metric: str | None = None) -> list[FeatureMatrix]:
    """One :class:`FeatureMatrix` per testcase of the run with two or more variants.
    ``baseline`` picks the baseline variant by its settings (keys by full or last name);
    default: each matrix's first variant (the first value of every dimension). ``metric``
    defaults, per testcase, to the first of :data:`HEADLINE_METRICS` it has."""
    by_case: dict[str, list[Mapping[str, Any]]] = {}
    for test in results.get("tests") or []:
        if test.get("variant"):
            by_case.setdefault(str(test.get("testcase")), []).append(test)
    values = metrics.by_key()
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
        case_metric = metric or _headline(tests, set(seen), set(values))
        goal = case_metric[:-len("_fps")] if case_metric.endswith("_fps") else case_metric
        dimensions = list(dict.fromkeys(k for v in variants for k in v.settings))
        base = _chosen_baseline(case, variants, baseline)
        sizes = sorted({k.frame_size_bytes for k in values if k.test in seen and k.metric == case_metric}
                       | {int(fs["frame_size_bytes"]) for t in tests for fs in t.get("frame_sizes") or []
                          if isinstance(fs.get("frame_size_bytes"), int)})
        # every repeat's point that gave the figure, per variant and size
        points: dict[tuple[int, int], list[Mapping[str, Any]]] = {}
        for test in tests:
            i = seen[str(test.get("label"))]
            found = _points(test, goal) or (_tcp_points(test) if case_metric.startswith("tcp_") else {})
            for size, point in found.items():
                points.setdefault((i, size), []).append(point)
        fm = FeatureMatrix(case, case_metric, dimensions, variants, base, sizes, {})
        for size in sizes:
            have = [i for i, v in enumerate(variants) if MetricKey(v.label, size, case_metric) in values]
            if base in have:
                fm.baseline_at[size] = base
            elif have:
                fm.baseline_at[size] = have[0]
        for i, variant in enumerate(variants):
            for size in sizes:
                fm.cells[(i, size)] = _cell(fm, i, size, metrics, values, points.get((i, size), []))
        fm.notes.extend(_baseline_notes(fm))
        fm.notes.extend(_gap_notes(fm))
        fm.notes.extend(_queue_notes(fm))
        if any(c.oversubscribed for c in fm.cells.values()):
            fm.notes.append("figures marked * measure CPU contention (more busy pollers than CPUs, or one starved)")
        out.append(fm)
    return out


def _chosen_baseline(case: str, variants: Sequence[Variant], baseline: Mapping[str, str] | None) -> int:
    """The variant ``--baseline-variant`` names (exactly one), else the first."""
    if not baseline:
        return 0
    chosen = [i for i, v in enumerate(variants) if _matches(v, baseline)]
    if len(chosen) != 1:
        names = "; ".join(v.short() for v in variants)
        raise MatrixError(f"{case}: the baseline {dict(baseline)} matches {len(chosen)} variants (they are: {names})")
    return chosen[0]


def _cell(fm: FeatureMatrix, i: int, size: int, metrics: RunMetrics, values: Mapping[MetricKey, MetricValue],
          points: Sequence[Mapping[str, Any]]) -> Cell:
    """Variant ``i`` at ``size``: its figure and gain, its repeats' medians beside them
    (``points``: the point of every repeat that measured the figure) and, where the
    figure is missing in some repeat, why."""
    variant = fm.variants[i]
    info = metrics.test(variant.label)
    value = values.get(MetricKey(variant.label, size, fm.metric))
    ref = fm.baseline_of(size)
    change = None
    if ref is not None and i != ref and value is not None:
        base = values[MetricKey(fm.variants[ref].label, size, fm.metric)]
        change = compare_values(base.value, base.samples, base.uncertainty, value.value, value.samples,
                                value.uncertainty, unit_of(fm.metric)[1])
    caches, upcalls, cores, per_core, oversubscribed = _folded_point(points)
    extra = {label: values[MetricKey(variant.label, size, name)].value
             for name, label in EXTRA_METRICS if MetricKey(variant.label, size, name) in values}
    repeats = info.repeats if info is not None else 1
    gaps = info.gaps_of(size, fm.metric) if info is not None else []
    gap, reasons = _gap_text(gaps)
    if value is None and gap is None:
        gap, reasons = "no figure", [f"no figure: results.json has no {fm.metric} at {size} B"]
    return Cell(value, change, caches, upcalls, cores, per_core, oversubscribed, extra, repeats=repeats,
                measured=max(repeats - len(gaps), 0) if value is not None else 0, gap=gap, reasons=reasons,
                active=active_figures(points))


def _baseline_notes(fm: FeatureMatrix) -> list[str]:
    """Which variant the gains are against where it is not the chosen baseline, and why."""
    chosen = fm.variants[fm.baseline]
    substitutes: dict[int | None, list[int]] = {}
    for size in fm.frame_sizes:
        ref = fm.baseline_of(size)
        if ref != fm.baseline:
            substitutes.setdefault(ref, []).append(size)
    notes = []
    for ref, sizes in substitutes.items():
        at = ", ".join(f"{s} B" for s in sizes)
        if ref is None:
            notes.append(f"no gains at {at}: no variant has a figure ({fm.metric}) there")
            continue
        why = "; ".join(dict.fromkeys(r for s in sizes for r in fm.cells[(fm.baseline, s)].reasons))
        notes.append(f"baseline at {at}: {fm.variants[ref].short()}, the first variant with a figure ({fm.metric}) "
                     f"there; the chosen baseline {chosen.short()} has none ({why or 'no figure'})")
    return notes


def _gap_notes(fm: FeatureMatrix) -> list[str]:
    """One line per reason a cell lacks its figure (or stands on fewer repeats than ran),
    naming the variants and sizes it concerns."""
    grouped: dict[str, list[str]] = {}
    for (i, size), cell in sorted(fm.cells.items(), key=lambda item: (item[0][1], item[0][0])):
        if not cell.reasons:
            continue
        where = fm.variants[i].short() + (f" at {size} B" if len(fm.frame_sizes) > 1 else "")
        if cell.value is not None:
            missing = cell.repeats - cell.measured
            where += f" ({fm.metric} from {cell.measured} of {cell.repeats} repeats; {missing} had none)"
        for reason in cell.reasons:
            grouped.setdefault(reason, []).append(where)
    return [f"{'; '.join(where)}: {reason}" for reason, where in grouped.items()]


def _queue_notes(fm: FeatureMatrix) -> list[str]:
    """A variant whose vhost-user ports have more queues than PMD cores poll them (the
    switch's ``vhost_rxqs``, ``4 on 1 PMD``): its figure measures one thread polling every
    queue, not multiqueue scaling -- said under the table, not left to the reader."""
    out = []
    for i, variant in enumerate(fm.variants):
        for cell in (fm.cells.get((i, size)) for size in fm.frame_sizes):
            found = re.fullmatch(r"(\d+) on (\d+) PMDs?", (cell.active.get("vhost_rxqs", "") if cell else ""))
            queues = [int(q) for q in str(cell.active.get("vhost_queues", "")).split(",") if q.isdigit()] if cell else []
            if found and queues and max(queues) > 1 and int(found.group(1)) > int(found.group(2)):
                out.append(f"{variant.short()}: {found.group(1)} vhost-user receive queues on {found.group(2)} PMD "
                           f"core(s): more queues than PMD cores, so the figure measures that polling thread's "
                           f"contention, not multiqueue scaling")
                break
    return out


def to_json(fm: FeatureMatrix) -> dict[str, Any]:
    """The matrix as a JSON document (``vsbench compare RUN --format json``). ``baseline``
    is the variant the gains are against (``baseline_chosen`` the one asked for; they
    differ when it has no figure, and a note says why); each row's ``baseline`` marks the
    variant its frame size's gains are against, and ``gap``/``reasons`` say why a figure
    is missing."""
    rows = []
    for (i, size), cell in sorted(fm.cells.items(), key=lambda item: (item[0][1], item[0][0])):
        v = fm.variants[i]
        is_base = i == fm.baseline_of(size)
        rows.append({
            "variant": v.settings, "label": v.label, "baseline": is_base, "frame_size_bytes": size,
            fm.metric: None if cell.value is None else cell.value.value,
            "flags": [] if cell.value is None else list(cell.value.flags),
            "gain_percent": None if cell.change is None else cell.change.percent,
            "significance": "baseline" if is_base else (None if cell.change is None else cell.change.significance),
            "cache_hit_percent": dict(cell.cache_percent), "upcalls": cell.upcalls,
            "switch_cores": cell.switch_cores, "fps_per_core": cell.fps_per_core,
            "cpu_oversubscribed": cell.oversubscribed, "extra": dict(cell.extra),
            "repeats": cell.repeats, "measured_repeats": cell.measured, "gap": cell.gap, "reasons": list(cell.reasons),
            "active": dict(cell.active),
        })
    return {"schema": "vsbench.feature-matrix/1", "testcase": fm.testcase, "metric": fm.metric,
            "dimensions": fm.dimensions, "baseline": fm.variants[fm.effective_baseline()].settings,
            "baseline_chosen": fm.variants[fm.baseline].settings, "rows": rows, "notes": list(fm.notes)}


def cache_columns(fm: FeatureMatrix) -> list[str]:
    """The cache labels any cell of the matrix has, in lookup order."""
    present = {label for cell in fm.cells.values() for label in cell.cache_percent}
    return [label for _, label in PMD_CACHES if label in present]


def active_columns(fm: FeatureMatrix) -> list[str]:
    """The ``active`` labels any cell of the matrix has, in first-seen order."""
    return list(dict.fromkeys(label for cell in fm.cells.values() for label in cell.active))


def active_split(fm: FeatureMatrix) -> tuple[list[str], dict[str, str]]:
    """(labels whose value differs between the cells that have figures -- a table's
    columns --, the others with the one value every cell has -- a line under it). A label
    some cell lacks is a column."""
    cells = [c for c in fm.cells.values() if c.active] or list(fm.cells.values())
    varying, common = [], {}
    for label in active_columns(fm):
        values = {c.active.get(label) for c in cells}
        if len(values) == 1 and None not in values:
            common[label] = str(values.pop())
        else:
            varying.append(label)
    return varying, common


def ordered_cells(fm: FeatureMatrix) -> Sequence[tuple[int, int, Cell]]:
    """(variant, frame size, cell): frame size by frame size, the variant its gains are
    against first, then the chosen baseline (when another stood in for it), then the rest."""
    out = []
    for size in fm.frame_sizes:
        ref = fm.baseline_of(size)
        first = [i for i in dict.fromkeys((ref, fm.baseline)) if i is not None]
        order = first + [i for i in range(len(fm.variants)) if i not in first]
        out += [(i, size, fm.cells[(i, size)]) for i in order if (i, size) in fm.cells]
    return out
