"""``vsbench show RUN``: a run as text -- the summary its terminal showed, then its validity,
the caveats on its figures and its testcases' gates.

A run directory needs no results store (``db show`` did), so a run that was never stored,
an old one or one copied from another host reads the same way; a stored run id works too.
Everything is recomputed from the run's files (results.json, config.yaml, trials.jsonl):
the run's own ``summary.txt`` is what its terminal showed, this is the same table made
again, with what a reader must know before quoting a figure.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any, Mapping

from rich.console import Console

from vsbench.results import report_data, run_metrics, thresholds
from vsbench.results.model import RunResults
from vsbench.runner import run_refs
from vsbench.runner.display import RunDisplay


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", metavar="RUN", help="a run directory, or a run id (or unique prefix) in the "
                                                  "results store")
    parser.add_argument("--db", metavar="URL", help="results store for a run id (default $VSBENCH_DB, else "
                                                     "RESULTS_DIR/vsbench.sqlite)")
    parser.add_argument("--results-dir", type=Path, metavar="D", default=Path("results"),
                        help="where the default SQLite store is (default ./results)")
    parser.add_argument("-v", "--debug", action="store_true", help="debug logging, tracebacks of internal errors")


def load(ref: str, url: str) -> tuple[report_data.RunFiles, str]:
    """The run's files and where they came from: a run directory, else the stored run."""
    path = Path(ref)
    if path.is_dir():
        try:
            return report_data.load_run(path), str(path)
        except report_data.ReportInputError as exc:
            raise run_refs.RunRefError(str(exc)) from None
    if os.sep in ref or ref.startswith("."):
        raise run_refs.RunRefError(f"{ref}: no such run directory")
    try:
        with run_refs.Store(url) as store:
            stored = store.get(ref)
            where = f"{stored.run_id} in {store.display_url}"
    except run_refs.StoreError as exc:
        raise run_refs.RunRefError(f"{ref}: not a run directory, and {exc}") from None
    files = report_data.RunFiles(run_dir=Path(stored.source or stored.run_id), results=stored.results,
                                 plans=list(stored.plans or []), sysinfo=stored.sysinfo)
    return files, where


def point_caveats(test: Mapping[str, Any], fs: Mapping[str, Any], point: Mapping[str, Any]) -> list[str]:
    """What qualifies one reported figure, in words (the columns results.csv gives them)."""
    words = []
    if point.get("at_generator_ceiling"):
        words.append("at the generator's ceiling: a lower bound of the DUT's throughput")
    elif fs.get("generator_limited"):
        words.append("generator-limited: max_load lowered to what the generator delivered")
    if point.get("lower_bound_provisional"):
        words.append("provisional: the search's budget ran out")
    if point.get("valid") is False:
        words.append(f"the reported trial #{point.get('trial_index')} is invalid")
    elif point.get("sending_caveat"):
        caveat = point["sending_caveat"]
        words.append(f"trial #{point.get('trial_index')} sent {report_data.CAVEAT_WORDS.get(caveat, caveat)}")
    bad_latency = report_data.latency_not_as_asked(fs, point)
    if bad_latency is not None:
        words.append(f"latency (trial #{bad_latency.get('trial_index')}) not at this load: the generator did not "
                     f"send it as asked ({bad_latency.get('invalid_reason') or 'no reason given'})")
    if point.get("cpu_oversubscribed") or test.get("cpu_oversubscribed"):
        words.append("CPU oversubscribed: the figure measures contention")
    return words


def print_run(files: report_data.RunFiles, where: str, out: Console) -> None:
    results = files.results

    def line(text: str) -> None:
        out.print(text, markup=False, highlight=False, soft_wrap=True)

    line(f"run {results.get('run_id')}: {results.get('status')} ({where}); started {results.get('started_at')}, "
         f"finished {results.get('finished_at') or '-'}, vsbench {results.get('vsbench_version')}")
    RunDisplay(out).print_summary(RunResults.from_json(results))

    notes = report_data.validity_notes(files)
    out.print()
    worst = "errors" if any(n.severity == "error" for n in notes) else "warnings" if any(
        n.severity == "warning" for n in notes) else "ok"
    line(f"validity: {worst}" + ("" if notes else " (no reason to doubt a figure)"))
    titles = {t.get("plan_index"): str(t.get("label")) for t in files.tests}
    for note in notes:
        place = " ".join(p for p in (titles.get(note.plan_index, ""),
                                     f"{note.frame_size_bytes} B" if note.frame_size_bytes is not None else "") if p)
        line(f"  {note.severity.upper()}{' ' + place if place else ''}: {note.text}")

    out.print()
    caveats = [(t, fs, p, point_caveats(t, fs, p)) for t in files.tests for fs in t.get("frame_sizes") or []
               for p in fs.get("points") or []]
    caveats = [c for c in caveats if c[3]]
    line("caveats: " + ("none" if not caveats else f"{len(caveats)} reported figure(s) qualified"))
    for test, fs, point, words in caveats:
        line(f"  {test.get('label')} {fs.get('frame_size_bytes')} B {point.get('name')}: {'; '.join(words)}")

    out.print()
    figures = run_metrics.extract(results, files.sysinfo, files.plans, files.trials)
    configs = {p.get("index"): p.get("config") or {} for p in files.plans}
    cases = thresholds.evaluate(results, figures, thresholds.Gates(), configs)
    checked = [c for c in cases if c.failures or c.passed_checks]
    if not checked:
        line("gates: none (no testcase of the run has thresholds; command-line gates are not stored with a run: "
             "vsbench --baseline RUN and --fail-below/--fail-above apply them when a run is made)")
        return
    counts = thresholds.summary(checked)
    line("gates (the testcases' thresholds, config.yaml): " + ", ".join(f"{n} {k}" for k, n in counts.items() if n))
    for case in checked:
        verdict = "FAIL" if case.status == "failed" else case.status.upper()
        detail = "; ".join(case.failures) if case.failures else ", ".join(case.passed_checks)
        line(f"  {verdict} {case.test} {case.frame_size_bytes} B: {detail or case.error or ''}".rstrip())


def run(args: argparse.Namespace, out: Console) -> int:
    url = run_refs.store_url(args.db, args.results_dir)
    files, where = load(args.run, url)
    print_run(files, where, out)
    return 0
