"""report.html, made from the run directories the real runner leaves (tests/unit/test_runner.py
harness: real entry points, real config resolution, a modelled generator and DUT)."""

import base64
import json
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.unit.test_runner import make_plans, only_run_dir, run
from vsbench.cli.main import main
from vsbench.results import report_html

#: These report tests were written for one NDR point per frame size (the plain binary search);
#: the default multi-goal search's NDR+PDR report is checked in
#: test_default_search_report_shows_ndr_and_pdr.
NDR_ONLY = {"search": {"mode": "binary", "goals": [{"name": "NDR", "loss_ratio": 0.0}]}}

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class Page(HTMLParser):
    """Checks nesting, collects links, tables (as rows of cell texts), list items and text."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.tags: set[str] = set()
        self.ids: set[str] = set()
        self.links: list[tuple[str, str, str]] = []  # (tag, attribute, value)
        self.tables: list[list[list[str]]] = []
        self.items: list[tuple[str, str]] = []  # (class, text) of <li>
        self.text: list[str] = []
        self._cell: list[str] | None = None
        self._item: tuple[str, list[str]] | None = None
        self._table_depth: list[list[list[str]]] = []
        self.feed(text)
        self.close()
        if self.stack:
            self.errors.append(f"unclosed: {self.stack}")

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.ids.update(value for name, value in attrs if name == "id")
        for name, value in attrs:
            if name in ("src", "href", "action", "srcset", "data", "poster") and value is not None:
                self.links.append((tag, name, value))
        if tag not in VOID:
            self.stack.append(tag)
        if tag == "table":
            self._table_depth.append([])
        elif tag == "tr" and self._table_depth:
            self._table_depth[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "li":
            self._item = (dict(attrs).get("class") or "", [])

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1] if self.stack else 'nothing'}")
            return
        self.stack.pop()
        if tag in ("td", "th") and self._cell is not None and self._table_depth:
            self._table_depth[-1][-1].append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "table":
            self.tables.append(self._table_depth.pop())
        elif tag == "li" and self._item is not None:
            self.items.append((self._item[0], " ".join("".join(self._item[1]).split())))
            self._item = None

    def handle_data(self, data):
        self.text.append(data)
        if self._cell is not None:
            self._cell.append(data)
        if self._item is not None:
            self._item[1].append(data)

    def rows_starting_with(self, first: str) -> list[list[str]]:
        return [row for table in self.tables for row in table if row and row[0] == first]


def check_page(path: Path) -> Page:
    """Parse ``path``: well nested, no script, nothing fetched from anywhere."""
    text = path.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>")
    page = Page(text)
    assert page.errors == []
    assert not page.tags & {"script", "link", "iframe", "object", "embed", "base"}
    images = [value for tag, _, value in page.links if tag == "img"]
    for tag, attribute, value in page.links:
        if tag == "a":  # links within the page only
            assert value.startswith("#") and value[1:] in page.ids, value
        else:
            assert tag == "img" and value.startswith("data:image/svg+xml;base64,"), (tag, attribute, value[:80])
    assert "@import" not in text and "url(" not in text
    for uri in images:
        svg = base64.b64decode(uri.split(",", 1)[1])
        root = ET.fromstring(svg)  # well-formed SVG
        assert root.tag.endswith("svg")
        assert b'href="http' not in svg and b"<script" not in svg
    return page


def fixed(value, digits=0):
    return f"{value:,.{digits}f}"


def results_of(run_dir: Path) -> dict:
    return json.loads((run_dir / "results.json").read_text())


def test_runner_writes_a_self_contained_report_with_every_reported_figure(tmp_path, testkit):
    code, out = run(make_plans(tmp_path, testkit, extra=NDR_ONLY), testkit)
    assert code == 0, out
    run_dir = only_run_dir(testkit)
    page = check_page(run_dir / "report.html")
    [test] = results_of(run_dir)["tests"]
    for fs in test["frame_sizes"]:
        [ndr] = fs["points"]
        lat = ndr["latency"]
        # the NDR table: one row per frame size, the figures of results.json formatted with units
        # in the column headers (fps, Mpps, L1 Mbps, L2 Mbps, %, %, ns, ns, ns)
        expected = [
            fixed(ndr["throughput_fps"]), f"{ndr['throughput_fps'] / 1e6:.3f}",
            fixed(ndr["throughput_l1_mbps"], 1), fixed(ndr["throughput_l2_mbps"], 1),
            fixed(ndr["line_rate_percent"], 2), "0", fixed(lat["min_ns"]), fixed(lat["avg_ns"]),
            fixed(lat["max_ns"]), "100 of 100", f"#{ndr['trial_index']} (latency #{ndr['latency_trial_index']})", "ok",
        ]
        assert [str(fs["frame_size_bytes"]), *expected] in page.rows_starting_with(str(fs["frame_size_bytes"]))
        # the search table names the bounds and the trials they came from
        search_rows = [r for r in page.rows_starting_with(str(fs["frame_size_bytes"])) if r[1] == "NDR"]
        assert search_rows and search_rows[0][2:4] == [fixed(ndr["lower_bound_fps"]), fixed(ndr["upper_bound_fps"])]
    text = "".join(page.text)
    assert [tag for tag, _, _ in page.links] == ["img"] * 4  # throughput, latency, latency histogram, search trace
    assert "Every reported figure in results.json recomputes exactly" in text
    assert "No invalid trial, placement warning or irregular search result was recorded." in text
    # the bill of materials and the versions the plugins reported
    assert "Isolated CPUs (isolcpus)" in text and "Hugepages" in text and "NUMA" in text
    # the host's lab settings, as vsbench doctor --host judged them for the run's configuration
    host = json.loads((run_dir / "sysinfo.json").read_text())["host_settings"]
    assert "Lab settings (vsbench doctor --host)" in text and host["checks"]
    assert [c["setting"] for c in host["checks"]][0] in text and "irqbalance" in text
    assert "marker_switch (marker_switch 1.0)" in text and "model_gen (model_gen 0.1)" in text
    assert "NDR: loss ≤ 0 %" in text and "Trial duration" in text and "bidirectional (2)" in text


def test_generator_limited_trials_and_irregular_results_are_shown(tmp_path, testkit):
    plans = make_plans(tmp_path, testkit, vswitch="external", params="frame_sizes=[64];trial_duration=1",
                       gen={"capacity_fps": 5e6, "marker_dir": None},
                       extra={"search": {**NDR_ONLY["search"], "max_load_fps": 4e6}})
    plans[0].config["trafficgen"]["model_gen"]["max_rate_fps"] = 2e6
    plans[0].config["trafficgen"]["model_gen"]["latency"] = False
    code, out = run(plans, testkit)
    assert code == 0, out
    run_dir = only_run_dir(testkit)
    page = check_page(run_dir / "report.html")
    invalid = [json.loads(line) for line in (run_dir / "trials.jsonl").read_text().splitlines()]
    invalid = [d for d in invalid if not d["valid"]]
    assert invalid
    # at the top: the plan's warnings counted, with the invalid trials and the irregular result
    digest = f"{len(invalid)} of 4 trials invalid (generator-limited ×{len(invalid)}); irregular NDR result at 64 B"
    assert any(klass == "warning" and t.startswith("phy2phy_tput 5 warning(s) at 64 B") and digest in t
               for klass, t in page.items), page.items
    # in the plan: every note of the frame size, in full
    notes = [text for klass, text in page.items if klass == "warning" and not text.startswith("phy2phy_tput")]
    assert any(n.startswith("generator could not deliver 4000000 fps") and "generator-limited" in n for n in notes)
    assert f"{len(invalid)} of 4 trials invalid (generator-limited x{len(invalid)})" in notes
    assert any("max_load is a lower bound" in n for n in notes)
    assert any("latency not measured" in n for n in notes)
    assert "generator-limited: max_load lowered to 1980000 fps (asked up to 4000000 fps)" in notes
    assert len(notes) == 5
    text = "".join(page.text)
    assert f"Invalid trials ({len(invalid)}: generator-limited ×{len(invalid)})" in text
    for doc in invalid:  # every invalid trial listed with its reason
        row = [r for r in page.rows_starting_with(f"#{doc['trial_index']}") if r[-1].startswith("generator-limited")]
        assert row and row[0][2] == fixed(doc["intended_load_fps"])
    [ndr_row] = [r for r in page.rows_starting_with("64") if r[-1] == "irregular"]
    assert ndr_row[1] == fixed(results_of(run_dir)["tests"][0]["frame_sizes"][0]["points"][0]["throughput_fps"])


def test_text_from_the_files_is_escaped(tmp_path, testkit):
    plans = make_plans(tmp_path, testkit, params="frame_sizes=[64];trial_duration=1")
    evil = "<script>alert('x')</script> & <img src=http://evil.example/x.png onerror=alert(1)>"
    plans[0].config["test"]["description"] = evil
    plans[0].config["dut"]["rule_template"] = "</td></tr></table><script>alert(2)</script>"
    code, out = run(plans, testkit)
    assert code == 0, out
    run_dir = only_run_dir(testkit)
    page = check_page(run_dir / "report.html")  # no script tag, no foreign src
    html_text = (run_dir / "report.html").read_text()
    assert "<script" not in html_text and "<img src=http" not in html_text
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &lt;img src=http://evil.example" in html_text
    assert evil in "".join(page.text)  # shown as text, exactly as written
    assert "&lt;/td&gt;&lt;/tr&gt;&lt;/table&gt;&lt;script&gt;alert(2)" in html_text  # config.yaml, escaped


def test_an_interrupted_run_still_gets_a_report_that_says_so(tmp_path, testkit):
    plans = make_plans(tmp_path, testkit, gen={"signal_after_trials": 5, "signal": "SIGTERM"})
    code, _ = run(plans, testkit)
    assert code == 143
    page = check_page(only_run_dir(testkit) / "report.html")
    assert ("error", "run the run was interrupted: results are partial") in page.items
    assert ("error", "phy2phy_tput 64 B frame size interrupted") in page.items  # errors in full at the top
    assert ("error", "frame size interrupted") in page.items  # and in the plan


def test_every_plan_of_a_run_with_a_failed_plan_is_reported(tmp_path, testkit):
    failing = make_plans(tmp_path, testkit, gen={"fail_on_trial": 4})
    good = make_plans(tmp_path, testkit)
    code, _ = run(failing + good, testkit)
    assert code == 1
    run_dir = only_run_dir(testkit)
    page = check_page(run_dir / "report.html")
    assert ("error", "phy2phy_tput (plan 0) plan failed: trafficgen model_gen: run_trial: "
            "model generator lost its connection") in page.items
    good_ndr = results_of(run_dir)["tests"][1]["frame_sizes"][0]["points"][0]
    assert any(r[1] == fixed(good_ndr["throughput_fps"]) for r in page.rows_starting_with("64"))


def test_a_failing_report_is_logged_and_loses_nothing(tmp_path, testkit, monkeypatch):
    def broken(run_dir, output=None):
        raise RuntimeError("plotting exploded")

    monkeypatch.setattr(report_html, "write_report", broken)
    code, out = run(make_plans(tmp_path, testkit, params="frame_sizes=[64];trial_duration=1"), testkit)
    assert code == 0, out
    run_dir = only_run_dir(testkit)
    assert not (run_dir / "report.html").exists()
    assert results_of(run_dir)["status"] == "complete"
    assert "could not write report.html: RuntimeError: plotting exploded" in (run_dir / "logs" / "vsbench.log").read_text()


def test_goals_and_latency_statistics_a_newer_results_json_carries_are_shown(tmp_path, testkit):
    code, _ = run(make_plans(tmp_path, testkit, extra=NDR_ONLY), testkit)
    assert code == 0
    run_dir = only_run_dir(testkit)
    results = results_of(run_dir)
    for fs in results["tests"][0]["frame_sizes"]:
        pdr = dict(fs["points"][0], name="PDR", goal_loss_ratio=0.005, throughput_fps=1.5e6)
        pdr["latency"] = dict(pdr["latency"], p99_ns=36_123.0)
        fs["points"].append(pdr)
    (run_dir / "results.json").write_text(json.dumps(results))
    assert main(["report", str(run_dir)]) == 0
    page = check_page(run_dir / "report.html")
    text = "".join(page.text)
    assert "PDR throughput (loss ≤ 0.5 %)" in text
    assert any(r[1] == "1,500,000" and "36,123" in r for r in page.rows_starting_with("64"))
    # p99_ns is not in results.schema.json yet: shown, and the mismatch is said
    assert any("results.json does not match its schema" in t for _, t in page.items)


def test_report_command(tmp_path, testkit, capsys):
    code, _ = run(make_plans(tmp_path, testkit, params="frame_sizes=[64];trial_duration=1"), testkit)
    assert code == 0
    run_dir = only_run_dir(testkit)
    (run_dir / "report.html").unlink()
    assert main(["report", str(run_dir)]) == 0
    assert "report written to" in capsys.readouterr().out
    check_page(run_dir / "report.html")

    other = tmp_path / "elsewhere.html"
    assert main(["report", str(run_dir), "-o", str(other)]) == 0
    check_page(other)

    # an old run missing files is still reported, with what is missing said
    (run_dir / "sysinfo.json").unlink()
    (run_dir / "trials.jsonl").unlink()
    assert main(["report", str(run_dir), "-o", str(other)]) == 0
    items = check_page(other).items
    assert any("sysinfo.json missing" in t for _, t in items)
    assert any("trials.jsonl missing" in t for _, t in items)
    capsys.readouterr()

    for argv, message in (
        (["report", str(tmp_path)], "not a run directory (results.json missing)"),
        (["report", str(tmp_path / "nowhere")], "not a run directory"),
        (["report"], "RUN_DIR"),
        (["report", str(run_dir), "-o", str(tmp_path / "no" / "dir.html")], "cannot write"),
    ):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith("vsbench: error: ") and message in err and err.count("\n") == 1, err
    assert not (tmp_path / "no").exists()
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "results.json").write_text("{not json")
    assert main(["report", str(tmp_path / "bad")]) == 2
    assert "cannot read" in capsys.readouterr().err


@pytest.mark.parametrize("value, text", [(None, "–"), (996420.88, "996,421"), (float("nan"), "–")])
def test_fps_format(value, text):
    assert report_html.fmt_fps(value) == text


def test_ratio_format():
    assert report_html.fmt_ratio_percent(0.0) == "0"
    assert report_html.fmt_ratio_percent(0.00123456) == "0.123"
    assert report_html.fmt_ratio_percent(None) == "–"


def test_cpu_oversubscription_is_an_error_at_the_top(tmp_path, testkit):
    from vsbench.results import report_data
    from vsbench.runner import placement

    assert report_data.OVERSUBSCRIBED_PREFIX == placement.OVERSUBSCRIBED_PREFIX  # same wording, two layers
    code, _ = run(make_plans(tmp_path, testkit, params="frame_sizes=[64];trial_duration=1"), testkit)
    assert code == 0
    run_dir = only_run_dir(testkit)
    results = results_of(run_dir)
    warning = (f"{placement.OVERSUBSCRIBED_PREFIX} (pmd-shares-generator): PMD CPU 1 also runs the generator; "
               "figures measure CPU contention, not the DUT")
    results["tests"][0]["notes"] = [warning, "CPU placement (no-isolcpus): no CPU is isolated"]
    (run_dir / "results.json").write_text(json.dumps(results))
    assert main(["report", str(run_dir)]) == 0
    page = check_page(run_dir / "report.html")
    assert ("error", f"phy2phy_tput {warning}") in page.items  # in full at the top
    assert ("error", warning) in page.items  # and in the plan
    assert ("warning", "CPU placement (no-isolcpus): no CPU is isolated") in page.items
    assert "1 error(s) and 1 warning(s) qualify figures of this run" in "".join(page.text)


def test_default_search_report_shows_ndr_and_pdr(tmp_path, testkit):
    code, out = run(make_plans(tmp_path, testkit, params="frame_sizes=[64];latency.trial_duration_s=1"), testkit)
    assert code == 0, out
    run_dir = only_run_dir(testkit)
    page = check_page(run_dir / "report.html")
    text = "".join(page.text)
    assert "NDR throughput" in text and "PDR throughput (loss ≤ 0.5 %)" in text
    [fs] = results_of(run_dir)["tests"][0]["frame_sizes"]
    ndr, pdr = fs["points"]
    rows = page.rows_starting_with("64")
    assert any(r[1] == fixed(ndr["throughput_fps"]) for r in rows)
    assert any(r[1] == fixed(pdr["throughput_fps"]) for r in rows)


def test_a_latency_point_whose_trial_was_invalid_is_marked():
    """Its latency was not measured at the load it names (the generator fell short: a third
    of the quick start's latency trials at the NDR on a shared 2-core host)."""
    point = {"label": "NDR", "reference": "NDR", "fraction": 1.0, "load_fps": 2.5e5, "trial_index": 7,
             "summary": {"min_ns": 1000, "mean_ns": 2000, "max_ns": 9000, "samples": 1000}}
    test = {"frame_sizes": [{"frame_size_bytes": 64, "latency_points": [point, {**point, "valid": False}]}]}
    html = str(report_html._latency_table(test))
    assert html.count("(invalid: not at this load)") == 1
