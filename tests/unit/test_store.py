"""The results store: the same tests against SQLite (a file) and a real PostgreSQL server
(Debian's postgresql: a private cluster made by initdb, started by this test on a Unix
socket only, stopped and removed after)."""

import glob
import json
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
import sqlalchemy as sa

from tests.unit.runs_kit import make_run, vsbench
from vsbench.results import schema
from vsbench.results import store as store_mod
from vsbench.results.store import SCHEMA_VERSION, Store, StoreError

PG_PORT = 54329


def _pg_bin(name: str) -> str | None:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return found[-1] if found else None


@pytest.fixture(scope="module")
def postgres_url():
    """A private PostgreSQL cluster for this module; its URL."""
    if os.geteuid() != 0:
        pytest.skip("the PostgreSQL test starts a server as the postgres user: needs root")
    initdb, pg_ctl = _pg_bin("initdb"), _pg_bin("pg_ctl")
    assert initdb and pg_ctl, "PostgreSQL server missing: apt-get install postgresql (tools/packages/test.txt)"
    user = pwd.getpwnam("postgres")
    base = Path(tempfile.mkdtemp(prefix="vsbench-pg-"))
    os.chown(base, user.pw_uid, user.pw_gid)
    data, sock = base / "data", base / "sock"
    sock.mkdir()
    os.chown(sock, user.pw_uid, user.pw_gid)

    def as_postgres(*argv):
        return subprocess.run(["runuser", "-u", "postgres", "--", *argv], capture_output=True, text=True,
                              timeout=120, cwd=base)

    started = False
    try:
        done = as_postgres(initdb, "-D", str(data), "-U", "vsbench", "--auth=trust", "-E", "UTF8", "--no-sync")
        assert done.returncode == 0, done.stderr
        done = as_postgres(pg_ctl, "-D", str(data), "-l", str(base / "server.log"), "-w", "-t", "60", "-o",
                           f"-k {sock} -c listen_addresses='' -p {PG_PORT} -c fsync=off", "start")
        assert done.returncode == 0, done.stderr + (base / "server.log").read_text()
        started = True
        yield f"postgresql://vsbench@/postgres?host={sock}&port={PG_PORT}"
    finally:
        if started:
            stopped = as_postgres(pg_ctl, "-D", str(data), "-m", "fast", "-w", "stop")
            assert stopped.returncode == 0, stopped.stderr
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.sqlite'}"
    url = request.getfixturevalue("postgres_url")
    engine = sa.create_engine(store_mod._engine_url(url))
    with engine.begin() as conn:  # every test starts from an empty database
        for table in ("run_tags", "suite_rows", "metrics", "tests", "runs", "vsbench_meta"):
            conn.exec_driver_sql(f"DROP TABLE IF EXISTS {table} CASCADE")
    engine.dispose()
    return url


def test_import_is_idempotent_and_reads_back_the_same_figures(tmp_path, testkit, store_url, capsys):
    results = testkit["results"]
    runs = [make_run(tmp_path, testkit, results, "--no-store", *extra, capacity_fps=cap)
            for extra, cap in ((("--repeat", "2"), 1e6), ((), 0.8e6))]
    capsys.readouterr()
    code, out, err = vsbench("db", "import", *map(str, runs), "--db", store_url, capsys=capsys)
    assert code == 0, err
    assert out.count(": added") == 2
    code, out, _ = vsbench("db", "import", str(runs[0]), "--db", store_url, capsys=capsys)
    assert ": unchanged" in out
    with Store(store_url) as store:
        assert store.schema_version() == SCHEMA_VERSION
        listed = store.list_runs()
        order = sorted(runs, key=lambda r: (json.loads((r / "results.json").read_text())["started_at"],
                                            r.name.rsplit("-", 1)[1]))
        assert [r.run_id for r in listed] == [p.name.rsplit("-", 1)[1] for p in reversed(order)]
        assert listed[0].tests == ["phy2phy_tput"]
        first = store.metrics(listed[1].run_id)
        ndr = first.by_key()[store_mod.MetricKey("phy2phy_tput", 64, "ndr_fps")]
        assert len(ndr.samples) == 2 and ndr.basis == "2 repeats"
        assert first.tests[0].repeats == 2 and first.tests[0].fields["vswitch"] == "marker_switch"
        shown = store.get(listed[1].run_id[:4])  # a unique prefix
        assert shown.results["run_id"] == listed[1].run_id and shown.sysinfo["schema"] == "vsbench.sysinfo/1"
    # a changed results.json replaces the stored run, never duplicates it
    doc = json.loads((runs[1] / "results.json").read_text())
    doc["status"] = "failed"
    (runs[1] / "results.json").write_text(json.dumps(doc))
    code, out, _ = vsbench("db", "import", str(runs[1]), "--db", store_url, capsys=capsys)
    assert ": updated" in out
    with Store(store_url) as store:
        assert len(store.list_runs()) == 2 and store.list_runs()[0].status == "failed"


def test_list_show_trend_and_compare_from_the_store(tmp_path, testkit, store_url, capsys):
    results = testkit["results"]
    runs = [make_run(tmp_path, testkit, results, "--db", store_url, capacity_fps=cap) for cap in (1e6, 0.9e6, 1e6)]
    slow = runs[1].name.rsplit("-", 1)[1]
    # the store orders by start time (seconds), then run id
    runs.sort(key=lambda r: (json.loads((r / "results.json").read_text())["started_at"], r.name.rsplit("-", 1)[1]))
    ids = [r.name.rsplit("-", 1)[1] for r in runs]
    capsys.readouterr()
    code, out, _ = vsbench("db", "list", "--db", store_url, "--json", capsys=capsys)
    assert code == 0 and [r["run_id"] for r in json.loads(out)] == ids[::-1]
    code, out, _ = vsbench("db", "list", "--db", store_url, "--testcase", "nope", "--json", capsys=capsys)
    assert json.loads(out) == []
    code, out, _ = vsbench("db", "show", slow, "--db", store_url, capsys=capsys)
    assert code == 0 and "ndr_fps" in out and "899,852" in out
    code, out, _ = vsbench("db", "show", slow, "--db", store_url, "--json", capsys=capsys)
    assert json.loads(out)["results"]["run_id"] == slow

    page = tmp_path / "trend.html"
    code, out, err = vsbench("db", "trend", "--test", "phy2phy_tput", "--metric", "ndr_fps", "--frame-size", "64",
                             "--db", store_url, "--html", str(page), capsys=capsys)
    assert code == 0, err
    assert [line.split("│")[2].strip() for line in out.splitlines() if "marker_switch" in line] == ids
    text = page.read_text()
    assert "data:image/svg+xml;base64," in text and all(i in text for i in ids)

    # compare by run id from the store, the same as from the directories
    code, by_id, _ = vsbench("compare", ids[0], ids[1], "--db", store_url, "--format", "json", capsys=capsys)
    code2, by_dir, _ = vsbench("compare", str(runs[0]), str(runs[1]), "--format", "json", capsys=capsys)
    assert code == code2 == 0
    rows_id, rows_dir = json.loads(by_id)["rows"], json.loads(by_dir)["rows"]
    assert [(r["metric"], r["changes"]) for r in rows_id] == [(r["metric"], r["changes"]) for r in rows_dir]


def test_store_errors_are_one_line(tmp_path, store_url, capsys):
    code, _, err = vsbench("db", "show", "abc", "--db", store_url, capsys=capsys)
    assert code == 2 and "no run 'abc'" in err and err.count("\n") == 1
    code, _, err = vsbench("db", "import", str(tmp_path), "--db", store_url, capsys=capsys)
    assert code == 2 and "not a run directory" in err
    code, _, err = vsbench("db", "trend", "--test", "x", "--db", store_url, capsys=capsys)
    assert code == 2 and "no stored run" in err
    with Store(store_url) as store:
        with store.engine.begin() as conn:
            conn.execute(store_mod.meta_table.update().values(value="99"))
    with pytest.raises(StoreError, match="schema version 99"):
        Store(store_url)


def test_bad_urls_and_hidden_passwords(tmp_path, capsys):
    with pytest.raises(StoreError, match="unsupported database 'mysql'"):
        Store("mysql://u:secret@h/db")
    code, _, err = vsbench("db", "list", "--db", "postgresql://u:secret@127.0.0.1:1/none", capsys=capsys)
    assert code == 2 and "secret" not in err and "***" in err
    code, _, err = vsbench("db", "list", "--db", f"sqlite:///{tmp_path}/no/such/dir/x.sqlite", capsys=capsys)
    assert code == 2 and "no directory" in err


ONE_SIZE = "frame_sizes=[64];trial_duration=1"


def test_tags_are_kept_listed_and_filter_list_and_trend(tmp_path, testkit, store_url, capsys):
    results = testkit["results"]
    e810 = make_run(tmp_path, testkit, results, "--db", store_url, "--tag", "nic=e810", "--tag", "kernel=6.1",
                    params=ONE_SIZE)
    cx6 = make_run(tmp_path, testkit, results, "--db", store_url, "--tag", "nic=cx6", params=ONE_SIZE,
                   capacity_fps=0.9e6)
    plain = make_run(tmp_path, testkit, results, "--db", store_url, params=ONE_SIZE)
    e810_id, cx6_id, plain_id = (r.name.rsplit("-", 1)[1] for r in (e810, cx6, plain))
    doc = json.loads((e810 / "results.json").read_text())
    assert doc["tags"] == {"nic": "e810", "kernel": "6.1"}
    schema.validate(doc, "results.schema.json")
    with pytest.raises(schema.SchemaViolation, match="tags"):
        schema.validate({**doc, "tags": {"bad key": "x"}}, "results.schema.json")
    assert json.loads((plain / "results.json").read_text())["tags"] == {}
    capsys.readouterr()

    code, out, _ = vsbench("db", "list", "--db", store_url, "--json", capsys=capsys)
    listed = {r["run_id"]: r for r in json.loads(out)}
    assert code == 0 and set(listed) == {e810_id, cx6_id, plain_id}
    assert listed[e810_id]["tags"] == {"kernel": "6.1", "nic": "e810"} and listed[plain_id]["tags"] == {}
    assert listed[e810_id]["vswitches"] == ["marker_switch"] and listed[e810_id]["trafficgens"] == ["model_gen"]
    code, out, _ = vsbench("db", "list", "--db", store_url, "--tag", "nic=e810", "--json", capsys=capsys)
    assert [r["run_id"] for r in json.loads(out)] == [e810_id]
    code, out, _ = vsbench("db", "list", "--db", store_url, "--tag", "nic=e810", "--tag", "kernel=5.10", "--json",
                           capsys=capsys)
    assert json.loads(out) == []  # every tag must match
    code, out, _ = vsbench("db", "list", "--db", store_url, capsys=capsys)
    header = next(line for line in out.splitlines() if "Run" in line and "Started" in line)
    assert all(h in header for h in ("Switch", "Generator", "Tags"))
    assert "marker_switch" in out and "model_gen" in out and "kernel=6.1, nic=e810" in out
    code, out, _ = vsbench("db", "show", cx6_id, "--db", store_url, capsys=capsys)
    assert "tags: nic=cx6" in out

    code, out, err = vsbench("db", "trend", "--test", "phy2phy_tput", "--metric", "ndr_fps", "--tag", "nic=cx6",
                             "--db", store_url, capsys=capsys)
    assert code == 0, err
    assert cx6_id in out and e810_id not in out and plain_id not in out
    code, _, err = vsbench("db", "trend", "--test", "phy2phy_tput", "--tag", "nic=x710", "--db", store_url,
                           capsys=capsys)
    assert code == 2 and "with tags nic=x710" in err and err.count("\n") == 1


def test_bad_tags_are_one_line_exit_2_before_anything_runs(tmp_path, testkit, capsys):
    results = testkit["results"]
    code, _, err = vsbench("--test", "phy2phy_tput", "--test-params", ONE_SIZE, "--results-dir", str(results),
                           "--tag", "nic", capsys=capsys)
    assert code == 2 and err.count("\n") == 1 and "--tag 'nic': expected KEY=VALUE" in err
    assert not results.exists() or not any(p.is_dir() for p in results.iterdir())  # no run was made
    for action in (("list",), ("trend", "--test", "phy2phy_tput")):
        code, _, err = vsbench("db", *action, "--db", f"sqlite:///{tmp_path / 's.sqlite'}", "--tag", "=x",
                               capsys=capsys)
        assert code == 2 and err.count("\n") == 1 and "--tag '=x'" in err and "Traceback" not in err
    assert not (tmp_path / "s.sqlite").exists()  # refused before a store file was made


def test_delete_removes_every_row_of_a_run_and_keeps_its_directory(tmp_path, testkit, store_url, capsys):
    results = testkit["results"]
    gone, kept = (make_run(tmp_path, testkit, results, "--db", store_url, "--tag", f"which={w}", params=ONE_SIZE)
                  for w in ("gone", "kept"))
    gone_id, kept_id = gone.name.rsplit("-", 1)[1], kept.name.rsplit("-", 1)[1]
    capsys.readouterr()
    code, _, err = vsbench("db", "delete", gone_id, "nosuch", "--db", store_url, capsys=capsys)
    assert code == 2 and "no run 'nosuch'" in err and err.count("\n") == 1
    with Store(store_url) as store:
        assert len(store.list_runs()) == 2  # one unknown id deletes none

    code, out, err = vsbench("db", "delete", gone_id, "--db", store_url, capsys=capsys)
    assert code == 0, err
    assert out.startswith(f"{gone_id}: deleted from ") and "metrics" in out and "1 run_tags" in out
    assert str(gone.resolve()) in out and gone.is_dir()
    with Store(store_url) as store:
        assert [r.run_id for r in store.list_runs()] == [kept_id]
        with store.engine.connect() as conn:
            for table in store_mod.RUN_TABLES:
                left = conn.execute(sa.select(sa.func.count()).select_from(table)
                                    .where(table.c.run_id == gone_id)).scalar()
                assert left == 0, table.name
    code, _, err = vsbench("db", "delete", gone_id, "--db", store_url, capsys=capsys)
    assert code == 2 and f"no run '{gone_id}'" in err
    code, out, _ = vsbench("db", "import", str(gone), "--db", store_url, capsys=capsys)
    assert f"{gone_id}: added" in out  # the directory brings it back, tags and all
    with Store(store_url) as store:
        assert store.get(gone_id).tags == {"which": "gone"}


def test_a_store_from_before_tags_gains_the_table_and_keeps_its_runs(tmp_path, testkit, capsys):
    results = testkit["results"]
    url = f"sqlite:///{tmp_path / 'old.sqlite'}"
    old = make_run(tmp_path, testkit, results, "--db", url, params=ONE_SIZE)
    engine = sa.create_engine(url)
    with engine.begin() as conn:  # the store as vsbench made it before run tags
        conn.exec_driver_sql("DROP TABLE run_tags")
    engine.dispose()
    tagged = make_run(tmp_path, testkit, results, "--db", url, "--tag", "nic=e810", params=ONE_SIZE)
    capsys.readouterr()
    code, out, err = vsbench("db", "list", "--db", url, "--json", capsys=capsys)
    assert code == 0, err
    tags = {r["run_id"]: r["tags"] for r in json.loads(out)}
    assert tags == {old.name.rsplit("-", 1)[1]: {}, tagged.name.rsplit("-", 1)[1]: {"nic": "e810"}}
