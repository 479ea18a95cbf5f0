"""A trial's full latency summary as plain JSON data, for results.json.

The metrics (:mod:`vsbench.measurement.metrics`) are pure functions over probe records or a
generator's histogram; this module only flattens their summary into the document the
results schema describes (``$defs/latency_summary``), so the runner and the recomputation
(:mod:`vsbench.measurement.recheck`) produce byte-identical figures.
"""

from __future__ import annotations

from typing import Any

from vsbench.interfaces.traffic import TrialResult
from vsbench.measurement.metrics import summarize_histogram, summarize_latency
from vsbench.results.model import _jsonable


def latency_summary(result: TrialResult) -> dict[str, Any] | None:
    """min/mean/max, backed percentiles, PDV, IPDV and reordering of one trial, or None.

    A percentile with fewer than 10/(1-p) samples behind it is null, never a guess. PDV is
    RFC 5481 D - Dmin; IPDV and the RFC 4737 sequence figures (reordered, duplicates, lost
    probes) exist only with per-packet probe records.
    """
    if result.probes is not None:
        s = summarize_latency(result.probes)
        source = "probes"
    elif result.latency_histogram is not None:
        s = summarize_histogram(result.latency_histogram)
        source = "histogram"
    else:
        return None
    sequence = None
    if s.sequence is not None:
        sequence = {k: v for k, v in vars(s.sequence).items() if k != "loss_burst_lengths"}
    return _jsonable({
        "source": source,
        "exact": bool(s.exact),
        "samples": int(s.count),
        "min_ns": s.min_ns,
        "mean_ns": s.mean_ns,
        "max_ns": s.max_ns,
        "percentiles_ns": dict(s.percentiles_ns),
        "pdv_percentiles_ns": dict(s.pdv_percentiles_ns),
        "pdv_max_ns": s.pdv_max_ns,
        "negative_samples": int(s.negative_count),
        "ipdv": s.ipdv,
        "sequence": sequence,
        "histogram": [[float(edge), int(count)] for edge, count in s.histogram],
    })


def floor_figures(result: TrialResult, trial_index: int | None) -> dict[str, Any] | None:
    """p50/p99 of the generator's own latency (a DUT-less trial), or None without samples."""
    doc = latency_summary(result)
    if doc is None or not doc["samples"]:
        return None
    return {"p50_ns": doc["percentiles_ns"].get("p50"), "p99_ns": doc["percentiles_ns"].get("p99"),
            "samples": doc["samples"], "trial_index": trial_index}
