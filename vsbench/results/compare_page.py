"""The compare page (``vsbench compare ... --html FILE``): the model of
``templates/compare.html.j2``, built from a :class:`~vsbench.results.compare.Comparison`.

What the reader gets, top to bottom: the runs compared, what differs between them (the
system under test of sysinfo.json, each test's switch, deployment, switching operations,
...), the gain bars of every throughput figure against the baseline (the tables of Intel's
optimized-deployment report, drawn), the scaling curves of count matrices (rules, routes,
next hops, flows: count x frame size with a column per run and the drop from the smallest
count to the largest, as the Netronome and Brocade vRouter reports print them), and every
figure with its % change and significance.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Sequence

from vsbench.results import compare_plots, compare_scaling, render
from vsbench.results.compare import Comparison, Row
from vsbench.results.page_model import Badge, Bar, Heading, KeyValues, Paragraph, Table, figure
from vsbench.results.report_page import DASH, fmt_fixed, fmt_value
from vsbench.results.significance import SIGNIFICANT, WITHIN_NOISE, Change
from vsbench.results.run_metrics import MetricValue


def fmt_metric(value: MetricValue | None) -> str:
    """The value with its spread: ``996,421`` or ``996,421 ±1.2 % (n=3)``."""
    if value is None:
        return DASH
    digits = 0 if abs(value.value) >= 100 else 2
    text = fmt_fixed(value.value, digits)
    spread = value.spread
    if spread["n"] >= 2:
        cv = spread["cv"]
        text += (f" ±{100 * cv:.1f} %" if cv is not None else "") + f" (n={spread['n']})"
    return text


def fmt_change(change: Change | None) -> str:
    if change is None or change.percent is None:
        return DASH
    text = f"{change.percent:+.2f} %"
    if change.percent_low is not None and change.percent_high is not None:
        text += f" [{change.percent_low:+.1f}, {change.percent_high:+.1f}]"
    return text


def bar_kind(change: Change | None) -> str:
    if change is None or change.percent is None:
        return "unknown"
    if change.significance == WITHIN_NOISE:
        return "noise"
    if change.significance != SIGNIFICANT:
        return "unknown"
    return "better" if change.better else "worse"


def significance_badge(change: Change | None) -> Badge | str:
    if change is None:
        return "baseline"
    kind = {"better": "ok", "worse": "error", "noise": "info", "unknown": "warning"}[bar_kind(change)]
    return Badge(change.significance, kind)


def _scale(rows: Sequence[Row]) -> float:
    largest = max((abs(c.percent) for r in rows for c in r.changes if c is not None and c.percent is not None),
                  default=0.0)
    return max(largest, 5.0)


def rows_table(comparison: Comparison, rows: Sequence[Row]) -> Table:
    names = comparison.run_headings
    headers: list[tuple[str, ...]] = [("Test", ""), ("Frame size", "B"), ("Metric", ""), ("Unit", "")]
    headers.append((f"Baseline: {names[0]}", "value", ""))
    for name in names[1:]:
        headers += [(name, "value", ""), (name, "change", "% vs baseline"), (name, "gain", ""),
                    (name, "significance", "")]
    scale = _scale(rows)
    table_rows: list[list[Any]] = []
    classes = []
    for row in rows:
        cells: list[Any] = [row.key.test, str(row.key.frame_size_bytes), row.key.metric, row.key.unit,
                            fmt_metric(row.values[0])]
        flagged = False
        for value, change in zip(row.values[1:], row.changes[1:]):
            cells += [fmt_metric(value), fmt_change(change),
                      Bar(None if change is None else change.percent, "", bar_kind(change), scale),
                      significance_badge(change)]
            flagged = flagged or bool(value and value.flags)
        flagged = flagged or bool(row.values[0] and row.values[0].flags)
        table_rows.append(cells)
        classes.append("bad" if flagged else "")
    return Table(headers, table_rows, numeric_from=4, numeric_to=len(headers), row_classes=classes)


def scaling_table(curve: compare_scaling.CurveComparison) -> Table:
    """Count x frame size: each run's frame rate, the others' change against the baseline,
    and a last row with each run's drop from the smallest count to the largest."""
    counts, sizes, runs = curve.counts(), curve.frame_sizes(), curve.runs
    headers: list[tuple[str, ...]] = [(curve.axis.plural.capitalize(), "")]
    for size in sizes:
        for i, run in enumerate(runs):
            headers.append((f"{size} B", f"{run}", "Mpps"))
            if i:
                headers.append((f"{size} B", "change", "% vs baseline"))
    rows: list[list[Any]] = []
    classes = []
    for count in counts:
        row: list[Any] = [curve.axis.count_text(count)]
        flagged = False
        for size in sizes:
            crow = curve.rows.get((count, size))
            for i in range(len(runs)):
                value = curve.value(count, size, i)
                mark = " *" if curve.flagged(count, size, i) else ""
                flagged = flagged or bool(mark)
                row.append(DASH if value is None else f"{value / 1e6:,.3f}{mark}")
                if i:
                    row.append(fmt_change(crow.changes[i] if crow is not None else None))
        rows.append(row)
        classes.append("bad" if flagged else "")
    drops = {(d.run, d.frame_size_bytes): d for d in curve.drops()}
    if drops:
        row = [f"drop {curve.axis.count_text(counts[0])} → {curve.axis.count_text(counts[-1])}"]
        for size in sizes:
            for i, run in enumerate(runs):
                d = drops.get((run, size))
                row.append(DASH if d is None else f"{d.ratio:.2f}× ({d.percent:+.1f} %)")
                if i:
                    row.append("")
        rows.append(row)
        classes.append("")
    return Table(headers, rows, numeric_from=1, row_classes=classes)


def scaling_blocks(comparison: Comparison) -> list[Any]:
    """The Scaling section's blocks; [] when the runs have no count matrix in common."""
    blocks: list[Any] = []
    for curve in compare_scaling.curves(comparison):
        blocks.append(Heading(3, curve.title))
        fig = figure(compare_plots.scaling_figure(curve),
                     f"{curve.axis.label} versus {curve.goal} frame rate of each run (Mpps, aggregate; log count "
                     "axis; colour: frame size, line style: run).")
        if fig is not None:
            blocks.append(fig)
        for drop in curve.drops():
            blocks.append(Paragraph.of(curve.drop_sentence(drop)))
        blocks.append(scaling_table(curve))
        blocks.append(Paragraph.of("* a flagged value (invalid trial, irregular search, generator-limited or CPU "
                                   "oversubscribed: see the table below and the run's report).", "muted"))
    return blocks


def build(comparison: Comparison, generated_at: str | None = None) -> dict[str, Any]:
    """The page model of ``templates/compare.html.j2``."""
    generated_at = generated_at or datetime.now(timezone.utc).isoformat(timespec="seconds")
    names = comparison.run_headings
    runs = [KeyValues([(("Baseline A" if i == 0 else f"Run {names[i].split(' ', 1)[0]}"),
                        f"{r.name} · started {r.started_at or DASH} · status {r.status or DASH}")
                       for i, r in enumerate(comparison.runs)])]
    sut = [d for d in comparison.differences if d.scope == "sut"]
    tests = [d for d in comparison.differences if d.scope != "sut"]
    differences: list[Any] = []
    if tests:
        differences.append(Heading(3, "Tests"))
        differences.append(Table([("Test", ""), ("Field", ""), *((n, "") for n in names)],
                                 [[d.scope, d.name, *(fmt_value(v) if v is not None else DASH for v in d.values)]
                                  for d in tests], numeric_from=99))
    differences.append(Heading(3, "System under test (sysinfo.json)"))
    if sut:
        differences.append(Table([("Field", ""), *((n, "") for n in names)],
                                 [[d.name, *(fmt_value(v) if v is not None else DASH for v in d.values)] for d in sut],
                                 numeric_from=99))
    else:
        differences.append(Paragraph.of("The runs' sysinfo.json agree on every compared field.", "allclear"))
    throughput = [r for r in comparison.rows if r.key.unit == "fps"]
    gains = [figure(compare_plots.gain_figure(comparison, throughput),
                    "Throughput change of each run against the baseline, per test and frame size (results.json): "
                    "bars in %, whiskers the 95 % interval where repeats give one; grey bars are within noise "
                    "or of unknown significance.")]
    gains = [g for g in gains if g is not None] or [Paragraph.of("No throughput figure in common.", "muted")]
    table = [rows_table(comparison, comparison.rows),
             Paragraph.of("Values are medians over repeats (±: coefficient of variation, n: samples). Change is "
                          "against the baseline, with its 95 % interval where both sides have repeats. "
                          "Significance: Welch's t-test with repeats on both sides; otherwise disjoint "
                          "measurement intervals (search bounds, probe confidence intervals); unknown when "
                          "neither exists. Highlighted rows carry a validity flag (see each run's report).",
                          "muted")]
    notes = [Paragraph.of(f"warning: {w}", "error") for w in comparison.warnings]
    notes += [Paragraph.of(n, "muted") for n in comparison.notes]
    return {
        "page": {
            "title": f"vsbench compare {' vs '.join(names)}",
            "heading": "vsbench compare",
            "heading_mono": " vs ".join(names),
            "subtitle": f"generated {generated_at}; baseline {names[0]}",
            "runs": runs,
            "differences": differences,
            "gains": gains,
            "scaling": scaling_blocks(comparison),
            "table": table,
            "blocks": notes,
        }
    }


def render_html(comparison: Comparison, generated_at: str | None = None) -> str:
    return render.render("compare.html.j2", **build(comparison, generated_at))
