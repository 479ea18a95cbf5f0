"""``vsbench compare``: parse, load the runs, print or write the comparison.

The comparison itself is :mod:`vsbench.results.compare`; this module only turns it into a
terminal table, CSV, JSON or the HTML page.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
from pathlib import Path
from rich.console import Console
from rich.table import Table

from vsbench.results import compare, compare_page, compare_scaling, writers
from vsbench.runner import run_refs


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", nargs="+", metavar="RUN",
                        help="a run directory or a run id in the results store; RUN1,RUN2 pools repeated runs "
                             "as one side; the first is the baseline")
    parser.add_argument("--metric", action="append", metavar="NAME", default=[],
                        help="only this metric (repeatable), e.g. ndr_fps, latency_p99_ns")
    parser.add_argument("--format", choices=("table", "csv", "json"), default="table",
                        help="what to print (default: a table)")
    parser.add_argument("-o", "--output", type=Path, metavar="FILE",
                        help="write the --format output to FILE instead of stdout")
    parser.add_argument("--html", type=Path, metavar="FILE", help="also write the HTML page with gain bars")
    parser.add_argument("--db", metavar="URL", help="results store (default $VSBENCH_DB, else "
                                                     "RESULTS_DIR/vsbench.sqlite)")
    parser.add_argument("--results-dir", type=Path, metavar="D", default=Path("results"),
                        help="where the default SQLite store is (default ./results)")
    parser.add_argument("-v", "--debug", action="store_true", help="debug logging, tracebacks of internal errors")


def csv_text(comparison: compare.Comparison) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(compare.CSV_COLUMNS), lineterminator="\n")
    writer.writeheader()
    for row in compare.csv_rows(comparison):
        writer.writerow({k: writers._cell(v) for k, v in row.items()})
    return buffer.getvalue()


def terminal_table(comparison: compare.Comparison) -> Table:
    names = comparison.run_names
    table = Table(title=f"vsbench compare: baseline {names[0]}", title_justify="left")
    for header in ("Test", "Frame B", "Metric", "Unit", names[0]):
        table.add_column(header, justify="right" if header in ("Frame B", names[0]) else "left")
    for name in names[1:]:
        table.add_column(name, justify="right")
        table.add_column("change", justify="right")
        table.add_column("significance", justify="left")
    for row in comparison.rows:
        cells = [row.key.test, str(row.key.frame_size_bytes), row.key.metric, row.key.unit,
                 _flagged(row.values[0])]
        for value, change in zip(row.values[1:], row.changes[1:]):
            kind = compare_page.bar_kind(change)
            style = {"better": "green", "worse": "red", "noise": "dim", "unknown": "yellow"}[kind]
            text = "-" if change is None or change.percent is None else f"{change.percent:+.2f} %"
            cells += [_flagged(value), f"[{style}]{text}[/{style}]",
                      "-" if change is None else change.significance]
        table.add_row(*cells)
    return table


def scaling_tables(comparison: compare.Comparison) -> list[Table]:
    """The scaling curves the runs share: count x frame size, a column per run (and each
    other run's change), the drops under the table."""
    tables = []
    for curve in compare_scaling.curves(comparison):
        drops = [curve.drop_sentence(d) for d in curve.drops()]
        table = Table(title=f"Scaling: {curve.title}", title_justify="left",
                      caption="\n".join(drops) or None, caption_justify="left")
        table.add_column(curve.axis.plural.capitalize(), justify="right")
        for size in curve.frame_sizes():
            for i, run in enumerate(curve.runs):
                table.add_column(f"{size} B {run} Mpps", justify="right")
                if i:
                    table.add_column("change", justify="right")
        for count in curve.counts():
            cells = [curve.axis.count_text(count)]
            for size in curve.frame_sizes():
                row = curve.rows.get((count, size))
                for i in range(len(curve.runs)):
                    value = curve.value(count, size, i)
                    mark = " *" if curve.flagged(count, size, i) else ""
                    cells.append("-" if value is None else f"{value / 1e6:.3f}{mark}")
                    if i:
                        change = row.changes[i] if row is not None else None
                        cells.append("-" if change is None or change.percent is None else f"{change.percent:+.2f} %")
            table.add_row(*cells)
        tables.append(table)
    return tables


def repeats_table(figures) -> Table | None:
    """Median and spread over the repeats of a run (``--repeat K``), None without repeats."""
    repeated = [m for m in figures.metrics if len(m.samples) >= 2 and m.basis.endswith("repeats")]
    if not repeated:
        return None
    table = Table(title="Over the repeats: median and spread", title_justify="left")
    for header in ("Test", "Frame B", "Metric", "Median", "Min", "Max", "CV", "n", "Unit"):
        table.add_column(header, justify="left" if header in ("Test", "Metric", "Unit") else "right")
    for m in repeated:
        spread = m.spread
        cv = "-" if spread["cv"] is None else f"{100 * spread['cv']:.2f} %"
        table.add_row(m.key.test, str(m.key.frame_size_bytes), m.key.metric, f"{m.value:,.0f}",
                      f"{spread['min']:,.0f}", f"{spread['max']:,.0f}", cv, str(spread["n"]), m.unit)
    return table


def _flagged(value) -> str:
    """The value, marked ``*`` when a validity flag qualifies it (listed under the table)."""
    return compare_page.fmt_metric(value) + (" *" if value is not None and value.flags else "")


def flag_notes(comparison: compare.Comparison) -> list[str]:
    found: dict[str, set[str]] = {}
    for row in comparison.rows:
        for run, value in zip(comparison.runs, row.values):
            if value is not None:
                for flag in value.flags:
                    found.setdefault(run.name, set()).add(f"{flag} at {row.key.frame_size_bytes} B")
    return [f"* {name}: {', '.join(sorted(flags))}" for name, flags in found.items()]


def run(args: argparse.Namespace, out: Console) -> int:
    if len(args.runs) < 2:
        raise run_refs.RunRefError("compare needs at least two runs (the first is the baseline)")
    url = run_refs.store_url(args.db, args.results_dir)
    sides = [run_refs.load_side(ref, url) for ref in args.runs]
    comparison = compare.compare(sides, args.metric or None)
    if not comparison.rows:
        raise run_refs.RunRefError("the runs have no figure in common" + (f" for {', '.join(args.metric)}"
                                                                         if args.metric else ""))
    if args.html is not None:
        writers.write_atomic(args.html, compare_page.render_html(comparison))
    if args.format == "json":
        doc = compare.to_json(comparison)
        doc["scaling"] = compare_scaling.to_json(compare_scaling.curves(comparison))
        text = json.dumps(doc, indent=2, allow_nan=False) + "\n"
    elif args.format == "csv":
        text = csv_text(comparison)
    else:
        text = None
    if args.output is not None:
        writers.write_atomic(args.output, text if text is not None else _table_text(comparison))
    elif text is not None:
        out.file.write(text)
    else:
        _print_table(comparison, out)
    if args.html is not None:
        out_err = Console(stderr=True)
        out_err.print(f"compare page written to {args.html}", markup=False, highlight=False, soft_wrap=True)
    return 0


def _print_table(comparison: compare.Comparison, out: Console) -> None:
    out.print(terminal_table(comparison))
    for table in scaling_tables(comparison):
        out.print(table)
    names = comparison.run_names
    diffs = comparison.differences
    if diffs:
        table = Table(title="What differs between the runs", title_justify="left")
        table.add_column("Scope")
        table.add_column("Field")
        for name in names:
            table.add_column(name)
        for d in diffs:
            table.add_row(d.scope, d.name, *("-" if v is None else str(v) for v in d.values))
        out.print(table)
    for note in flag_notes(comparison):
        out.print(note, markup=False, highlight=False, soft_wrap=True)
    for note in comparison.notes:
        out.print(f"note: {note}", markup=False, highlight=False, soft_wrap=True)


def _table_text(comparison: compare.Comparison) -> str:
    buffer = io.StringIO()
    _print_table(comparison, Console(file=buffer, width=200, color_system=None))
    return buffer.getvalue()
