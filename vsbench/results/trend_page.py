"""The trend page (``vsbench db trend``): one figure of one test over the stored runs.

The model of ``templates/trend.html.j2``: a line per frame size (and per switch, when runs
of several switches are in the store) with each run's interval as a whisker, then the
table of every point. Pure: the points come from :meth:`vsbench.results.store.Store.trend`.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Sequence

from vsbench.results import compare_plots, render
from vsbench.results.compare_page import fmt_metric
from vsbench.results.page_model import Badge, Paragraph, Table, figure
from vsbench.results.report_page import DASH
from vsbench.results.run_metrics import unit_of
from vsbench.results.store import TrendPoint


def series(points: Sequence[TrendPoint]) -> dict[str, list[tuple[str, float, float | None, float | None]]]:
    """Series name (frame size, and switch when several) -> (run label, value, low, high)."""
    switches = {p.vswitch for p in points}
    out: dict[str, list[tuple[str, float, float | None, float | None]]] = {}
    for p in points:
        name = f"{p.value.key.frame_size_bytes} B" + (f" {p.vswitch}" if len(switches) > 1 else "")
        label = f"{(p.started_at or '')[:19]} {p.run_id}"
        interval = p.value.uncertainty
        out.setdefault(name, []).append((label, p.value.value, None if interval is None else interval.low,
                                         None if interval is None else interval.high))
    return out


def build(test: str, metric: str, points: Sequence[TrendPoint], store_name: str,
          generated_at: str | None = None) -> dict[str, Any]:
    generated_at = generated_at or datetime.now(timezone.utc).isoformat(timespec="seconds")
    unit = unit_of(metric)[0]
    rows: list[list[Any]] = []
    classes = []
    for p in points:
        interval = p.value.uncertainty
        rows.append([p.started_at or DASH, p.run_id, p.vswitch or DASH, str(p.value.key.frame_size_bytes),
                     fmt_metric(p.value),
                     DASH if interval is None else f"{interval.low:,.0f} – {interval.high:,.0f}",
                     p.value.basis or DASH,
                     Badge(", ".join(p.value.flags), "warning") if p.value.flags else Badge("ok", "ok")])
        classes.append("bad" if p.value.flags else "")
    table = Table([("Started", "UTC"), ("Run", ""), ("vSwitch", ""), ("Frame size", "B"), (metric, unit),
                   ("Interval", unit), ("Interval from", ""), ("Validity", "")], rows, numeric_from=3,
                  numeric_to=6, row_classes=classes)
    fig = figure(compare_plots.trend_figure(series(points), metric, unit),
                 f"{metric} of {test} per run, oldest first (results store): median over repeats; whiskers "
                 "the 95 % interval over repeats, else the single run's own interval (search bounds, probes).")
    return {"page": {
        "title": f"vsbench trend {test} {metric}",
        "heading": f"vsbench trend — {test}",
        "heading_mono": metric,
        "subtitle": f"generated {generated_at} from {store_name}; {len({p.run_id for p in points})} run(s)",
        "figures": [fig] if fig else [Paragraph.of("No stored run has this figure.", "muted")],
        "table": [table],
        "blocks": [],
    }}


def render_html(test: str, metric: str, points: Sequence[TrendPoint], store_name: str) -> str:
    return render.render("trend.html.j2", **build(test, metric, points, store_name))
