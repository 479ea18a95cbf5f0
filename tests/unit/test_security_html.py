"""Every string a user or plugin supplies is escaped in the HTML pages (docs/security.rst):
a testcase description, a variant label, a run tag, a suite's title, description, table
title and series label of ``<script>`` reach report.html, the compare page, the trend page
and a suite's report as text. Checked in the page source always, and in headless Chromium
(the payload's script must not run and its text must show) when Chromium is installed."""

from __future__ import annotations

import shutil

import pytest
import yaml

from tests import browser
from tests.unit.runs_kit import layer, make_run, vsbench

#: Runs console.error if the markup is live: as a script, and as an image's error handler.
PAYLOAD = "<script>console.error('xss-ran')</script><img src=x onerror=\"console.error('xss-img')\">"
ESCAPED = "&lt;script&gt;"
#: A store path the trend page names (a file name cannot hold the payload's slash).
STORE_DIR = "store-<b>xss-db"
NEEDS_CHROMIUM = pytest.mark.skipif(browser.chromium() is None,
                                    reason="chromium not installed (apt-get install chromium)")


@pytest.fixture
def hostile_testcases(tmp_path):
    """phy2phy_tput renamed xss_tput, with the payload as its description and as the value
    of a matrix variable (so in the plan's label)."""
    here = tmp_path / "testcases"
    here.mkdir()
    case = yaml.safe_load(open(shutil.os.path.join("testcases", "phy2phy_tput.yaml")))
    case.update(name="xss_tput", description=PAYLOAD, matrix={"trafficgen.model_gen.note": [PAYLOAD]})
    (here / "xss_tput.yaml").write_text(yaml.safe_dump(case))
    return here


@pytest.fixture
def pages(tmp_path, testkit, hostile_testcases, capsys):
    """report.html of two hostile runs, their compare page and their trend page."""
    results = testkit["results"]
    (tmp_path / STORE_DIR).mkdir()
    db = f"sqlite:///{tmp_path / STORE_DIR / 'store.sqlite'}"
    extra = ("--testcase-dir", str(hostile_testcases), "--db", db, "--tag", f"note={PAYLOAD}")
    runs = [make_run(tmp_path, testkit, results, *extra, test="xss_tput",
                     params="frame_sizes=[64];trial_duration=1", capacity_fps=c) for c in (1e6, 0.9e6)]
    compare, trend = tmp_path / "compare.html", tmp_path / "trend.html"
    assert vsbench("compare", str(runs[0]), str(runs[1]), "--html", str(compare))[0] == 0
    assert vsbench("db", "trend", "--test", "xss_tput", "--db", db, "--html", str(trend))[0] == 0
    capsys.readouterr()
    return {"report": runs[0] / "report.html", "compare": compare, "trend": trend}


def _suite_report(tmp_path, testkit):
    suite = {"name": "xss_suite", "title": PAYLOAD, "description": PAYLOAD,
             "profiles": {"quick": {"description": PAYLOAD, "params": {"frame_sizes": [64], "trial_duration": 1}},
                          "full": {"description": PAYLOAD, "params": {}}},
             "runs": [{"name": "only", "test": "phy2phy_tput"}],
             "tables": [{"id": "901/T1", "title": PAYLOAD, "series": [{"run": "only", "label": PAYLOAD}],
                         "columns": ["ndr_fps"]}]}
    path = tmp_path / "xss_suite.yaml"
    path.write_text(yaml.safe_dump(suite))
    results = testkit["results"]
    assert vsbench("--suite", str(path), "--profile", "quick", "--conf-file", str(layer(tmp_path, testkit)),
                   "--results-dir", str(results))[0] == 0
    [run_dir] = [p for p in results.iterdir() if (p / "suite.json").is_file()]
    return run_dir / "report.html"


def assert_escaped(page, shown=ESCAPED):
    """No live markup of the payload in ``page``'s source (the templates hold no script at
    all) and the escaped form of what it shows present."""
    text = page.read_text()
    assert "<script" not in text and "<img src=x" not in text and "<b>xss" not in text, page.name
    assert shown in text, page.name


def assert_inert_in_browser(page, shown="<script>console.error('xss-ran')</script>"):
    seen = browser.load(page)
    ran = [m for m in seen.console_errors + seen.exceptions + seen.log_errors if "xss" in m]
    assert ran == [], (page.name, ran)
    assert all(url.startswith(("file://", "data:")) and not url.endswith("/x") for url in seen.requests), seen.requests
    assert shown in seen.text, page.name


def shown_on(name):
    """What of the hostile input each page shows (source, browser text). The trend page shows
    no description or label, only names held to a pattern and the store's URL, which
    SQLAlchemy renders percent-encoded."""
    if name == "trend":
        return "store-%3Cb%3Exss-db", "store-%3Cb%3Exss-db"
    return ESCAPED, "<script>console.error('xss-ran')</script>"


def test_report_compare_and_trend_pages_escape_user_strings(pages):
    for name, page in pages.items():
        assert_escaped(page, shown_on(name)[0])


def test_a_suite_report_escapes_the_suite_strings(tmp_path, testkit, capsys):
    assert_escaped(_suite_report(tmp_path, testkit))
    capsys.readouterr()


@NEEDS_CHROMIUM
def test_the_payload_shows_as_text_in_a_browser(pages, tmp_path, testkit, capsys):
    for name, page in [*pages.items(), ("suite", _suite_report(tmp_path, testkit))]:
        assert_inert_in_browser(page, shown_on(name)[1])
    capsys.readouterr()
