"""Latency, PDV, IPDV, reordering and loss-burst metrics. Pure numpy, no I/O.

Entry points: :func:`summarize_latency` (per-packet probe records, exact),
:func:`summarize_histogram` (a generator's histogram), :class:`LatencyAccumulator`
(chunked records in bounded memory) and :func:`analyze_sequence` (RFC 4737 alone).
"""

from .histogram import LogHistogram
from .latency import (
    PERCENTILES, IpdvSummary, LatencyAccumulator, LatencySummary, min_samples_for, summarize_histogram,
    summarize_latency,
)
from .reordering import SequenceSummary, SequenceTracker, analyze_sequence

__all__ = [
    "PERCENTILES", "IpdvSummary", "LatencyAccumulator", "LatencySummary", "LogHistogram", "SequenceSummary",
    "SequenceTracker", "analyze_sequence", "min_samples_for", "summarize_histogram", "summarize_latency",
]
