"""``report.html``: the human report of a run, built from the run directory's files alone.

Inputs are ``results.json``, ``trials.jsonl``, ``config.yaml`` and ``sysinfo.json``
(:mod:`vsbench.results.report_data`), so the report can be regenerated for any old run
(``vsbench report RUN_DIR``) and every number in it is one of those files' numbers, only
formatted: throughput tables are the reported points of results.json, the search traces the
trials of trials.jsonl (by ``trial_index``), the parameters the plan's resolved config.

One self-contained file: inline CSS, plots as SVG data URIs (:mod:`report_plots`), no
script, no external font or link. The page is ``templates/report.html.j2`` over one report
model (:func:`build_model`: the header, validity, summary, scaling, SUT, plan and footer
sections as blocks of :mod:`vsbench.results.page_model`); every number is formatted here and
the template escapes everything (autoescape) -- testcase descriptions and config values are
user input. Validity notes (invalid or generator-limited
trials, CPU oversubscription, irregular search results, failed plans) are listed at the top
and again beside the figures they qualify; nothing that qualifies a figure is folded away.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml

from vsbench.results import (line_rate_basis, recompute, report_host, report_latency_hist, report_load, report_mix,
                             report_plots, report_scaling, report_suite, report_traffic, run_metrics, writers)
from vsbench.results import render as templates
from vsbench.results import report_matrix
from vsbench.results.page_model import (
    Details,
    Em,
    Group,
    Heading,
    Lines,
    Mono,
    NoteCell,
    NoteItem,
    Notes,
    Page,
    Paragraph,
    compact,
)
from vsbench.results.report_data import (
    CONFIG_FILE,
    INPUT_FILES,
    RESULTS_FILE,
    TRIALS_FILE,
    Note,
    RunFiles,
    finite,
    goal_loss_ratios,
    invalid_tally,
    latency_not_as_asked,
    load_run,
    validity_notes,
)

from vsbench.results.report_page import (  # noqa: F401 -- re-exported: the page helpers
    DASH,
    badge,
    figure,
    fmt_bytes,
    fmt_fixed,
    fmt_fps,
    fmt_mpps,
    fmt_ratio_percent,
    fmt_seconds,
    fmt_value,
    kv_table,
    plan_title,
    table,
)

log = logging.getLogger(__name__)

FILE_NAME = "report.html"
#: Most invalid trials listed one by one per plan (the count is always given).
MAX_INVALID_ROWS = 40

# -- the page ---------------------------------------------------------------------------------

def build_report(run_dir: Path) -> str:
    """The HTML of ``run_dir``'s report (raises ReportInputError for a non-run)."""
    return render(load_run(Path(run_dir)))


def write_report(run_dir: Path, output: Path | None = None) -> Path:
    """Write the report of ``run_dir`` to ``output`` (default ``run_dir/report.html``)
    atomically; return the path written."""
    run_dir = Path(run_dir)
    target = Path(output) if output is not None else run_dir / FILE_NAME
    writers.write_atomic(target, build_report(run_dir))
    return target


@dataclass
class ReportModel:
    """Everything report.html shows, section by section, as page blocks."""

    page: Page
    header: list[Any]
    suite: list[Any]
    validity: list[Any]
    summary: list[Any]
    repeats: list[Any]
    scaling: list[Any]
    sut: list[Any]
    plans: list[Any]
    footer: list[Any]


def build_model(files: RunFiles, generated_at: str | None = None) -> ReportModel:
    """The report model of a run's files (pure: ``files`` are already read)."""
    results = files.results
    run_id = str(results.get("run_id") or files.run_dir.name)
    notes = validity_notes(files)
    consistency = _consistency(files)
    generated_at = generated_at or datetime.now(timezone.utc).isoformat(timespec="seconds")
    page = Page(title=f"vsbench report {run_id}", heading="vsbench report — run", heading_mono=run_id,
                subtitle=f"{files.run_dir.name} · generated {generated_at} from the files listed at the end; "
                         "every figure below is one of theirs.")
    return ReportModel(
        page=page,
        header=_run_header(files),
        suite=report_suite.suite_section(files),
        validity=_validity_section(files, notes, consistency),
        summary=_summary_section(files) + report_matrix.matrix_section(files),
        repeats=_repeats_section(files),
        scaling=report_scaling.scaling_section(files),
        sut=_sut_section(files),
        plans=[_plan_section(files, test, [n for n in notes if n.plan_index == test.get("plan_index")])
               for test in files.tests],
        footer=_footer(files),
    )


def render(files: RunFiles, generated_at: str | None = None) -> str:
    return templates.render("report.html.j2", report=build_model(files, generated_at))


# -- sections -----------------------------------------------------------------------------------


def _status_badge(status: Any):
    status = str(status or "unknown")
    kind = {"complete": "ok", "running": "warning", "not-run": "info"}.get(status, "error")
    return badge(status, kind)


def _duration(start: Any, end: Any) -> str:
    try:
        seconds = (datetime.fromisoformat(str(end)) - datetime.fromisoformat(str(start))).total_seconds()
    except (TypeError, ValueError):
        return DASH
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min {secs:02d} s" if hours else f"{minutes} min {secs:02d} s"


def _plugin_text(files: RunFiles, plan_index: Any, kind: str, name: Any) -> str:
    """``name (component version, ...)`` as sysinfo.json recorded it for the plan."""
    entries = files.plugin_entries(plan_index, kind) if isinstance(plan_index, int) else []
    if not entries:
        return f"{name or DASH} (version not recorded)" if name else DASH
    texts = []
    for entry in entries:
        versions = entry.get("versions") or {}
        detail = ", ".join(f"{k} {v}" for k, v in versions.items()) if isinstance(versions, dict) else ""
        if entry.get("error"):
            detail = (detail + "; " if detail else "") + f"version unknown: {entry['error']}"
        texts.append(f"{entry.get('name', name)}" + (f" ({detail})" if detail else ""))
    return "; ".join(texts)


def _run_header(files: RunFiles) -> list[Any]:
    r = files.results
    labels = [str(t.get("label")) for t in files.tests]
    host = (files.sysinfo or {}).get("host") or {}
    pairs = [
        ("Run id", Mono(str(r.get("run_id", DASH)))),
        ("Status", _status_badge(r.get("status"))),
        ("Started (UTC)", r.get("started_at") or DASH),
        ("Finished (UTC)", r.get("finished_at") or DASH),
        ("Duration", _duration(r.get("started_at"), r.get("finished_at"))),
        ("vsbench version", r.get("vsbench_version") or DASH),
        ("Testcases", ", ".join(labels) or DASH),
        ("Host", host.get("hostname") or DASH),
    ]
    rows = []
    for test in files.tests:
        index = test.get("plan_index")
        config = files.plan_config(index)
        vnf = (config.get("vnf") or {}).get("name") if isinstance(config.get("vnf"), dict) else None
        rows.append([
            plan_title(files, index),
            _plugin_text(files, index, "vswitch", test.get("vswitch")),
            _plugin_text(files, index, "trafficgen", test.get("trafficgen")),
            _plugin_text(files, index, "vnf", vnf) if vnf and vnf != "none" else (vnf or DASH),
            _status_badge(test.get("status")),
        ])
    plugins = table([("Testcase", ""), ("vSwitch", "version"), ("Traffic generator", "version"),
                     ("VNF", "version"), ("Status", "")], rows, numeric_from=99) if rows else None
    return compact([Group([Group([kv_table(pairs)], "col")]), Heading(3, "Systems under test"), plugins])


def _where(files: RunFiles, note: Note) -> str:
    if note.plan_index is None:
        return "run"
    label = plan_title(files, note.plan_index)
    return f"{label} {note.frame_size_bytes} B" if note.frame_size_bytes is not None else str(label)


def _note_item(files: RunFiles, note: Note, *, where: bool, size: bool = True) -> NoteItem:
    place = _where(files, note) if where else None
    if size and not where and note.frame_size_bytes is not None:
        place = f"{note.frame_size_bytes} B"
    return NoteItem(note.severity, note.text, place)


def _notes_list(files: RunFiles, notes: Sequence[Note], *, where: bool) -> Notes | None:
    items = [_note_item(files, note, where=where) for note in notes]
    return Notes(items) if items else None


def _consistency(files: RunFiles) -> list[str] | None:
    """recompute.verify's mismatches, or None when it cannot run on these files."""
    if not files.plans or TRIALS_FILE not in files.digests:
        return None
    try:
        return recompute.verify(files.run_dir)
    except Exception as exc:  # noqa: BLE001 - a damaged old run is still reported
        log.debug("recompute failed on %s", files.run_dir, exc_info=True)
        return [f"could not recompute: {type(exc).__name__}: {exc}"]


def _plan_digest(files: RunFiles, plan_index: int, warnings: Sequence[Note]) -> str:
    """One line for the top of the report: how many warnings a plan has, where, and the
    invalid trials and irregular results behind them (each listed in full in the plan)."""
    sizes = sorted({n.frame_size_bytes for n in warnings if n.frame_size_bytes is not None})
    text = f"{len(warnings)} warning(s)" + (f" at {', '.join(str(s) for s in sizes)} B" if sizes else "")
    records = files.trials_of(plan_index)
    invalid = invalid_tally(records)
    details = []
    if invalid:
        count = sum(1 for r in records if not r.valid)
        details.append(f"{count} of {len(records)} trials invalid ("
                       + ", ".join(f"{tag} ×{n}" for tag, n in sorted(invalid.items())) + ")")
    test = next((t for t in files.tests if t.get("plan_index") == plan_index), {})
    irregular: dict[str, list[str]] = {}
    for fs in test.get("frame_sizes") or []:
        for point in fs.get("points") or []:
            if point.get("regular") is False:
                irregular.setdefault(str(point.get("name")), []).append(str(fs.get("frame_size_bytes")))
    for name, where in irregular.items():
        details.append(f"irregular {name} result at {', '.join(where)} B")
    return text + (": " + "; ".join(details) if details else "")


def _validity_section(files: RunFiles, notes: Sequence[Note], consistency: list[str] | None) -> list[Any]:
    """Every error in full; a plan's warnings as one line pointing at its own full list."""
    errors = [n for n in notes if n.severity == "error"]
    warnings = [n for n in notes if n.severity == "warning"]
    parts: list[Any] = [Heading(2, "Validity")]
    if notes:
        parts.append(Paragraph.of(f"{len(errors)} error(s) and {len(warnings)} warning(s) qualify figures of this "
                                  "run. Errors are listed here; every note is listed in full in the section of its "
                                  "testcase, and the rows they concern are highlighted."))
        shown = [n for n in notes if n.severity == "error" or n.plan_index is None]
        items = [_note_item(files, n, where=True) for n in shown]
        for test in files.tests:
            index = test.get("plan_index")
            plan_warnings = [n for n in warnings if n.plan_index == index and n not in shown]
            if plan_warnings and isinstance(index, int):
                items.append(NoteItem("warning", _plan_digest(files, index, plan_warnings),
                                      plan_title(files, index), f"#plan-{index}"))
        parts.append(Notes(items))
    else:
        parts.append(Paragraph.of("No invalid trial, placement warning or irregular search result was recorded.",
                                  "allclear"))
    if consistency is None:
        parts.append(Paragraph.of("Recomputation not possible: config.yaml or trials.jsonl is missing.", "muted"))
    elif consistency:
        parts.append(Notes([_note_item(files, Note("error", f"recomputation mismatch: {m}"), where=False)
                            for m in consistency]))
    else:
        parts.append(Paragraph(("Every reported figure in results.json recomputes exactly from trials.jsonl and "
                                "config.yaml (", "vsbench recompute", ")."), "allclear"))
    return parts


def _plan_notes(files: RunFiles, notes: Sequence[Note]) -> list[Any]:
    """A plan's notes: its own in a list, then a table with the notes of each frame size."""
    if not notes:
        return []
    general = [n for n in notes if n.frame_size_bytes is None]
    parts: list[Any] = [Heading(3, "Validity notes"), _notes_list(files, general, where=False)]
    sizes: list[int] = []
    for n in notes:
        if n.frame_size_bytes is not None and n.frame_size_bytes not in sizes:
            sizes.append(n.frame_size_bytes)
    rows = []
    for size in sizes:
        items = tuple(_note_item(files, n, where=False, size=False) for n in notes if n.frame_size_bytes == size)
        rows.append([size, NoteCell(items)])
    if rows:
        parts.append(table([("Frame size", "B"), ("Notes", "")], rows, numeric_to=1, css="data notes"))
    return compact(parts)


def _summary_section(files: RunFiles) -> list[Any]:
    """One row per testcase x frame size x point: the figures to lay beside a seed report."""
    rows, classes = [], []
    for test in files.tests:
        for fs in test.get("frame_sizes") or []:
            for point in fs.get("points") or [{}]:
                lat = point.get("latency") if isinstance(point.get("latency"), dict) else {}
                rows.append([
                    plan_title(files, test.get("plan_index")), fs.get("frame_size_bytes", DASH), point.get("name") or DASH,
                    fmt_mpps(point.get("throughput_fps")), fmt_fixed(point.get("throughput_l1_mbps"), 1),
                    fmt_fixed(point.get("line_rate_percent"), 2),
                    *_latency_cells(fs, point, [lat.get(k) for k in ("min_ns", "avg_ns", "max_ns")]),
                    _point_flag(fs, point),
                ])
                classes.append(_row_class(fs, point))
    if not rows:
        return []
    headers = [("Testcase", ""), ("Frame size", "B"), ("Goal", ""), ("Throughput", "Mpps", ""),
               ("Throughput", "L1 Mbps", ""), ("Throughput", "% line rate", ""), ("Latency", "min", "ns"),
               ("Latency", "avg", "ns"), ("Latency", "max", "ns"), ("Validity", "")]
    return [Heading(2, "Summary"), table(headers, rows, numeric_from=3, numeric_to=9, row_classes=classes),
            Paragraph.of("Throughput is aggregate over all directions; L1 includes preamble, SFD and "
                         "inter-frame gap (20 B per frame); line rate is the aggregate line rate of the sending "
                         "ports at their own link speed where each has one (a NIC), else at the nominal "
                         "testbed.link_gbps (a veth has none): each test's configuration says which.",
                         "muted")]


def _repeats_section(files: RunFiles) -> list[Any]:
    """Median and spread of every figure over the repeats of a test (``--repeat K``)."""
    figures = run_metrics.extract(files.results, files.sysinfo, files.plans, files.trials)
    repeated = [m for m in figures.metrics if len(m.samples) >= 2 and m.basis.endswith("repeats")]
    if not repeated:
        return []
    rows = []
    for m in repeated:
        spread = m.spread
        cv = spread["cv"]
        rows.append([m.key.test, m.key.frame_size_bytes, m.key.metric, fmt_fixed(m.value), fmt_fixed(spread["min"]),
                     fmt_fixed(spread["max"]), DASH if cv is None else f"{100 * cv:.2f}", spread["n"], m.unit])
    headers = [("Test", ""), ("Frame size", "B"), ("Metric", ""), ("Over repeats", "median", ""),
               ("Over repeats", "min", ""), ("Over repeats", "max", ""), ("Over repeats", "CV", "%"),
               ("Repeats", "n"), ("Unit", "")]
    return [Heading(2, "Repeats"), table(headers, rows, numeric_from=1, numeric_to=8),
            Paragraph.of("Each test ran several times (--repeat): its figures' median, range and coefficient of "
                         "variation over the repeats. Each repeat's own tables are in its plan section; "
                         "vsbench compare uses all of them.", "muted")]


def _sut_section(files: RunFiles) -> list[Any]:
    info = files.sysinfo
    if not info:
        return [Heading(2, "System under test"), Paragraph.of("sysinfo.json not available.", "muted")]
    cpu = info.get("cpu") or {}
    kernel = info.get("kernel") or {}
    host = info.get("host") or {}
    memory = info.get("memory") or {}
    software = info.get("software") or {}
    online = cpu.get("online")
    cores = f"{cpu.get('online_count', DASH)} online" + (f" (CPUs {online})" if online else "")
    pairs = [
        ("Host", host.get("hostname") or DASH),
        ("Operating system", host.get("os_release") or DASH),
        ("CPU model", cpu.get("model") or DASH),
        ("Architecture", cpu.get("architecture") or DASH),
        ("Cores", cores),
        ("Threads per core", cpu.get("threads_per_core") if cpu.get("threads_per_core") is not None else DASH),
        ("Frequency governor", cpu.get("governor") or "not reported"),
        ("Isolated CPUs (isolcpus)", cpu.get("isolated") or "none"),
        ("Memory", fmt_bytes(memory.get("total_bytes"))),
        ("Kernel", f"{kernel.get('release', DASH)} {kernel.get('version', '')}".strip()),
        ("Kernel tuning parameters", kernel.get("cmdline") or "none"),
    ]
    pairs += [(f"Software: {k}", v) for k, v in software.items()]
    numa_rows = [[n.get("node", DASH), n.get("cpus") or DASH] for n in info.get("numa") or [] if isinstance(n, dict)]
    huge_rows = [[fmt_bytes(h.get("size_bytes")), fmt_fixed(h.get("total")), fmt_fixed(h.get("free"))]
                 for h in info.get("hugepages") or [] if isinstance(h, dict)]
    side = [Heading(3, "NUMA"),
            table([("Node", ""), ("CPUs", "")], numa_rows, numeric_from=99) if numa_rows
            else Paragraph.of("no NUMA information", "muted"),
            Heading(3, "Hugepages"),
            table([("Page size", ""), ("Reserved", "pages"), ("Free", "pages")], huge_rows) if huge_rows
            else Paragraph.of("no hugepage pools", "muted")]
    return [Heading(2, "System under test"),
            Paragraph.of(f"From sysinfo.json, collected {info.get('collected_at', DASH)} (RFC 8204 bill of "
                         "materials).", "muted"),
            Group([Group([kv_table(pairs)], "col"), Group(side, "col")]),
            *report_host.section(info)]


# -- one plan ---------------------------------------------------------------------------------


def _parameters(files: RunFiles, test: Mapping[str, Any], config: Mapping[str, Any]) -> list[tuple[str, Any]]:
    traffic = config.get("traffic") or {}
    search = config.get("search") or {}
    latency = config.get("latency") or {}
    testbed = config.get("testbed") or {}
    test_section = config.get("test") or {}
    dut = config.get("dut") or {}
    ops = test.get("switching_operations")
    traffic_type = traffic.get("type", test.get("traffic_type"))
    bidirectional = traffic.get("bidirectional", test.get("bidirectional"))
    pairs: list[tuple[str, Any]] = [("Testcase", test.get("testcase") or DASH)]
    if test_section.get("file"):
        pairs.append(("Testcase file", test_section["file"]))
    variant = test.get("variant") or {}
    if variant:
        pairs.append(("Matrix variant", ", ".join(f"{k}={fmt_value(v)}" for k, v in variant.items())))
    pairs += [
        ("Deployment", f"{test.get('deployment') or test_section.get('deployment') or DASH}"
                       + (f" ({ops} switching operation{'s' if ops != 1 else ''})" if ops is not None else "")),
        ("Traffic type", traffic_type or DASH),
        ("Frame sizes", (", ".join(str(s) for s in traffic.get("frame_sizes") or []) + " B")
         if traffic.get("frame_sizes") else ", ".join(f"{fs.get('frame_size_bytes')} B" for fs in test.get("frame_sizes") or [])),
        ("Flows", f"{traffic.get('flows', test.get('flows', DASH))} per direction"),
        ("Directions", "bidirectional (2)" if bidirectional else "unidirectional (1)"),
    ]
    link = testbed.get("link_gbps", test.get("link_gbps"))
    if link is not None or line_rate_basis.from_ports(test.get("frame_sizes") or []):
        pairs.append(("Line rate against", line_rate_basis.describe(
            test.get("frame_sizes") or [], None if link is None else float(link))))
    if "trial_duration_s" in traffic:
        pairs.append(("Trial duration", f"{fmt_value(traffic['trial_duration_s'])} s"))
    if "warmup_s" in traffic:
        pairs.append(("Warm-up", f"{fmt_value(traffic['warmup_s'])} s"))
    if traffic_type == "continuous":
        if traffic.get("rate_fps"):
            pairs.append(("Offered rate", f"{fmt_fps(traffic['rate_fps'])} fps"))
        if traffic.get("rate_percent"):
            pairs.append(("Offered rate", f"{fmt_value(traffic['rate_percent'])} % of line rate"))
    elif search:
        goals = []
        for goal in search.get("goals") or []:
            if isinstance(goal, dict):
                text = f"{goal.get('name')}: loss ≤ {fmt_ratio_percent(goal.get('loss_ratio', 0.0))} %"
                extra = {k: v for k, v in goal.items() if k not in ("name", "loss_ratio") and v is not None}
                if extra:
                    text += " (" + ", ".join(f"{k} {fmt_value(v)}" for k, v in extra.items()) + ")"
                goals.append(text)
        pairs += [
            ("Search mode", search.get("mode") or DASH),
            ("Search goals", "; ".join(goals) or DASH),
        ]
        if search.get("relative_width") is not None:
            pairs.append(("Search width", f"{fmt_ratio_percent(search['relative_width'])} % (relative)"))
        pairs.append(("Load range", f"{fmt_fps(search.get('min_load_fps'))} fps to "
                                    + (f"{fmt_fps(search['max_load_fps'])} fps" if search.get("max_load_fps")
                                       else "min(generator capability, line rate)")))
        if search.get("time_budget_s"):
            pairs.append(("Time budget", f"{fmt_value(search['time_budget_s'])} s"))
        other = {k: v for k, v in search.items()
                 if k not in ("mode", "goals", "relative_width", "min_load_fps", "max_load_fps", "time_budget_s")}
        for key, value in other.items():
            pairs.append((f"search.{key}", fmt_value(value)))
    if latency:
        floor_on = latency.get("generator_floor", True)
        pairs.append(("Latency", f"enabled, probe stream at {fmt_fps(latency.get('probe_rate_fps'))} fps; "
                      + ("the generator's own floor measured first on a direct loop (no DUT)" if floor_on
                         else "generator floor not measured (latency.generator_floor: false)")
                      if latency.get("enabled") else "not enabled (latency.enabled: false)"))
    if dut.get("rules"):
        pairs.append(("DUT rules", f"{fmt_fixed(dut['rules'])} ({dut.get('rule_template') or 'default template'})"))
    if config.get("collectors"):
        pairs.append(("Collectors", ", ".join(str(c) for c in config["collectors"])))
    return pairs


def _point_flag(fs: Mapping[str, Any], point: Mapping[str, Any]):
    status = fs.get("status")
    if status in ("failed", "interrupted"):
        return badge(status, "error")
    if status == "not-run":
        return badge("not run", "info")
    if not point:
        return badge("no result", "error")
    if point.get("valid") is False:
        return badge("invalid", "error")
    if latency_not_as_asked(fs, point) is not None:
        return badge("latency invalid: trial not sent as asked", "warning")
    if point.get("lower_bound_provisional"):
        return badge("provisional lower bound", "warning")
    if point.get("sending_caveat"):
        return badge(f"{point['sending_caveat']} trial", "warning")
    if point.get("regular") is False:
        return badge("irregular", "warning")
    if fs.get("invalid_trial_count"):
        return badge(f"{fs['invalid_trial_count']} invalid trial(s)", "warning")
    if status == "running":
        return badge("running", "warning")
    return badge("ok", "ok")


def _latency_cells(fs: Mapping[str, Any], point: Mapping[str, Any], values: Sequence[Any]) -> list[Any]:
    """Latency figures of ``point`` as table cells; in italics with a mark when the
    generator did not send their trial as asked, so nobody reads them as the DUT's latency
    at that load (the row's validity badge says why)."""
    if latency_not_as_asked(fs, point) is None:
        return [fmt_fixed(v) for v in values]
    return [Em(f"{fmt_fixed(v)} ✗") if finite(v) is not None else fmt_fixed(v) for v in values]


def _row_class(fs: Mapping[str, Any], point: Mapping[str, Any] | None) -> str:
    if fs.get("status") in ("failed", "interrupted") or (point is not None and point.get("valid") is False):
        return "failed"
    if point is not None and (point.get("regular") is False or fs.get("invalid_trial_count")
                              or latency_not_as_asked(fs, point) is not None):
        return "bad"
    return ""


def _find_point(fs: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    for point in fs.get("points") or []:
        if str(point.get("name")) == name:
            return point
    return None


def _goal_title(test: Mapping[str, Any], name: str) -> str:
    if name == "continuous":
        return "Fixed-rate (continuous) results"
    for fs in test.get("frame_sizes") or []:
        point = _find_point(fs, name)
        if point is not None and finite(point.get("goal_loss_ratio")) is not None:
            return f"{name} throughput (loss ≤ {fmt_ratio_percent(point['goal_loss_ratio'])} %)"
    return f"{name} throughput"


def _throughput_table(test: Mapping[str, Any], name: str) -> list[Any]:
    frames = test.get("frame_sizes") or []
    points = [p for p in (_find_point(fs, name) for fs in frames) if p is not None]
    continuous = name == "continuous"
    lat_keys = report_plots.latency_keys(points)
    headers: list[tuple[str, ...]] = [("Frame size", "B")]
    if continuous:
        headers += [("Load", "offered", "fps"), ("Load", "sent", "fps")]
    headers += [("Throughput", "fps", ""), ("Throughput", "Mpps", ""), ("Throughput", "L1 Mbps", ""),
                ("Throughput", "L2 Mbps", ""), ("Throughput", "% line rate", ""), ("Loss", "% of sent")]
    headers += [("One-way latency", k.removesuffix("_ns"), "ns") for k in lat_keys]
    if lat_keys:
        headers.append(("One-way latency", "samples", "probes"))
    floors = bool(lat_keys) and any(isinstance(fs.get("generator_floor"), Mapping)
                                    and fs["generator_floor"].get("measured") for fs in frames)
    if floors:
        headers += [("Generator floor (no DUT)", "min", "ns"), ("Generator floor (no DUT)", "p50", "ns")]
    headers += [("Trial", "# in trials.jsonl"), ("Validity", "")]
    rows, classes = [], []
    for fs in frames:
        point = _find_point(fs, name)
        p = point or {}
        lat = p.get("latency") if isinstance(p.get("latency"), dict) else {}
        row: list[Any] = [fs.get("frame_size_bytes", DASH)]
        if continuous:
            row += [fmt_fps(p.get("offered_load_fps")), fmt_fps(p.get("tx_fps"))]
        row += [fmt_fps(p.get("throughput_fps")), fmt_mpps(p.get("throughput_fps")),
                fmt_fixed(p.get("throughput_l1_mbps"), 1), fmt_fixed(p.get("throughput_l2_mbps"), 1),
                fmt_fixed(p.get("line_rate_percent"), 2), fmt_ratio_percent(p.get("loss_ratio"))]
        row += _latency_cells(fs, p, [lat.get(k) for k in lat_keys])
        if lat_keys:
            sent = lat.get("probes_sent")
            row.append(DASH if not lat else f"{lat.get('samples', DASH)}" + (f" of {sent}" if sent is not None else ""))
        if floors:
            floor = fs.get("generator_floor") if isinstance(fs.get("generator_floor"), Mapping) else {}
            measured = bool(floor.get("measured")) and bool(lat)
            row += [fmt_fixed(floor.get("min_ns")) if measured else DASH,
                    fmt_fixed(floor.get("p50_ns")) if measured else DASH]
        trial = p.get("trial_index")
        lat_trial = p.get("latency_trial_index")
        ref = DASH if trial is None else f"#{trial}"
        if lat_trial is not None and lat_trial != trial:
            ref += f" (latency #{lat_trial})"
        row += [ref, _point_flag(fs, p)]
        rows.append(row)
        classes.append(_row_class(fs, point))
    return [Heading(3, _goal_title(test, name)),
            table(headers, rows, numeric_to=len(headers) - 1, row_classes=classes)]


def _floor_cells(floor: Any) -> list[Any]:
    """min, mean, p50, p99, max (ns) and samples of a measured generator floor, else dashes."""
    if not isinstance(floor, Mapping) or not floor.get("measured"):
        return [DASH] * 6
    return [*(fmt_fixed(floor.get(k)) for k in ("min_ns", "mean_ns", "p50_ns", "p99_ns", "max_ns")),
            fmt_fixed(floor.get("samples"))]


def floor_text(floor: Any) -> str:
    """``generator floor (direct loop, no DUT): min 0.09 µs, p50 0.31 µs, p99 0.87 µs`` or why not."""
    if not isinstance(floor, Mapping):
        return "generator floor: not measured"
    if not floor.get("measured"):
        return f"generator floor not measured: {floor.get('reason') or 'no reason given'}"

    def us(key: str) -> str:
        value = finite(floor.get(key))
        return DASH if value is None else f"{value / 1e3:,.2f} µs"

    return (f"generator floor (direct loop, no DUT): min {us('min_ns')}, p50 {us('p50_ns')}, "
            f"p99 {us('p99_ns')}")


def _latency_table(test: Mapping[str, Any]) -> list[Any]:
    """Every latency trial of the plan, each frame size's generator floor first.

    The floor is the same probe stream on a direct loop without the DUT, so each figure
    below it reads against it: a latency close to the floor is the generator's, not the
    DUT's. Percentiles are blank where too few samples back them.
    """
    rows, classes = [], []
    for fs in test.get("frame_sizes") or []:
        points = [lp for lp in fs.get("latency_points") or [] if isinstance(lp, Mapping)]
        floor = fs.get("generator_floor")
        if not points and not isinstance(floor, Mapping):
            continue
        size = fs.get("frame_size_bytes", DASH)
        if isinstance(floor, Mapping):
            trial = floor.get("trial_index")
            what = "generator floor (no DUT)" if floor.get("measured") else floor_text(floor)
            rows.append([size, Em(what), fmt_fps(0.0) if floor.get("measured") else DASH,
                         *_floor_cells(floor), DASH if trial is None else f"#{trial}"])
            classes.append("floor")
        for lp in points:
            summary = lp.get("summary") if isinstance(lp.get("summary"), Mapping) else {}
            pct = summary.get("percentiles_ns") if isinstance(summary.get("percentiles_ns"), Mapping) else {}
            label = lp.get("label") or DASH
            if lp.get("valid") is False:  # the generator did not carry the load
                label = f"{label} (invalid: not at this load)"
            rows.append([size, label, fmt_fps(lp.get("load_fps")),
                         fmt_fixed(summary.get("min_ns")), fmt_fixed(summary.get("mean_ns")),
                         fmt_fixed(pct.get("p50")), fmt_fixed(pct.get("p99")), fmt_fixed(summary.get("max_ns")),
                         fmt_fixed(summary.get("samples")), f"#{lp.get('trial_index')}"])
            classes.append("bad" if lp.get("valid") is False else "")
    if not rows:
        return []
    headers = [("Frame size", "B"), ("Latency trial", ""), ("Load", "offered", "fps"),
               ("One-way latency", "min", "ns"), ("One-way latency", "mean", "ns"),
               ("One-way latency", "p50", "ns"), ("One-way latency", "p99", "ns"),
               ("One-way latency", "max", "ns"), ("One-way latency", "samples", "probes"),
               ("Trial", "# in trials.jsonl")]
    return [Heading(3, "Latency trials and the generator's own floor"),
            table(headers, rows, numeric_from=2, numeric_to=len(headers) - 1, row_classes=classes),
            Paragraph.of("The generator floor is the same probe stream sent over a direct loop between the "
                         "generator's own ports, without the DUT, at the same frame size: the latency the "
                         "generator itself adds to every figure below it. It is shown, never subtracted.", "muted")]


def _search_table(files: RunFiles, test: Mapping[str, Any]) -> list[Any]:
    rows, classes = [], []
    # The conditional throughput only says something where it differs from the bound.
    conditional = any(
        finite(p.get("conditional_throughput_fps")) is not None
        and finite(p.get("conditional_throughput_fps")) != finite(p.get("lower_bound_fps"))
        for fs in test.get("frame_sizes") or [] for p in fs.get("points") or [])
    for fs in test.get("frame_sizes") or []:
        size = fs.get("frame_size_bytes")
        points = [p for p in fs.get("points") or [] if p.get("name") != "continuous"] or [{}]
        for point in points:
            lower, upper = finite(point.get("lower_bound_fps")), finite(point.get("upper_bound_fps"))
            width = DASH if not (lower is not None and upper) else f"{100 * (upper - lower) / upper:.2f}"
            bound_trials = "/".join(DASH if point.get(k) is None else f"#{point[k]}"
                                    for k in ("trial_index", "upper_bound_trial_index"))
            rows.append([
                size, point.get("name") or DASH, fmt_fps(lower), fmt_fps(upper), width, bound_trials,
                *([fmt_fps(point.get("conditional_throughput_fps"))] if conditional else []),
                fmt_fps(fs.get("nominal_line_rate_fps")),
                fmt_fps(fs.get("min_load_fps")), fmt_fps(fs.get("max_load_fps")),
                fmt_fixed(fs.get("trial_count")), fmt_fixed(fs.get("invalid_trial_count")),
                fmt_fixed(fs.get("trial_seconds"), 1), fmt_seconds(fs.get("effective_seconds")),
                _status_badge(fs.get("status")),
            ])
            classes.append(_row_class(fs, point or None))
    if not rows:
        return []
    headers = [("Frame size", "B"), ("Goal", ""), ("Search bounds", "lower", "fps"),
               ("Search bounds", "upper", "fps"), ("Search bounds", "width", "% of upper"),
               ("Search bounds", "trials", "# lower/upper"),
               *([("Conditional", "throughput", "fps")] if conditional else []), ("Load limits", "line rate", "fps"), ("Load limits", "min", "fps"), ("Load limits", "max", "fps"),
               ("Trials", "count", ""), ("Trials", "invalid", ""), ("Trials", "time", "s, intended"),
               ("Trials", "wall", "s, generator"), ("Status", "")]
    return [Heading(3, "Search and trials per frame size"),
            table(headers, rows, numeric_from=2, numeric_to=len(headers) - 1, row_classes=classes),
            Paragraph.of("Bounds are offered loads: the lower bound is the highest load classified as passing "
                         "(the reported throughput), the upper bound the lowest failing one. Trials and times "
                         "count every trial of the frame size: warm-up, search and final (latency) trials.",
                         "muted")]


def _fixed_table(test: Mapping[str, Any]) -> list[Any]:
    rows = [[fs.get("frame_size_bytes", DASH), fmt_fps(fs.get("nominal_line_rate_fps")),
             fmt_fixed(fs.get("trial_count")), fmt_fixed(fs.get("invalid_trial_count")),
             fmt_fixed(fs.get("trial_seconds"), 1), fmt_seconds(fs.get("effective_seconds")),
             _status_badge(fs.get("status"))] for fs in test.get("frame_sizes") or []]
    if not rows:
        return []
    headers = [("Frame size", "B"), ("Line rate", "fps"), ("Trials", "all roles"), ("Invalid", "trials"),
               ("Trial time", "s, intended"), ("Wall time", "s, generator"), ("Status", "")]
    return [Heading(3, "Trials per frame size"), table(headers, rows, numeric_to=len(headers) - 1)]


STEP_BADGES = {"passed": "ok", "failed": "error", "error": "error", "skipped": "info",
               "not-run": "info"}


def _steps_table(test: Mapping[str, Any]) -> list[Any]:
    """An integration testcase's steps: pass/fail of each with what it did or saw."""
    steps = test.get("steps") or []
    if not steps:
        return []
    rows = [[s.get("index", DASH), str(s.get("label", "")), badge(str(s.get("status")),
             STEP_BADGES.get(str(s.get("status")), "info")), fmt_fixed(s.get("duration_s"), 2),
             str(s.get("detail") or "")] for s in steps]
    headers = [("Step", "#"), ("Step", ""), ("Result", ""), ("Time", "s"), ("What it did or saw", "")]
    return [Heading(3, "Integration steps"), table(headers, rows, numeric_to=1)]


def _invalid_table(files: RunFiles, index: int) -> list[Any]:
    invalid = [t for t in files.trials_of(index) if not t.valid]
    if not invalid:
        return []
    tally = ", ".join(f"{tag} ×{n}" for tag, n in sorted(invalid_tally(invalid).items()))
    rows = [[f"#{t.trial_index}", t.frame_size_bytes, fmt_fps(t.result.intended_load_fps),
             fmt_fps(t.result.achieved_tx_fps), fmt_fps(t.result.rx_fps), t.role,
             Lines(tuple(t.invalid_reasons)) if t.invalid_reasons else "unspecified"]
            for t in invalid[:MAX_INVALID_ROWS]]
    more = (Paragraph.of(f"… and {len(invalid) - MAX_INVALID_ROWS} more invalid trials in trials.jsonl.", "muted")
            if len(invalid) > MAX_INVALID_ROWS else None)
    headers = [("Trial", "#"), ("Frame size", "B"), ("Load", "offered", "fps"), ("Load", "sent", "fps"),
               ("Load", "received", "fps"), ("Role", ""), ("Why invalid", "")]
    return compact([Heading(3, f"Invalid trials ({len(invalid)}: {tally})"),
                    Paragraph.of("An invalid trial did not happen as asked (e.g. the generator could not send the "
                                 "offered load); it is never counted as loss in the device under test.", "muted"),
                    table(headers, rows, numeric_to=5), more])


def _trace(files: RunFiles, test: Mapping[str, Any], config: Mapping[str, Any]):
    index = test.get("plan_index")
    if not isinstance(index, int) or not files.trials:
        return None
    goals = goal_loss_ratios(test, config)
    frames = []
    for fs in test.get("frame_sizes") or []:
        size = fs.get("frame_size_bytes")
        reported = {str(p.get("name")): finite(p.get("throughput_fps")) for p in fs.get("points") or []
                    if p.get("name") != "continuous" and finite(p.get("throughput_fps")) is not None}
        frames.append((size, files.trials_of(index, size), reported))
    uri = report_plots.trace_figure(frames, [ratio for _, ratio in goals])
    goal_text = "; ".join(f"{n} loss ≤ {fmt_ratio_percent(r)} %" for n, r in goals) or "no goals (fixed rate)"
    return figure(uri, "Search trace per frame size, from trials.jsonl: the offered load of every trial in the "
                       "order run, coloured by the trial's own loss against each goal's loss ratio "
                       f"({goal_text}); dashed lines are the reported throughputs. The search may decide a load "
                       "on more than one trial or on a latency bound; its verdict is in the tables above.")


def _plan_section(files: RunFiles, test: Mapping[str, Any], notes: Sequence[Note]) -> Group:
    index = test.get("plan_index")
    config = files.plan_config(index)
    label = plan_title(files, index)
    repeat = test.get("repeat") if isinstance(test.get("repeat"), Mapping) else None
    if repeat:
        label += f" (repeat {repeat.get('index')} of {repeat.get('count')})"
    parts: list[Any] = [Heading(2, label, _status_badge(test.get("status")))]
    if test.get("description"):
        parts.append(Paragraph.of(str(test["description"]), "desc"))
    parts.append(kv_table(_parameters(files, test, config)))
    if config:
        parts.append(Details("Full resolved configuration of this plan (config.yaml)",
                             yaml.safe_dump(config, sort_keys=False, default_flow_style=False, allow_unicode=True)))
    names = report_plots.point_names(test) or [n for n, _ in goal_loss_ratios(test, config)]
    if not names and test.get("frame_sizes"):
        names = ["continuous" if test.get("traffic_type") == "continuous" else "no result"]
    for name in names:
        parts.append(_throughput_table(test, name))
    parts.append(report_scaling.efficiency_table(test))  # switch efficiency
    parts.append(_steps_table(test))  # an integration testcase's steps
    parts.append(report_traffic.sections(test))  # back2back, burst, load_sweep
    parts.append(report_mix.section(test))  # a frame mix per size
    parts.append(report_load.section(test))  # a noisy neighbour's measured load (load:)
    parts.append(_plan_notes(files, notes))
    if any(p.get("name") != "continuous" for fs in test.get("frame_sizes") or [] for p in fs.get("points") or []):
        parts.append(_search_table(files, test))
    else:
        parts.append(_fixed_table(test))
    parts.append(_latency_table(test))
    parts.append(figure(report_plots.throughput_figure(test),
                        "Throughput versus frame size (results.json): aggregate Mpps with the line rate "
                        "dashed, and the share of the line rate in % (nominal unless the test's "
                        "configuration says the ports' own speed)."))
    parts.append(figure(report_plots.latency_figure(test),
                        "One-way latency at the reported throughput versus frame size (results.json): average "
                        "with the min..max range in µs, from the latency trial named in the tables; a latency "
                        "trial the generator did not send as asked is left out (flagged ✗ in the tables)."))
    if isinstance(index, int):
        parts.append(figure(report_latency_hist.histogram_figure(test, files.trials_of(index)),
                            report_latency_hist.CAPTION))
    parts.append(_trace(files, test, config))
    if isinstance(index, int):
        parts.append(_invalid_table(files, index))
    return Group(compact(parts), "section", anchor=f"plan-{index}")


def _footer(files: RunFiles) -> list[Any]:
    rows = []
    for name in INPUT_FILES:
        if name in files.digests:
            rows.append([name, fmt_fixed(files.sizes.get(name)), Mono(files.digests[name])])
        else:
            rows.append([name, DASH, "missing"])
    return [Heading(3, "Source files"),
            Paragraph((f"Run directory {files.run_dir}. Regenerate this report with ",
                       f"vsbench report {files.run_dir}",
                       f"; check every figure of {RESULTS_FILE} against {TRIALS_FILE} and {CONFIG_FILE} with ",
                       "vsbench recompute", ".")),
            table([("File", ""), ("Size", "bytes"), ("SHA-256", "")], rows, numeric_to=2)]
