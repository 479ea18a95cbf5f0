"""report.html's switch-efficiency tables and rule/flow scaling curves.

Two parts, both read from results.json alone:

* :func:`efficiency_table` (in every plan's section): per frame size and goal, the cores
  the switch consumed at the reported point's trial, frames per second per core, and the
  datapath's own account of that trial -- OvS-DPDK PMD EMC/SMC/megaflow hits and upcalls,
  kernel datapath lookups hit/missed/lost, and for OVS-TC how many datapath flows were in TC.
* :func:`scaling_section` (after the summary): for a testcase run over a ``dut.rules`` or
  ``traffic.flows`` matrix, the curve across its plans -- count versus zero-loss frame rate
  and versus Mpps per core -- as a plot and a table.

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
    headers: list[tuple[str, ...]] = [("Frame size", "B"), ("Goal", ""), ("Frame rate", "Mpps", ""),
                                      ("Switch CPU", "cores", ""), ("Switch CPU", "Mpps per core", ""),
                                      ("Switch CPU", "measured as", "")]
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
    if any(switch_figures.oversubscribed(p) for p in points):
        caption += (" Highlighted rows: a busy-polling thread of the switch did not get its CPU "
                    "(oversubscribed): the figures measured contention.")
    offload_notes = sorted({t for t in (switch_figures.offload_text(p) for p in points) if t})
    if offload_notes:
        caption += " OVS-TC: " + "; ".join(offload_notes) + "."
    return [Heading(3, "Switch efficiency"),
            table(headers, rows, numeric_from=2, numeric_to=len(headers) - 1, row_classes=classes),
            Paragraph.of(caption, "muted")]


def _curve_table(files: RunFiles, curve: scaling.ScalingCurve):
    count_label = "rules" if curve.axis == "dut.rules" else "flows"
    headers: list[tuple[str, ...]] = [(count_label.capitalize(), "per direction"), ("Flows", "per direction"),
                                      ("Frame size", "B"), (f"{curve.goal} frame rate", "Mpps", ""),
                                      ("Switch CPU", "cores", ""), ("Switch CPU", "Mpps per core", ""),
                                      ("Datapath", ""), ("Plan", "")]
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
            rows.append([f"{p.count:,}", DASH if p.flows is None else f"{p.flows:,}", size,
                         switch_figures.fmt_mpps(p.throughput_fps), switch_figures.fmt_cores(p.switch_cores),
                         switch_figures.fmt_mpps(p.fps_per_core), p.datapath or DASH, link])
            classes.append("bad" if flags else "")
    return table(headers, rows, numeric_from=0, numeric_to=6, row_classes=classes)


def _drop_text(curve: scaling.ScalingCurve) -> str:
    parts = []
    for size, points in sorted(curve.series.items()):
        ratio = scaling.drop_ratio(points)
        measured = [p for p in points if p.throughput_fps]
        if ratio is None:
            continue
        parts.append(f"{size} B: {measured[0].throughput_fps / 1e6:.3f} Mpps at {measured[0].count:,} → "
                     f"{measured[-1].throughput_fps / 1e6:.3f} Mpps at {measured[-1].count:,} "
                     f"({ratio:.2f}× {'drop' if ratio >= 1 else 'gain'})")
    return "; ".join(parts)


def scaling_section(files: RunFiles) -> list[Any]:
    """Every scaling curve of the run (plot and table) as blocks; [] when the run has none."""
    found = scaling.curves(files.tests)
    if not found:
        return []
    parts: list[Any] = [
        Heading(2, "Scaling"),
        Paragraph.of("One point per plan of the matrix: the reported frame rate of the goal named in "
                     "the header (aggregate over all directions) and the switch's CPU at that point's trial. "
                     "Each row links to its plan's section, where the search, notes and datapath counters are.",
                     "muted")]
    for curve in found:
        parts.append(Heading(3, f"{curve.title}: {curve.axis_label} versus frame rate"))
        parts.append(figure(report_plots_scaling.scaling_figure(curve),
                            f"{curve.axis_label} versus {curve.goal} frame rate (Mpps, aggregate) and Mpps per core "
                            "the switch consumed, log count axis (results.json)."))
        drop = _drop_text(curve)
        if drop:
            parts.append(Paragraph.of(drop))
        parts.append(_curve_table(files, curve))
    return compact(parts)
