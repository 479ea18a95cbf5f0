#!/usr/bin/env python3
"""How long summarize_latency takes for 10 million probe records (target: under 1 s).

Builds a seeded synthetic probe stream (exponential queueing delay over a 10 us base,
0.01% loss, 1000 swapped pairs, a few duplicates), then times the full summary --
percentiles, log histogram, PDV, IPDV, reordering, duplicates and loss bursts -- several
times and prints the median. The machine is shared: quote the median, not the best.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

from vsbench.interfaces.traffic import ProbeRecords
from vsbench.measurement.metrics import LatencyAccumulator, summarize_latency


def make_stream(samples: int, seed: int) -> ProbeRecords:
    rng = np.random.default_rng(seed)
    sent = int(samples / 0.9999) + 1
    sequence = np.arange(sent, dtype=np.int64)
    sequence = sequence[rng.random(sent) > 1e-4][:samples]
    swaps = rng.integers(0, sequence.size - 4, 1000)
    sequence[swaps], sequence[swaps + 3] = sequence[swaps + 3].copy(), sequence[swaps].copy()
    dups = np.sort(rng.integers(0, sequence.size, 100))
    sequence = np.insert(sequence, dups, sequence[dups])[:samples]
    latency = (10_000 + rng.exponential(2_000, sequence.size)).astype(np.int64)
    return ProbeRecords(sequence=sequence, latency_ns=latency, sent=sent)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=10_000_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    if args.samples < 1000 or args.runs < 1:
        print("error: need --samples >= 1000 and --runs >= 1", file=sys.stderr)
        return 2
    probes = make_stream(args.samples, args.seed)
    times = []
    for _ in range(args.runs):
        start = time.perf_counter()
        summary = summarize_latency(probes)
        times.append(time.perf_counter() - start)
    chunked = []
    for _ in range(max(1, args.runs // 2)):
        start = time.perf_counter()
        acc = LatencyAccumulator()
        for seq, lat in zip(np.array_split(probes.sequence, 100), np.array_split(probes.latency_ns, 100)):
            acc.add(seq, lat)
        acc.summary(sent=probes.sent)
        chunked.append(time.perf_counter() - start)
    p = summary.percentiles_ns
    seq = summary.sequence

    def ns(value: float | None) -> str:  # a tail percentile is None with too few samples for it
        return "n/a" if value is None else f"{value:.0f}ns"

    print(f"samples={summary.count} p50={ns(p['p50'])} p99={ns(p['p99'])} p99.99={ns(p['p99_99'])} "
          f"pdv_p99={ns(summary.pdv_percentiles_ns['p99'])} ipdv_pairs={summary.ipdv.count} "
          f"reordered={seq.reordered} duplicates={seq.duplicates} lost={seq.lost} bursts={seq.loss_bursts}")
    print(f"runs={len(times)} min={min(times):.3f}s max={max(times):.3f}s "
          f"streaming_100_chunks_median={statistics.median(chunked):.3f}s")
    print(f"latency_analysis_median_s={statistics.median(times):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
