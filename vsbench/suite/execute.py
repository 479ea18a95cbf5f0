"""Run a suite: plan it, print what this host can and cannot run, hand the runnable plans to
the runner as one run, and keep ``suite.json`` current beside the run's own files.

One run directory holds the whole suite (every plan's trials, results.json, report.html),
so every figure of every id is recomputable with ``vsbench recompute`` like any run's; the
suite's account of its ids is ``suite.json`` (:mod:`vsbench.suite.document`), rewritten at
the start, after every plan and at the end -- also when a signal ends the run, whose own
teardown removes everything it made.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from rich.console import Console
from rich.table import Table

from vsbench.results.model import RunResults
from vsbench.runner.run import RunObserver, RunOutcome, execute_plans
from vsbench.suite import document
from vsbench.suite.planning import NOT_RUNNABLE, SKIPPED, SuitePlan

log = logging.getLogger(__name__)

EXIT_USAGE = 2


class SuiteObserver(RunObserver):
    """Keeps suite.json in step with the run (the runner calls it; see RunObserver)."""

    def __init__(self, plan: SuitePlan) -> None:
        self.plan = plan
        self.last: dict[str, Any] | None = None

    def _write(self, run_dir: Path, results: RunResults) -> None:
        doc = document.build(self.plan, results.to_json(), results.run_id)
        document.write(run_dir, doc)
        self.last = doc

    started = plan_finished = finished = _write


@dataclass(frozen=True)
class SuiteOutcome:
    exit_code: int
    run_dir: Path | None
    document: Mapping[str, Any] | None


def print_plan(plan: SuitePlan, console: Console) -> None:
    """What will run and what cannot, one line per run that will not."""
    suite, profile = plan.suite, plan.profile
    runnable = plan.runnable
    console.print(f"suite {suite.name} ({profile.name} profile): {suite.title}", markup=False, highlight=False)
    console.print(f"  {len(runnable)} plan(s) to run of {len(plan.plans)}; {len(suite.tables)} ids"
                  + (f"; budget {profile.budget_minutes:g} min" if profile.budget_minutes else ""),
                  markup=False, highlight=False)
    for run in plan.runs_json():
        if run["status"] in (NOT_RUNNABLE, SKIPPED):
            word = "not runnable here" if run["status"] == NOT_RUNNABLE else "skipped"
            console.print(f"  {run['name']} ({run['test']}): {word}: {run['reason']}", markup=False,
                          highlight=False, soft_wrap=True)


def summary_table(doc: Mapping[str, Any]) -> Table:
    table = Table(title=f"suite {doc['suite']} ({doc['profile']}): {doc['summary']['measured']} of "
                        f"{doc['summary']['ids']} ids measured", title_justify="left")
    for header in ("Id", "Status", "Rows measured", "Reason"):
        table.add_column(header, overflow="fold")
    for entry in doc["ids"]:
        ours = [r for r in entry["rows"] if r["status"] != "report_only"]
        measured = sum(1 for r in ours if r["status"] == "measured")
        status = entry["status"] + ("" if entry["status"] != "measured" or entry.get("complete") else " (in part)")
        table.add_row(entry["id"], status, f"{measured} of {len(ours)}", entry.get("reason") or "")
    return table


def run(plan: SuitePlan, results_dir: Path, console: Console, err: Console, debug: bool = False,
        tags: dict[str, str] | None = None) -> SuiteOutcome:
    """Execute the runnable plans of ``plan`` as one run (with the user's ``tags`` in its
    results.json); suite.json and report.html follow."""
    print_plan(plan, console)
    runnable = [p.plan for p in plan.runnable]
    if not runnable:
        err.print(f"vsbench: error: nothing of suite {plan.suite.name} ({plan.profile.name}) can run on this host "
                  "(see the reasons above)", markup=False, highlight=False, soft_wrap=True)
        return SuiteOutcome(EXIT_USAGE, None, None)
    observer = SuiteObserver(plan)
    outcome: RunOutcome = execute_plans(runnable, results_dir, console, err, debug=debug,
                                          observer=observer, tags=tags)
    if observer.last is not None:
        console.print(summary_table(observer.last))
        console.print(f"suite.json and report.html in {outcome.run_dir}", markup=False, highlight=False)
    return SuiteOutcome(outcome.exit_code, outcome.run_dir, observer.last)
