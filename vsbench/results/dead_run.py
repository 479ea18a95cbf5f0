"""Close the files of a run that was killed (``kill -9``, the machine lost power): no
teardown ran, so its results.json -- and a suite's suite.json -- still say ``running``,
and every report built from them says the run has not finished.

``vsbench cleanup`` calls :func:`mark_dead_run` for each dead run whose lock recorded its
run directory (the lock is how it knows the run is dead, not merely slow), before it
removes the lock. The run, and each plan and frame size still ``running``, become
``interrupted`` with an error saying what happened; results.csv's status cells and
report.html follow. Files whose status is already terminal are left as they are, so
cleaning up twice changes nothing.
"""

from __future__ import annotations

import csv
import io
import json
import logging
from pathlib import Path
from typing import Any

from vsbench.results import schema, space_reserve, writers

log = logging.getLogger(__name__)

STATUS = "interrupted"
REASON = "killed: the run's process died without tearing down (found dead by vsbench cleanup)"


def _close(doc: dict[str, Any]) -> bool:
    """Mark ``doc`` (results.json) and its running plans and frame sizes; whether it changed."""
    changed = False
    if doc.get("status") == "running":
        doc["status"], changed = STATUS, True
    for test in doc.get("tests") or []:
        if test.get("status") == "running":
            test["status"], test["error"], changed = STATUS, test.get("error") or REASON, True
        for fs in test.get("frame_sizes") or []:
            if fs.get("status") == "running":
                fs["status"], fs["error"], changed = STATUS, fs.get("error") or REASON, True
    return changed


def _close_csv(path: Path) -> None:
    """results.csv's ``running`` status cells, as results.json's (rows stay in order)."""
    text = path.read_text(encoding="utf-8")
    rows = list(csv.DictReader(io.StringIO(text)))
    if not rows or "status" not in rows[0] or not any(r["status"] == "running" for r in rows):
        return
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    for row in rows:
        if row["status"] == "running":
            row["status"] = STATUS
        writer.writerow(row)
    writers.write_atomic(path, out.getvalue())


def mark_dead_run(run_id: str, run_dir: Path, dry_run: bool = False) -> list[str]:
    """Mark the files of dead run ``run_id`` in ``run_dir`` ``interrupted``; one line per
    file changed (or that would be, with ``dry_run``). A directory that is not this run's
    (gone, another run id in results.json, unreadable) is left alone."""
    run_dir = Path(run_dir)
    results_path = run_dir / "results.json"
    try:
        results = json.loads(results_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if not isinstance(results, dict) or results.get("run_id") != run_id:
        return []
    reserve = run_dir / space_reserve.FILE_NAME  # the killed run's space reserve: no use now
    if reserve.is_file() and not reserve.is_symlink() and not dry_run:
        reserve.unlink()
    changed = _close(results)
    suite_path = run_dir / "suite.json"
    suite: dict[str, Any] | None = None
    if suite_path.is_file():
        try:
            suite = json.loads(suite_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            suite = None
    suite_changed = isinstance(suite, dict) and suite.get("status") == "running"
    if not changed and not suite_changed:
        return []
    verb = "would mark" if dry_run else "marked"
    lines = []
    if changed:
        lines.append(f"{verb} {results_path} {STATUS}")
    if suite_changed:
        lines.append(f"{verb} {suite_path} {STATUS}")
    if dry_run:
        return lines
    if changed:
        schema.validate(results, "results.schema.json")
        writers.write_atomic(results_path, json.dumps(results, indent=2, allow_nan=False) + "\n")
        if (run_dir / "results.csv").is_file():
            _close_csv(run_dir / "results.csv")
    if suite_changed:
        assert suite is not None
        suite["status"] = STATUS
        suite["finished_at"] = suite.get("finished_at") or results.get("finished_at")
        schema.validate(suite, "suite_result.schema.json")
        writers.write_atomic(suite_path, json.dumps(suite, indent=2, allow_nan=False) + "\n")
    try:
        from vsbench.results import report_html  # matplotlib: only when there is a report to rebuild

        report_html.write_report(run_dir)
        lines.append(f"rebuilt {run_dir / report_html.FILE_NAME}")
    except Exception as exc:  # noqa: BLE001 - the results are marked; the report is derived
        log.warning("could not rebuild the report of run %s: %s", run_id, exc)
    return lines
