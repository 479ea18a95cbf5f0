"""Find the runs a command names: a run directory, or a run id (or unique prefix) in the
results store; several joined by commas are pooled as one side of a comparison (repeated
runs of one configuration).

The store is the one ``--db URL`` names, else ``$VSBENCH_DB``, else the SQLite file under
the results directory (:func:`vsbench.results.store.default_url`).
"""

from __future__ import annotations

import os
from pathlib import Path

from vsbench.results import report_data, run_metrics
from vsbench.results.run_metrics import RunMetrics
from vsbench.results.store import URL_ENV, Store, StoreError, default_url  # noqa: F401 -- URL_ENV re-exported


class RunRefError(ValueError):
    """A named run cannot be found or read; one line."""


def store_url(explicit: str | None, results_dir: Path | None) -> str:
    return explicit or os.environ.get(URL_ENV) or default_url(results_dir or Path("results"))


def _from_dir(path: Path) -> RunMetrics:
    try:
        files = report_data.load_run(path)
    except report_data.ReportInputError as exc:
        raise RunRefError(str(exc)) from None
    return run_metrics.extract(files.results, files.sysinfo, files.plans, files.trials)


def load_one(ref: str, url: str) -> RunMetrics:
    path = Path(ref)
    if path.is_dir():
        return _from_dir(path)
    if os.sep in ref or ref.startswith("."):
        raise RunRefError(f"{ref}: no such run directory")
    try:
        with Store(url) as store:
            return store.metrics(ref)
    except StoreError as exc:
        raise RunRefError(f"{ref}: not a run directory, and {exc}") from None


def load_side(ref: str, url: str) -> RunMetrics:
    """One side of a comparison: ``RUN`` or ``RUN1,RUN2,...`` pooled."""
    parts = [p for p in (s.strip() for s in ref.split(",")) if p]
    if not parts:
        raise RunRefError(f"{ref!r}: no run named")
    return run_metrics.pool([load_one(p, url) for p in parts])
