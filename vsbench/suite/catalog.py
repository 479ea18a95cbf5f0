"""Find suites through the ``vsbench.suite`` entry points and load them, validated.

Every suite comes from an entry point, vsbench's own exactly as a third party's: the
entry point names an object that is a suite file, a directory of them, an iterable of
either, or a callable returning one of those. vsbench registers
``builtin = vsbench.suite.catalog:builtin_suite_files`` (``suites/*.yaml`` of the checkout,
or of the installed wheel); a vendor's package registers its own, e.g.::

    [options.entry_points]
    vsbench.suite =
        acme = acme_vsbench.suites:SUITE_DIR

A suite file is checked against ``vsbench/schemas/suite.schema.json`` and then for what a
schema cannot say (every series names a run, ids are unique, columns are known metrics);
its ``references`` file (the report's printed figures by id) against the reference part of
the same schema. Errors are one line naming the file and the field.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Iterable

import jsonschema

from vsbench.runner import config as cfg
from vsbench.suite import metrics
from vsbench.suite.model import REQUIRED_PROFILES, Suite, from_document

NAMESPACE = "vsbench.suite"
BUILTIN_DISTRIBUTION = "vsbench"


class SuiteError(cfg.ConfigError):
    """A suite is unknown or malformed; one line."""


@dataclass(frozen=True)
class SuiteSource:
    """A suite file and who provides it (``built-in`` or the distribution's name)."""

    path: Path
    origin: str


def builtin_suite_files() -> list[Path]:
    """vsbench's own suites: ``suites/*.yaml`` beside ``conf/`` and ``testcases/``."""
    return sorted((cfg.project_root() / "suites").glob("*.yaml"))


def _paths_of(obj: Any) -> list[Path]:
    if callable(obj):
        obj = obj()
    if isinstance(obj, (str, Path)):
        path = Path(obj)
        return sorted(path.glob("*.yaml")) if path.is_dir() else [path]
    return [p for item in obj for p in _paths_of(item)]


def sources() -> tuple[list[SuiteSource], list[str]]:
    """Every suite file the installed packages register, and one line per entry point that
    could not be loaded."""
    found: list[SuiteSource] = []
    problems: list[str] = []
    for ep in sorted(entry_points(group=NAMESPACE), key=lambda e: e.name):
        dist = getattr(getattr(ep, "dist", None), "name", None) or "?"
        origin = "built-in" if dist == BUILTIN_DISTRIBUTION else dist
        try:
            paths = _paths_of(ep.load())
        except Exception as exc:  # noqa: BLE001 - a broken vendor package must not hide the others
            problems.append(f"suite entry point {ep.name} ({dist}): cannot load: {type(exc).__name__}: {exc}")
            continue
        found += [SuiteSource(p, origin) for p in paths]
    return found, problems


def _validator(name: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(cfg.load_schema(name))


def _schema_error(path: Path, errors: list[jsonschema.ValidationError]) -> SuiteError:
    err = jsonschema.exceptions.best_match(errors)
    return SuiteError(f"{path}: {cfg._format_path(err)}: {cfg._one_line(err)}")


def _load_references(suite_path: Path, relative: str) -> dict[str, Any]:
    path = (suite_path.parent / relative).resolve()
    doc = cfg.read_yaml_mapping(path)
    ids = doc.get("ids")
    if not isinstance(ids, dict):
        raise SuiteError(f"{path}: ids: expected a mapping of report ids to printed figures")
    schema = cfg.load_schema("suite.schema.json")
    validator = jsonschema.Draft202012Validator({**schema["$defs"]["reference"], "$defs": schema["$defs"]})
    for key, ref in ids.items():
        errors = list(validator.iter_errors(ref))
        if errors:
            err = jsonschema.exceptions.best_match(errors)
            raise SuiteError(f"{path}: ids.{key}.{cfg._format_path(err)}: {cfg._one_line(err)}")
    return ids


def _check(suite: Suite) -> None:
    """What the schema cannot say; one line naming the suite file and the field."""
    where = suite.path
    missing = [p for p in REQUIRED_PROFILES if p not in suite.profiles]
    if missing:
        raise SuiteError(f"{where}: profiles: missing {', '.join(missing)}")
    names = [r.name for r in suite.runs]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise SuiteError(f"{where}: runs: the name {dup[0]!r} is used twice")
    ids = [t.id for t in suite.tables]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise SuiteError(f"{where}: tables: the id {dup[0]!r} is used twice")
    for run in suite.runs:
        for profile in run.profiles:
            if profile not in suite.profiles:
                raise SuiteError(f"{where}: runs.{run.name}.profiles: unknown profile {profile!r}")
    for table in suite.tables:
        at = f"{where}: tables.{table.id}"
        for series in table.series:
            if series.run not in names:
                close = difflib.get_close_matches(series.run, names, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise SuiteError(f"{at}: series: unknown run {series.run!r}{hint}")
        labels = [s.label for s in table.series]
        if len(set(labels)) != len(labels):
            raise SuiteError(f"{at}: series: two series share a label; give each its own")
        for column in table.columns:
            if not metrics.known(column):
                raise SuiteError(f"{at}: columns: unknown metric {column!r}; {metrics.hint(column)}")
        if table.gain is not None:
            unknown = [k for k in table.gain.baseline if k not in table.rows]
            if unknown:
                raise SuiteError(f"{at}: gain.baseline: {unknown[0]!r} is not one of the table's rows ({', '.join(table.rows)})")
            if table.gain.over is not None and table.gain.over not in labels:
                raise SuiteError(f"{at}: gain.over: {table.gain.over!r} is not a series label ({', '.join(labels)})")
            if not metrics.known(table.gain.metric):
                raise SuiteError(f"{at}: gain.metric: unknown metric {table.gain.metric!r}")
        for theirs, ours in table.report_metrics.items():
            if not metrics.known(ours):
                raise SuiteError(f"{at}: report_metrics.{theirs}: unknown metric {ours!r}")
        if table.plot is not None:
            for axis in (table.plot.x, table.plot.y):
                if axis not in table.rows and not metrics.known(axis):
                    raise SuiteError(f"{at}: plot: {axis!r} is neither a row key nor a metric")


def load(source: SuiteSource) -> Suite:
    """The suite in ``source.path``, validated (SuiteError otherwise)."""
    path = source.path
    doc = cfg.read_yaml_mapping(path)
    errors = list(_validator("suite.schema.json").iter_errors(doc))
    if errors:
        raise _schema_error(path, errors)
    references = _load_references(path, doc["references"]) if doc.get("references") else {}
    suite = from_document(doc, path, references, origin=source.origin)
    _check(suite)
    return suite


def discover() -> dict[str, SuiteSource]:
    """Suite name -> its file, for every registered suite (a name given twice: the first
    in entry-point order wins and the clash is an error at load)."""
    found, _ = sources()
    by_name: dict[str, SuiteSource] = {}
    for source in found:
        try:
            name = str(cfg.read_yaml_mapping(source.path).get("name") or source.path.stem)
        except cfg.ConfigError:
            name = source.path.stem
        by_name.setdefault(name, source)
    return by_name


def find(name: str) -> Suite:
    """The suite registered as ``name``, or the suite file ``name`` (a path ending in .yaml:
    a suite being written, or one kept outside any package)."""
    if name.endswith((".yaml", ".yml")):
        path = Path(name)
        if not path.is_file():
            raise SuiteError(f"{path}: no such suite file")
        return load(SuiteSource(path.resolve(), "file"))
    known = discover()
    if name not in known:
        close = difflib.get_close_matches(name, list(known), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        listed = ", ".join(sorted(known)) or "none installed"
        raise SuiteError(f"unknown suite {name!r}{hint}; available: {listed}")
    return load(known[name])


def load_all() -> tuple[list[Suite], list[str]]:
    """Every registered suite that loads, and one line for each that does not."""
    found, problems = sources()
    suites = []
    for source in found:
        try:
            suites.append(load(source))
        except SuiteError as exc:
            problems.append(str(exc))
    return suites, problems


def all_names(suites: Iterable[Suite]) -> list[str]:
    return sorted(s.name for s in suites)
