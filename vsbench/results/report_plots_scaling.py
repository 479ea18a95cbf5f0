"""The scaling curve of report.html: a count (rules, routes, next hops, flows) versus frame
rate and Mpps per core.

The Netronome OVS-TC report's rule-complexity figure: zero-loss frame rate against the
number of OpenFlow rules (64 ... 1M, a log axis), and the same rate per CPU core the switch
consumed -- the figure that compares a switch burning 8 cores with one burning 1; the
Intel/Brocade vRouter report's throughput against routes and next hops. One line per frame
size; a point whose search ended irregular or under CPU oversubscription is
ringed, as in the throughput plot. Inputs are :class:`vsbench.results.scaling.ScalingCurve`
objects built from results.json; nothing is computed here that the table does not show.
"""

from __future__ import annotations

import matplotlib
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from vsbench.results.report_plots import PALETTE, RC, _data_uri, _plain
from vsbench.results.scaling import ScalingCurve, ScalingPoint, short_count

RING = "#D55E00"


def _count_label(value: float, _pos: object = None) -> str:
    """64, 1K, 8K, 64K, 1M: the reports' way of naming counts."""
    for scale, suffix in ((1e6, "M"), (1e3, "K")):
        if value >= scale:
            return f"{value / scale:g}{suffix}"
    return f"{value:g}"


def _flagged(p: ScalingPoint) -> bool:
    return p.flagged


def scaling_figure(curve: ScalingCurve) -> str | None:
    """Two panels over the count axis (log): aggregate Mpps, and Mpps per switch core."""
    if not curve.plottable():
        return None
    with matplotlib.rc_context(RC):
        fig = Figure(figsize=(10, 3.4))
        rate_ax, core_ax = fig.subplots(1, 2)
        flagged = False
        per_core_drawn = False
        for k, size in enumerate(sorted(curve.series)):
            points = curve.per_count(size)  # repeats of a plan: their median
            color = PALETTE[k % len(PALETTE)]
            label = _plain(f"{size} B {points[0].goal if points else ''}".strip())
            for ax, values in (
                (rate_ax, [(p.count, p.throughput_fps / 1e6, p) for p in points if p.throughput_fps is not None]),
                (core_ax, [(p.count, p.mpps_per_core, p) for p in points if p.mpps_per_core is not None]),
            ):
                if not values:
                    continue
                if ax is core_ax:
                    per_core_drawn = True
                ax.plot([v[0] for v in values], [v[1] for v in values], marker="o", color=color, label=label)
                rings = [(v[0], v[1]) for v in values if _flagged(v[2])]
                if rings:
                    flagged = True
                    ax.plot([r[0] for r in rings], [r[1] for r in rings], linestyle="none", marker="o",
                            markersize=11, markerfacecolor="none", markeredgecolor=RING)
        rate_ax.set_ylabel("frame rate (Mpps, aggregate)")
        rate_ax.set_title(_plain(f"{curve.goal} frame rate"))
        owner = curve.cpu_owner.lower()
        core_ax.set_ylabel(f"Mpps per {owner} core")
        core_ax.set_title(f"Frame rate per core the {owner} consumed")
        if not per_core_drawn:
            core_ax.text(0.5, 0.5, "the DUT reported no CPU time", ha="center", va="center",
                         transform=core_ax.transAxes, color="#888888")
        for ax in (rate_ax, core_ax):
            ax.set_xscale("log")
            ax.xaxis.set_major_locator(LogLocator(base=10.0))
            ax.xaxis.set_major_formatter(FuncFormatter(_count_label))
            ax.xaxis.set_minor_formatter(NullFormatter())
            ax.set_xlabel(_plain(curve.axis_label + " (log)"))
            ax.set_ylim(bottom=0)
        counts = curve.counts()
        if counts:
            for ax in (rate_ax, core_ax):
                ax.set_xticks(counts, [short_count(c) for c in counts])
                ax.xaxis.set_minor_formatter(NullFormatter())
        handles, labels = rate_ax.get_legend_handles_labels()
        if flagged:
            handles.append(Line2D([], [], linestyle="none", marker="o", markersize=11, markerfacecolor="none",
                                  markeredgecolor=RING))
            labels.append("irregular, oversubscribed or incomplete (see notes)")
        if handles:
            rate_ax.legend(handles, labels, fontsize=8, loc="best")
        return _data_uri(fig)
