"""report.html, the compare page and the trend page in a real browser (headless Chromium):
no console error, no exception, no request leaving the file, every plot decoded."""

import re

import pytest

from tests import browser
from tests.unit.runs_kit import make_run, vsbench


def check(page_path, expected_images: int):
    seen = browser.load(page_path)
    assert seen.console_errors == [] and seen.exceptions == [] and seen.log_errors == [], seen
    # self-contained: the page itself and its data: URIs, nothing else
    assert all(url.startswith(("file://", "data:")) for url in seen.requests), seen.requests
    assert len(seen.images) == expected_images, seen.images
    for image in seen.images:
        assert image["complete"] and image["width"] > 100 and image["height"] > 50, image
    return seen


@pytest.mark.skipif(browser.chromium() is None, reason="chromium not installed (tools/packages/test.txt)")
def test_pages_render_in_a_browser(tmp_path, testkit, capsys):
    results = testkit["results"]
    base = make_run(tmp_path, testkit, results, "--repeat", "2", "--store", noise=0.01)
    other = make_run(tmp_path, testkit, results, "--store", capacity_fps=0.9e6)
    report = base / "report.html"
    text = report.read_text()
    images = len(re.findall(r"<img ", text))
    assert images == 4 * 2  # throughput, latency, latency histogram, search trace per repeat
    seen = check(report, images)
    assert seen.title.startswith("vsbench report")

    compare_page = tmp_path / "compare.html"
    trend_page = tmp_path / "trend.html"
    assert vsbench("compare", str(base), str(other), "--html", str(compare_page))[0] == 0
    assert vsbench("db", "trend", "--test", "phy2phy_tput", "--results-dir", str(results),
                   "--html", str(trend_page))[0] == 0
    check(compare_page, 1)
    check(trend_page, 1)
    capsys.readouterr()


@pytest.mark.skipif(browser.chromium() is None, reason="chromium not installed (tools/packages/test.txt)")
def test_the_check_sees_a_broken_page(tmp_path):
    """The browser check can fail: a broken image, a script error and a remote request."""
    page = tmp_path / "broken.html"
    page.write_text('<!DOCTYPE html><html><head><title>x</title></head><body>'
                    '<img src="data:image/svg+xml;base64,AAAA"><script>console.error("boom"); nope();</script>'
                    '<img src="http://127.0.0.1:9/x.png"></body></html>')
    seen = browser.load(page)
    assert any("boom" in m for m in seen.console_errors)
    assert seen.exceptions
    assert any(url.startswith("http://127.0.0.1") for url in seen.requests)
    assert not all(i["complete"] and i["width"] > 0 for i in seen.images)
