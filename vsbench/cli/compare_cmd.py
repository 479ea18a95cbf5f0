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
from rich.markup import escape
from rich.table import Table

from vsbench.results import compare, compare_page, compare_scaling, writers
from vsbench.runner import run_refs


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", nargs="+", metavar="RUN",
                        help="a run directory or a run id in the results store; RUN1,RUN2 pools repeated runs "
                             "as one side; the first is the baseline. One run directory alone: its feature "
                             "matrix (the variants of each testcase against one of them)")
    parser.add_argument("--baseline-variant", metavar="K=V[,K=V]",
                        help="one run: the variant the others are compared with (keys by full or last name, "
                             "e.g. smc_enable=false); default: each matrix's first variant. One without a figure "
                             "(skipped, no NDR) gives way to the first variant that has one; a note says so")
    parser.add_argument("--pair-by-position", action="store_true",
                        help="compare runs that share no testcase (phy2phy_tput against pvp_tput) test by test "
                             "in run order; without it such runs are refused (exit 2)")
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
    names = [escape(h) for h in comparison.run_headings]  # "A <run>", "B <run>": distinct even for one run twice
    table = Table(title=f"vsbench compare: baseline {names[0]}", title_justify="left")
    for header in ("Test", "Frame B", "Metric", "Unit", names[0]):
        table.add_column(header, justify="right" if header in ("Frame B", names[0]) else "left")
    for name in names[1:]:
        table.add_column(name, justify="right")
        table.add_column("change", justify="right")
        table.add_column("significance", justify="left")
    for row in comparison.rows:
        gaps = row.gaps or [None] * len(row.values)
        cells = [escape(row.key.test), str(row.key.frame_size_bytes), row.key.metric, row.key.unit,
                 _flagged(row.values[0], gaps[0])]
        for value, change, gap in zip(row.values[1:], row.changes[1:], gaps[1:]):
            kind = compare_page.bar_kind(change)
            style = {"better": "green", "worse": "red", "noise": "dim", "unknown": "yellow"}[kind]
            text = "-" if change is None or change.percent is None else f"{change.percent:+.2f} %"
            cells += [_flagged(value, gap), f"[{style}]{text}[/{style}]",
                      "-" if change is None else change.significance]
        table.add_row(*cells)
    return table


def scaling_tables(comparison: compare.Comparison) -> list[Table]:
    """The scaling curves the runs share: count x frame size, a column per run (and each
    other run's change), the drops under the table."""
    tables = []
    for curve in compare_scaling.curves(comparison):
        drops = [curve.drop_sentence(d) for d in curve.drops()]
        table = Table(title=escape(f"Scaling: {curve.title}"), title_justify="left",
                      caption="\n".join(drops) or None, caption_justify="left")
        table.add_column(curve.axis.plural.capitalize(), justify="right")
        for size in curve.frame_sizes():
            for i, run in enumerate(curve.runs):
                table.add_column(f"{size} B {compare.side_label(i)} {escape(run)} Mpps", justify="right")
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
        table.add_row(escape(m.key.test), str(m.key.frame_size_bytes), m.key.metric, f"{m.value:,.0f}",
                      f"{spread['min']:,.0f}", f"{spread['max']:,.0f}", cv, str(spread["n"]), m.unit)
    return table


def _flagged(value, gap: str | None = None) -> str:
    """The value, marked ``*`` when a validity flag qualifies it (listed under the table);
    a missing value's reason in a word (``skipped``, ``no NDR``; the notes say more)."""
    if value is None and gap:
        return f"[yellow]{escape(gap)}[/yellow]"
    return escape(compare_page.fmt_metric(value)) + (" *" if value is not None and value.flags else "")


def flag_notes(comparison: compare.Comparison) -> list[str]:
    """What each ``*`` stands for, per run: each flag with its frame sizes in numeric order
    (sorted as text they read "1024 B, 128 B, ..., 64 B")."""
    found: dict[str, dict[str, set[int]]] = {}
    for row in comparison.rows:
        for heading, value in zip(comparison.run_headings, row.values):
            if value is not None:
                for flag in value.flags:
                    found.setdefault(heading, {}).setdefault(flag, set()).add(row.key.frame_size_bytes)
    return [f"* {heading}: " + "; ".join(f"{flag} at {', '.join(f'{s} B' for s in sorted(sizes))}"
                                         for flag, sizes in sorted(flags.items()))
            for heading, flags in found.items()]


def matrix_table(fm) -> Table:
    """A feature matrix (:mod:`vsbench.results.feature_matrix`) as one terminal table. A
    cell without a figure says why in a word (``skipped``, ``no NDR``; the reason is in
    the notes), a figure fewer repeats gave than ran says how many (``2/3``)."""
    from vsbench.results import feature_matrix

    base = fm.variants[fm.effective_baseline()]
    table = Table(title=escape(f"Feature matrix {fm.testcase}: {fm.metric} against {base.short()}"),
                  title_justify="left")
    caches = feature_matrix.cache_columns(fm)
    extras = list(dict.fromkeys(label for cell in fm.cells.values() for label in cell.extra))
    active, _ = feature_matrix.active_split(fm)  # the labels every variant shares: a line under it
    headline, scale = ("Mfps", 1e6) if fm.metric.endswith("_fps") else ("Gbit/s", 1.0)
    per_core = fm.metric.endswith("_fps")
    headers = ["Variant", "Frame B", headline, "Gain", "Significance", *active, *extras, *(f"{c} %" for c in caches),
               *(["Upcalls"] if caches or per_core else []), "Cores", *(["Mfps/core"] if per_core else [])]
    for header in headers:
        table.add_column(header, justify="left" if header in ("Variant", "Significance", *active) else "right")
    for i, size, cell in feature_matrix.ordered_cells(fm):
        value = cell.value
        mark = " *" if (value is not None and value.flags) or cell.oversubscribed else ""
        if value is None:
            shown = f"[yellow]{escape(cell.gap or '-')}[/yellow]"
        else:
            partial = f" ({cell.measured}/{cell.repeats})" if cell.measured < cell.repeats else ""
            shown = f"{value.value / scale:.4f}{partial}{mark}"
        if i == fm.baseline_of(size):
            gain, verdict = "baseline", ""
        elif fm.baseline_of(size) is None or value is None:
            gain, verdict = "-", ""
        else:
            kind = compare_page.bar_kind(cell.change)
            style = {"better": "green", "worse": "red", "noise": "dim", "unknown": "yellow"}[kind]
            pct = cell.change.percent if cell.change is not None else None
            gain = f"[{style}]{'-' if pct is None else f'{pct:+.1f} %'}[/{style}]"
            verdict = "" if cell.change is None else cell.change.significance
        row = [escape(fm.variants[i].short()), str(size), shown, gain, verdict]
        row += [escape(cell.active.get(a, "-")) for a in active]
        row += [f"{cell.extra[e]:,.3g}" if e in cell.extra else "-" for e in extras]
        row += [f"{cell.cache_percent[c]:.1f}" if c in cell.cache_percent else "-" for c in caches]
        if caches or per_core:
            row.append("-" if cell.upcalls is None else f"{cell.upcalls:,.0f}")
        row.append("-" if cell.switch_cores is None else f"{cell.switch_cores:.2f}")
        if per_core:
            row.append("-" if cell.fps_per_core is None else f"{cell.fps_per_core / 1e6:.3f}")
        table.add_row(*row)
    return table


def matrix_flag_notes(fm) -> list[str]:
    """What each ``*`` of a matrix stands for: the flags of the figures it marks."""
    found: dict[str, list[str]] = {}
    for (i, size), cell in sorted(fm.cells.items(), key=lambda item: (item[0][1], item[0][0])):
        if cell.value is not None and cell.value.flags:
            found.setdefault(", ".join(cell.value.flags), []).append(
                fm.variants[i].short() + (f" at {size} B" if len(fm.frame_sizes) > 1 else ""))
    return [f"* {flags}: {'; '.join(where)}" for flags, where in found.items()]


def print_matrices(matrices, out: Console) -> None:
    from vsbench.results import feature_matrix

    for fm in matrices:
        out.print(matrix_table(fm))
        _, common = feature_matrix.active_split(fm)
        if common:
            shared = ", ".join(f"{k}={v}" for k, v in common.items())
            out.print(f"in effect in every variant (the switch's account): {shared}", markup=False,
                      highlight=False, soft_wrap=True)
        for note in fm.notes:
            out.print(f"note: {note}", markup=False, highlight=False, soft_wrap=True)
        for note in matrix_flag_notes(fm):
            out.print(note, markup=False, highlight=False, soft_wrap=True)


def load_matrices(run_dir: Path, baseline: str | None):
    """The feature matrices of a run directory (its results.json holds the cache figures)."""
    from vsbench.results import feature_matrix, report_data, run_metrics

    try:
        files = report_data.load_run(run_dir)
    except report_data.ReportInputError as exc:
        raise run_refs.RunRefError(str(exc)) from None
    figures = run_metrics.extract(files.results, files.sysinfo, files.plans, files.trials)
    try:
        return feature_matrix.matrices(files.results, figures, feature_matrix.parse_baseline(baseline))
    except feature_matrix.MatrixError as exc:
        raise run_refs.RunRefError(str(exc)) from None


def run_matrix(args: argparse.Namespace, out: Console) -> int:
    """``vsbench compare RUN_DIR``: the run's feature matrices."""
    from vsbench.results import feature_matrix

    path = Path(args.runs[0])
    if not path.is_dir():
        raise run_refs.RunRefError("compare needs at least two runs (the first is the baseline), or one run "
                                   "directory with a matrix of variants")
    if args.html is not None:
        # the compare page sets runs side by side; one run's matrices, curves and plots are
        # in its own report.html
        raise run_refs.RunRefError(f"--html needs two or more runs; one run's matrix and scaling plots are in "
                                   f"{path / 'report.html'}")
    found = load_matrices(path, args.baseline_variant)
    if not found:
        raise run_refs.RunRefError(f"{path}: no testcase ran with two or more variants (a matrix, or "
                                   "--test-params lists): compare needs at least two runs")
    if args.format == "json":
        text = json.dumps([feature_matrix.to_json(fm) for fm in found], indent=2, allow_nan=False) + "\n"
    elif args.format == "csv":
        buffer = io.StringIO()
        rows = [dict(row, testcase=doc["testcase"], variant=json.dumps(row["variant"], sort_keys=True),
                     cache_hit_percent=json.dumps(row["cache_hit_percent"], sort_keys=True), flags="; ".join(row["flags"]),
                     extra=json.dumps(row["extra"], sort_keys=True), reasons="; ".join(row["reasons"]),
                     active=json.dumps(row["active"], sort_keys=True))
                for doc in (feature_matrix.to_json(fm) for fm in found) for row in doc["rows"]]
        # matrices of several testcases have different headline columns (ndr_fps, tcp_gbps)
        fields = list(dict.fromkeys(k for row in rows for k in row if k != "testcase"))
        writer = csv.DictWriter(buffer, fieldnames=["testcase", *fields], lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: writers._cell(v) for k, v in row.items()})
        text = buffer.getvalue()
    else:
        buffer = io.StringIO()
        print_matrices(found, Console(file=buffer, width=200, color_system=None))
        text = buffer.getvalue() if args.output is not None else None
    if args.output is not None:
        writers.write_atomic(args.output, text)
    elif text is not None:
        out.file.write(text)
    else:
        print_matrices(found, out)
    return 0


def suite_documents(refs: list[str]) -> list[tuple[str, dict]] | None:
    """Each side's suite.json when every side is one run directory of a suite, else None."""
    from vsbench.results import report_data

    docs = []
    for ref in refs:
        path = Path(ref)
        files = path / report_data.SUITE_FILE
        if "," in ref or not files.is_file():
            return None
        try:
            docs.append((path.name, json.loads(files.read_text(encoding="utf-8"))))
        except (OSError, ValueError) as exc:
            raise run_refs.RunRefError(f"{files}: cannot read: {exc}") from None
    return docs


def suite_tables(comparison) -> list[Table]:
    """One table per id: each row's figure on every run and its change against the first."""
    from vsbench.results import compare_suite  # noqa: F401 - the type of ``comparison``

    names = [f"{compare.side_label(i)} {n}" for i, n in enumerate(comparison.run_names)]
    tables = []
    for id_, statuses in comparison.statuses.items():
        rows = [r for r in comparison.rows if r.id == id_]
        title = f"{id_}: " + ", ".join(f"{n} {s.replace('_', ' ')}" for n, s in zip(names, statuses))
        reasons = [f"{n}: {r}" for n, r in zip(names, comparison.reasons.get(id_) or ()) if r]
        table = Table(title=escape(title), title_justify="left", caption=escape("\n".join(reasons)) or None,
                      caption_justify="left")
        for header in ("Series", "Key", "Metric", "Unit", names[0]):
            table.add_column(escape(header), justify="right" if header == names[0] else "left")
        for name in names[1:]:
            table.add_column(escape(name), justify="right")
            table.add_column("change", justify="right")
        for row in rows:
            key = ", ".join(f"{k} {v}" for k, v in row.key.items())
            cells = [escape(row.series), escape(key), row.metric, escape(row.unit)]
            for i, value in enumerate(row.values):
                text = f"{value:,.4g}" if value is not None else f"[yellow]{escape(row.gaps[i] or '-')}[/yellow]"
                cells.append(text)
                if i:
                    change = row.changes_percent[i]
                    cells.append("-" if change is None else f"{change:+.1f} %")
            table.add_row(*cells)
        tables.append(table)
    return tables


def run_suites(args: argparse.Namespace, docs: list[tuple[str, dict]], out: Console) -> int:
    """``vsbench compare RUN_A RUN_B`` on runs of a suite: id by id."""
    from vsbench.results import compare_suite

    comparison = compare_suite.compare(docs)
    seen: dict[str, int] = {}
    for i, (name, _) in enumerate(docs):
        if name in seen:
            Console(stderr=True).print(f"vsbench: warning: {compare.side_label(i)} and "
                                       f"{compare.side_label(seen[name])} are the same run ({name}): every change "
                                       "between them is zero by construction", markup=False, highlight=False,
                                       soft_wrap=True)
        seen.setdefault(name, i)
    if args.format == "json":
        text = json.dumps({"suite": compare_suite.to_json(comparison)}, indent=2, allow_nan=False) + "\n"
    elif args.format == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(["id", "series", "key", "metric", "unit", *comparison.run_names])
        for row in comparison.rows:
            writer.writerow([row.id, row.series, json.dumps(row.key, sort_keys=True), row.metric, row.unit,
                             *("" if v is None else repr(v) for v in row.values)])
        text = buffer.getvalue()
    else:
        buffer = io.StringIO()
        console = Console(file=buffer, width=200, color_system=None) if args.output is not None else out
        for table in suite_tables(comparison):
            console.print(table)
        for note in comparison.notes:
            console.print(f"note: {note}", markup=False, highlight=False, soft_wrap=True)
        text = buffer.getvalue() if args.output is not None else None
    if args.output is not None:
        writers.write_atomic(args.output, text or "")
    elif text is not None:
        out.file.write(text)
    return 0


def check_metric_names(names, sides) -> None:
    """Each ``--metric`` must be a figure some compared run has: a typo among several names
    was silently dropped from the comparison (and alone it read as "no figure in common")."""
    import difflib

    have = sorted({m.key.metric for side in sides for m in side.metrics})
    for name in names:
        if name not in have:
            close = difflib.get_close_matches(name, have, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise run_refs.RunRefError(f"--metric {name}: no compared run has this figure{hint} "
                                       f"(metrics: {', '.join(have)})")


def run(args: argparse.Namespace, out: Console) -> int:
    if len(args.runs) == 1:
        return run_matrix(args, out)
    docs = suite_documents(args.runs)
    if docs is not None and args.html is None and not args.metric:
        return run_suites(args, docs, out)
    url = run_refs.store_url(args.db, args.results_dir)
    sides = [run_refs.load_side(ref, url) for ref in args.runs]
    check_metric_names(args.metric, sides)
    try:
        comparison = compare.compare(sides, args.metric or None, pair_by_position=args.pair_by_position)
    except compare.NotComparable as exc:
        raise run_refs.RunRefError(str(exc)) from None
    warn = Console(stderr=True)
    for warning in comparison.warnings:
        warn.print(f"vsbench: warning: {warning}", markup=False, highlight=False, soft_wrap=True)
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
    names = comparison.run_headings
    diffs = comparison.differences
    if diffs:
        table = Table(title="What differs between the runs", title_justify="left")
        table.add_column("Scope")
        table.add_column("Field")
        for name in names:
            table.add_column(escape(name))
        for d in diffs:
            table.add_row(escape(d.scope), d.name, *("-" if v is None else escape(str(v)) for v in d.values))
        out.print(table)
    for note in flag_notes(comparison):
        out.print(note, markup=False, highlight=False, soft_wrap=True)
    for warning in comparison.warnings:  # again under the table, where a saved -o FILE keeps it
        out.print(f"warning: {warning}", markup=False, highlight=False, soft_wrap=True)
    for note in comparison.notes:
        out.print(f"note: {note}", markup=False, highlight=False, soft_wrap=True)


def _table_text(comparison: compare.Comparison) -> str:
    buffer = io.StringIO()
    _print_table(comparison, Console(file=buffer, width=200, color_system=None))
    return buffer.getvalue()
