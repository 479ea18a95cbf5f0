"""The results store: runs recorded in a database, so runs can be listed, compared and
trended without their directories.

SQLite by default (``<results-dir>/vsbench.sqlite``); a shared lab points every machine at
one PostgreSQL database with a URL (``postgresql://user:password@host/db``). Both go through
SQLAlchemy Core with the same tables, so they pass the same tests.

What is kept per run: its tags (``--tag KEY=VALUE``, to list and trend runs by them), its results.json, sysinfo.json and config.yaml plans (the documents,
whole: ``vsbench db show`` and reports need nothing else), what each test was, and every
comparable figure with its samples and interval (:mod:`vsbench.results.run_metrics`) --
trials.jsonl stays in the run directory. A run is keyed by its run id: importing it again
changes nothing, or replaces it when its results.json changed since (a run imported while
it was still going). The store records its schema version and refuses one it does not know.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, SQLAlchemyError

from vsbench.results import report_data, run_metrics
from vsbench.system import private_files
from vsbench.results.run_metrics import MetricKey, MetricValue, RunMetrics, TestInfo
from vsbench.results.significance import Interval

SCHEMA_VERSION = 1
DEFAULT_FILE = "vsbench.sqlite"
URL_ENV = "VSBENCH_DB"

metadata = sa.MetaData()

meta_table = sa.Table(
    "vsbench_meta", metadata,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("value", sa.String(256), nullable=False),
)

runs_table = sa.Table(
    "runs", metadata,
    sa.Column("run_id", sa.String(32), primary_key=True),
    sa.Column("started_at", sa.String(40)),
    sa.Column("finished_at", sa.String(40)),
    sa.Column("status", sa.String(20)),
    sa.Column("vsbench_version", sa.String(40)),
    sa.Column("hostname", sa.String(255)),
    sa.Column("source", sa.Text),
    sa.Column("results_sha256", sa.String(64), nullable=False),
    sa.Column("imported_at", sa.String(40), nullable=False),
    sa.Column("results_json", sa.Text, nullable=False),
    sa.Column("sysinfo_json", sa.Text),
    sa.Column("plans_json", sa.Text),
)

tests_table = sa.Table(
    "tests", metadata,
    sa.Column("run_id", sa.String(32), sa.ForeignKey("runs.run_id", ondelete="CASCADE"), primary_key=True),
    sa.Column("label", sa.String(400), primary_key=True),
    sa.Column("position", sa.Integer, nullable=False),
    sa.Column("testcase", sa.String(200)),
    sa.Column("vswitch", sa.String(200)),
    sa.Column("repeats", sa.Integer, nullable=False),
    sa.Column("fields_json", sa.Text, nullable=False),
    sa.Column("statuses_json", sa.Text, nullable=False),
)

metrics_table = sa.Table(
    "metrics", metadata,
    sa.Column("run_id", sa.String(32), sa.ForeignKey("runs.run_id", ondelete="CASCADE"), primary_key=True),
    sa.Column("test", sa.String(400), primary_key=True),
    sa.Column("frame_size_bytes", sa.Integer, primary_key=True),
    sa.Column("metric", sa.String(100), primary_key=True),
    sa.Column("position", sa.Integer, nullable=False),
    sa.Column("value", sa.Float, nullable=False),
    sa.Column("samples_json", sa.Text, nullable=False),
    sa.Column("interval_low", sa.Float),
    sa.Column("interval_high", sa.Float),
    sa.Column("basis", sa.Text, nullable=False),
    sa.Column("flags_json", sa.Text, nullable=False),
)

#: A suite run's rows (suite.json), one per id x row x metric with a figure: ``db trend
#: --suite`` follows one id's row over the stored runs of the suite. Added beside the tables
#: above (an older store gets it when opened; its runs have no suite rows until re-imported).
suite_rows_table = sa.Table(
    "suite_rows", metadata,
    sa.Column("run_id", sa.String(32), sa.ForeignKey("runs.run_id", ondelete="CASCADE"), primary_key=True),
    sa.Column("id", sa.String(100), primary_key=True),
    sa.Column("row", sa.String(400), primary_key=True),
    sa.Column("metric", sa.String(100), primary_key=True),
    sa.Column("suite", sa.String(200), nullable=False),
    sa.Column("profile", sa.String(40)),
    sa.Column("series", sa.String(200)),
    sa.Column("key_json", sa.Text, nullable=False),
    sa.Column("value", sa.Float, nullable=False),
    sa.Column("position", sa.Integer, nullable=False),
)


#: A run's tags (results.json ``tags``), one row per key: ``db list|trend --tag K=V`` select
#: runs by them. Added like ``suite_rows``: an older store gets the empty table when opened
#: (its runs were made before tags, so none are missing).
tags_table = sa.Table(
    "run_tags", metadata,
    sa.Column("run_id", sa.String(32), sa.ForeignKey("runs.run_id", ondelete="CASCADE"), primary_key=True),
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("value", sa.String(200), nullable=False),
)

#: Every table with a ``run_id``, children first: what replacing or deleting a run clears
#: (explicitly: SQLite enforces ON DELETE CASCADE only where the connection asked for it).
RUN_TABLES = (tags_table, suite_rows_table, metrics_table, tests_table, runs_table)


class StoreError(Exception):
    """The store cannot be opened or used; one line (credentials never in it)."""


def default_url(results_dir: Path) -> str:
    return f"sqlite:///{(Path(results_dir) / DEFAULT_FILE).resolve()}"


def _engine_url(url: str) -> sa.URL:
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise StoreError(f"not a database URL: {url.split('@')[-1]!r} (sqlite:///FILE or postgresql://...)") from None
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    if parsed.get_backend_name() not in ("sqlite", "postgresql"):
        raise StoreError(f"unsupported database {parsed.get_backend_name()!r}: use sqlite:///FILE or postgresql://...")
    return parsed


@dataclass
class StoredRun:
    """A run as the store keeps it."""

    run_id: str
    started_at: str | None
    finished_at: str | None
    status: str | None
    vsbench_version: str | None
    hostname: str | None
    source: str | None
    imported_at: str
    tests: list[str]
    results: dict[str, Any]
    sysinfo: dict[str, Any] | None
    plans: list[dict[str, Any]]
    #: ``--tag`` labels, and the vSwitch and generator plugins of its tests (distinct, in
    #: test order) -- what ``db list`` shows beside the run id.
    tags: dict[str, str] = field(default_factory=dict)
    vswitches: list[str] = field(default_factory=list)
    trafficgens: list[str] = field(default_factory=list)


@dataclass
class DeletedRun:
    """What :meth:`Store.delete` removed of one run: its rows per table."""

    run_id: str
    source: str | None
    rows: dict[str, int]


@dataclass
class TrendPoint:
    run_id: str
    started_at: str | None
    vswitch: str | None
    value: MetricValue


def _create_private(path: Path, display_url: str) -> None:
    """Create a new SQLite store file ``0644`` whatever the umask, and not through a planted
    link: SQLite would create it with the umask's mode (``0666`` under umask 0: any local
    user could rewrite a lab's history), and its journal files take the database's mode."""
    if path.exists() or str(path) == ":memory:":
        return
    try:
        os.close(private_files.open_fd(path, os.O_WRONLY))
    except OSError as exc:
        raise StoreError(f"cannot open store {display_url}: {exc.strerror}: {path}") from None


class Store:
    """One database; use as a context manager (the connection pool closes after)."""

    def __init__(self, url: str) -> None:
        self.url = _engine_url(url)
        self.display_url = self.url.render_as_string(hide_password=True)
        if self.url.get_backend_name() == "sqlite" and self.url.database:
            folder = Path(self.url.database).parent
            if not folder.is_dir():
                raise StoreError(f"cannot open store {self.display_url}: no directory {folder}")
            _create_private(Path(self.url.database), self.display_url)
        try:
            self.engine: Engine = sa.create_engine(self.url)
            self._prepare()
        except NoSuchModuleError as exc:
            raise StoreError(f"no driver for {self.display_url}: {exc}") from None
        except ModuleNotFoundError as exc:
            raise StoreError(f"no driver for {self.display_url}: {exc} "
                             "(pip install 'vsbench[postgresql]')") from None
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot open store {self.display_url}: {_first_line(exc)}") from None

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self.engine.dispose()

    # -- schema -----------------------------------------------------------------------------

    def _prepare(self) -> None:
        with self.engine.begin() as conn:
            if self.url.get_backend_name() == "sqlite":
                conn.exec_driver_sql("PRAGMA foreign_keys = ON")
            metadata.create_all(conn)
            row = conn.execute(sa.select(meta_table.c.value).where(meta_table.c.key == "schema_version")).first()
            if row is None:
                conn.execute(meta_table.insert().values(key="schema_version", value=str(SCHEMA_VERSION)))
            elif row[0] != str(SCHEMA_VERSION):
                raise StoreError(f"store {self.display_url} has schema version {row[0]}; this vsbench reads "
                                 f"version {SCHEMA_VERSION}")

    def schema_version(self) -> int:
        with self.engine.connect() as conn:
            return int(conn.execute(sa.select(meta_table.c.value).where(meta_table.c.key == "schema_version")).scalar_one())

    # -- import -----------------------------------------------------------------------------

    def import_run(self, run_dir: Path) -> tuple[str, str]:
        """Record the run in ``run_dir``; returns (run id, ``added`` | ``unchanged`` |
        ``updated``). Raises :class:`report_data.ReportInputError` for a non-run."""
        files = report_data.load_run(Path(run_dir))
        run_id = files.results.get("run_id")
        if not isinstance(run_id, str) or not run_id:
            raise report_data.ReportInputError(f"{run_dir}: results.json has no run_id")
        digest = files.digests.get(report_data.RESULTS_FILE, "")
        figures = run_metrics.extract(files.results, files.sysinfo, files.plans, files.trials)
        return run_id, self._write(run_id, files, digest, figures)

    def _write(self, run_id: str, files: report_data.RunFiles, digest: str, figures: RunMetrics) -> str:
        try:
            with self.engine.begin() as conn:
                old = conn.execute(sa.select(runs_table.c.results_sha256).where(runs_table.c.run_id == run_id)).first()
                if old is not None and old[0] == digest:
                    return "unchanged"
                if old is not None:
                    for table in RUN_TABLES:
                        conn.execute(table.delete().where(table.c.run_id == run_id))
                r = files.results
                conn.execute(runs_table.insert().values(
                    run_id=run_id, started_at=r.get("started_at"), finished_at=r.get("finished_at"),
                    status=r.get("status"), vsbench_version=r.get("vsbench_version"),
                    hostname=((files.sysinfo or {}).get("host") or {}).get("hostname"),
                    source=str(Path(files.run_dir).resolve()), results_sha256=digest,
                    imported_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                    results_json=json.dumps(r), sysinfo_json=None if files.sysinfo is None else json.dumps(files.sysinfo),
                    plans_json=json.dumps(files.plans)))
                if figures.tests:
                    conn.execute(tests_table.insert(), [
                        {"run_id": run_id, "label": t.label, "position": i, "testcase": t.fields.get("testcase"),
                         "vswitch": t.fields.get("vswitch"), "repeats": t.repeats,
                         "fields_json": json.dumps(t.fields), "statuses_json": json.dumps(t.statuses)}
                        for i, t in enumerate(figures.tests)])
                if figures.metrics:
                    conn.execute(metrics_table.insert(), [
                        {"run_id": run_id, "test": m.key.test, "frame_size_bytes": m.key.frame_size_bytes,
                         "metric": m.key.metric, "position": i, "value": m.value, "samples_json": json.dumps(m.samples),
                         "interval_low": None if m.interval is None else m.interval.low,
                         "interval_high": None if m.interval is None else m.interval.high,
                         "basis": m.basis, "flags_json": json.dumps(m.flags)}
                        for i, m in enumerate(figures.metrics)])
                tags = r.get("tags") or {}
                if isinstance(tags, dict) and tags:
                    conn.execute(tags_table.insert(), [{"run_id": run_id, "key": str(k)[:64], "value": str(v)[:200]}
                                                       for k, v in tags.items()])
                rows = suite_rows(files.suite, run_id)
                if rows:
                    conn.execute(suite_rows_table.insert(), rows)
                return "added" if old is None else "updated"
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot record run {run_id} in {self.display_url}: {_first_line(exc)}") from None

    # -- reading ----------------------------------------------------------------------------

    def resolve(self, ref: str) -> str:
        """The run id that ``ref`` (a run id, a unique prefix of one, or a run directory
        name ending in one) names; StoreError when none or several do."""
        candidate = ref.rsplit("-", 1)[-1]
        with self.engine.connect() as conn:
            exact = conn.execute(sa.select(runs_table.c.run_id).where(runs_table.c.run_id == candidate)).first()
            if exact is not None:
                return exact[0]
            like = candidate.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            found = [row[0] for row in conn.execute(
                sa.select(runs_table.c.run_id).where(runs_table.c.run_id.like(like, escape="\\")).limit(3))]
        if not found:
            raise StoreError(f"no run {ref!r} in store {self.display_url} (see vsbench db list)")
        if len(found) > 1:
            raise StoreError(f"run {ref!r} is ambiguous in store {self.display_url}: {', '.join(found)} ...")
        return found[0]

    def list_runs(self, testcase: str | None = None, limit: int | None = 50,
                  tags: dict[str, str] | None = None) -> list[StoredRun]:
        """Runs, newest first, optionally only those with a test of ``testcase`` and every
        one of ``tags``."""
        query = _with_tags(sa.select(runs_table), runs_table.c.run_id, tags)
        query = query.order_by(runs_table.c.started_at.desc(), runs_table.c.run_id.desc())
        if testcase:
            query = query.where(runs_table.c.run_id.in_(
                sa.select(tests_table.c.run_id).where(tests_table.c.testcase == testcase)))
        if limit:
            query = query.limit(limit)
        with self.engine.connect() as conn:
            rows = list(conn.execute(query).mappings())
            ids = [r["run_id"] for r in rows]
            tests, tagged = self._tests(conn, ids), self._tags(conn, ids)
        return [self._stored(row, tests.get(row["run_id"], []), tagged.get(row["run_id"], {}), whole=False)
                for row in rows]

    def get(self, ref: str) -> StoredRun:
        run_id = self.resolve(ref)
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(runs_table).where(runs_table.c.run_id == run_id)).mappings().one()
            tests, tagged = self._tests(conn, [run_id]), self._tags(conn, [run_id])
        return self._stored(row, tests.get(run_id, []), tagged.get(run_id, {}), whole=True)

    def delete(self, refs: Sequence[str]) -> list[DeletedRun]:
        """Remove the runs ``refs`` name (ids or unique prefixes) from the store, every row
        of every table, in one transaction; the run directories are not touched. Every ref
        is resolved first, so one unknown id deletes nothing (StoreError)."""
        run_ids = list(dict.fromkeys(self.resolve(ref) for ref in refs))
        deleted = []
        try:
            with self.engine.begin() as conn:
                for run_id in run_ids:
                    source = conn.execute(sa.select(runs_table.c.source).where(runs_table.c.run_id == run_id)).scalar()
                    rows = {}
                    for table in RUN_TABLES:
                        rows[table.name] = conn.execute(table.delete().where(table.c.run_id == run_id)).rowcount
                    deleted.append(DeletedRun(run_id, source, rows))
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot delete from {self.display_url}: {_first_line(exc)}") from None
        return deleted

    def metrics(self, ref: str) -> RunMetrics:
        """The run's figures, as :func:`run_metrics.extract` made them at import."""
        run_id = self.resolve(ref)
        with self.engine.connect() as conn:
            run = conn.execute(sa.select(runs_table).where(runs_table.c.run_id == run_id)).mappings().one()
            tests = conn.execute(sa.select(tests_table).where(tests_table.c.run_id == run_id)
                                 .order_by(tests_table.c.position)).mappings().all()
            rows = conn.execute(sa.select(metrics_table).where(metrics_table.c.run_id == run_id)
                                .order_by(metrics_table.c.position)).mappings().all()
        sysinfo = json.loads(run["sysinfo_json"]) if run["sysinfo_json"] else None
        return RunMetrics(
            run_ids=[run_id], started_at=run["started_at"], status=run["status"],
            vsbench_version=run["vsbench_version"], sut=run_metrics.sut_fields(sysinfo),
            tests=[TestInfo(t["label"], t["repeats"], json.loads(t["fields_json"]), json.loads(t["statuses_json"]))
                   for t in tests],
            metrics=[_metric_value(r) for r in rows],
        )

    def trend(self, test: str, metric: str, frame_size_bytes: int | None = None,
              vswitch: str | None = None, limit: int | None = None,
              tags: dict[str, str] | None = None) -> list[TrendPoint]:
        """``metric`` of test ``test`` (a label or a testcase name) over the stored runs
        (those with every one of ``tags`` when given), oldest first."""
        query = (sa.select(metrics_table, runs_table.c.started_at, tests_table.c.vswitch)
                 .join(runs_table, runs_table.c.run_id == metrics_table.c.run_id)
                 .join(tests_table, sa.and_(tests_table.c.run_id == metrics_table.c.run_id,
                                            tests_table.c.label == metrics_table.c.test))
                 .where(metrics_table.c.metric == metric)
                 .where(sa.or_(metrics_table.c.test == test, tests_table.c.testcase == test))
                 .order_by(runs_table.c.started_at, runs_table.c.run_id, metrics_table.c.frame_size_bytes))
        if frame_size_bytes is not None:
            query = query.where(metrics_table.c.frame_size_bytes == frame_size_bytes)
        if vswitch:
            query = query.where(tests_table.c.vswitch == vswitch)
        query = _with_tags(query, metrics_table.c.run_id, tags)
        with self.engine.connect() as conn:
            rows = conn.execute(query).mappings().all()
        points = [TrendPoint(r["run_id"], r["started_at"], r["vswitch"], _metric_value(r)) for r in rows]
        if limit:
            keep = list(dict.fromkeys(p.run_id for p in points))[-limit:]
            points = [p for p in points if p.run_id in keep]
        return points

    def suite_trend(self, suite: str, id_: str, metric: str, series: str | None = None,
                    limit: int | None = None, tags: dict[str, str] | None = None) -> list[TrendPoint]:
        """``metric`` of suite ``suite``'s id ``id_`` over the stored runs of the suite, oldest
        first: one point per run and row (series and key); the point's test label names the
        row (``000/T7-5 OvS-DPDK 1 core frame_size=64``)."""
        query = (sa.select(suite_rows_table, runs_table.c.started_at)
                 .join(runs_table, runs_table.c.run_id == suite_rows_table.c.run_id)
                 .where(suite_rows_table.c.suite == suite, suite_rows_table.c.id == id_,
                        suite_rows_table.c.metric == metric)
                 .order_by(runs_table.c.started_at, runs_table.c.run_id, suite_rows_table.c.position))
        if series:
            query = query.where(suite_rows_table.c.series == series)
        query = _with_tags(query, suite_rows_table.c.run_id, tags)
        with self.engine.connect() as conn:
            rows = conn.execute(query).mappings().all()
        points = []
        for r in rows:
            key = json.loads(r["key_json"])
            label = " ".join([id_, r["series"] or "", *(f"{k}={v}" for k, v in key.items() if k != "frame_size")])
            size = key.get("frame_size")
            value = MetricValue(MetricKey(label.strip(), int(size) if isinstance(size, (int, float)) else 0, metric),
                                [float(r["value"])])
            points.append(TrendPoint(r["run_id"], r["started_at"], None, value))
        if limit:
            keep = list(dict.fromkeys(p.run_id for p in points))[-limit:]
            points = [p for p in points if p.run_id in keep]
        return points

    @staticmethod
    def _tests(conn: sa.Connection, run_ids: Sequence[str]) -> dict[str, list[tuple[str, str | None, str | None]]]:
        """Per run, its tests in order: (label, vswitch, trafficgen)."""
        if not run_ids:
            return {}
        out: dict[str, list[tuple[str, str | None, str | None]]] = {}
        query = (sa.select(tests_table.c.run_id, tests_table.c.label, tests_table.c.vswitch,
                           tests_table.c.fields_json).where(tests_table.c.run_id.in_(run_ids))
                 .order_by(tests_table.c.run_id, tests_table.c.position))
        for run_id, label, vswitch, fields_json in conn.execute(query):
            generator = (json.loads(fields_json) if fields_json else {}).get("trafficgen")
            out.setdefault(run_id, []).append((label, vswitch, generator or None))
        return out

    @staticmethod
    def _tags(conn: sa.Connection, run_ids: Sequence[str]) -> dict[str, dict[str, str]]:
        if not run_ids:
            return {}
        out: dict[str, dict[str, str]] = {}
        query = (sa.select(tags_table.c.run_id, tags_table.c.key, tags_table.c.value)
                 .where(tags_table.c.run_id.in_(run_ids)).order_by(tags_table.c.run_id, tags_table.c.key))
        for run_id, key, value in conn.execute(query):
            out.setdefault(run_id, {})[key] = value
        return out

    @staticmethod
    def _stored(row: Any, tests: list[tuple[str, str | None, str | None]], tags: dict[str, str],
                whole: bool) -> StoredRun:
        return StoredRun(
            run_id=row["run_id"], started_at=row["started_at"], finished_at=row["finished_at"],
            status=row["status"], vsbench_version=row["vsbench_version"], hostname=row["hostname"],
            source=row["source"], imported_at=row["imported_at"], tests=[label for label, _, _ in tests],
            results=json.loads(row["results_json"]) if whole else {},
            sysinfo=json.loads(row["sysinfo_json"]) if whole and row["sysinfo_json"] else None,
            plans=json.loads(row["plans_json"]) if whole and row["plans_json"] else [],
            tags=tags,
            vswitches=list(dict.fromkeys(v for _, v, _ in tests if v)),
            trafficgens=list(dict.fromkeys(g for _, _, g in tests if g)),
        )


def suite_rows(suite: dict[str, Any] | None, run_id: str) -> list[dict[str, Any]]:
    """The store's rows of a suite.json (every figure of every measured row), [] for none."""
    if not suite:
        return []
    out = []
    for entry in suite.get("ids") or ():
        for row in entry.get("rows") or ():
            if row.get("status") != "measured":
                continue
            key = row.get("key") or {}
            ident = json.dumps([row.get("series"), key], sort_keys=True, default=str)[:400]
            for metric, value in (row.get("values") or {}).items():
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    out.append({"run_id": run_id, "id": str(entry.get("id")), "row": ident, "metric": metric,
                                "suite": str(suite.get("suite")), "profile": suite.get("profile"),
                                "series": row.get("series"), "key_json": json.dumps(key, default=str),
                                "value": float(value), "position": len(out)})
    return out


def _with_tags(query: Any, run_id_column: Any, tags: dict[str, str] | None) -> Any:
    """``query`` restricted to runs that carry every one of ``tags`` (key and value)."""
    for key, value in (tags or {}).items():
        query = query.where(run_id_column.in_(
            sa.select(tags_table.c.run_id).where(tags_table.c.key == key, tags_table.c.value == value)))
    return query


def _metric_value(row: Any) -> MetricValue:
    low, high = row["interval_low"], row["interval_high"]
    return MetricValue(
        MetricKey(row["test"], row["frame_size_bytes"], row["metric"]),
        [float(s) for s in json.loads(row["samples_json"])],
        None if low is None or high is None else Interval(low, high),
        row["basis"], list(json.loads(row["flags_json"])),
    )


def _first_line(exc: BaseException) -> str:
    text = str(getattr(exc, "orig", None) or exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
