"""Each id's table of a suite run, built from what its plans left (pure: data in, data out).

Inputs: the suite, the planned plans as suite.json records them (:meth:`PlannedPlan.to_json`:
run, status, plan index into results.json, row key values) and results.json. For each
table and each of its series, every plan of the series' run gives rows -- one per frame
size, or per load-sweep step when the table's rows include ``load_percent`` -- keyed by the
table's ``rows`` fields. A plan this host cannot run, or the profile leaves out, gives rows
with its reason instead of figures. Repeats of one plan (same series and key) are one row:
the median of each figure, with its min and max (``spread``) and the repeat count.

Then the report's own figures (the table's reference rows) are set beside ours, row by row
where the keys (and series) match; reference rows no row of ours matches are listed too
(``report_only``), so the whole published table is visible. ``gain_percent`` and ``ratio``
compare each row with the ``gain.over`` series' row of the same key.

An id is ``measured`` when at least one row has a figure, ``not_measurable`` when every row
of ours could not run for a reason of the host, else ``not_measured`` (skipped or failed).
"""

from __future__ import annotations

import statistics
from typing import Any, Iterable, Mapping, Sequence

from vsbench.suite import metrics
from vsbench.suite.model import Suite, SuiteTable

MEASURED, NOT_MEASURABLE, NOT_MEASURED = "measured", "not_measurable", "not_measured"
ROW_MEASURED, ROW_NOT_RUNNABLE, ROW_SKIPPED, ROW_FAILED, ROW_REPORT_ONLY = (
    "measured", "not_runnable", "skipped", "failed", "report_only")


def _same(a: Any, b: Any) -> bool:
    """Key values compare as numbers when both are numbers (64 == 64.0), else as text."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b or str(a).lower() == str(b).lower()
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b)
    return str(a) == str(b)


def _row_key(table: SuiteTable, series_key: Mapping[str, Any], plan_keys: Mapping[str, Any],
             frame_size: int | None, step: Mapping[str, Any] | None) -> dict[str, Any]:
    key: dict[str, Any] = {}
    for name in table.rows:
        if name == "frame_size":
            key[name] = frame_size
        elif name == "load_percent":
            key[name] = None if step is None else step.get("percent")
        elif name in series_key:
            key[name] = series_key[name]
        else:
            key[name] = plan_keys.get(name)
    return key


def _sizes(wanted: Sequence[int], sizes: Iterable[int]) -> list[int]:
    return [s for s in sizes if not wanted or s in wanted]


def _raw_rows(table: SuiteTable, plans: Sequence[Mapping[str, Any]], results: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per plan x frame size (x sweep step), before repeats are merged."""
    tests = {t.get("plan_index"): t for t in results.get("tests") or () if isinstance(t, Mapping)}
    columns = [c for c in table.columns if c not in metrics.DERIVED]
    sweep = "load_percent" in table.rows
    rows: list[dict[str, Any]] = []
    for series in table.series:
        for plan in (p for p in plans if p.get("run") == series.run):
            base = {"series": series.label, "run": series.run, "plan": plan.get("label")}
            test = tests.get(plan.get("plan_index")) if plan.get("plan_index") is not None else None
            if test is None:
                status = ROW_SKIPPED if plan.get("status") == "skipped" else ROW_NOT_RUNNABLE
                reason = plan.get("reason") or "not run"
                if plan.get("status") == "runnable":  # planned to run, but the run ended before it
                    status, reason = ROW_FAILED, "not run: the suite's run ended before this plan"
                for size in _sizes(series.frame_sizes, plan.get("frame_sizes") or []) or [None]:
                    rows.append({**base, "key": _row_key(table, series.key, plan.get("keys") or {}, size, None),
                                 "status": status, "reason": reason})
                continue
            for fs in test.get("frame_sizes") or ():
                size = fs.get("frame_size_bytes")
                if series.frame_sizes and size not in series.frame_sizes:
                    continue
                steps = list(fs.get("sweep") or ()) if sweep else [None]
                for step in steps or [None]:
                    source = metrics.Source(test, fs, step)
                    values = {c: metrics.value(c, source, table.goal) for c in columns}
                    measured = any(v is not None for v in values.values())
                    status, reason = ROW_MEASURED, None
                    if not measured:
                        status, reason = _why_no_figure(test, fs, table.goal)
                    rows.append({**base, "key": _row_key(table, series.key, plan.get("keys") or {}, size, step),
                                 "status": status, "reason": reason,
                                 "values": values, "caveats": metrics.caveats(source, table.goal)})
    return rows


def _why_no_figure(test: Mapping[str, Any], fs: Mapping[str, Any], goal: str) -> tuple[str, str]:
    """A frame size without a figure: skipped by the runner for what this testbed cannot do
    (``skipped: ...`` in its notes: a frame the switch cannot carry, TSO across af_packet
    ports) is not runnable here; a search that found no load for the goal says why (its
    notes on the goal: no load passed, the budget ran out); anything else failed, with its
    error."""
    notes = [str(n) for n in fs.get("notes") or ()]
    skipped = next((n for n in notes if n.startswith("skipped: ")), None)
    if fs.get("status") == "not-run" and skipped:
        return ROW_NOT_RUNNABLE, skipped[len("skipped: "):]
    if fs.get("error") or test.get("error"):
        return ROW_FAILED, str(fs.get("error") or test.get("error"))
    about_goal = [n for n in notes if n.lower().startswith(f"{goal.lower()}: ")]
    if about_goal:
        return ROW_FAILED, "; ".join(about_goal)
    return ROW_FAILED, f"no figure ({fs.get('status') or test.get('status')})"


def _merge_repeats(rows: list[dict[str, Any]], columns: Sequence[str]) -> list[dict[str, Any]]:
    """Rows of the same series and key (a plan's repeats) become one: medians, min/max."""
    merged: dict[tuple, dict[str, Any]] = {}
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for row in rows:
        ident = (row["series"], tuple(sorted((k, repr(v)) for k, v in row["key"].items())))
        groups.setdefault(ident, []).append(row)
    for ident, group in groups.items():
        measured = [r for r in group if r["status"] == ROW_MEASURED]
        if not measured:
            first = dict(group[0])
            first["plans"] = list(dict.fromkeys(r["plan"] for r in group))
            first.pop("plan", None)
            merged[ident] = first
            continue
        row = {k: v for k, v in measured[0].items() if k not in ("values", "caveats", "plan")}
        row["plans"] = list(dict.fromkeys(r["plan"] for r in group))
        row["repeats"] = len(measured)
        values, spread = {}, {}
        for column in columns:
            numbers = [r["values"].get(column) for r in measured if r["values"].get(column) is not None]
            values[column] = statistics.median(numbers) if numbers else None
            if len(numbers) > 1:
                spread[column] = [min(numbers), max(numbers)]
        row["values"] = values
        if spread:
            row["spread"] = spread
        row["caveats"] = list(dict.fromkeys(c for r in measured for c in r.get("caveats") or ()))
        failed = len(group) - len(measured)
        if failed:
            row["caveats"].append(f"{failed} of {len(group)} repeats without a figure")
        merged[ident] = row
    return list(merged.values())


def _match_key(table: SuiteTable) -> list[str]:
    """Key fields two series' rows are compared on (those no series sets by itself)."""
    own = {k for s in table.series for k in s.key}
    return [k for k in table.rows if k not in own]


def _gains(table: SuiteTable, rows: list[dict[str, Any]]) -> None:
    if table.gain is None:
        return
    wanted = [c for c in metrics.DERIVED if c in table.columns]
    fixed = table.gain.baseline
    if fixed:
        fields = [k for k in table.rows if k not in fixed]
        baseline = [r for r in rows if r["status"] == ROW_MEASURED
                    and all(_same(r["key"].get(k), v) for k, v in fixed.items())]
    else:
        fields = _match_key(table)
        baseline = [r for r in rows if r["series"] == table.gain.over and r["status"] == ROW_MEASURED]
    for row in rows:
        if row["status"] != ROW_MEASURED:
            continue
        ours = row["values"].get(table.gain.metric)
        base = next((b for b in baseline if all(_same(b["key"].get(f), row["key"].get(f)) for f in fields)), None)
        ref = None if base is None else base["values"].get(table.gain.metric)
        for column in wanted:
            if ours is None or not ref:
                row["values"][column] = None
            elif column == "ratio":
                row["values"][column] = ours / ref
            elif column == "overhead_percent":
                row["values"][column] = 100.0 * (ref - ours) / ref
            else:
                row["values"][column] = 100.0 * (ours - ref) / ref


def _reference_rows(table: SuiteTable, rows: list[dict[str, Any]]) -> None:
    """Set the report's figures beside ours; list the report's rows we have no row for."""
    reference = table.reference
    if reference is None or not reference.rows:
        return
    used: set[int] = set()
    by_label = {s.label: (s.report_series or s.label) for s in table.series}
    metric_names = set(table.columns)
    renamed = [{table.report_metrics.get(k, k): v for k, v in ref.items()} for ref in reference.rows]
    for row in rows:
        want_series = by_label.get(row["series"])
        for index, ref in enumerate(renamed):
            keys = {k: v for k, v in ref.items() if k in table.rows}
            if not keys or not all(_same(row["key"].get(k), v) for k, v in keys.items()):
                continue
            if "series" in ref and not _same(ref["series"], want_series):
                continue
            row["report"] = {k: v for k, v in ref.items() if k in metric_names}
            used.add(index)
            break
    for index, ref in enumerate(renamed):
        if index in used:
            continue
        figures = {k: v for k, v in ref.items() if k in metric_names}
        if not figures:
            continue
        label = next((s.label for s in table.series if (s.report_series or s.label) == ref.get("series")),
                     str(ref.get("series") or ""))
        rows.append({"series": label, "run": None, "key": {k: ref.get(k) for k in table.rows},
                     "status": ROW_REPORT_ONLY, "reason": "the report's row; no row of this profile measures it",
                     "report": figures})


def _id_status(rows: Sequence[Mapping[str, Any]]) -> tuple[str, str | None, bool]:
    ours = [r for r in rows if r["status"] != ROW_REPORT_ONLY]
    measured = [r for r in ours if r["status"] == ROW_MEASURED]
    reasons = list(dict.fromkeys(str(r.get("reason")) for r in ours if r["status"] != ROW_MEASURED and r.get("reason")))
    if measured:
        return MEASURED, ("; ".join(reasons) or None), len(measured) == len(ours)
    if ours and all(r["status"] == ROW_NOT_RUNNABLE for r in ours):
        return NOT_MEASURABLE, "; ".join(reasons), False
    return NOT_MEASURED, "; ".join(reasons) or "no run of this profile fills it", False


def _sort_key(table: SuiteTable, series_order: Mapping[str, int]):
    def key(row: Mapping[str, Any]):
        parts = []
        for name in table.rows:
            value = row["key"].get(name)
            parts.append((0, float(value), "") if isinstance(value, (int, float)) and not isinstance(value, bool)
                         else (1, 0.0, str(value)))
        return (*parts, series_order.get(row["series"], len(series_order)), row["status"] == ROW_REPORT_ONLY)
    return key


def build_table(table: SuiteTable, plans: Sequence[Mapping[str, Any]], results: Mapping[str, Any]) -> dict[str, Any]:
    """The suite.json entry of ``table``."""
    columns = [c for c in table.columns if c not in metrics.DERIVED]
    rows = _merge_repeats(_raw_rows(table, plans, results), columns)
    _gains(table, rows)
    _reference_rows(table, rows)
    order = {s.label: i for i, s in enumerate(table.series)}
    rows.sort(key=_sort_key(table, order))
    status, reason, complete = _id_status(rows)
    ref = table.reference
    described = [metrics.describe(c) for c in table.columns]
    return {
        "id": table.id, "title": table.title, "status": status, "reason": reason, "complete": complete,
        "row_keys": list(table.rows), "goal": table.goal,
        "series": [{"label": s.label, "run": s.run, "report_series": s.report_series} for s in table.series],
        "columns": [{"name": m.name, "label": m.label, "unit": m.unit, "digits": m.digits} for m in described],
        "rows": rows,
        "reference": None if ref is None else {"printed": ref.printed, "source": ref.source,
                                               "conditions": ref.conditions, "note": ref.note,
                                               "unreadable": list(ref.unreadable)},
        "plot": None if table.plot is None else {"x": table.plot.x, "y": table.plot.y, "kind": table.plot.kind,
                                                 "log_x": table.plot.log_x, "error_bars": table.plot.error_bars},
        "gain": None if table.gain is None else {"metric": table.gain.metric, "over": table.gain.over},
        "note": table.note,
    }


def build(suite: Suite, plans: Sequence[Mapping[str, Any]], results: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every id of ``suite``, in the suite's order."""
    return [build_table(t, plans, results) for t in suite.tables]


def summary(ids: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    counts = {MEASURED: 0, NOT_MEASURABLE: 0, NOT_MEASURED: 0}
    for entry in ids:
        counts[entry["status"]] = counts.get(entry["status"], 0) + 1
    return {"ids": len(ids), **counts}
