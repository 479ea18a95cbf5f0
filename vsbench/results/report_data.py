"""What a report needs from a run directory, read from its files alone.

A report must be regenerable for any old run and every number in it traceable to a file,
so nothing here looks at a live run: :func:`load_run` reads ``results.json`` (required),
``config.yaml``, ``trials.jsonl`` and ``sysinfo.json`` (each optional: a missing or damaged
one becomes a visible problem, never a silent gap), and :func:`validity_notes` gathers every
reason to doubt a figure -- failed or interrupted plans, invalid and generator-limited
trials, CPU oversubscription, irregular search verdicts -- so the report can show them all.

Fields are read present-if-present: results.json grows (NDR/PDR points, latency
percentiles) and an old file lacks what a newer vsbench writes.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import yaml

from vsbench.interfaces.traffic import CAVEAT_LATE, INVALID_DISTURBED
from vsbench.results import schema
from vsbench.results.model import TrialRecord
from vsbench.results.trial_log import iter_trial_docs
from vsbench.system import yaml_text

RESULTS_FILE = "results.json"
CONFIG_FILE = "config.yaml"
TRIALS_FILE = "trials.jsonl"
SYSINFO_FILE = "sysinfo.json"
#: A suite run's account of its report, id by id (optional: only a suite's run has it).
SUITE_FILE = "suite.json"
INPUT_FILES = (RESULTS_FILE, CONFIG_FILE, TRIALS_FILE, SYSINFO_FILE, SUITE_FILE)

#: How test notes about CPU placement start (worded by :mod:`vsbench.runner.placement`;
#: repeated here because results may not import the runner).
OVERSUBSCRIBED_PREFIX = "CPU oversubscribed"
PLACEMENT_PREFIX = "CPU placement"
#: How a point's trial was sent when the search measured by it although it was invalid
#: (``ReportedPoint.sending_caveat``).
CAVEAT_WORDS = {INVALID_DISTURBED: "unevenly (a pacing window off; it met the goal)",
                CAVEAT_LATE: "late (every frame, over longer than asked; filed at a load it delivered)"}

#: Trial verdicts of the search trace, against every goal's loss ratio.
PASS, FAIL, MIXED, INVALID, MEASURED = "pass", "fail", "mixed", "invalid", "measured"


class ReportInputError(ValueError):
    """A run directory cannot be reported on; one line for the user."""


class NotARunDirectory(ReportInputError):
    """The path is not a vsbench run directory."""


@dataclass
class RunFiles:
    """The parsed files of one run directory.

    ``problems`` lists, one line each, what could not be read or did not match its schema;
    ``digests`` is the SHA-256 of every input file that exists, so a reader can tell which
    version of the files a report was made from.
    """

    run_dir: Path
    results: dict[str, Any]
    plans: list[dict[str, Any]] = field(default_factory=list)
    trials: list[TrialRecord] = field(default_factory=list)
    sysinfo: dict[str, Any] | None = None
    #: suite.json of a suite's run (:mod:`vsbench.results.report_suite`), else None.
    suite: dict[str, Any] | None = None
    problems: list[str] = field(default_factory=list)
    digests: dict[str, str] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)

    @property
    def tests(self) -> list[dict[str, Any]]:
        return [t for t in self.results.get("tests") or [] if isinstance(t, dict)]

    def plan_config(self, plan_index: int | None) -> dict[str, Any]:
        """The resolved configuration of plan ``plan_index`` ({} when not recorded)."""
        for plan in self.plans:
            if plan.get("index") == plan_index and isinstance(plan.get("config"), dict):
                return plan["config"]
        return {}

    def trials_of(self, plan_index: int, frame_size_bytes: int | None = None) -> list[TrialRecord]:
        return [
            t for t in self.trials
            if t.identity.plan_index == plan_index
            and (frame_size_bytes is None or t.frame_size_bytes == frame_size_bytes)
        ]

    def plugin_entries(self, plan_index: int, kind: str) -> list[dict[str, Any]]:
        """sysinfo.json ``plugins`` entries of one plan and kind (vswitch, trafficgen, ...)."""
        entries = (self.sysinfo or {}).get("plugins") or []
        return [p for p in entries if isinstance(p, dict)
                and p.get("plan_index") == plan_index and p.get("kind") == kind]


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _check_schema(doc: Any, file_name: str, problems: list[str]) -> None:
    try:
        schema.validate(doc, schema.SCHEMA_OF[file_name])
    except schema.SchemaViolation as exc:
        problems.append(f"{file_name} does not match its schema ({exc}); shown as far as readable")


def load_run(run_dir: Path) -> RunFiles:
    """Read the files of ``run_dir``.

    Raises :class:`NotARunDirectory` when ``run_dir`` has no results.json and
    :class:`ReportInputError` when results.json is not a JSON object; every other defect
    is recorded in ``problems`` and reported.
    """
    run_dir = Path(run_dir)
    results_path = run_dir / RESULTS_FILE
    if not run_dir.is_dir():
        raise NotARunDirectory(f"{run_dir}: not a run directory (no such directory)")
    if not results_path.is_file():
        raise NotARunDirectory(f"{run_dir}: not a run directory ({RESULTS_FILE} missing)")
    try:
        results = json.loads(results_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReportInputError(f"{results_path}: cannot read: {_first_line(exc)}") from None
    if not isinstance(results, dict) or not isinstance(results.get("tests"), list):
        raise ReportInputError(f"{results_path}: not a vsbench results document")

    files = RunFiles(run_dir=run_dir, results=results)
    for name in INPUT_FILES:
        path = run_dir / name
        if path.is_file():
            try:
                files.digests[name] = _digest(path)
                files.sizes[name] = path.stat().st_size
            except OSError as exc:
                files.problems.append(f"{name}: cannot read: {exc.strerror or exc}")
    _check_schema(results, RESULTS_FILE, files.problems)
    _load_config(files)
    _load_trials(files)
    _load_sysinfo(files)
    _load_suite(files)
    return files


def _load_config(files: RunFiles) -> None:
    path = files.run_dir / CONFIG_FILE
    if not path.is_file():
        files.problems.append(f"{CONFIG_FILE} missing: test parameters are shown from results.json only")
        return
    try:
        doc = yaml_text.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        files.problems.append(f"{CONFIG_FILE}: cannot read: {_first_line(exc)}")
        return
    if not isinstance(doc, dict) or not isinstance(doc.get("plans"), list):
        files.problems.append(f"{CONFIG_FILE}: not a vsbench run configuration")
        return
    _check_schema(doc, CONFIG_FILE, files.problems)
    files.plans = [p for p in doc["plans"] if isinstance(p, dict)]


def _load_trials(files: RunFiles) -> None:
    path = files.run_dir / TRIALS_FILE
    if not path.is_file():
        if any(fs.get("trial_count") for t in files.tests for fs in t.get("frame_sizes") or []):
            files.problems.append(f"{TRIALS_FILE} missing: the search traces cannot be drawn")
        return
    try:
        docs = list(iter_trial_docs(path))
    except (OSError, ValueError) as exc:
        files.problems.append(f"{TRIALS_FILE}: cannot read: {_first_line(exc)}")
        return
    bad = 0
    for number, doc in enumerate(docs, start=1):
        try:
            files.trials.append(TrialRecord.from_json(doc))
        except (KeyError, TypeError, ValueError):
            bad += 1
            if bad == 1:
                files.problems.append(f"{TRIALS_FILE} record {number} is not a trial record; skipped")
    if bad > 1:
        files.problems.append(f"{TRIALS_FILE}: {bad} records in all were not trial records")


def _read_document(files: RunFiles, name: str, required_key: str | None = None) -> dict[str, Any] | None:
    """JSON file ``name`` of the run as a dict checked against its schema, or None with the
    problem recorded (unreadable, not a vsbench document: not an object, or without
    ``required_key``)."""
    path = files.run_dir / name
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        files.problems.append(f"{name}: cannot read: {_first_line(exc)}")
        return None
    if not isinstance(doc, dict) or (required_key is not None and not isinstance(doc.get(required_key), list)):
        files.problems.append(f"{name}: not a vsbench {name.split('.')[0]} document")
        return None
    _check_schema(doc, name, files.problems)
    return doc


def _load_sysinfo(files: RunFiles) -> None:
    if not (files.run_dir / SYSINFO_FILE).is_file():
        files.problems.append(f"{SYSINFO_FILE} missing: no bill of materials of the system under test")
        return
    files.sysinfo = _read_document(files, SYSINFO_FILE)


def _load_suite(files: RunFiles) -> None:
    if (files.run_dir / SUITE_FILE).is_file():  # else not a suite's run
        files.suite = _read_document(files, SUITE_FILE, required_key="ids")


# -- trial verdicts -------------------------------------------------------------------------


def goal_loss_ratios(test: dict[str, Any], config: dict[str, Any]) -> list[tuple[str, float]]:
    """(name, loss ratio) of every search goal: from the reported points, else config.yaml."""
    found: dict[str, float] = {}
    for fs in test.get("frame_sizes") or []:
        for point in fs.get("points") or []:
            ratio = point.get("goal_loss_ratio")
            if point.get("name") != "continuous" and isinstance(ratio, (int, float)):
                found.setdefault(str(point.get("name")), float(ratio))
    if found:
        return list(found.items())
    traffic_type = (config.get("traffic") or {}).get("type") or test.get("traffic_type")
    if traffic_type not in (None, "rfc2544_throughput"):
        return []
    goals = (config.get("search") or {}).get("goals") or []
    return [(str(g.get("name")), float(g.get("loss_ratio") or 0.0)) for g in goals if isinstance(g, dict)]


def trial_verdict(record: TrialRecord, loss_ratios: Sequence[float]) -> str:
    """``invalid``, else ``pass``/``fail``/``mixed`` by the trial's own loss against each
    goal's loss ratio (``measured`` when there are no goals, as in a fixed-rate test)."""
    if not record.valid:
        return INVALID
    if not loss_ratios:
        return MEASURED
    loss = record.result.loss_ratio
    passed = [loss <= ratio for ratio in loss_ratios]
    if all(passed):
        return PASS
    if not any(passed):
        return FAIL
    return MIXED


# -- validity notes -------------------------------------------------------------------------


@dataclass(frozen=True)
class Note:
    """One reason to read a figure with care, and where it applies.

    ``severity`` is ``error`` (a figure is missing or wrong to use), ``warning`` (a figure
    exists but is qualified) or ``info``.
    """

    severity: str
    text: str
    plan_index: int | None = None
    frame_size_bytes: int | None = None


def _severity_of_note(text: str) -> str:
    if text.startswith(OVERSUBSCRIBED_PREFIX):
        return "error"
    return "warning"


def invalid_tally(records: Iterable[TrialRecord]) -> Counter[str]:
    """How many invalid trials per reason tag (the part of a reason before ':')."""
    tags: Counter[str] = Counter()
    for rec in records:
        if not rec.valid:
            for reason in rec.invalid_reasons or ("unspecified",):
                tags[reason.split(":", 1)[0]] += 1
    return tags


def validity_notes(files: RunFiles) -> list[Note]:
    """Every reason to doubt a figure of the run, in report order (run, then per plan)."""
    notes = [Note("warning", problem) for problem in files.problems]
    status = files.results.get("status")
    if status == "running":
        notes.append(Note("warning", "the run had not finished when this report was made: results are partial"))
    elif status == "interrupted":
        notes.append(Note("error", "the run was interrupted: results are partial"))
    elif status == "failed":
        notes.append(Note("error", "at least one plan of the run failed"))
    reported = set()
    for test in files.tests:
        index = test.get("plan_index")
        notes.extend(_test_notes(files, test))
        for fs in test.get("frame_sizes") or []:
            reported.add((index, fs.get("frame_size_bytes")))
    orphans = Counter((t.identity.plan_index, t.frame_size_bytes) for t in files.trials
                      if (t.identity.plan_index, t.frame_size_bytes) not in reported)
    for (index, size), count in sorted(orphans.items()):
        notes.append(Note("warning", f"{count} trial(s) in {TRIALS_FILE} belong to no reported frame size",
                          index, size))
    return notes


def _test_notes(files: RunFiles, test: dict[str, Any]) -> list[Note]:
    index = test.get("plan_index")
    notes: list[Note] = []
    if test.get("status") in ("failed", "interrupted"):
        error = test.get("error")
        notes.append(Note("error", f"plan {test.get('status')}" + (f": {error}" if error else ""), index))
    for text in test.get("notes") or []:
        notes.append(Note(_severity_of_note(str(text)), str(text), index))
    for fs in test.get("frame_sizes") or []:
        size = fs.get("frame_size_bytes")
        fs_status = fs.get("status")
        if fs_status in ("failed", "interrupted"):
            error = fs.get("error")
            notes.append(Note("error", f"frame size {fs_status}" + (f": {error}" if error else ""), index, size))
        elif fs_status == "not-run" and test.get("status") != "not-run":
            notes.append(Note("warning", "frame size not run", index, size))
        fs_notes = [str(n) for n in fs.get("notes") or []]
        for text in fs_notes:
            notes.append(Note(_severity_of_note(text), text, index, size))
        for point in fs.get("points") or []:
            name = point.get("name")
            reason = point.get("irregular_reason")
            if point.get("regular") is False:
                text = f"{name}: {reason}" if reason else f"{name}: irregular search result"
                if not any(text in n for n in fs_notes):
                    notes.append(Note("warning", text, index, size))
            if point.get("valid") is False:
                notes.append(Note("warning", f"{name}: the reported trial #{point.get('trial_index')} is invalid",
                                  index, size))
            elif point.get("sending_caveat"):
                notes.append(Note("info", f"{name}: the reported trial #{point.get('trial_index')} was sent "
                                          f"{CAVEAT_WORDS.get(point['sending_caveat'], point['sending_caveat'])}: "
                                          "measured by all the same", index, size))
        records = files.trials_of(index, size) if isinstance(index, int) else []
        invalid = sum(1 for r in records if not r.valid)
        counted = fs.get("invalid_trial_count")
        if files.trials and isinstance(counted, int) and counted != invalid and fs_status != "not-run":
            notes.append(Note("warning", f"results.json counts {counted} invalid trial(s), "
                                         f"{TRIALS_FILE} holds {invalid}", index, size))
        elif invalid and not any("invalid" in n for n in fs_notes):
            detail = ", ".join(f"{tag} x{n}" for tag, n in sorted(invalid_tally(records).items()))
            notes.append(Note("warning", f"{invalid} of {len(records)} trials invalid ({detail})", index, size))
    return notes


def latency_not_as_asked(fs: Any, point: Any) -> Mapping[str, Any] | None:
    """The latency point that gave ``point`` its latency when the generator did not send
    that trial as asked (``valid`` false), else None.

    Its figures are not the latency at the point's load -- a generator that fell behind
    queues its own probes, so they can be orders of magnitude off -- and a reader must not
    take them for the DUT's: the report leaves them out of plots and flags them in tables.
    """
    if not isinstance(fs, Mapping) or not isinstance(point, Mapping):
        return None
    index = point.get("latency_trial_index")
    if index is None:
        return None
    for lp in fs.get("latency_points") or []:
        if isinstance(lp, Mapping) and lp.get("trial_index") == index and lp.get("valid") is False:
            return lp
    return None


def finite(value: Any) -> float | None:
    """``value`` as a float when it is a finite number, else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None
