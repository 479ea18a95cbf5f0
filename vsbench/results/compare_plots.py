"""Plots of the compare and trend pages, as SVG data URIs (same rules as
:mod:`vsbench.results.report_plots`: no pyplot, fonts as outlines, units on every axis)."""

from __future__ import annotations

from typing import Sequence

from matplotlib.figure import Figure

from vsbench.results import report_plots
from vsbench.results.compare import Comparison, Row
from vsbench.results.compare_scaling import CurveComparison
from vsbench.results.scaling import short_count
from vsbench.results.significance import SIGNIFICANT

BETTER, WORSE, GREY = "#0072B2", "#D55E00", "#B8BEC4"


def gain_figure(comparison: Comparison, rows: Sequence[Row]) -> str | None:
    """Horizontal bars: % change of every row against the baseline, one bar per other run,
    coloured by verdict, with the 95 % interval as whiskers where there is one."""
    bars = []
    for row in rows:
        for i, change in enumerate(row.changes[1:], start=1):
            if change is None or change.percent is None:
                continue
            label = f"{row.key.test} {row.key.frame_size_bytes} B {row.key.metric}"
            if len(comparison.runs) > 2:
                label += f" ({comparison.runs[i].name})"
            color = GREY
            if change.significance == SIGNIFICANT:
                color = BETTER if change.better else WORSE
            err = None
            if change.percent_low is not None and change.percent_high is not None:
                err = (change.percent - change.percent_low, change.percent_high - change.percent)
            bars.append((label, change.percent, color, err))
    if not bars:
        return None
    height = 0.9 + 0.28 * len(bars)
    fig = Figure(figsize=(9.0, height))
    with report_plots.matplotlib.rc_context(report_plots.RC):
        ax = fig.subplots()
        ys = list(range(len(bars)))[::-1]
        for y, (label, percent, color, err) in zip(ys, bars):
            ax.barh(y, percent, color=color, height=0.6)
            if err is not None:
                ax.errorbar(percent, y, xerr=[[max(0.0, err[0])], [max(0.0, err[1])]], color="#333333",
                            capsize=3, linewidth=1)
            ax.annotate(f"{percent:+.1f} %", (percent, y), xytext=(4 if percent >= 0 else -4, 0),
                        textcoords="offset points", va="center", ha="left" if percent >= 0 else "right",
                        fontsize=8)
        ax.set_yticks(ys)
        ax.set_yticklabels([report_plots._plain(b[0]) for b in bars])
        ax.axvline(0, color="#333333", linewidth=0.8)
        ax.set_xlabel(f"change against {report_plots._plain(comparison.runs[0].name)} (%)")
        lo = min(min(b[1] for b in bars), 0.0)
        hi = max(max(b[1] for b in bars), 0.0)
        pad = max(2.0, 0.25 * (hi - lo))
        ax.set_xlim(lo - pad, hi + pad)
        ax.set_title("Gain against the baseline (blue better, orange worse, grey within noise / unknown)")
        uri = report_plots._data_uri(fig)
    return uri


def trend_figure(series: dict[str, list[tuple[str, float, float | None, float | None]]], metric: str,
                 unit: str) -> str | None:
    """``metric`` over runs: one line per series (frame size, switch), x the run order
    (labelled by start date), whiskers the interval of each point where there is one."""
    if not series:
        return None
    fig = Figure(figsize=(9.0, 3.6))
    with report_plots.matplotlib.rc_context(report_plots.RC):
        ax = fig.subplots()
        order: list[str] = []
        for points in series.values():
            order += [p[0] for p in points if p[0] not in order]
        order.sort()
        xs = {label: i for i, label in enumerate(order)}
        for i, (name, points) in enumerate(series.items()):
            color = report_plots.PALETTE[i % len(report_plots.PALETTE)]
            x = [xs[p[0]] for p in points]
            y = [p[1] for p in points]
            ax.plot(x, y, marker="o", color=color, label=report_plots._plain(name))
            for xi, (_, value, low, high) in zip(x, points):
                if low is not None and high is not None:
                    ax.errorbar(xi, value, yerr=[[max(0.0, value - low)], [max(0.0, high - value)]], color=color,
                                capsize=2, linewidth=0.8)
        ax.set_xticks(range(len(order)))
        ax.set_xticklabels([report_plots._plain(o) for o in order], rotation=30, ha="right", fontsize=7)
        ax.set_ylabel(f"{report_plots._plain(metric)} ({unit})")
        ax.set_xlabel("run (started at, UTC)")
        ax.legend(fontsize=7)
        ax.set_title(f"{report_plots._plain(metric)} over runs")
        uri = report_plots._data_uri(fig)
    return uri


LINESTYLES = ("-", "--", ":", "-.")


def scaling_figure(curve: CurveComparison) -> str | None:
    """The count (log axis) versus the goal's frame rate: a colour per frame size, a line
    style and marker per run (the baseline solid)."""
    counts = curve.counts()
    if len(counts) < 2:
        return None
    fig = Figure(figsize=(9.0, 3.6))
    with report_plots.matplotlib.rc_context(report_plots.RC):
        ax = fig.subplots()
        drawn = False
        for k, size in enumerate(curve.frame_sizes()):
            color = report_plots.PALETTE[k % len(report_plots.PALETTE)]
            for i, run in enumerate(curve.runs):
                points = [(c, v / 1e6) for c in counts if (v := curve.value(c, size, i)) is not None]
                if not points:
                    continue
                drawn = True
                ax.plot([p[0] for p in points], [p[1] for p in points], color=color,
                        linestyle=LINESTYLES[i % len(LINESTYLES)], marker="os^vD"[i % 5],
                        label=report_plots._plain(f"{size} B, {run}"))
        if not drawn:
            return None
        ax.set_xscale("log")
        ax.set_xticks(counts, [short_count(c) for c in counts])
        ax.minorticks_off()
        ax.set_ylim(bottom=0)
        ax.set_xlabel(report_plots._plain(curve.axis.label + " (log)"))
        ax.set_ylabel(f"{curve.goal} frame rate (Mpps, aggregate)")
        ax.set_title(report_plots._plain(f"{curve.testcase}: {curve.goal} frame rate per run"))
        ax.legend(fontsize=7)
        uri = report_plots._data_uri(fig)
    return uri
