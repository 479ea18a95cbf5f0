"""Two or more runs of one suite compared id by id (``vsbench compare`` on suite runs; pure).

Each side is a run's ``suite.json``. Rows of an id are matched by series and key (the same
frame size, rule count, cores ... of the same series); for every column of the id the first
run's figure is the baseline and each other run's change is given in percent. Rows only one
side measured are kept with the other side empty, so a host that could not run a row (four
cores on a 2-core machine) shows as such beside one that could.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence


@dataclass
class SuiteRow:
    id: str
    series: str
    key: dict[str, Any]
    metric: str
    unit: str
    values: list[float | None]
    changes_percent: list[float | None]
    #: Per side: why it has no figure (its row's status and reason), None when it has one.
    gaps: list[str | None]


@dataclass
class SuiteComparison:
    suite: str
    run_names: list[str]
    rows: list[SuiteRow] = field(default_factory=list)
    #: Per id: its status on each side.
    statuses: dict[str, list[str]] = field(default_factory=dict)
    #: Per id: each side's reasons for its rows without a figure.
    reasons: dict[str, list[str | None]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _row_id(row: Mapping[str, Any]) -> str:
    return json.dumps([row.get("series"), row.get("key")], sort_keys=True, default=str)


def _gap(row: Mapping[str, Any] | None) -> str | None:
    """A side's missing figure in a word (its reason is in the id's ``reasons``)."""
    if row is None:
        return "no such row"
    if row.get("status") == "measured":
        return None
    return str(row.get("status")).replace("_", " ")


def compare(sides: Sequence[tuple[str, Mapping[str, Any]]]) -> SuiteComparison:
    """``sides``: (run name, suite.json) pairs, the first the baseline."""
    names = [name for name, _ in sides]
    first = sides[0][1]
    out = SuiteComparison(suite=str(first.get("suite")), run_names=names)
    for name, doc in sides[1:]:
        if doc.get("suite") != first.get("suite"):
            out.notes.append(f"{name} is a run of suite {doc.get('suite')}, not {first.get('suite')}: "
                             "its ids are compared where they share a name")
        if doc.get("profile") != first.get("profile"):
            out.notes.append(f"{name} ran the {doc.get('profile')} profile, {names[0]} the {first.get('profile')} one")
    run_ids = [doc.get("run_id") for _, doc in sides]
    for i, run_id in enumerate(run_ids[1:], start=1):
        if run_id is not None and run_id == run_ids[0]:
            out.notes.append(f"{names[i]} is the same run as {names[0]} (run {run_id}): every change is 0")
    by_side = [{e["id"]: e for e in doc.get("ids") or ()} for _, doc in sides]
    for entry in first.get("ids") or ():
        id_ = entry["id"]
        out.statuses[id_] = [str((ids.get(id_) or {}).get("status", "absent")) for ids in by_side]
        out.reasons[id_] = [(ids.get(id_) or {}).get("reason") for ids in by_side]
        rows_by_side = [{_row_id(r): r for r in (ids.get(id_) or {}).get("rows") or () if r.get("status") != "report_only"}
                        for ids in by_side]
        order = list(dict.fromkeys(k for rows in rows_by_side for k in rows))
        for column in entry.get("columns") or ():
            metric = column["name"]
            for key in order:
                rows = [rows.get(key) for rows in rows_by_side]
                values = [None if r is None or r.get("status") != "measured" else (r.get("values") or {}).get(metric)
                          for r in rows]
                if all(v is None for v in values) and all(r is None or r.get("status") == "measured" for r in rows):
                    continue  # a column this row has no figure for anywhere (gain of the baseline series)
                base = values[0]
                changes = [None] + [None if v is None or not base else 100.0 * (v - base) / base for v in values[1:]]
                sample = next(r for r in rows if r is not None)
                out.rows.append(SuiteRow(id=id_, series=str(sample.get("series")), key=dict(sample.get("key") or {}),
                                         metric=metric, unit=str(column.get("unit") or ""), values=values,
                                         changes_percent=changes, gaps=[_gap(r) for r in rows]))
    return out


def to_json(comparison: SuiteComparison) -> dict[str, Any]:
    return {"suite": comparison.suite, "runs": comparison.run_names, "statuses": comparison.statuses,
            "reasons": comparison.reasons,
            "notes": comparison.notes,
            "rows": [{"id": r.id, "series": r.series, "key": r.key, "metric": r.metric, "unit": r.unit,
                      "values": r.values, "changes_percent": r.changes_percent, "gaps": r.gaps}
                     for r in comparison.rows]}
