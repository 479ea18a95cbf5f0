"""report.html's latency histogram per frame size, on a log latency axis.

A mean and a p99 hide the shape a vSwitch's latency has: a tight mode near the generator's
floor and a long tail of queued frames, orders of magnitude apart. So each frame size gets
the distribution of every latency trial it ran (the generator floor and each latency point
of results.json), on a logarithmic latency axis with log-spaced buckets
(:data:`BUCKETS_PER_DECADE`), the share of probes per bucket on the other axis -- shares,
so trials with different probe counts compare.

Sources, best first: the trial's per-packet probe records (``probes.latency_ns`` in
trials.jsonl, exact), else the generator's own histogram (``latency_histogram``: its
buckets as given, for generators that only report one). Trials with neither are left out.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import matplotlib
import numpy as np
from matplotlib.figure import Figure

from vsbench.results import report_plots
from vsbench.results.model import TrialRecord

BUCKETS_PER_DECADE = 10


def trial_distribution(trial: TrialRecord) -> tuple[np.ndarray, np.ndarray, str] | None:
    """``(bucket lower edges ns, counts, source)`` of one trial's latency, or None.

    Probes are returned as sorted raw samples (edges = the samples, counts = 1) so the
    caller buckets every series of a frame size on the same log-spaced edges."""
    result = trial.result
    probes = getattr(result, "probes", None)
    if probes is not None and len(probes.latency_ns):
        values = np.sort(np.asarray(probes.latency_ns, dtype=np.float64))
        values = values[values > 0]
        if len(values):
            return values, np.ones(len(values)), "probes"
    hist = getattr(result, "latency_histogram", None)
    if hist is not None and len(hist.counts) and sum(hist.counts):
        lower = np.asarray(hist.bucket_lower_ns, dtype=np.float64)
        counts = np.asarray(hist.counts, dtype=np.float64)
        keep = counts > 0
        # a bucket starting at 0 ns is drawn from 1 ns on (a log axis has no 0)
        return np.maximum(lower[keep], 1.0), counts[keep], "histogram"
    return None


def log_edges(low_ns: float, high_ns: float, per_decade: int = BUCKETS_PER_DECADE) -> np.ndarray:
    """Log-spaced bucket edges covering [low, high] on whole ``1/per_decade`` decade steps (pure)."""
    low = math.floor(math.log10(max(low_ns, 1.0)) * per_decade) / per_decade
    high = math.ceil(math.log10(max(high_ns, low_ns, 1.0)) * per_decade) / per_decade
    if high <= low:
        high = low + 1.0 / per_decade
    steps = int(round((high - low) * per_decade))
    return np.logspace(low, high, steps + 1)


def bucketed(values: np.ndarray, weights: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Share of the samples (%) in each bucket of ``edges`` (pure)."""
    counts, _ = np.histogram(np.clip(values, edges[0], edges[-1]), bins=edges, weights=weights)
    total = counts.sum()
    return counts * 100.0 / total if total else counts


def series_of(test: Mapping[str, Any], trials: Mapping[int, TrialRecord]) -> list[tuple[int, list[tuple[str, np.ndarray, np.ndarray, str, int]]]]:
    """Per frame size, every latency trial's (label, values, weights, source, trial index):
    the generator floor first, then each latency point of results.json."""
    out = []
    for fs in test.get("frame_sizes") or []:
        wanted: list[tuple[str, Any]] = []
        floor = fs.get("generator_floor")
        if isinstance(floor, Mapping) and floor.get("measured") and floor.get("trial_index") is not None:
            wanted.append(("generator floor (no DUT)", floor.get("trial_index")))
        for lp in fs.get("latency_points") or []:
            if isinstance(lp, Mapping) and lp.get("trial_index") is not None:
                label = str(lp.get("label") or f"trial {lp['trial_index']}")
                if lp.get("valid") is False:
                    label += " (invalid)"
                wanted.append((label, lp.get("trial_index")))
        series = []
        for label, index in wanted:
            trial = trials.get(int(index))
            found = trial_distribution(trial) if trial is not None else None
            if found is not None:
                series.append((label, found[0], found[1], found[2], int(index)))
        if series:
            out.append((int(fs.get("frame_size_bytes") or 0), series))
    return out


def histogram_figure(test: Mapping[str, Any], trials: Sequence[TrialRecord]) -> str | None:
    """The figure's SVG data URI, None when no latency trial of ``test`` has samples."""
    by_index = {t.trial_index: t for t in trials}
    frames = series_of(test, by_index)
    if not frames:
        return None
    key = [(size, [(label, idx, len(v), float(v.sum()), src) for label, v, _w, src, idx in series])
           for size, series in frames]
    return report_plots._rendered("latency_histogram", key, lambda: _svg(frames))


def _svg(frames: list[tuple[int, list[tuple[str, np.ndarray, np.ndarray, str, int]]]]) -> str:
    cols = min(2, len(frames))
    rows = math.ceil(len(frames) / cols)
    with matplotlib.rc_context(report_plots.RC):
        fig = Figure(figsize=(10.5, 3.0 * rows + 0.4), layout="constrained")
        axes = fig.subplots(rows, cols, squeeze=False)
        for ax in axes.flat[len(frames):]:
            ax.set_visible(False)
        for ax, (size, series) in zip(axes.flat, frames):
            low = min(float(v.min()) for _l, v, _w, _s, _i in series)
            high = max(float(v.max()) for _l, v, _w, _s, _i in series)
            edges = log_edges(low, high)
            for k, (label, values, weights, source, index) in enumerate(series):
                share = bucketed(values, weights, edges)
                colour = "#888888" if label.startswith("generator floor") else \
                    report_plots.PALETTE[k % len(report_plots.PALETTE)]
                ax.stairs(share, edges, color=colour, linewidth=1.3,
                          label=report_plots._plain(f"{label} #{index}" + (" (gen. histogram)" if source == "histogram" else "")))
            ax.set_xscale("log")
            ax.set_xlabel("one-way latency (ns, log scale)")
            ax.set_ylabel("share of probes (%)")
            ax.set_title(f"{size} B")
            ax.legend(fontsize=7, loc="upper right")
        return report_plots._data_uri(fig)


CAPTION = ("Latency histogram per frame size (trials.jsonl): every latency trial's one-way latency on a "
           f"log axis, {BUCKETS_PER_DECADE} log-spaced buckets per decade, as the share of its probes per bucket; "
           "the generator floor (grey) is the same probe stream without the DUT. Exact per-probe records where "
           "the generator gave them, else its own histogram (marked).")
