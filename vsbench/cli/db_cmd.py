"""``vsbench db import|list|show|trend|delete``: the results store from the command line."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from vsbench.results import report_data, run_tags, trend_page, writers
from vsbench.results.compare_page import fmt_metric
from vsbench.results.store import Store, StoreError
from vsbench.runner import run_refs


def add_arguments(parser: argparse.ArgumentParser, parser_class: type) -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--db", metavar="URL", help="results store: sqlite:///FILE or postgresql://... "
                                                     "(default $VSBENCH_DB, else RESULTS_DIR/vsbench.sqlite)")
    common.add_argument("--results-dir", type=Path, metavar="D", default=Path("results"),
                        help="where the default SQLite store is (default ./results)")
    common.add_argument("-v", "--debug", action="store_true", help="debug logging, tracebacks of internal errors")
    sub = parser.add_subparsers(dest="action", metavar="ACTION", parser_class=parser_class)
    sub.required = True
    p = sub.add_parser("import", parents=[common], help="record run directories in the store (again: no duplicate)")
    p.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR")
    p = sub.add_parser("list", parents=[common], help="list the stored runs, newest first")
    p.add_argument("--testcase", metavar="NAME", help="only runs with this testcase")
    p.add_argument("--tag", action="append", default=[], metavar="KEY=VALUE",
                   help="only runs tagged so (vsbench --tag; repeatable: every one)")
    p.add_argument("--limit", type=int, default=50, metavar="N", help="at most N runs (default 50; 0: all)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p = sub.add_parser("show", parents=[common], help="one stored run: what ran and its figures (a run "
                                                      "directory: as vsbench show RUN_DIR)")
    p.add_argument("run", metavar="RUN", help="run id (or a unique prefix), or a run directory")
    p.add_argument("--json", action="store_true", help="print the stored results.json, sysinfo.json and plans")
    p = sub.add_parser("trend", parents=[common], help="one figure over the stored runs, as a table and an HTML page")
    p.add_argument("--test", metavar="NAME", help="testcase name or test label")
    p.add_argument("--suite", metavar="NAME", help="instead of --test: a suite's id over its stored runs (with --id)")
    p.add_argument("--id", dest="suite_id", metavar="ID", help="with --suite: the id (e.g. 000/T7-5)")
    p.add_argument("--series", metavar="LABEL", help="with --suite: only this series of the id")
    p.add_argument("--metric", default="ndr_fps", metavar="NAME", help="figure to trend (default ndr_fps)")
    p.add_argument("--frame-size", type=int, metavar="B", help="only this frame size")
    p.add_argument("--vswitch", metavar="X", help="only runs of this vSwitch")
    p.add_argument("--tag", action="append", default=[], metavar="KEY=VALUE",
                   help="only runs tagged so (vsbench --tag; repeatable: every one)")
    p.add_argument("--limit", type=int, default=0, metavar="N", help="the last N runs only")
    p.add_argument("--html", type=Path, metavar="FILE", help="write the trend page")
    p = sub.add_parser("delete", parents=[common], help="remove runs from the store (not their run directories)")
    p.add_argument("runs", nargs="+", metavar="RUN_ID", help="run id (or a unique prefix); one unknown deletes none")


def run(args: argparse.Namespace, out: Console) -> int:
    if getattr(args, "tag", None):
        _tag_filter(args)  # a malformed filter is refused before a store file is created
    if args.action == "show" and not args.json and Path(args.run).is_dir():
        # a run directory needs no store: ``vsbench show`` reads it (it used to fail here)
        from vsbench.cli import show_cmd

        files, where = show_cmd.load(args.run, "")
        show_cmd.print_run(files, where, out)
        return 0
    url = run_refs.store_url(args.db, args.results_dir)
    if args.action == "import" and not args.db and not Path(args.results_dir).is_dir():
        Path(args.results_dir).mkdir(parents=True)
    with Store(url) as store:
        return ACTIONS[args.action](args, store, out)


def _import(args: argparse.Namespace, store: Store, out: Console) -> int:
    for run_dir in args.run_dirs:
        try:
            run_id, action = store.import_run(run_dir)
        except report_data.ReportInputError as exc:
            raise StoreError(str(exc)) from None
        out.print(f"{run_id}: {action} ({run_dir}) in {store.display_url}", markup=False, highlight=False,
                  soft_wrap=True)
    return 0


def _tag_filter(args: argparse.Namespace) -> dict[str, str]:
    """``--tag`` filters; a malformed one is the user's error, named (exit 2)."""
    try:
        return run_tags.parse(args.tag, "--tag")
    except run_tags.TagError as exc:
        raise StoreError(str(exc)) from None


def _list(args: argparse.Namespace, store: Store, out: Console) -> int:
    runs = store.list_runs(args.testcase, args.limit or None, _tag_filter(args))
    if args.json:
        out.file.write(json.dumps([{"run_id": r.run_id, "started_at": r.started_at, "finished_at": r.finished_at,
                                    "status": r.status, "vsbench_version": r.vsbench_version,
                                    "hostname": r.hostname, "tests": r.tests, "vswitches": r.vswitches,
                                    "trafficgens": r.trafficgens, "tags": r.tags, "source": r.source}
                                   for r in runs], indent=2) + "\n")
        return 0
    table = Table(title=f"runs in {store.display_url}", title_justify="left")
    for header in ("Run", "Started (UTC)", "Status", "Host", "Switch", "Generator", "Tags", "Tests", "Source"):
        table.add_column(header)
    for r in runs:
        table.add_row(r.run_id, r.started_at or "-", r.status or "-", escape(r.hostname or "-"),
                      escape(", ".join(r.vswitches) or "-"), escape(", ".join(r.trafficgens) or "-"),
                      escape(run_tags.format_tags(r.tags)), escape(", ".join(r.tests)), escape(r.source or "-"))
    out.print(table)
    if not runs:
        out.print("no runs stored (vsbench db import RUN_DIR)", markup=False)
    return 0


def _show(args: argparse.Namespace, store: Store, out: Console) -> int:
    stored = store.get(args.run)
    if args.json:
        out.file.write(json.dumps({"run_id": stored.run_id, "imported_at": stored.imported_at,
                                   "source": stored.source, "results": stored.results,
                                   "sysinfo": stored.sysinfo, "plans": stored.plans}, indent=2) + "\n")
        return 0
    for key, value in (("run", stored.run_id), ("status", stored.status), ("started", stored.started_at),
                       ("finished", stored.finished_at), ("host", stored.hostname),
                       ("vsbench", stored.vsbench_version), ("source", stored.source),
                       ("imported", stored.imported_at),
                       ("tags", run_tags.format_tags(stored.tags) if stored.tags else None)):
        out.print(f"{key:>9}: {value if value is not None else '-'}", markup=False, highlight=False, soft_wrap=True)
    figures = store.metrics(stored.run_id)
    table = Table(title="figures", title_justify="left")
    for header in ("Test", "Frame B", "Metric", "Unit", "Value", "Interval", "Flags"):
        table.add_column(header, justify="right" if header in ("Frame B", "Value") else "left")
    for m in figures.metrics:
        interval = m.uncertainty
        table.add_row(escape(m.key.test), str(m.key.frame_size_bytes), m.key.metric, m.unit, fmt_metric(m),
                      "-" if interval is None else f"{interval.low:,.0f} .. {interval.high:,.0f} ({m.basis})",
                      ", ".join(m.flags) or "-")
    out.print(table)
    return 0


def _trend(args: argparse.Namespace, store: Store, out: Console) -> int:
    if args.suite:
        if not args.suite_id or args.test:
            raise StoreError("db trend --suite NAME needs --id ID (and no --test)")
        args.test = args.suite_id
        points = store.suite_trend(args.suite, args.suite_id, args.metric, args.series, args.limit or None,
                                   _tag_filter(args))
        if args.frame_size:
            points = [p for p in points if p.value.key.frame_size_bytes == args.frame_size]
        if not points:
            raise StoreError(f"no stored run of suite {args.suite!r} has {args.metric} in {args.suite_id}")
    else:
        if not args.test:
            raise StoreError("db trend needs --test NAME, or --suite NAME --id ID")
        points = store.trend(args.test, args.metric, args.frame_size, args.vswitch, args.limit or None,
                             _tag_filter(args))
    if not points:
        raise StoreError(f"no stored run of {args.test!r} has {args.metric}"
                         + (f" at {args.frame_size} B" if args.frame_size else "")
                         + (f" with tags {run_tags.format_tags(_tag_filter(args))}" if args.tag else ""))
    table = Table(title=escape(f"{args.metric} of {args.test}"), title_justify="left")
    second = "Row" if args.suite else "vSwitch"
    for header in ("Started (UTC)", "Run", second, "Frame B", args.metric, "Flags"):
        table.add_column(header, justify="right" if header in ("Frame B", args.metric) else "left")
    for p in points:
        table.add_row(p.started_at or "-", p.run_id, escape(p.value.key.test if args.suite else (p.vswitch or "-")),
                      str(p.value.key.frame_size_bytes or "-"), fmt_metric(p.value), ", ".join(p.value.flags) or "-")
    out.print(table)
    if args.html is not None:
        writers.write_atomic(args.html, trend_page.render_html(args.test, args.metric, points, store.display_url))
        out.print(f"trend page written to {args.html}", markup=False, highlight=False, soft_wrap=True)
    return 0


def _delete(args: argparse.Namespace, store: Store, out: Console) -> int:
    """Forget runs: a mistaken or test run otherwise stays in every list and trend. The run
    directory is left alone (``vsbench db import`` brings the run back)."""
    for gone in store.delete(args.runs):
        rows = ", ".join(f"{n} {table}" for table, n in gone.rows.items() if n and table != "runs")
        out.print(f"{gone.run_id}: deleted from {store.display_url} ({rows or 'no rows'}); its directory "
                  f"{gone.source or '-'} is kept", markup=False, highlight=False, soft_wrap=True)
    return 0


ACTIONS = {"import": _import, "list": _list, "show": _show, "trend": _trend, "delete": _delete}
