"""report.html's suite section: one heading per id of the report a suite reproduces, with the
id's rows (ours and, where the report prints one, the report's own figure beside it), why a
row was not measured, the figure's source in the report, and a plot.

Read from ``suite.json`` alone (written by :mod:`vsbench.suite.document`, schema
``suite_result.schema.json``); a run without one has no suite section.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

from vsbench.results import report_plots_suite
from vsbench.results.page_model import Group, Heading, Link, NoteCell, NoteItem, Paragraph, compact
from vsbench.results.report_data import RunFiles, finite
from vsbench.results.report_page import DASH, badge, figure, kv_table, table

KEY_LABELS = {"frame_size": ("Frame size", "B"), "load_percent": ("Offered load", "%")}
STATUS_BADGE = {"measured": "ok", "not_measurable": "info", "not_measured": "error"}
ROW_BADGE = {"measured": "ok", "not_runnable": "info", "skipped": "info", "failed": "error", "report_only": "info"}


def anchor(id_: str) -> str:
    """The HTML id of a suite id's section (``000/T7-5`` -> ``suite-000-T7-5``)."""
    return "suite-" + re.sub(r"[^A-Za-z0-9_-]+", "-", id_)


def _fmt(value: Any, digits: int) -> str:
    number = finite(value)
    if number is None:
        return DASH
    return f"{number:,.{digits}f}"


def _key_text(value: Any) -> str:
    if value is None:
        return DASH
    if isinstance(value, float) and value.is_integer():
        return f"{int(value):,}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def _status_text(entry: Mapping[str, Any]) -> str:
    status = str(entry.get("status"))
    if status == "measured" and not entry.get("complete"):
        return "measured (in part)"
    return status.replace("_", " ")


def _id_table(entry: Mapping[str, Any]) -> Any:
    rows = entry.get("rows") or []
    columns = entry.get("columns") or []
    with_report = {c["name"] for c in columns if any(c["name"] in (r.get("report") or {}) for r in rows)}
    headers: list[tuple[str, ...]] = []
    for key in entry.get("row_keys") or ():
        label, unit = KEY_LABELS.get(key, (key.replace("_", " ").capitalize(), ""))
        headers.append((label, unit))
    headers.append(("Series", ""))
    for column in columns:
        group = f"{column['label']} ({column['unit']})"
        headers.append((group, "vsbench", ""))
        if column["name"] in with_report:
            headers.append((group, "report", ""))
    headers.append(("Row", "status, caveats"))
    body, classes = [], []
    keys = list(entry.get("row_keys") or ())
    for row in rows:
        cells: list[Any] = [_key_text((row.get("key") or {}).get(k)) for k in keys]
        cells.append(row.get("series") or DASH)
        for column in columns:
            digits = int(column.get("digits") or 0)
            value = (row.get("values") or {}).get(column["name"])
            text = _fmt(value, digits)
            spread = (row.get("spread") or {}).get(column["name"])
            if spread and value is not None:
                text += f" ({_fmt(spread[0], digits)}–{_fmt(spread[1], digits)}, n={row.get('repeats')})"
            cells.append(text)
            if column["name"] in with_report:
                cells.append(_fmt((row.get("report") or {}).get(column["name"]), digits))
        items = []
        if row["status"] != "measured":
            items.append(NoteItem("info" if row["status"] == "report_only" else "warning",
                                  row["status"].replace("_", " ") + (f": {row['reason']}" if row.get("reason") else "")))
        if row.get("caveats"):
            items.append(NoteItem("warning", "; ".join(row["caveats"])))
        cells.append(NoteCell(tuple(items)) if items else "")
        body.append(cells)
        classes.append({"failed": "bad", "report_only": "muted", "not_runnable": "muted", "skipped": "muted"}
                       .get(row["status"], ""))
    return table(headers, body, numeric_from=len(keys) + 1, numeric_to=len(headers) - 1, row_classes=classes)


def _reference_text(entry: Mapping[str, Any]) -> list[Any]:
    ref = entry.get("reference") or {}
    if not ref:
        return [Paragraph.of("The report's own figures for this id are not in the suite.", "muted")]
    if not ref.get("printed"):
        text = "The report shows this id as a chart only; it prints no figure to set beside ours"
        return [Paragraph.of(text + (f" ({ref['note']})." if ref.get("note") else "."), "muted")]
    parts = [f"Report's figures: {ref.get('source') or 'source not given'}"]
    if ref.get("conditions"):
        parts.append(f"measured there under: {ref['conditions']}")
    out = [Paragraph.of("; ".join(parts) + ".", "muted")]
    if ref.get("note"):
        out.append(Paragraph.of(f"Note on the report's figures: {ref['note']}", "muted"))
    return out


def _id_section(entry: Mapping[str, Any]) -> Group:
    status = str(entry.get("status"))
    blocks: list[Any] = [Heading(3, f"{entry['id']} — {entry.get('title')}",
                                 badge(_status_text(entry), STATUS_BADGE.get(status, "info")))]
    if entry.get("reason") and status != "measured":
        blocks.append(Paragraph.of(f"Not measured here: {entry['reason']}"))
    elif entry.get("reason"):
        blocks.append(Paragraph.of(f"Rows not measured here: {entry['reason']}", "muted"))
    if entry.get("note"):
        blocks.append(Paragraph.of(str(entry["note"])))
    blocks.append(_id_table(entry))
    blocks += _reference_text(entry)
    blocks.append(figure(report_plots_suite.suite_figure(entry),
                         f"{entry['id']}: vsbench's figures (solid) and the report's (hollow, dashed) where it prints them"))
    return Group(compact(blocks), layout="section", anchor=anchor(str(entry["id"])), css="plan")


def _overview(suite: Mapping[str, Any]) -> list[Any]:
    summary = suite.get("summary") or {}
    pairs = [("Suite", f"{suite.get('suite')} — {suite.get('title')}"),
             ("Report", suite.get("report") or DASH),
             ("Profile", f"{suite.get('profile')}: {suite.get('profile_description') or ''}".strip()),
             ("Ids", f"{summary.get('ids', 0)}: {summary.get('measured', 0)} measured, "
                     f"{summary.get('not_measurable', 0)} not measurable on this host, "
                     f"{summary.get('not_measured', 0)} not measured"),
             ("Status", badge(str(suite.get("status")), "ok" if suite.get("status") == "complete" else "warning"))]
    rows = []
    for entry in suite.get("ids") or ():
        ours = [r for r in entry.get("rows") or () if r.get("status") != "report_only"]
        measured = sum(1 for r in ours if r.get("status") == "measured")
        rows.append([Link(str(entry["id"]), "#" + anchor(str(entry["id"]))), entry.get("title") or DASH,
                     badge(_status_text(entry), STATUS_BADGE.get(str(entry.get("status")), "info")),
                     f"{measured} of {len(ours)}", entry.get("reason") or ""])
    ids = table([("Id", ""), ("Measures", ""), ("Status", ""), ("Rows", "measured"), ("Why not (all) measured", "")],
                rows, numeric_from=3, numeric_to=4)
    not_run = [r for r in suite.get("runs") or () if r.get("status") != "runnable"]
    notes = [Paragraph.of(f"Run {r['name']} ({r['test']}): {str(r['status']).replace('_', ' ')}: {r.get('reason')}", "muted")
             for r in not_run]
    notes += [Paragraph.of(f"Run {r['name']}: {r['note']}", "muted") for r in suite.get("runs") or () if r.get("note")]
    return [kv_table(pairs), ids, *notes]


def suite_section(files: RunFiles) -> list[Any]:
    """The blocks of the suite section ([] when the run is not a suite's)."""
    suite = files.suite
    if not suite:
        return []
    blocks: list[Any] = [Heading(2, f"Suite {suite.get('suite')}: the report's tables, id by id"),
                         *_overview(suite)]
    blocks += [_id_section(entry) for entry in suite.get("ids") or ()]
    return [Group(blocks, layout="section", anchor="suite", css="suite")]


def ids_of(suite: Mapping[str, Any] | None) -> Sequence[str]:
    return [str(e.get("id")) for e in (suite or {}).get("ids") or ()]
