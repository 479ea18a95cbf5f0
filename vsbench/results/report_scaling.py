"""report.html's switch-efficiency tables and rule/flow scaling curves.

Two parts, both read from results.json alone:

* :func:`efficiency_table` (in every plan's section): per frame size and goal, the cores
  the switch consumed at the reported point's trial, frames per second per core, and the
  datapath's own account of that trial -- OvS-DPDK PMD EMC/SMC/megaflow hits and upcalls,
  kernel datapath lookups hit/missed/lost, and for OVS-TC how many datapath flows were in TC.
* :func:`scaling_section` (after the summary): for a testcase run over a count matrix
  (``dut.rules``, ``dut.routes``, ``dut.nexthops``, ``traffic.flows``, any integer key: see
  :mod:`vsbench.results.scaling`), the curve across its plans -- count versus zero-loss
  frame rate and versus Mpps per core -- as a plot, the seed reports' table (frame rate per
  frame size x count, with the drop from the smallest count to the largest stated) and every
  point with what the switch spent and what the DUT's set-up cost.

Built on the page helpers of :mod:`vsbench.results.report_page`; :mod:`report_html` imports
this module, never the other way round.
"""

from __future__ import annotations

from typing import Any, Mapping

from vsbench.results import report_plots_scaling, scaling, switch_figures
from vsbench.results.page_model import Heading, Link, Paragraph, compact
from vsbench.results.report_data import RunFiles
from vsbench.results.report_page import DASH, figure, fmt_fixed, fmt_mpps, plan_title, table


def _points(test: Mapping[str, Any]) -> list[tuple[Mapping[str, Any], Mapping[str, Any]]]:
    return [(fs, p) for fs in test.get("frame_sizes") or [] for p in fs.get("points") or []
            if isinstance(p, Mapping)]


def efficiency_table(test: Mapping[str, Any]) -> list[Any]:
    """What the switch spent at each reported point (blocks); [] when no point carries a figure."""
    pairs = [(fs, p) for fs, p in _points(test) if switch_figures.has_figures(p)]
    if not pairs:
        return []
    points = [p for _, p in pairs]
    pmd = any(switch_figures.pmd_counters(p) for p in points)
    kernel = any(switch_figures.kernel_counters(p) for p in points)
    offload = any(switch_figures.offload(p) for p in points)
    rules = any(switch_figures.rules_installed(p) for p in points)
    owner = "VNF" if all(switch_figures.cpu_owner(p) == "VNF" for p in points) else "Switch"
    headers: list[tuple[str, ...]] = [("Frame size", "B"), ("Goal", ""), ("Frame rate", "Mpps", ""),
                                      (f"{owner} CPU", "cores", ""), (f"{owner} CPU", "Mpps per core", ""),
                                      (f"{owner} CPU", "measured as", "")]
    if pmd:
        headers += [("PMD (OvS-DPDK)", label, "frames") for _, label in switch_figures.PMD_COUNTERS]
    if kernel:
        headers += [("Kernel datapath lookups", label, "frames") for _, label in switch_figures.KERNEL_COUNTERS]
    if offload:
        headers.append(("Flows offloaded to TC", "of datapath flows"))
    if rules:
        headers.append(("OpenFlow rules", "installed, all directions"))
    headers.append(("Trial", "# in trials.jsonl"))
    rows, classes = [], []
    for fs, p in pairs:
        row: list[Any] = [fs.get("frame_size_bytes", DASH), p.get("name") or DASH, fmt_mpps(p.get("throughput_fps")),
                          switch_figures.fmt_cores(switch_figures.switch_cores(p)),
                          switch_figures.fmt_mpps(switch_figures.fps_per_core(p)),
                          switch_figures.cpu_source(p) or DASH]
        if pmd:
            counters = switch_figures.pmd_counters(p) or {}
            row += [fmt_fixed(counters.get(key)) for key, _ in switch_figures.PMD_COUNTERS]
        if kernel:
            counters = switch_figures.kernel_counters(p) or {}
            row += [fmt_fixed(counters.get(key)) for key, _ in switch_figures.KERNEL_COUNTERS]
        if offload:
            off = switch_figures.offload(p)
            row.append(DASH if off is None else f"{off['offloaded_flows']:,} of {off['datapath_flows']:,}")
        if rules:
            row.append(fmt_fixed(switch_figures.rules_installed(p)))
        trial = p.get("trial_index")
        row.append(DASH if trial is None else f"#{trial}")
        rows.append(row)
        classes.append("bad" if switch_figures.oversubscribed(p) else "")
    caption = ("Cores: CPU time the switch consumed during the point's trial over that trial's wall time "
               "(its threads for a userspace datapath, softirq time for a kernel one); Mpps per core: frames "
               "received per second over those cores. Datapath counters are deltas over the same trial.")
    if owner == "VNF":
        caption = ("Cores: CPU time the VNF consumed during the point's trial over that trial's wall time (a "
                   "kernel router: softirq time of the CPUs it routes on, rx_cpus); Mpps per core: frames "
                   "received per second over those cores. The topology has no switch: the VNF is the DUT.")
    if any(switch_figures.oversubscribed(p) for p in points):
        caption += (" Highlighted rows: a busy-polling thread of the switch did not get its CPU "
                    "(oversubscribed): the figures measured contention.")
    offload_notes = sorted({t for t in (switch_figures.offload_text(p) for p in points) if t})
    if offload_notes:
        caption += " OVS-TC: " + "; ".join(offload_notes) + "."
    return [Heading(3, "Switch efficiency" if owner == "Switch" else "DUT efficiency (the VNF)"),
            table(headers, rows, numeric_from=2, numeric_to=len(headers) - 1, row_classes=classes),
            Paragraph.of(caption, "muted")]


def _fmt_setup(key: str, value: float | None) -> str:
    if value is None:
        return DASH
    if key == "install_s":
        return f"{value:,.2f}"
    if key == "fib_slab_delta_bytes":
        return f"{value / 2**20:,.1f}"
    return fmt_fixed(value)


def _curve_table(files: RunFiles, curve: scaling.ScalingCurve):
    """Every point, one row per count x frame size, with what the switch spent and what the
    DUT's set-up cost (route install time and FIB memory, when the plans recorded them)."""
    ax = curve.axis_info
    setup = curve.has_setup()
    per = "per direction" if ax.label.endswith("per direction") else ""
    headers: list[tuple[str, ...]] = [(ax.plural.capitalize(), per), ("Flows", "per direction"),
                                      ("Frame size", "B"), (f"{curve.goal} frame rate", "Mpps", ""),
                                      (f"{curve.cpu_owner} CPU", "cores", ""),
                                      (f"{curve.cpu_owner} CPU", "Mpps per core", "")]
    if setup:
        headers += [("DUT set-up", label, unit) for _, label, unit in scaling.SETUP_FIGURES]
    headers += [("Datapath", ""), ("Plan", "")]
    rows, classes = [], []
    for size, points in sorted(curve.series.items()):
        for p in points:
            flags = []
            if p.status != "complete":
                flags.append(p.status)
            if p.regular is False:
                flags.append("irregular")
            if p.oversubscribed:
                flags.append("CPU oversubscribed")
            plan = plan_title(files, p.plan_index)
            link = Link(plan, f"#plan-{p.plan_index}", f" ({', '.join(flags)})" if flags else "")
            row = [f"{p.count:,}", DASH if p.flows is None else f"{p.flows:,}", size,
                   switch_figures.fmt_mpps(p.throughput_fps), switch_figures.fmt_cores(p.switch_cores),
                   switch_figures.fmt_mpps(p.fps_per_core)]
            if setup:
                row += [_fmt_setup(key, p.setup.get(key)) for key, _, _ in scaling.SETUP_FIGURES]
            rows.append(row + [p.datapath or DASH, link])
            classes.append("bad" if flags else "")
    return table(headers, rows, numeric_from=0, numeric_to=len(headers) - 2, row_classes=classes)


def grid_table(curve: scaling.ScalingCurve):
    """The seed reports' table: one row per count, per frame size the goal's frame rate and
    its change against the smallest count (Intel/Brocade vRouter report: throughput per
    frame size x routes / next hops; Netronome: x rules), and a last row with the drop."""
    counts, sizes, cells = curve.grid()
    ax = curve.axis_info
    headers: list[tuple[str, ...]] = [(ax.plural.capitalize(), "")]
    for size in sizes:
        headers += [(f"{size} B", f"{curve.goal} Mpps", ""), (f"{size} B", "% line rate", ""),
                    (f"{size} B", f"vs {ax.count_text(counts[0])}", "%")]
    rows, classes = [], []
    first = {size: next((p for p in curve.per_count(size) if p.throughput_fps), None) for size in sizes}
    for count in counts:
        row: list[Any] = [ax.count_text(count)]
        flagged = False
        for size in sizes:
            p = cells.get((count, size))
            base = first[size]
            change = (DASH if p is None or not p.throughput_fps or base is None or not base.throughput_fps
                      else f"{100.0 * (p.throughput_fps / base.throughput_fps - 1):+.1f}")
            row += [DASH if p is None else switch_figures.fmt_mpps(p.throughput_fps) + (" *" if p.flagged else ""),
                    DASH if p is None or p.line_rate_percent is None else f"{p.line_rate_percent:.2f}", change]
            flagged = flagged or bool(p and p.flagged)
        rows.append(row)
        classes.append("bad" if flagged else "")
    found = {d.frame_size_bytes: d for d in scaling.drops(curve)}
    if found:
        row = [f"drop {ax.count_text(counts[0])} → {ax.count_text(counts[-1])}"]
        for size in sizes:
            d = found.get(size)
            row += [DASH if d is None else f"{d.ratio:.2f}×", "", DASH if d is None else f"{d.percent:+.1f}"]
        rows.append(row)
        classes.append("")
    return table(headers, rows, numeric_from=1, row_classes=classes)


def scaling_section(files: RunFiles) -> list[Any]:
    """Every scaling curve of the run (plot, the seed-shaped table, the drop, every point)
    as blocks; [] when the run has none."""
    found = scaling.curves(files.tests)
    if not found:
        return []
    parts: list[Any] = [
        Heading(2, "Scaling"),
        Paragraph.of("One point per plan of the matrix: the reported frame rate of the goal named in "
                     "the header (aggregate over all directions) and the CPU the switch (or, without one, the "
                     "VNF) consumed at that point's trial. "
                     "Each row links to its plan's section, where the search, notes and datapath counters are.",
                     "muted")]
    for curve in found:
        ax = curve.axis_info
        parts.append(Heading(3, f"{curve.title}: {curve.axis_label} versus frame rate"))
        parts.append(figure(report_plots_scaling.scaling_figure(curve),
                            f"{curve.axis_label} versus {curve.goal} frame rate (Mpps, aggregate) and Mpps per core "
                            "the switch consumed, log count axis (results.json)."))
        for drop in scaling.drops(curve):
            parts.append(Paragraph.of(scaling.drop_sentence(curve, drop)))
        parts.append(Heading(4, f"{curve.goal} frame rate per frame size and number of {ax.plural}"))
        parts.append(grid_table(curve))
        repeats = max((p.repeats for size in curve.series for p in curve.per_count(size)), default=1)
        parts.append(Paragraph.of("Change against the smallest count, per frame size; * a flagged point "
                                  "(irregular search, CPU oversubscribed or incomplete: see its row below)."
                                  + (f" Each cell is the median of the plan's {repeats} repeats (every repeat "
                                     "is a row below)." if repeats > 1 else ""),
                                  "muted"))
        parts.append(Heading(4, "Every point"))
        parts.append(_curve_table(files, curve))
        if curve.has_setup():
            parts.append(Paragraph.of("DUT set-up: what installing the plan's configuration cost -- routes "
                                      "installed in all directions, the time from the first netlink request to "
                                      "the last acknowledgement, and the growth of the kernel's FIB slab caches "
                                      "(ip_fib_trie + ip_fib_alias, host-wide).", "muted"))
    return compact(parts)
