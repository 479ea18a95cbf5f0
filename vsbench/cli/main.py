"""The ``vsbench`` command: parse arguments, resolve plans, hand them to the runner.

Exit codes (scripts and CI jobs rely on them): 0 every test ran (and passed its gates);
1 a test failed to run; 2 bad input (unknown test or plugin, malformed YAML, invalid value,
missing prerequisite, unknown run); 3 every test ran but a gate failed (``--fail-below``,
``--fail-above``, a testcase's ``thresholds``, ``--baseline --max-regression``); 130
interrupted. "Could not run" (1, 2, 130) wins over 3. A user's mistake is one line on
stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path
from typing import Sequence

from rich.console import Console

from vsbench import __version__
from vsbench.cli import early_signals, listing
from vsbench.runner import config as cfg
from vsbench.runner import plugins, testcases
from vsbench.runner.plan import TestPlan, repeated

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_THRESHOLD, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
PLUGIN_FLAGS = ("vswitch", "trafficgen", "vnf")


class UsageError(Exception):
    """Bad command-line usage; one line."""


class _Parser(argparse.ArgumentParser):
    """argparse that reports errors in one line and lets main() choose the exit code."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="vsbench",
        description="Benchmark virtual switches: RFC 2544 throughput, latency and scaling.",
        epilog="Subcommands: 'vsbench doctor' checks this host is ready (one line per "
               "missing piece, with the command that fixes it); "
               "'vsbench cleanup' removes what a killed run left behind; "
               "'vsbench recompute RUN_DIR' recomputes a run's figures from its trials; "
               "'vsbench report RUN_DIR' (re)writes a run's report.html from its files; "
               "'vsbench show RUN' prints a run's summary, validity, caveats and gates; "
               "'vsbench compare RUN_A RUN_B' compares runs; 'vsbench db import|list|show|trend|delete' uses "
               "the results store (runs listed and trended by their --tag); 'vsbench conformance --vswitch|--vnf|--trafficgen NAME' checks a plugin "
               "against the plugin contract. Exit codes: 0 ok, 1 a test failed to run, 2 bad input, 3 a "
               "threshold failed, 130 interrupted.",
    )
    parser.add_argument("--test", action="append", metavar="NAME", default=[],
                        help="testcase to run (repeatable); see --list")
    parser.add_argument("--vswitch", metavar="X", help="vSwitch plugin (see --list-plugins); none: no switch, a p2p "
                        "testcase runs its ports through a forwarding VNF (phy_vnf_phy), as VSPERF did")
    parser.add_argument("--trafficgen", metavar="Y", help="traffic generator plugin")
    parser.add_argument("--vnf", metavar="Z", help="VNF plugin")
    parser.add_argument("--conf-file", action="append", metavar="F", default=[], type=Path,
                        help="YAML configuration layered over the defaults (repeatable)")
    parser.add_argument("--test-params", metavar="S", default="",
                        help='overrides, e.g. "frame_sizes=[64];trial_duration=2"')
    parser.add_argument("--rate", metavar="R",
                        help="a fixed rate instead of the search: 50%% (of line rate), 1Mpps, 500kpps, 2.5Gbps "
                             "(L1), one trial of traffic.trial_duration_s per frame size; or ndr_pdr (the default "
                             "search), ndr, pdr (NFVbench's spelling; docs/cli.rst)")
    parser.add_argument("--results-dir", metavar="D", type=Path,
                        help="where run directories go (default ./results)")
    parser.add_argument("--list", action="store_true", help="list the testcases and exit")
    parser.add_argument("--integration", action="store_true",
                        help="integration testcases (testcases/integration: step lists on a clean switch): alone, "
                             "list them; with --test NAME run those; with --vswitch X and no --test run them all")
    parser.add_argument("--list-plugins", action="store_true", help="list the plugins and exit")
    parser.add_argument("--suite", metavar="NAME",
                        help="run a suite: the testcases that reproduce one published report, rendered table by "
                             "table with the report's id (see --list-suites); writes suite.json beside the run")
    parser.add_argument("--profile", metavar="P", choices=("quick", "full"),
                        help="the suite's profile: quick (the embedded 2-core testbed, short trials; default) or "
                             "full (the report's own parameters, for a lab)")
    parser.add_argument("--only", metavar="ID[,ID]",
                        help="with --suite: run only what these ids' tables need (e.g. 000/T7-5); the others are "
                             "listed as not asked for")
    parser.add_argument("--list-suites", action="store_true", help="list the suites and exit")
    parser.add_argument("--dry-run", "--show-config", dest="dry_run", action="store_true",
                        help="print what would run and create nothing: with --test, each plan's variant, "
                             "resolved configuration and the most traffic time it takes; with --suite, the "
                             "suite's plans and what this host cannot run")
    parser.add_argument("--testcase-dir", metavar="DIR", type=Path,
                        help="read testcases from DIR instead of the installed ones")
    parser.add_argument("--conf-dir", metavar="DIR", type=Path,
                        help="read default configuration from DIR instead of the installed one")
    parser.add_argument("--baseline-variant", metavar="K=V[,K=V]",
                        help="a matrix (--test-params lists) ends with one table of every variant's gain over "
                             "this one, e.g. smc_enable=false (default: the first variant; one without a "
                             "figure gives way to the first that has one, and a note says so)")
    parser.add_argument("--repeat", type=int, default=1, metavar="K",
                        help="run every testcase K times (median and spread are reported; compare uses them)")
    ci = parser.add_argument_group("CI gates (exit 3 when one fails)")
    ci.add_argument("--fail-below", action="append", default=[], metavar="METRIC[@B]=V",
                    help="fail when a figure is below V, e.g. ndr_fps=1e6 or ndr_fps@64=1.5M (repeatable; a "
                         "metric or frame size the run does not measure is refused before it runs)")
    ci.add_argument("--fail-above", action="append", default=[], metavar="METRIC[@B]=V",
                    help="fail when a figure is above V, e.g. latency_p99_ns=50000 (repeatable)")
    ci.add_argument("--baseline", metavar="RUN", help="a run directory or stored run id to check regressions against")
    ci.add_argument("--max-regression", metavar="PCT",
                    help="with --baseline: fail a figure more than PCT worse than the baseline (e.g. 5%%) "
                         "unless the change is within noise; default the testcase's thresholds")
    ci.add_argument("--regression-metric", action="append", default=[], metavar="NAME",
                    help="figures the regression check covers (repeatable; default every throughput *_fps)")
    ci.add_argument("--junit", type=Path, metavar="FILE", help="write a JUnit XML file (one case per test x frame size)")
    ci.add_argument("--json", action="store_true",
                    help="print a JSON summary of the run on stdout (progress and tables go to stderr)")
    store = parser.add_argument_group("results store")
    store.add_argument("--store", action="store_true",
                       help="record the run in the results store: $VSBENCH_DB, else RESULTS_DIR/vsbench.sqlite "
                            "(a run is recorded anyway when --db or $VSBENCH_DB names a store)")
    store.add_argument("--db", metavar="URL", help="record the run in this store (sqlite:///FILE, postgresql://...); "
                                                    "also where --baseline RUN ids are looked up")
    store.add_argument("--no-store", action="store_true", help="do not record the run, even with $VSBENCH_DB set")
    store.add_argument("--tag", action="append", default=[], metavar="KEY=VALUE",
                       help="label the run, e.g. --tag nic=e810 --tag kernel=6.1 (repeatable): kept in results.json "
                            "and the store; vsbench db list|trend --tag KEY=VALUE pick runs by it")
    parser.add_argument("-v", "--verbose", "--debug", dest="debug", action="store_true",
                        help="log debug messages and show tracebacks (of internal errors and of "
                             "a plugin's faults)")
    parser.add_argument("--version", action="version", version=f"vsbench {__version__}")
    return parser


def build_cleanup_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="vsbench cleanup",
                     description="Remove namespaces, processes and files left by killed runs, and mark "
                                 "their results.json (and suite.json) status 'interrupted'.")
    parser.add_argument("--dry-run", action="store_true", help="only report what would go")
    parser.add_argument("-v", "--debug", action="store_true")
    return parser


def build_doctor_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="vsbench doctor",
                     description="Check this host can run vsbench: kernel features, CPUs, Debian "
                                 "packages, DPDK drivers (probed), hugepages, and each selected "
                                 "plugin's prerequisites, and that a remote generator's server answers at "
                                 "its configured address (TCP). Exit 2 when something is missing.")
    for kind in PLUGIN_FLAGS:
        parser.add_argument(f"--{kind}", metavar="NAME", help=f"check this {kind} plugin "
                            "instead of the configured one")
    parser.add_argument("--all", action="store_true", help="check every installed plugin")
    parser.add_argument("--host", action="store_true",
                        help="check this host's lab settings instead (docs/lab.rst): NUMA node of each "
                             "configured PCI NIC and busy-polling core (cross-NUMA warns), hugepages per node "
                             "and size, isolcpus/nohz_full/rcu_nocbs, governor, turbo, C-states, IOMMU, NIC "
                             "driver, firmware and link speed, irqbalance; one ok/warn/fail line each with "
                             "the fix; exit 2 on a fail line")
    parser.add_argument("--conf-file", action="append", metavar="F", default=[], type=Path)
    parser.add_argument("--conf-dir", metavar="DIR", type=Path)
    parser.add_argument("-v", "--debug", action="store_true")
    return parser


def run_doctor(argv: Sequence[str], out: Console) -> int:
    args = build_doctor_parser().parse_args(argv)
    _setup_logging(args.debug)
    from vsbench.runner import doctor

    config = cfg.load_layers(args.conf_dir or cfg.default_conf_dir(), args.conf_file)
    flags = {kind: getattr(args, kind) for kind in PLUGIN_FLAGS}
    if args.host:
        return _doctor_host(config, flags, out)
    checks = doctor.run_checks(config, flags, every=args.all,
                               package_lists=doctor.default_package_lists())
    for check in checks:
        for line in check.lines():
            out.print(line, markup=False, highlight=False, soft_wrap=True)
    code = doctor.exit_code(checks)
    out.print("doctor: ready" if code == 0 else "doctor: missing prerequisites (see MISSING lines)",
              markup=False, highlight=False)
    return code


def _doctor_host(config: dict, flags: dict, out: Console) -> int:
    from vsbench.runner import doctor_host

    settings = doctor_host.judge_host(config, flags)
    for line in settings.lines:
        out.print(line.text(), markup=False, highlight=False, soft_wrap=True)
    out.print(doctor_host.summary(settings), markup=False, highlight=False, soft_wrap=True)
    return doctor_host.exit_code(settings)


def build_recompute_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="vsbench recompute",
                     description="Recompute every reported figure of a run from trials.jsonl "
                                 "and config.yaml and report any difference. Exit 1 when a figure "
                                 "differs, or when the run has no trial (nothing to recompute).")
    parser.add_argument("run_dir", type=Path, metavar="RUN_DIR")
    parser.add_argument("-v", "--debug", action="store_true")
    return parser


def run_recompute(argv: Sequence[str], out: Console) -> int:
    args = build_recompute_parser().parse_args(argv)
    _setup_logging(args.debug)
    from vsbench.measurement import recheck

    run_dir: Path = args.run_dir
    for needed in ("results.json", "config.yaml", "trials.jsonl"):
        if not (run_dir / needed).is_file():
            raise UsageError(f"{run_dir}: not a run directory ({needed} missing)")
    _check_recompute_inputs(run_dir)
    problems = recheck.verify(run_dir)
    if problems:
        for problem in problems:
            out.print(f"MISMATCH {problem}", markup=False, highlight=False, soft_wrap=True)
        out.print(f"{len(problems)} figure(s) differ from their recomputation", markup=False)
        return EXIT_FAILED
    from vsbench.results.recompute import nothing_to_recompute

    empty = nothing_to_recompute(run_dir)
    if empty:  # nothing was verified: not a success a CI job may take for one
        out.print(f"{run_dir}: {empty}", markup=False, highlight=False, soft_wrap=True)
        return EXIT_FAILED
    out.print(f"{run_dir}: every reported figure recomputes exactly from trials.jsonl and config.yaml",
              markup=False, highlight=False, soft_wrap=True)
    return EXIT_OK


def _check_recompute_inputs(run_dir: Path) -> None:
    """The run's files read as the report reads them, before the recomputation trusts them:
    a run directory is the user's input (copied, edited, truncated), and a config.yaml that
    is binary or not a run configuration, or an unreadable results.json or trials.jsonl, is
    one line naming the file (exit 2), not an internal error from deep in the
    recomputation."""
    from vsbench.results import report_data

    try:
        files = report_data.load_run(run_dir)
    except report_data.ReportInputError as exc:
        raise UsageError(str(exc)) from None
    names = (report_data.RESULTS_FILE, report_data.CONFIG_FILE, report_data.TRIALS_FILE)
    for problem in files.problems:
        if problem.startswith(names) and ("cannot read" in problem or "not a vsbench" in problem
                                          or "does not match its schema" in problem):
            raise UsageError(f"cannot recompute {run_dir}/{problem.removesuffix('; shown as far as readable')}")


def build_report_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="vsbench report",
                     description="Write the HTML report of a run from its files (results.json, "
                                 "trials.jsonl, config.yaml, sysinfo.json); works for any old run. A suite's "
                                 "run also gets its suite.json built again under the suite as installed now.")
    parser.add_argument("run_dir", type=Path, metavar="RUN_DIR")
    parser.add_argument("-o", "--output", type=Path, metavar="FILE",
                        help="where to write the report (default RUN_DIR/report.html; with --format vsperf "
                             "a directory, default RUN_DIR)")
    parser.add_argument("--format", choices=("html", "vsperf"), default="html",
                        help="html: report.html (default); vsperf: VSPERF's result_<i>_<test>_<deployment>.csv "
                             "files (throughput_rx_fps, min_latency_ns, ...), for dashboards fed by VSPERF")
    parser.add_argument("-v", "--debug", action="store_true")
    return parser


def run_report(argv: Sequence[str], out: Console) -> int:
    args = build_report_parser().parse_args(argv)
    _setup_logging(args.debug)
    from vsbench.results import report_data, report_html

    if args.format == "vsperf":
        return _write_vsperf_csv(args.run_dir, args.output, out)
    if args.output is not None and not args.output.parent.is_dir():
        raise UsageError(f"cannot write {args.output}: no directory {args.output.parent}")
    _refresh_suite(args.run_dir, out)
    try:
        written = report_html.write_report(args.run_dir, args.output)
    except report_data.ReportInputError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        target = args.output or args.run_dir / report_html.FILE_NAME
        raise UsageError(f"cannot write {target}: {exc.strerror or exc}") from None
    out.print(f"report written to {written}", markup=False, highlight=False, soft_wrap=True)
    return EXIT_OK


def _refresh_suite(run_dir: Path, out: Console) -> None:
    """A suite's run: its suite.json built again under the suite as installed now (its
    tables and the report's figures may have been corrected since); the measured results and
    the plans are the run's. A suite that is no longer installed leaves suite.json as it is."""
    from vsbench.suite import catalog, document

    try:
        old = document.read(run_dir)
    except (OSError, ValueError) as exc:
        raise UsageError(f"{run_dir}: cannot read {document.FILE_NAME}: {exc}") from None
    if old is None:
        return
    try:
        suite = catalog.find(str(old.get("suite")))
    except catalog.SuiteError as exc:
        out.print(f"{document.FILE_NAME} kept as written: {exc}", markup=False, highlight=False, soft_wrap=True)
        return
    document.write(run_dir, document.rebuild(run_dir, suite))


def build_show_parser() -> argparse.ArgumentParser:
    from vsbench.cli import show_cmd

    parser = _Parser(prog="vsbench show",
                     description="A run as text, from its files: the summary table its terminal showed (also "
                                 "in RUN_DIR/summary.txt), its validity notes, the caveats on its figures and "
                                 "its testcases' gates. RUN is a run directory (stored or not) or a stored run id.")
    show_cmd.add_arguments(parser)
    return parser


def run_show(argv: Sequence[str], out: Console) -> int:
    args = build_show_parser().parse_args(argv)
    _setup_logging(args.debug)
    from vsbench.cli import show_cmd

    return show_cmd.run(args, out)


def build_compare_parser() -> argparse.ArgumentParser:
    from vsbench.cli import compare_cmd

    parser = _Parser(prog="vsbench compare",
                     description="Compare runs: per testcase x frame size x metric the values side by side, the "
                                 "% change against the first run and whether it is significant; what differs "
                                 "between the runs (switch, deployment, sysinfo.json).")
    compare_cmd.add_arguments(parser)
    return parser


def build_db_parser() -> argparse.ArgumentParser:
    from vsbench.cli import db_cmd

    parser = _Parser(prog="vsbench db", description="The results store: record runs (import), list them, show one, "
                                                    "trend one figure over runs, delete runs from the store.")
    db_cmd.add_arguments(parser, _Parser)
    return parser


def run_compare(argv: Sequence[str], out: Console) -> int:
    args = build_compare_parser().parse_args(argv)
    _setup_logging(args.debug)
    from vsbench.cli import compare_cmd

    return compare_cmd.run(args, out)


def run_db(argv: Sequence[str], out: Console) -> int:
    args = build_db_parser().parse_args(argv)
    _setup_logging(args.debug)
    from vsbench.cli import db_cmd

    return db_cmd.run(args, out)


def resolve_plans(args: argparse.Namespace) -> list[TestPlan]:
    """All plans for the requested tests, validated, with plugin names checked."""
    conf_dir = args.conf_dir or cfg.default_conf_dir()
    testcase_dir = args.testcase_dir or testcases.default_testcase_dir()
    base = cfg.load_layers(conf_dir, args.conf_file)
    if args.results_dir is not None:
        base["results_dir"] = str(args.results_dir)
    test_params = cfg.parse_test_params(args.test_params) if args.test_params else {}
    if getattr(args, "rate", None) is not None:  # a shorthand for traffic/search keys, over --test-params
        from vsbench.runner.rate_option import RateError, overrides

        try:
            test_params.update(overrides(args.rate))
        except RateError as exc:
            raise UsageError(str(exc)) from None
    flags = {kind: getattr(args, kind) for kind in PLUGIN_FLAGS}
    plans: list[TestPlan] = []
    for name in args.test:
        if getattr(args, "integration", False):
            from vsbench.runner.integration import catalog

            case = catalog.find(name, testcase_dir / "integration")
            plans.extend(catalog.build_plans(case, base, test_params, flags))
            continue
        testcase = testcases.find(name, testcase_dir)
        plans.extend(testcases.build_plans(testcase, base, test_params, flags))
    for plan in plans:
        for kind in PLUGIN_FLAGS:
            name = plan.config[kind]["name"]
            if kind == "vswitch" and name == testcases.NO_VSWITCH:
                continue  # --vswitch none: the plan's deployment has no switch (testcases.build_plans)
            plugin_cls = plugins.load(kind, name)
            cfg.validate_plugin_settings(kind, name, plugin_cls, plan.config)
    return plans


def _setup_logging(debug: bool) -> None:
    from rich.logging import RichHandler

    handler = RichHandler(console=Console(stderr=True), show_time=False, show_path=debug)
    logging.basicConfig(level=logging.DEBUG if debug else logging.WARNING,
                        format="%(message)s", handlers=[handler])


def _error(console: Console, message: str) -> None:
    console.print(f"vsbench: error: {message}", markup=False, highlight=False, soft_wrap=True)


def _json_error(argv: Sequence[str], code: int, message: str) -> None:
    """With ``--json``, a run that could not start still prints its JSON document, so a
    script reading stdout always gets one."""
    if "--json" in argv and (not argv or argv[0] not in ("compare", "db", "doctor", "cleanup", "recompute",
                                                          "report", "show")):
        from vsbench.runner.after_run import SUMMARY_SCHEMA_ID

        sys.stdout.write(json.dumps({"schema": SUMMARY_SCHEMA_ID, "exit_code": code, "run_dir": None,
                                     "error": message}) + "\n")


def run_cleanup(argv: Sequence[str], err: Console) -> int:
    args = build_cleanup_parser().parse_args(argv)
    _setup_logging(args.debug)
    from vsbench.results.dead_run import mark_dead_run
    from vsbench.system import cleanup

    report = cleanup.cleanup(dry_run=args.dry_run, plugin_cleaners=plugins.dead_run_cleaners(),
                             mark_dead_run=mark_dead_run)
    Console().print(report.summary() if hasattr(report, "summary") else str(report), markup=False)
    return EXIT_OK


def _print_feature_matrix(run_dir: Path, baseline: str | None, display: Console, err: Console) -> None:
    """The run's feature matrix table (a derived view: a problem is a warning, never the
    run's failure; ``vsbench compare RUN_DIR`` shows it again)."""
    from vsbench.cli.compare_cmd import load_matrices, print_matrices
    from vsbench.runner.run_refs import RunRefError

    try:
        print_matrices(load_matrices(run_dir, baseline), display)
    except RunRefError as exc:
        _error(err, f"feature matrix not shown: {exc}")


def run_main(argv: Sequence[str], out: Console, err: Console) -> int:
    args = build_parser().parse_args(argv)
    _setup_logging(args.debug)
    if args.list_plugins:
        listing.print_plugins(out)
        return EXIT_OK
    if args.integration:
        from vsbench.runner.integration import catalog

        directory = (args.testcase_dir or testcases.default_testcase_dir()) / "integration"
        if args.list or (not args.test and not args.vswitch):
            listing.print_integration(out, catalog.load_all(directory))
            return EXIT_OK
        if not args.test:  # every one, on the chosen switch (those it cannot run are skipped with the reason)
            args.test = list(catalog.discover(directory))
    if args.list:
        testcase_dir = args.testcase_dir or testcases.default_testcase_dir()
        listing.print_testcases(out, testcases.load_all(testcase_dir))
        return EXIT_OK
    if args.list_suites:
        from vsbench.suite import catalog

        suites, problems = catalog.load_all()
        listing.print_suites(out, suites, problems)
        return EXIT_OK
    if args.suite:
        return run_suite(args, out, err)
    for option in ("profile", "only"):
        if getattr(args, option):
            raise UsageError(f"--{option.replace('_', '-')} goes with --suite NAME")
    if not args.test:
        raise UsageError("nothing to do: give --test NAME (see --list), --suite NAME (see --list-suites), --list "
                         "or --list-plugins")
    if args.repeat < 1:
        raise UsageError(f"--repeat must be at least 1, not {args.repeat}")
    if args.baseline_variant:
        from vsbench.results.feature_matrix import MatrixError, parse_baseline

        try:
            parse_baseline(args.baseline_variant)
        except MatrixError as exc:
            raise UsageError(str(exc)) from None
    plans = repeated(resolve_plans(args), args.repeat)
    if args.baseline_variant:
        _check_baseline_variant(args.baseline_variant, plans)
    results_dir = Path(plans[0].config["results_dir"])
    tags = _parse_tags(args.tag)
    options = _after_run_options(args, results_dir, plans)
    options.figures = args.json or args.repeat > 1 or any(p.config.get("thresholds") for p in plans)
    if args.dry_run:
        _print_dry_run(plans, out)
        return EXIT_OK
    if args.junit is not None and not args.junit.parent.is_dir():
        raise UsageError(f"cannot write {args.junit}: no directory {args.junit.parent}")

    from vsbench.runner import after_run
    from vsbench.runner.run import execute_plans  # heavy imports only when running

    display = err if args.json else out  # stdout carries only the JSON document then
    outcome = execute_plans(plans, results_dir, display, err, debug=args.debug, tags=tags)
    finished = after_run.finish(outcome.run_dir, outcome.exit_code, options)
    if finished.figures is not None and args.repeat > 1:
        from vsbench.cli.compare_cmd import repeats_table

        table = repeats_table(finished.figures)
        if table is not None:
            display.print(table)
    if outcome.run_dir is not None and any(p.variant for p in plans):
        _print_feature_matrix(outcome.run_dir, args.baseline_variant, display, err)
    for case in finished.cases:
        for failure in case.failures:
            where = f"step {case.name}" if case.name else f"{case.frame_size_bytes} B"
            _error(err, f"{'failed' if case.name else 'gate failed'}: {case.test} {where}: {failure}")
    if args.json:
        out.file.write(json.dumps(finished.summary, indent=2, allow_nan=False) + "\n")
    return finished.exit_code


def _loadable_classes(plan: TestPlan) -> dict[str, type]:
    """The plan's plugin classes that load, for their schemas' secrets: a dry run checks
    nothing, so a plugin that does not load is left out, not reported."""
    from vsbench.runner import plugins

    classes = {}
    for kind in ("vswitch", "trafficgen", "vnf"):
        name = (plan.config.get(kind) or {}).get("name")
        try:
            if name:
                classes[kind] = plugins.load(kind, name)
        except Exception:  # noqa: BLE001 - names and URLs are still redacted
            continue
    return classes


def _print_dry_run(plans: Sequence[TestPlan], out: Console) -> None:
    """``--dry-run`` with ``--test``: every plan's resolved configuration, then one block
    per plan and the total traffic time, last so that it is what the terminal shows."""
    from vsbench.runner import dry_run

    for plan in plans:
        out.file.write("---\n" + dry_run.resolved_configuration(plan, _loadable_classes(plan)))
    out.file.write("...\n")
    for line in dry_run.describe(plans):
        out.print(line, markup=False, highlight=False, soft_wrap=True)


def _write_vsperf_csv(run_dir: Path, output: Path | None, out: Console) -> int:
    """``vsbench report RUN_DIR --format vsperf``: VSPERF's result CSV files of the run."""
    from vsbench.results import report_data, vsperf_csv, writers
    from vsbench.results.model import RunResults

    target = output if output is not None else run_dir
    if not target.is_dir():
        raise UsageError(f"cannot write VSPERF CSV files to {target}: not a directory")
    try:
        results = RunResults.from_json(report_data.load_run(run_dir).results)
    except report_data.ReportInputError as exc:
        raise UsageError(str(exc)) from None
    texts = vsperf_csv.files(results)
    if not texts:
        raise UsageError(f"{run_dir}: no test of the run has a frame size: no VSPERF CSV to write")
    for name, text in texts.items():
        try:
            writers.write_atomic(target / name, text)
        except OSError as exc:
            raise UsageError(f"cannot write {target / name}: {exc.strerror or exc}") from None
        out.print(f"wrote {target / name}", markup=False, highlight=False, soft_wrap=True)
    return EXIT_OK


def run_suite(args: argparse.Namespace, out: Console, err: Console) -> int:
    """``vsbench --suite NAME [--profile quick|full]``: plan the suite for this host, run what
    it can, write suite.json and the report's id sections (vsbench.suite)."""
    if args.test:
        raise UsageError("--suite runs its own testcases: give --suite or --test, not both")
    for kind in PLUGIN_FLAGS:
        if getattr(args, kind):
            raise UsageError(f"--{kind} does not go with --suite: each run of a suite names its own plugins")
    if args.repeat != 1 or args.baseline_variant:
        raise UsageError("--repeat and --baseline-variant do not go with --suite: its runs set their own")
    from vsbench.suite import catalog, execute, host, planning

    suite = catalog.find(args.suite)
    base = cfg.load_layers(args.conf_dir or cfg.default_conf_dir(), args.conf_file)
    if args.results_dir is not None:
        base["results_dir"] = str(args.results_dir)
    test_params = cfg.parse_test_params(args.test_params) if args.test_params else {}
    testcase_dir = args.testcase_dir or testcases.default_testcase_dir()
    only = [i.strip() for i in args.only.split(",") if i.strip()] if args.only else None
    plan = planning.build(suite, args.profile or "quick", base, testcase_dir, host.collect(), test_params,
                          only_ids=only)
    display = err if args.json else out
    if args.dry_run:
        execute.print_plan(plan, display)
        for planned in plan.plans:
            word = planned.status if planned.status != planning.RUNNABLE else "runs"
            display.print(f"  {planned.run}: {planned.plan.label}: {word}" + (f" ({planned.reason})" if planned.reason else ""),
                          markup=False, highlight=False, soft_wrap=True)
        return EXIT_OK
    results_dir = Path(base.get("results_dir") or "results")
    tags = _parse_tags(args.tag)
    options = _after_run_options(args, results_dir, [p.plan for p in plan.runnable])
    if args.junit is not None and not args.junit.parent.is_dir():
        raise UsageError(f"cannot write {args.junit}: no directory {args.junit.parent}")
    from vsbench.runner import after_run

    outcome = execute.run(plan, results_dir, display, err, debug=args.debug, tags=tags)
    if outcome.run_dir is None:
        return outcome.exit_code
    finished = after_run.finish(outcome.run_dir, outcome.exit_code, options)
    if args.json:
        summary = dict(finished.summary)
        if outcome.document is not None:
            summary["suite"] = {"name": suite.name, "profile": plan.profile.name,
                                "summary": outcome.document["summary"],
                                "ids": {e["id"]: e["status"] for e in outcome.document["ids"]}}
        out.file.write(json.dumps(summary, indent=2, allow_nan=False) + "\n")
    return finished.exit_code


def _check_baseline_variant(text: str, plans: Sequence[TestPlan]) -> None:
    """``--baseline-variant`` must pick one variant of the run's matrices: checked before
    the run, since the matrix table that uses it is drawn after the last trial."""
    from vsbench.results.feature_matrix import MatrixError, check_baseline, parse_baseline
    from vsbench.runner import gate_check

    try:
        check_baseline(parse_baseline(text), gate_check.variants_by_testcase(plans), text)
    except MatrixError as exc:
        raise UsageError(str(exc)) from None


def _parse_thresholds(args: argparse.Namespace, plans: Sequence[TestPlan]) -> list:
    """``--fail-below``/``--fail-above``, parsed and checked against what ``plans`` will
    measure (:mod:`vsbench.runner.gate_check`); every error names its option and value."""
    from vsbench.results import thresholds
    from vsbench.runner import gate_check

    figures = gate_check.figures_of(plans)
    found = []
    for option, kind, specs in (("--fail-below", thresholds.BELOW, args.fail_below),
                                 ("--fail-above", thresholds.ABOVE, args.fail_above)):
        for spec in specs:
            try:
                threshold = thresholds.parse(spec, kind)
            except thresholds.ThresholdError as exc:
                said = str(exc)
                raise UsageError(f"{option}: {said}" if spec in said else f"{option} {spec}: {said}") from None
            gate_check.check_threshold(option, spec, threshold, figures)
            found.append(threshold)
    gate_check.check_regression_metrics(args.regression_metric, figures)
    gate_check.check_testcase_thresholds(plans)
    return found


def _parse_tags(specs: Sequence[str]) -> dict[str, str]:
    """``--tag`` values, checked before the run (a typo in a tag is a filter that later
    finds nothing, so it is exit 2 now, not a run recorded under the wrong name)."""
    from vsbench.results import run_tags

    try:
        tags = run_tags.parse(specs, "--tag")
    except run_tags.TagError as exc:
        raise UsageError(str(exc)) from None
    for key, value in tags.items():
        why = cfg.credential_in(key, value)
        if why:  # a tag goes verbatim into results.json, the store and every page
            raise UsageError(f"--tag {key}=...: {why}; tags are stored and shown as given, keep secrets out of them")
    return tags


def _after_run_options(args: argparse.Namespace, results_dir: Path, plans: Sequence[TestPlan] = ()):
    """The gates, JUnit file and store of a run, checked before anything runs (a bad
    threshold, a gate on a figure ``plans`` will not measure or an unknown baseline is exit
    2, not a wasted run)."""
    from vsbench.results import thresholds
    from vsbench.runner import after_run, run_refs

    gates = thresholds.Gates(thresholds=_parse_thresholds(args, plans),
                             regression_metrics=args.regression_metric or None)
    url = run_refs.store_url(args.db, results_dir)
    if args.max_regression is not None:
        if args.baseline is None:
            raise UsageError("--max-regression needs --baseline RUN")
        try:
            gates.max_regression_percent = thresholds.parse_percent(args.max_regression)
        except thresholds.ThresholdError as exc:
            raise UsageError(f"--max-regression {args.max_regression}: {exc}") from None
    if args.baseline is not None:
        gates.baseline = run_refs.load_side(args.baseline, url)
    record = (args.store or args.db is not None or run_refs.URL_ENV in os.environ) and not args.no_store
    return after_run.AfterRun(gates=gates, junit_path=args.junit, store_url=url if record else None)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # Piped into a file or a CI log there is no terminal width; a result table squeezed to
    # 80 columns would be unreadable, so give it room.
    out = Console() if sys.stdout.isatty() else Console(width=200)
    err = Console(stderr=True)
    debug = any(a in ("--debug", "-v", "--verbose") for a in argv)
    previous_handlers = early_signals.install()
    try:
        if argv and argv[0] == "cleanup":
            return run_cleanup(argv[1:], err)
        if argv and argv[0] == "doctor":
            return run_doctor(argv[1:], out)
        if argv and argv[0] == "recompute":
            return run_recompute(argv[1:], out)
        if argv and argv[0] == "report":
            return run_report(argv[1:], out)
        if argv and argv[0] == "show":
            return run_show(argv[1:], out)
        if argv and argv[0] == "compare":
            return run_compare(argv[1:], out)
        if argv and argv[0] == "db":
            return run_db(argv[1:], out)
        if argv and argv[0] == "conformance":
            from vsbench.cli import conformance

            return conformance.run(argv[1:], _Parser)
        return run_main(argv, out, err)
    except (UsageError, cfg.ConfigError, plugins.UnknownPluginError) as exc:
        _error(err, str(exc))
        _json_error(argv, EXIT_USAGE, str(exc))
        return EXIT_USAGE
    except _user_errors() as exc:
        _error(err, str(exc))
        _json_error(argv, EXIT_USAGE, str(exc))
        return EXIT_USAGE
    except KeyboardInterrupt:
        _error(err, "interrupted by SIGINT")
        return EXIT_INTERRUPTED
    except early_signals.EarlySignal as exc:
        _error(err, str(exc))
        return 128 + exc.signum
    except Exception as exc:  # noqa: BLE001 - an internal error is still one line by default
        if debug:
            raise
        _error(err, f"internal error: {type(exc).__name__}: {exc} (rerun with --debug for details)")
        return EXIT_FAILED
    finally:
        early_signals.restore(previous_handlers)


def build_conformance_parser() -> argparse.ArgumentParser:
    from vsbench.cli import conformance

    return conformance.build_parser(_Parser)


#: Every command and the parser that defines it (the docs render each one's help from here;
#: tests/unit/test_docs.py checks each is dispatched by main()).
PARSERS = {
    "vsbench": build_parser,
    "vsbench doctor": build_doctor_parser,
    "vsbench cleanup": build_cleanup_parser,
    "vsbench recompute": build_recompute_parser,
    "vsbench report": build_report_parser,
    "vsbench show": build_show_parser,
    "vsbench compare": build_compare_parser,
    "vsbench db": build_db_parser,
    "vsbench conformance": build_conformance_parser,
}


#: A run, store or threshold the user named that cannot be used: one line, exit 2.
_USER_ERRORS = (("vsbench.runner.run_refs", "RunRefError"), ("vsbench.results.thresholds", "ThresholdError"),
                ("vsbench.results.store", "StoreError"))


def _user_errors() -> tuple[type[BaseException], ...]:
    """The classes of :data:`_USER_ERRORS` whose modules are loaded: an exception of a module
    never imported cannot have been raised. (Evaluated when an exception is being matched --
    argparse's exit for --help or --version among them -- so importing the store here would
    cost every such process SQLAlchemy's import, ~0.45 s.)"""
    return tuple(getattr(sys.modules[module], name) for module, name in _USER_ERRORS if module in sys.modules)


if __name__ == "__main__":
    sys.exit(main())
