"""A trial's full latency summary as plain JSON data, for results.json, and the
generator's latency floor (:class:`GeneratorFloor`) from its ``floor`` trial.

The metrics (:mod:`vsbench.measurement.metrics`) are pure functions over probe records or a
generator's histogram; this module only flattens their summary into the document the
results schema describes (``$defs/latency_summary``), so the runner and the recomputation
(:mod:`vsbench.measurement.recheck`) produce byte-identical figures.
"""

from __future__ import annotations

from typing import Any

from vsbench.interfaces.traffic import TrialResult
from vsbench.measurement.metrics import summarize_histogram, summarize_latency
from vsbench.results.model import GeneratorFloor, TrialRecord, _jsonable


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


def generator_floor(record: TrialRecord) -> GeneratorFloor:
    """The generator's floor from its ``floor`` trial (a probes-only trial on a direct loop).

    The same summary as every latency trial (:func:`latency_summary`), so the floor and the
    figures it sits beside are computed alike; ``measured`` is False with a reason when the
    trial brought back no latency sample.
    """
    result = record.result
    loop = result.generator_stats.get("loop")
    loop = None if loop is None else str(loop)
    doc = latency_summary(result)
    sent = None if result.probes is None else int(result.probes.sent)
    if not record.valid:
        return GeneratorFloor(measured=False, reason=f"the floor trial is invalid: {result.invalid_reason}",
                              trial_index=record.trial_index, loop=loop, probes_sent=sent)
    if doc is None or not doc["samples"]:
        return GeneratorFloor(measured=False, reason="no probe came back on the direct loop",
                              trial_index=record.trial_index, loop=loop, samples=0, probes_sent=sent)
    percentiles = doc["percentiles_ns"]
    return GeneratorFloor(
        measured=True,
        trial_index=record.trial_index,
        loop=loop,
        samples=doc["samples"],
        probes_sent=sent,
        min_ns=doc["min_ns"],
        mean_ns=doc["mean_ns"],
        p50_ns=percentiles.get("p50"),
        p99_ns=percentiles.get("p99"),
        max_ns=doc["max_ns"],
    )


def floor_not_measured(reason: str) -> GeneratorFloor:
    """A floor that was not measured, and why (said, never left out silently)."""
    return GeneratorFloor(measured=False, reason=reason)
