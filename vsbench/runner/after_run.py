"""What happens after the plans ran: CI gates, the JUnit file, the results store, the
machine-readable summary. Everything is derived from the run directory's files, so it
works the same for a run that just ended and for ``vsbench compare``/``db`` later.

Exit codes (the CLI's): a run whose plans all ran but that failed a gate (a threshold, a
regression against the baseline) exits :data:`EXIT_THRESHOLD` (3); "could not run" keeps
its own codes (1 a plan failed, 2 bad input, 130 interrupted) and wins over 3, since the
figures of a run that could not run are not a verdict on the switch.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vsbench.results import integration_cases, junit, report_data, run_metrics, thresholds, writers
from vsbench.results.run_metrics import RunMetrics

log = logging.getLogger(__name__)

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_THRESHOLD = 0, 1, 2, 3
SUMMARY_SCHEMA_ID = "vsbench.run-summary/1"


@dataclass
class AfterRun:
    """What the CLI asked for after the run."""

    gates: thresholds.Gates = field(default_factory=thresholds.Gates)
    junit_path: Path | None = None
    store_url: str | None = None  # None: do not record
    #: The figures are wanted anyway (``--json``, ``--repeat``, a testcase's thresholds).
    figures: bool = False

    @property
    def needed(self) -> bool:
        return self.figures or self.gates.any or self.junit_path is not None or self.store_url is not None


@dataclass
class Outcome:
    exit_code: int
    cases: list[thresholds.Case]
    figures: RunMetrics | None
    summary: dict[str, Any]


def load_figures(run_dir: Path) -> tuple[report_data.RunFiles, RunMetrics]:
    files = report_data.load_run(run_dir)
    return files, run_metrics.extract(files.results, files.sysinfo, files.plans, files.trials)


def finish(run_dir: Path | None, run_exit_code: int, options: AfterRun) -> Outcome:
    """Evaluate the gates, write the JUnit file, record the run; return the final exit code
    and the summary document of ``--json``."""
    summary: dict[str, Any] = {"schema": SUMMARY_SCHEMA_ID, "exit_code": run_exit_code,
                               "run_dir": None if run_dir is None else str(run_dir)}
    if run_dir is None or not (run_dir / report_data.RESULTS_FILE).is_file() or not options.needed:
        return Outcome(run_exit_code, [], None, summary)
    files, figures = load_figures(run_dir)
    configs = {p.get("index"): p.get("config") or {} for p in files.plans}
    cases = thresholds.evaluate(files.results, figures, options.gates, configs)
    cases += integration_cases.step_cases(files.results)  # one case per integration step
    code = run_exit_code
    if code == EXIT_OK and any(c.status == "failed" for c in cases):
        code = EXIT_THRESHOLD
    if options.junit_path is not None:
        text = junit.render(cases, run_id=str(files.results.get("run_id")),
                            timestamp=files.results.get("started_at"),
                            hostname=((files.sysinfo or {}).get("host") or {}).get("hostname"),
                            properties={"vsbench_version": str(files.results.get("vsbench_version"))})
        writers.write_atomic(options.junit_path, text)
    stored: dict[str, Any] | None = None
    if options.store_url:
        # here, not at the top: SQLAlchemy is half a second of every run's start otherwise
        from vsbench.results.store import Store, StoreError

        try:
            with Store(options.store_url) as store:
                run_id, action = store.import_run(run_dir)
            stored = {"url": store.display_url, "result": action}
        except (StoreError, report_data.ReportInputError) as exc:
            log.warning("run not recorded in the results store: %s", exc)
            stored = {"url": None, "result": "error", "error": str(exc)}
    summary.update(run_summary(files, figures, cases))
    summary["exit_code"] = code
    summary["junit"] = None if options.junit_path is None else str(options.junit_path)
    summary["store"] = stored
    return Outcome(code, cases, figures, summary)


def run_summary(files: report_data.RunFiles, figures: RunMetrics, cases: list[thresholds.Case]) -> dict[str, Any]:
    r = files.results
    return {
        "run_id": r.get("run_id"),
        "status": r.get("status"),
        "started_at": r.get("started_at"),
        "finished_at": r.get("finished_at"),
        "tests": [{"label": t.label, "repeats": t.repeats, "statuses": t.statuses, **t.fields}
                  for t in figures.tests],
        "metrics": [{"test": m.key.test, "frame_size_bytes": m.key.frame_size_bytes, "metric": m.key.metric,
                     "unit": m.unit, "value": m.value, **m.spread, "samples": m.samples,
                     "interval": None if m.uncertainty is None else [m.uncertainty.low, m.uncertainty.high],
                     "basis": m.basis, "flags": m.flags} for m in figures.metrics],
        "gates": {"summary": thresholds.summary(cases),
                  "cases": [{"test": c.test, "frame_size_bytes": c.frame_size_bytes, "status": c.status,
                             "failures": c.failures, "checks": c.passed_checks, "error": c.error}
                            for c in cases]},
    }
