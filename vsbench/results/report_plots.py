"""The plots of report.html: matplotlib (no pyplot, no display) rendered to SVG data URIs.

Each figure is an ``<img src="data:image/svg+xml;base64,...">`` so the report stays one
file with no network reference, and the SVGs cannot collide with each other's element ids
or with the page. Text is drawn as paths (``svg.fonttype: path``), so no font is fetched.
Every axis carries its unit. Inputs are results.json test documents and trial records; no
figure is computed here that the tables do not show.
"""

from __future__ import annotations

import base64
import io
import json
import math
from collections import OrderedDict
from typing import Any, Callable, Mapping, Sequence

import matplotlib
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from vsbench.results import line_rate_basis
from vsbench.results.model import TrialRecord
from vsbench.results.report_data import (
    FAIL, INVALID, MEASURED, MIXED, PASS, finite, latency_not_as_asked, trial_verdict,
)

#: Deterministic output (same files -> same report), fonts as outlines.
RC = {
    "svg.fonttype": "path",
    "svg.hashsalt": "vsbench-report",
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
}

#: Colour-blind-safe (Okabe-Ito) colours for goals and verdicts.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")
VERDICT_STYLE = {
    PASS: {"color": "#0072B2", "marker": "o", "label": "pass (loss within every goal)"},
    MIXED: {"color": "#E69F00", "marker": "o", "label": "pass for some goals only"},
    FAIL: {"color": "#D55E00", "marker": "o", "label": "fail (loss above every goal)"},
    MEASURED: {"color": "#009E73", "marker": "o", "label": "valid trial"},
    INVALID: {"color": "#000000", "marker": "X", "label": "invalid (not counted)"},
}
ROLE_MARKER = {"warmup": "v", "final": "D", "continuous": "s"}
#: Offered loads spanning more than this ratio are drawn on a log axis.
LOG_SCALE_SPAN = 20.0


def _plain_number(value: float, _pos: Any = None) -> str:
    return f"{value:g}"


def _plain(text: Any) -> str:
    """User text for a matplotlib label: no mathtext ($...$) interpretation."""
    return str(text).replace("$", r"\$")


#: Rendered figures by the data they draw: a long run rewrites its report between plans, and
#: a finished plan's figures do not change (rendering SVG is most of a report's time).
_RENDERED: OrderedDict[str, str | None] = OrderedDict()
RENDER_CACHE_SIZE = 64


def _rendered(kind: str, data: Any, draw: Callable[[], str | None]) -> str | None:
    """``draw()``'s data URI, or the one drawn before from the same ``data``."""
    key = kind + json.dumps(data, sort_keys=True, default=repr)
    if key in _RENDERED:
        _RENDERED.move_to_end(key)
        return _RENDERED[key]
    uri = _RENDERED[key] = draw()
    while len(_RENDERED) > RENDER_CACHE_SIZE:
        _RENDERED.popitem(last=False)
    return uri


def _data_uri(fig: Figure) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    return "data:image/svg+xml;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def point_names(test: Mapping[str, Any]) -> list[str]:
    """Reported point names (goals, or 'continuous') in order of first appearance."""
    names: list[str] = []
    for fs in test.get("frame_sizes") or []:
        for point in fs.get("points") or []:
            name = str(point.get("name"))
            if name not in names:
                names.append(name)
    return names


def _point(fs: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    for point in fs.get("points") or []:
        if str(point.get("name")) == name:
            return point
    return None


def _sizes(test: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [fs for fs in test.get("frame_sizes") or [] if isinstance(fs.get("frame_size_bytes"), int)]


def _size_axis(ax: Any, sizes: Sequence[int]) -> None:
    ax.set_xticks(range(len(sizes)), [str(s) for s in sizes])
    ax.set_xlabel("frame size (B, incl. FCS)")
    ax.set_xlim(-0.5, len(sizes) - 0.5)


def throughput_figure(test: Mapping[str, Any]) -> str | None:
    """Throughput versus frame size of one results.json test (:func:`_throughput_svg`)."""
    return _rendered("throughput", test, lambda: _throughput_svg(test))


def _throughput_svg(test: Mapping[str, Any]) -> str | None:
    """Mpps and % of line rate versus frame size, one line per reported point name."""
    frames = _sizes(test)
    names = point_names(test)
    if not frames or not names:
        return None
    sizes = [fs["frame_size_bytes"] for fs in frames]
    with matplotlib.rc_context(RC):
        fig = Figure(figsize=(10, 3.4))
        mpps_ax, pct_ax = fig.subplots(1, 2)
        line_rate = [finite(fs.get("nominal_line_rate_fps")) for fs in frames]
        which = "line rate" if line_rate_basis.from_ports(frames) else "nominal line rate"
        if any(v is not None for v in line_rate):
            xs = [i for i, v in enumerate(line_rate) if v is not None]
            mpps_ax.plot(xs, [line_rate[i] / 1e6 for i in xs], color="#888888", linestyle="--", linewidth=1,
                         marker="_", markersize=14, label=which)
        drew = False
        for k, name in enumerate(names):
            color = PALETTE[k % len(PALETTE)]
            for ax, key, scale in ((mpps_ax, "throughput_fps", 1e-6), (pct_ax, "line_rate_percent", 1.0)):
                xs, ys, hollow = [], [], []
                for i, fs in enumerate(frames):
                    point = _point(fs, name)
                    value = finite(point.get(key)) if point else None
                    if value is None:
                        continue
                    xs.append(i)
                    ys.append(value * scale)
                    if point.get("regular") is False or point.get("valid") is False:
                        hollow.append((i, value * scale))
                if not xs:
                    continue
                drew = True
                ax.plot(xs, ys, marker="o", color=color, label=_plain(name))
                if hollow:
                    ax.plot([h[0] for h in hollow], [h[1] for h in hollow], linestyle="none", marker="o",
                            markersize=11, markerfacecolor="none", markeredgecolor="#D55E00")
        if not drew:
            return None
        mpps_ax.set_ylabel("throughput (Mpps, aggregate)")
        mpps_ax.set_title("Throughput")
        pct_ax.set_ylabel(f"throughput (% of {which})")
        pct_ax.set_title("Share of line rate")
        for ax in (mpps_ax, pct_ax):
            _size_axis(ax, sizes)
            ax.set_ylim(bottom=0)
        pct_ax.set_ylim(top=max(105.0, pct_ax.get_ylim()[1]))
        handles, labels = mpps_ax.get_legend_handles_labels()
        if any(p.get("regular") is False or p.get("valid") is False for fs in frames for p in fs.get("points") or []):
            handles.append(Line2D([], [], linestyle="none", marker="o", markersize=11, markerfacecolor="none",
                                  markeredgecolor="#D55E00"))
            labels.append("irregular or invalid (see notes)")
        mpps_ax.legend(handles, labels, fontsize=8, loc="best")
        return _data_uri(fig)


#: Latency keys drawn, with their style; other ``*_ns`` keys (percentiles) get markers.
_LATENCY_MAIN = ("min_ns", "avg_ns", "max_ns")


def latency_keys(points: Sequence[Mapping[str, Any]]) -> list[str]:
    """The ``*_ns`` statistics the latency dicts of ``points`` carry: min, avg, max first."""
    keys: list[str] = []
    for point in points:
        latency = point.get("latency")
        if isinstance(latency, Mapping):
            keys.extend(k for k, v in latency.items() if k.endswith("_ns") and k not in keys
                        and (v is None or isinstance(v, (int, float))))
    main = [k for k in _LATENCY_MAIN if k in keys]
    return main + sorted((k for k in keys if k not in _LATENCY_MAIN), key=_percentile_order)


def _percentile_order(key: str) -> tuple[float, str]:
    body = key.removesuffix("_ns")
    if body.startswith("p"):
        try:
            return float(body[1:].replace("_", ".")), key
        except ValueError:
            pass
    return math.inf, key


def latency_figure(test: Mapping[str, Any]) -> str | None:
    """Latency versus frame size of one results.json test (:func:`_latency_svg`)."""
    return _rendered("latency", test, lambda: _latency_svg(test))


def _latency_svg(test: Mapping[str, Any]) -> str | None:
    """Average latency with its min..max range versus frame size, one series per point.

    A point whose latency trial the generator did not send as asked is left out (the title
    says how many): its figures are not the latency at that load, and one such bar -- a
    generator that fell behind queues its own probes for milliseconds -- would flatten every
    real one. The tables still show it, flagged.
    """
    frames = _sizes(test)
    names = point_names(test)
    sizes = [fs["frame_size_bytes"] for fs in frames]
    series, left_out = latency_series(test)
    if not series:
        return None
    extra = [k for k in latency_keys([_point(fs, n) or {} for fs in frames for n in names
                                      if latency_not_as_asked(fs, _point(fs, n)) is None])
             if k not in _LATENCY_MAIN]
    return _draw_latency(frames, sizes, series, extra, left_out)


def latency_series(test: Mapping[str, Any]) -> tuple[list[tuple[int, str, list[tuple[int, Mapping[str, Any]]]]], int]:
    """The latency figure's series -- (colour index, point name, [(frame size index,
    latency)]) -- and how many points were left out because the generator did not send
    their latency trial as asked."""
    frames = _sizes(test)
    series = []
    left_out = 0
    for k, name in enumerate(point_names(test)):
        rows = []
        for i, fs in enumerate(frames):
            point = _point(fs, name)
            latency = point.get("latency") if point else None
            if isinstance(latency, Mapping) and finite(latency.get("avg_ns")) is not None:
                if latency_not_as_asked(fs, point) is not None:
                    left_out += 1
                    continue
                rows.append((i, latency))
        if rows:
            series.append((k, name, rows))
    return series, left_out


def _draw_latency(frames: Sequence[Mapping[str, Any]], sizes: Sequence[int], series: Sequence[Any],
                  extra: Sequence[str], left_out: int) -> str:
    with matplotlib.rc_context(RC):
        fig = Figure(figsize=(10, 2.9))
        ax = fig.subplots()
        width = 0.6 / max(1, len(series))
        for slot, (k, name, rows) in enumerate(series):
            color = PALETTE[k % len(PALETTE)]
            offset = (slot - (len(series) - 1) / 2) * width
            xs = [i + offset for i, _ in rows]
            avg = [lat["avg_ns"] / 1e3 for _, lat in rows]
            low = [a - (finite(lat.get("min_ns")) or lat["avg_ns"]) / 1e3 for a, (_, lat) in zip(avg, rows)]
            high = [(finite(lat.get("max_ns")) or lat["avg_ns"]) / 1e3 - a for a, (_, lat) in zip(avg, rows)]
            ax.errorbar(xs, avg, yerr=[low, high], fmt="o", color=color, capsize=4,
                        label=f"{_plain(name)}: avg, bars min..max")
            for j, key in enumerate(extra):
                pts = [(x, finite(lat.get(key))) for x, (_, lat) in zip(xs, rows)]
                pts = [(x, v / 1e3) for x, v in pts if v is not None]
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], linestyle="none",
                            marker="^v<>sp*h"[j % 8], color=color, markersize=5,
                            label=f"{_plain(name)}: {key.removesuffix('_ns')}")
        floors = [(i, finite(fs["generator_floor"].get("p50_ns"))) for i, fs in enumerate(frames)
                  if isinstance(fs.get("generator_floor"), Mapping) and fs["generator_floor"].get("measured")]
        floors = [(i, v / 1e3) for i, v in floors if v is not None]
        if floors:  # the generator's own latency without the DUT, beside the figures
            ax.plot([i for i, _ in floors], [v for _, v in floors], linestyle="none", marker="_",
                    markersize=28, markeredgewidth=2, color="#777777", label="generator floor p50 (no DUT)")
        _size_axis(ax, sizes)
        ax.set_ylabel("one-way latency (µs)")
        ax.set_ylim(bottom=0)
        ax.set_title("Latency at the reported throughput" + (
            f" ({left_out} left out: latency trial not sent as asked, see the tables)" if left_out else ""))
        ax.legend(fontsize=8, loc="best")
        return _data_uri(fig)


def trace_figure(frames: Sequence[tuple[int, Sequence[TrialRecord], Mapping[str, float]]],
                 loss_ratios: Sequence[float]) -> str | None:
    """The search trace of each frame size: offered load versus trial index.

    ``frames`` holds (frame size, its trials in order, reported throughput per point name);
    each trial is coloured by :func:`trial_verdict`, warm-up and final (latency) trials
    have their own marker, the reported throughputs are dashed lines.
    """
    frames = [f for f in frames if f[1]]
    if not frames:
        return None
    drawn = [(size, [(t.trial_index, t.role, t.result.intended_load_fps, trial_verdict(t, loss_ratios))
                     for t in trials], dict(reported)) for size, trials, reported in frames]
    return _rendered("trace", [drawn, list(loss_ratios)], lambda: _trace_svg(frames, loss_ratios))


def _trace_svg(frames: Sequence[tuple[int, Sequence[TrialRecord], Mapping[str, float]]],
               loss_ratios: Sequence[float]) -> str:
    cols = min(3, len(frames))
    rows = math.ceil(len(frames) / cols)
    with matplotlib.rc_context(RC):
        fig = Figure(figsize=(10.5, 2.7 * rows + 0.6), layout="constrained")
        axes = fig.subplots(rows, cols, squeeze=False)
        seen: dict[str, Any] = {}
        for ax in axes.flat[len(frames):]:
            ax.set_visible(False)
        for ax, (size, trials, reported) in zip(axes.flat, frames):
            for verdict, style in VERDICT_STYLE.items():
                for role in ("warmup", "search", "final", "continuous"):
                    chosen = [t for t in trials if t.role == role and trial_verdict(t, loss_ratios) == verdict]
                    if not chosen:
                        continue
                    marker = ROLE_MARKER.get(role, style["marker"]) if verdict != INVALID else style["marker"]
                    ax.scatter([t.trial_index for t in chosen],
                               [t.result.intended_load_fps / 1e6 for t in chosen],
                               color=style["color"], marker=marker, s=22, zorder=3)
                    seen.setdefault(verdict, style)
                    if role in ROLE_MARKER:
                        seen.setdefault(role, role)
            ax.plot([t.trial_index for t in trials], [t.result.intended_load_fps / 1e6 for t in trials],
                    color="#BBBBBB", linewidth=0.8, zorder=1)
            for k, (name, fps) in enumerate(reported.items()):
                ax.axhline(fps / 1e6, color=PALETTE[k % len(PALETTE)], linestyle="--", linewidth=1)
                seen.setdefault(f"goal:{name}", PALETTE[k % len(PALETTE)])
            ax.set_title(f"{size} B")
            ax.set_xlabel("trial index (trials.jsonl)")
            loads = [t.result.intended_load_fps / 1e6 for t in trials if t.result.intended_load_fps > 0]
            if loads and max(loads) / min(loads) > LOG_SCALE_SPAN:
                # a binary search halves its step: on a log axis every step stays visible
                ax.set_yscale("log")
                ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
                ax.yaxis.set_major_formatter(FuncFormatter(_plain_number))
                ax.yaxis.set_minor_formatter(NullFormatter())
                ax.set_ylabel("offered load (Mpps, log)")
            else:
                ax.set_ylabel("offered load (Mpps)")
                ax.set_ylim(bottom=0)
            ax.xaxis.get_major_locator().set_params(integer=True)
        handles, labels = [], []
        for key, value in seen.items():
            if key in VERDICT_STYLE:
                handles.append(Line2D([], [], linestyle="none", marker=value["marker"], color=value["color"]))
                labels.append(value["label"])
            elif key.startswith("goal:"):
                handles.append(Line2D([], [], linestyle="--", color=value))
                labels.append(f"reported {_plain(key[5:])}")
            else:
                handles.append(Line2D([], [], linestyle="none", marker=ROLE_MARKER[key], color="#555555"))
                labels.append({"warmup": "warm-up trial", "final": "final (latency) trial",
                               "continuous": "fixed-rate trial"}[key])
        fig.legend(handles, labels, loc="outside lower center", ncols=min(4, len(handles)), fontsize=8)
        return _data_uri(fig)
