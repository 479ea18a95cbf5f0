"""The plot of one suite id (report.html's suite section): our figure per series against the
table's x (a row key or a metric), and the report's own printed figures beside them.

Ours are solid lines (or filled bars) with min-max error bars where repeats gave a spread;
the report's are hollow markers on dashed lines in the same colour, labelled "report". Input
is one id entry of suite.json; nothing is computed here that the id's table does not show.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import matplotlib
from matplotlib.figure import Figure

from vsbench.results.report_plots import PALETTE, RC, _data_uri, _plain, _rendered
from vsbench.results.report_data import finite


def _x_of(row: Mapping[str, Any], x: str) -> Any:
    if x in (row.get("key") or {}):
        return row["key"][x]
    return (row.get("values") or {}).get(x)


def _series_points(rows: Sequence[Mapping[str, Any]], x: str, y: str, source: str) -> dict[str, list[tuple]]:
    """label -> [(x, y, low, high)] from ``values`` (ours) or ``report``."""
    out: dict[str, list[tuple]] = {}
    for row in rows:
        figures = row.get(source) or {}
        yv = finite(figures.get(y))
        xv = _x_of(row, x) if source == "values" else (row.get("key") or {}).get(x, figures.get(x))
        if yv is None or xv is None:
            continue
        low, high = (row.get("spread") or {}).get(y, (None, None)) if source == "values" else (None, None)
        out.setdefault(str(row.get("series")), []).append((xv, yv, low, high))
    return out


def _unit(entry: Mapping[str, Any], name: str) -> str:
    for column in entry.get("columns") or ():
        if column.get("name") == name:
            return f"{column.get('label')} ({column.get('unit')})"
    return name.replace("_", " ")


def suite_figure(entry: Mapping[str, Any]) -> str | None:
    plot = entry.get("plot")
    if not plot:
        return None
    return _rendered("suite", {"rows": entry.get("rows"), "plot": plot, "columns": entry.get("columns")},
                     lambda: _suite_svg(entry))


def _numeric(values: Sequence[Any]) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


def _suite_svg(entry: Mapping[str, Any]) -> str | None:
    plot = entry["plot"]
    x, y = plot["x"], plot["y"]
    rows = entry.get("rows") or []
    ours = _series_points(rows, x, y, "values")
    report = _series_points(rows, x, y, "report")
    if not ours and not report:
        return None
    labels = list(dict.fromkeys([*ours, *report]))
    xs_all = [p[0] for pts in (*ours.values(), *report.values()) for p in pts]
    categorical = plot.get("kind") == "bar" or not _numeric(xs_all)
    categories = sorted(set(xs_all), key=lambda v: (not isinstance(v, (int, float)), v if isinstance(v, (int, float)) else str(v)))
    with matplotlib.rc_context(RC):
        fig = Figure(figsize=(8, 3.4))
        ax = fig.subplots()
        width = 0.8 / max(1, len(labels) * (2 if report else 1))
        for k, label in enumerate(labels):
            color = PALETTE[k % len(PALETTE)]
            for source, points, hollow in (("ours", ours.get(label) or [], False), ("report", report.get(label) or [], True)):
                if not points:
                    continue
                points = sorted(points, key=lambda p: categories.index(p[0]) if categorical else p[0])
                name = _plain(label) + (" (report)" if hollow else " (vsbench)")
                if categorical:
                    offset = (2 * k + (1 if hollow else 0)) if report else k
                    pos = [categories.index(p[0]) - 0.4 + width * (offset + 0.5) for p in points]
                    ax.bar(pos, [p[1] for p in points], width=width, color="white" if hollow else color,
                           edgecolor=color, hatch="//" if hollow else None, label=name)
                    xs = pos
                else:
                    xs = [p[0] for p in points]
                    ax.plot(xs, [p[1] for p in points], color=color, marker="o", linestyle="--" if hollow else "-",
                            markerfacecolor="white" if hollow else color, label=name)
                if not hollow and plot.get("error_bars"):
                    err = [(p[1] - p[2], p[3] - p[1]) if p[2] is not None else (0, 0) for p in points]
                    ax.errorbar(xs, [p[1] for p in points], yerr=list(zip(*err)), fmt="none", ecolor=color, capsize=3)
        if categorical:
            ax.set_xticks(range(len(categories)), [str(c) for c in categories])
        elif plot.get("log_x"):
            ax.set_xscale("log")
        ax.set_xlabel(_plain(_unit(entry, x) if x not in (entry.get("row_keys") or ()) else x.replace("_", " ")))
        ax.set_ylabel(_plain(_unit(entry, y)))
        ax.set_title(_plain(f"{entry.get('id')}: {entry.get('title')}"))
        ax.legend(fontsize=7)
        return _data_uri(fig)
