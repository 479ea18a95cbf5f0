"""``suite.json``: a suite run's account of its report, id by id (schema
``vsbench/schemas/suite_result.schema.json``).

Written when the run starts (every id, nothing measured yet), after every plan and when the
run ends, always whole (an atomic replace), so a suite cut short by a signal or a crash
still says which ids it measured. Its ``plans`` list is what :mod:`vsbench.suite.tables`
needs beside results.json: which plan of results.json each suite run became, or why none.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from vsbench.results import schema, writers
from vsbench.suite import tables
from vsbench.suite.model import Suite
from vsbench.suite.planning import RUNNABLE, SuitePlan

FILE_NAME = "suite.json"
SCHEMA_ID = "vsbench.suite/1"


def plan_records(plan: SuitePlan) -> list[dict[str, Any]]:
    """Every planned plan with its index in results.json (the runnable ones, in order)."""
    records, index = [], 0
    for planned in plan.plans:
        if planned.status == RUNNABLE:
            records.append(planned.to_json(index))
            index += 1
        else:
            records.append(planned.to_json(None))
    return records


def build(plan: SuitePlan, results: Mapping[str, Any], run_id: str) -> dict[str, Any]:
    """The suite.json document of ``plan`` given the run's results so far."""
    records = plan_records(plan)
    ids = tables.build(plan.suite, records, results)
    suite = plan.suite
    return {
        "schema": SCHEMA_ID,
        "suite": suite.name,
        "title": suite.title,
        "report": suite.report,
        "origin": suite.origin,
        "profile": plan.profile.name,
        "profile_description": plan.profile.description,
        "run_id": run_id,
        "status": str(results.get("status") or "running"),
        "started_at": results.get("started_at"),
        "finished_at": results.get("finished_at"),
        "host": plan.host.to_json(),
        "summary": tables.summary(ids),
        "runs": plan.runs_json(),
        "plans": records,
        "ids": ids,
    }


def rebuild(run_dir: Path, suite: Suite) -> dict[str, Any]:
    """suite.json of ``run_dir`` with its ids built again from the run's results.json and
    the plans suite.json recorded, under ``suite`` as it is now (a corrected table or a
    reference figure added since the run); what ran and on which host is unchanged."""
    old = read(run_dir)
    if old is None:
        raise FileNotFoundError(f"{run_dir}: no {FILE_NAME} (not a suite's run)")
    results = json.loads((Path(run_dir) / "results.json").read_text(encoding="utf-8"))
    ids = tables.build(suite, old.get("plans") or [], results)
    return {**old, "title": suite.title, "report": suite.report, "summary": tables.summary(ids), "ids": ids}


def write(run_dir: Path, doc: Mapping[str, Any]) -> Path:
    schema.validate(dict(doc), "suite_result.schema.json")
    path = Path(run_dir) / FILE_NAME
    writers.write_atomic(path, json.dumps(doc, indent=2, allow_nan=False) + "\n")
    return path


def read(run_dir: Path) -> dict[str, Any] | None:
    path = Path(run_dir) / FILE_NAME
    if not path.is_file():
        return None
    return json.loads(path.read_text(encoding="utf-8"))
