"""Latency, PDV, IPDV, reordering and loss-burst metrics against hand-computed cases."""

import numpy as np
import pytest

from vsbench.interfaces.traffic import LatencyHistogram, ProbeRecords
from vsbench.measurement.metrics import (
    LatencyAccumulator, LogHistogram, SequenceTracker, analyze_sequence, min_samples_for,
    summarize_histogram, summarize_latency,
)


def probes(seq, lat, sent=None):
    seq = np.asarray(seq, dtype=np.int64)
    return ProbeRecords(seq, np.asarray(lat, dtype=np.int64), len(seq) if sent is None else sent)


def test_min_samples_rule():
    assert [min_samples_for(p) for p in (50, 90, 99, 99.9, 99.99)] == [20, 100, 1000, 10_000, 100_000]


def test_latency_and_pdv_of_one_to_hundred():
    s = summarize_latency(probes(range(100), range(1, 101)))
    assert (s.count, s.min_ns, s.mean_ns, s.max_ns) == (100, 1, 50.5, 100)
    # nearest rank: p50 is the 50th smallest, p90 the 90th; p99 needs 1000 samples
    assert s.percentiles_ns == {"p50": 50, "p90": 90, "p99": None, "p99_9": None, "p99_99": None}
    # RFC 5481 PDV = D - Dmin
    assert s.pdv_percentiles_ns["p50"] == 49 and s.pdv_percentiles_ns["p90"] == 89
    assert s.pdv_max_ns == 99
    assert s.exact and s.negative_count == 0
    assert sum(c for _, c in s.histogram) == 100
    # IPDV: 99 consecutive pairs, each +1
    assert s.ipdv.count == 99 and s.ipdv.min_ns == s.ipdv.max_ns == 1 and s.ipdv.mean_abs_ns == 1
    assert s.ipdv.abs_percentiles_ns["p50"] == 1 and s.ipdv.abs_percentiles_ns["p90"] is None


def test_percentile_needs_enough_samples():
    s = summarize_latency(probes(range(19), [5] * 19))
    assert s.percentiles_ns["p50"] is None
    s = summarize_latency(probes(range(1000), np.arange(1000)))
    assert s.percentiles_ns["p99"] == 989  # rank ceil(990) -> 990th smallest of 0..999
    assert s.percentiles_ns["p99_9"] is None


def test_ipdv_uses_only_consecutive_sequence_numbers_arriving_in_a_row():
    s = summarize_latency(probes([0, 1, 3, 2, 4], [10, 12, 15, 11, 14]))
    # pairs by arrival: (0,1) +2; (1,3) not consecutive; (3,2) backwards; (2,4) gap
    assert s.ipdv.count == 1 and s.ipdv.min_ns == s.ipdv.max_ns == 2


def test_ipdv_signs():
    s = summarize_latency(probes(range(4), [10, 30, 5, 5]))
    assert (s.ipdv.min_ns, s.ipdv.max_ns) == (-25, 20)
    assert s.ipdv.mean_abs_ns == pytest.approx((20 + 25 + 0) / 3)


def test_negative_latency_is_counted_not_hidden():
    s = summarize_latency(probes(range(3), [-5, 10, 20]))
    assert s.negative_count == 1 and s.min_ns == -5


def test_sequence_duplicates_reordering_extent_loss_bursts():
    s = analyze_sequence([0, 1, 2, 4, 3, 5, 5, 8], sent=10)
    assert (s.received, s.unique, s.duplicates, s.reordered) == (8, 7, 1, 1)
    assert s.max_reorder_extent == 1  # 3 arrives at position 4, 4 (first > 3) at 3
    assert s.lost == 3  # 6, 7, 9
    assert s.loss_burst_lengths == {2: 1, 1: 1} and s.loss_bursts == 2 and s.max_loss_burst == 2
    assert s.reordered_ratio == pytest.approx(1 / 7)


def test_rfc4737_extent_example():
    s = analyze_sequence([0, 1, 2, 4, 5, 3, 6], sent=7)
    assert s.reordered == 1 and s.max_reorder_extent == 2 and s.lost == 0 and s.loss_bursts == 0


def test_duplicate_of_the_highest_is_not_reordered():
    s = analyze_sequence([0, 1, 1, 2], sent=3)
    assert s.duplicates == 1 and s.reordered == 0


def test_late_duplicate_after_reorder_is_a_duplicate():
    s = analyze_sequence([0, 2, 1, 1, 3], sent=4)
    assert s.reordered == 1 and s.duplicates == 1 and s.unique == 4


def test_loss_at_start_and_end():
    s = analyze_sequence([2, 3, 4], sent=8)
    assert s.loss_burst_lengths == {2: 1, 3: 1} and s.lost == 5


def test_tracker_in_chunks_equals_whole_stream():
    rng = np.random.default_rng(3)
    seq = np.arange(20_000)
    seq = seq[rng.random(seq.size) > 0.01]
    for i in rng.integers(0, seq.size - 10, 200):
        seq[i], seq[i + 5] = seq[i + 5], seq[i]
    seq = np.insert(seq, [100, 5000, 15000], seq[[99, 4000, 14999]])
    whole = analyze_sequence(seq, sent=20_000)
    tracker = SequenceTracker(window=1000)
    for chunk in np.array_split(seq, 37):
        tracker.add(chunk)
    parts = tracker.summary(sent=20_000)
    assert parts.late == 0
    assert parts.to_dict() == whole.to_dict()


def test_tracker_window_bounds_memory_and_counts_late_arrivals():
    tracker = SequenceTracker(window=4)
    tracker.add(np.arange(10))
    tracker.add([1])
    s = tracker.summary(sent=10)
    assert s.late == 1 and s.unique == 10 and s.duplicates == 0
    big = SequenceTracker(window=1024)
    for start in range(0, 200_000, 5000):
        big.add(np.arange(start, start + 5000))
        assert big._seen.size <= 1024 + 5000 and big._raise_seq.size <= 1024 + 5001


def test_summary_from_a_generator_histogram():
    hist = LatencyHistogram(bucket_lower_ns=[0, 10, 20, 30], counts=[0, 50, 40, 10], min_ns=12, max_ns=35)
    s = summarize_histogram(hist)
    assert s.count == 100 and not s.exact
    # p50: rank 50 falls in [10, 20) -> its upper edge 20; p90: rank 90 in [20, 30) -> 30
    assert s.percentiles_ns["p50"] == 20 and s.percentiles_ns["p90"] == 30
    assert s.percentiles_ns["p99"] is None
    assert s.pdv_percentiles_ns["p50"] == 8 and s.pdv_max_ns == 23
    assert s.mean_ns == pytest.approx((15 * 50 + 25 * 40 + 32.5 * 10) / 100)
    assert s.ipdv is None and s.sequence is None


def test_log_histogram_edges_percentile_error_and_merge():
    h = LogHistogram(buckets_per_octave=4)
    h.add([0, 1, 2, 3, 4])
    assert h.counts.tolist()[:10] == [1, 1, 0, 0, 0, 1, 0, 1, 0, 1]  # 0 | 1 | 2 | 3 in [2^(6/4).. | 4
    assert (h.count, h.min_value, h.max_value, h.total) == (5, 0, 4, 10)
    rng = np.random.default_rng(1)
    values = rng.lognormal(10, 1, 50_000)
    fine = LogHistogram()
    fine.add(values)
    for p in (50, 90, 99, 99.9):
        exact = np.sort(values)[int(np.ceil(p / 100 * values.size)) - 1]
        assert abs(fine.percentile(p) / exact - 1) < 2 ** (1 / 128) - 1 + 1e-6
    a, b = LogHistogram(), LogHistogram()
    a.add(values[:20_000])
    b.add(values[20_000:])
    a.merge(b)
    assert np.array_equal(a.counts, fine.counts) and a.count == fine.count
    assert (a.min_value, a.max_value) == (fine.min_value, fine.max_value)
    coarse = fine.coarsened(8)
    assert coarse.counts.sum() == values.size


def test_accumulator_matches_exact_summary_within_histogram_error():
    rng = np.random.default_rng(2)
    n = 200_000
    lat = (20_000 + rng.exponential(3_000, n)).astype(np.int64)
    seq = np.arange(n)
    keep = rng.random(n) > 0.001
    seq, lat = seq[keep], lat[keep]
    exact = summarize_latency(ProbeRecords(seq, lat, n))
    acc = LatencyAccumulator()
    for a, b in zip(np.array_split(seq, 50), np.array_split(lat, 50)):
        acc.add(a, b)
    approx = acc.summary(sent=n)
    assert (approx.count, approx.min_ns, approx.max_ns) == (exact.count, exact.min_ns, exact.max_ns)
    assert approx.mean_ns == pytest.approx(exact.mean_ns)
    for key, value in exact.percentiles_ns.items():
        assert approx.percentiles_ns[key] == pytest.approx(value, rel=0.006)
    assert approx.ipdv.count == exact.ipdv.count
    assert (approx.ipdv.min_ns, approx.ipdv.max_ns) == (exact.ipdv.min_ns, exact.ipdv.max_ns)
    assert approx.sequence.to_dict() == exact.sequence.to_dict()
    assert approx.to_dict()["exact"] is False


def test_empty_probe_stream():
    s = summarize_latency(ProbeRecords(np.zeros(0, np.int64), np.zeros(0, np.int64), 5))
    assert s.count == 0 and s.min_ns is None and s.sequence.lost == 5
    assert s.sequence.loss_burst_lengths == {5: 1}


@pytest.mark.parametrize("kind", ["exponential", "few_values", "constant", "lognormal"])
def test_large_inputs_take_the_bucketed_path_and_stay_exact(kind):
    from vsbench.measurement.metrics.latency import PERCENTILES, _exact_percentiles

    rng = np.random.default_rng(5)
    values = {
        "exponential": (rng.exponential(2000, 400_000) + 10_000).astype(np.int64),
        "few_values": rng.integers(0, 5, 300_000),
        "constant": np.full(200_000, 7),
        "lognormal": rng.lognormal(8, 2, 300_000),
    }[kind]
    got = _exact_percentiles(values)
    ordered = np.sort(values)
    for name, p in PERCENTILES.items():
        if values.size < min_samples_for(p):
            assert got[name] is None
            continue
        assert got[name] == ordered[int(np.ceil(p / 100 * values.size)) - 1]
