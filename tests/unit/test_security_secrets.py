"""Secrets a site puts in its configuration (a password, an API token, a database URL with
its password) never reach a file of the run directory (config.yaml, logs, results, the
report, the JUnit file) nor the results store (docs/security.rst)."""

from __future__ import annotations

import yaml

from tests.unit.runs_kit import layer, make_run, vsbench
from vsbench.runner.config import REDACTED, redact_secrets

PASSWORD = "pw-hunter2-7f3a"
TOKEN = "tok-91c2e8d0b7"
DB_PASSWORD = "dbpw-5e1f0c"
DB_URL = f"postgresql://bob:{DB_PASSWORD}@db.example/results"
SECRETS = (PASSWORD, TOKEN, DB_PASSWORD)


def test_credentialed_urls_are_redacted_whatever_the_key():
    """A URL's password is a secret under any key name (``db_url``, ``endpoint``...): the
    key-name rule alone lets ``db_url: postgresql://bob:pw@db`` through."""
    out = redact_secrets({"x": {"db_url": DB_URL, "plain": "https://example.org/a",
                                "list": [DB_URL], "user_only": "ssh://bob@host"}}, {})
    assert out["x"]["db_url"] == f"postgresql://bob:{REDACTED}@db.example/results"
    assert out["x"]["list"] == [f"postgresql://bob:{REDACTED}@db.example/results"]
    assert out["x"]["plain"] == "https://example.org/a"
    assert out["x"]["user_only"] == "ssh://bob@host"


def test_no_secret_reaches_the_run_directory_or_the_store(tmp_path, testkit, monkeypatch):
    results = testkit["results"]
    secrets = tmp_path / "secrets.yaml"
    secrets.write_text(yaml.safe_dump({"trafficgen": {"model_gen": {
        "password": PASSWORD, "api_token": TOKEN, "db_url": DB_URL, "nested": {"secret": TOKEN}}}}))
    db = tmp_path / "store.sqlite"
    junit = tmp_path / "junit.xml"
    run_dir = make_run(tmp_path, testkit, results, "--conf-file", str(secrets), "--debug",
                       "--db", f"sqlite:///{db}", "--junit", str(junit))
    files = [p for p in run_dir.rglob("*") if p.is_file()] + [db, junit]
    assert (run_dir / "config.yaml") in files and (run_dir / "report.html") in files
    assert any(p.parent.name == "logs" for p in files)
    leaks = [(p.name, s) for p in files for s in SECRETS if s.encode() in p.read_bytes()]
    assert leaks == []
    # the configuration still says a secret was set
    assert REDACTED in (run_dir / "config.yaml").read_text()


def test_a_dry_run_prints_no_secret(tmp_path, testkit, capsys):
    """``--dry-run`` prints the resolved configuration: into a CI log, so redacted as config.yaml."""
    secrets = tmp_path / "secrets.yaml"
    secrets.write_text(yaml.safe_dump({"trafficgen": {"model_gen": {"password": PASSWORD, "db_url": DB_URL}}}))
    conf = layer(tmp_path, testkit)
    code, out, _ = vsbench("--test", "phy2phy_tput", "--conf-file", str(conf), "--conf-file", str(secrets),
                           "--dry-run", capsys=capsys)
    assert code == 0 and REDACTED in out
    assert [s for s in SECRETS if s in out] == []


def test_a_plugin_error_quoting_a_credentialed_url_is_redacted(tmp_path, testkit, capsys):
    """A plugin's error may quote the URL it failed to reach: results.json (the plan's error)
    and the log (its traceback at --debug) get it without the password."""
    failing = tmp_path / "failing.yaml"
    failing.write_text(yaml.safe_dump({"trafficgen": {"model_gen": {
        "fail_on_trial": 2, "fail_message": f"cannot reach {DB_URL}: connection refused"}}}))
    results = testkit["results"]
    code = vsbench("--test", "phy2phy_tput", "--conf-file", str(layer(tmp_path, testkit)), "--conf-file", str(failing),
                   "--test-params", "frame_sizes=[64];trial_duration=1", "--results-dir", str(results), "--debug")[0]
    assert code == 1
    [run_dir] = list(results.iterdir())
    assert f"bob:{REDACTED}@db.example" in (run_dir / "results.json").read_text()
    leaks = [p.name for p in run_dir.rglob("*") if p.is_file() and DB_PASSWORD.encode() in p.read_bytes()]
    assert leaks == []
    capsys.readouterr()


def test_a_tag_carrying_a_credential_is_refused_before_the_run(tmp_path, testkit, capsys):
    """Tags are stored and shown verbatim (results.json, the store, every page), so one named
    like a credential or holding a credentialed URL is refused in one line, exit 2."""
    conf = layer(tmp_path, testkit)
    for tag, said in ((f"db={DB_URL}", "a URL with a password"), (f"api_token={TOKEN}", "named like a credential")):
        code, out, err = vsbench("--test", "phy2phy_tput", "--conf-file", str(conf), "--tag", tag, capsys=capsys)
        assert code == 2 and said in err and len(err.strip().splitlines()) == 1, err
        assert DB_PASSWORD not in err + out and TOKEN not in err + out
    assert not list(testkit["results"].glob("*"))
    code, _, _ = vsbench("--test", "phy2phy_tput", "--conf-file", str(conf), "--tag", "db=postgresql://bob@db/x",
                         "--dry-run", capsys=capsys)
    assert code == 0  # a URL without a password is a label like any other
