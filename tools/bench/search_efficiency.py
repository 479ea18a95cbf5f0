#!/usr/bin/env python3
"""Trial-seconds and wrong results of four throughput searches on seeded simulated DUTs.

For each DUT kind of :func:`vsbench.measurement.simulator.make_dut` (clean hard limit;
2% per-trial capacity jitter with a 10% chance of a small loss spike; bursty loss; loss
inversion) and each of ``--duts`` seeds (capacity log-uniform in 0.2-2 Mpps), four
searches run against an identical fresh copy of the same DUT, in this process, at the same
relative width (0.5%) and load range (10 kfps to 14.88 Mfps):

* ``vsbench``  -- the default multi-goal search (NDR 0, PDR 0.5%; 1 s trials);
* ``binary``   -- two plain binary searches, NDR then PDR, 1 s trials;
* ``rfc2544``  -- the RFC 2544 binary search for throughput (zero loss), 60 s trials;
* ``mlrsearch`` -- the PyPI MLRsearch package (CSIT's code) with CSIT's goals: NDR 0 and
  PDR 0.5%, exceed ratio 50%, 1 s trials, 21 s duration sum.

A result is *wrong* when the reported NDR is above the DUT's mean capacity or more than
one width below it (or missing). The ``oracle`` line is context, not a search: the NDR an
exact exceed-ratio-50% classification would give on the vsbench grid, computed from the
DUT model, i.e. the floor the wrong rate can reach with CSIT's goal definition.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from dataclasses import dataclass

from vsbench.measurement.search import Goal, SearchConfig, search
from vsbench.measurement.search.load_grid import LoadGrid
from vsbench.measurement.simulator import DUT_KINDS, SimulatedDut, make_dut

WIDTH = 0.005
MIN_LOAD_FPS = 10_000.0
MAX_LOAD_FPS = 14_880_952.0  # 10GbE line rate at 64 B
NDR = Goal("NDR", 0.0)
PDR = Goal("PDR", 0.005)


@dataclass
class Outcome:
    ndr_fps: float | None
    trial_seconds: float
    trials: int


def run_vsbench(dut: SimulatedDut) -> Outcome:
    result = search(dut, SearchConfig(mode="multi", goals=(NDR, PDR), min_load_fps=MIN_LOAD_FPS,
                                      max_load_fps=MAX_LOAD_FPS, relative_width=WIDTH))
    return Outcome(result.goal("NDR").lower_bound_fps, result.trial_seconds, len(result.trials))


def run_binary(dut: SimulatedDut) -> Outcome:
    seconds, trials, ndr = 0.0, 0, None
    for goal in (NDR, PDR):
        result = search(dut, SearchConfig(mode="binary", goals=(goal,), min_load_fps=MIN_LOAD_FPS,
                                          max_load_fps=MAX_LOAD_FPS, relative_width=WIDTH,
                                          trial_duration_s=1.0))
        seconds += result.trial_seconds
        trials += len(result.trials)
        if goal is NDR:
            ndr = result.goal("NDR").lower_bound_fps
    return Outcome(ndr, seconds, trials)


def run_rfc2544(dut: SimulatedDut) -> Outcome:
    result = search(dut, SearchConfig(mode="rfc2544", goals=(NDR,), min_load_fps=MIN_LOAD_FPS,
                                      max_load_fps=MAX_LOAD_FPS, relative_width=WIDTH,
                                      full_trial_duration_s=60.0))
    return Outcome(result.goal("NDR").lower_bound_fps, result.trial_seconds, len(result.trials))


def run_mlrsearch(dut: SimulatedDut) -> Outcome:
    from MLRsearch import AbstractMeasurer, Config, MeasurementResult, MultipleLossRatioSearch, SearchGoal

    class Measurer(AbstractMeasurer):
        def __init__(self):
            self.seconds, self.trials = 0.0, 0

        def measure(self, intended_duration, intended_load):
            trial = dut(intended_load, intended_duration)
            self.seconds += intended_duration
            self.trials += 1
            return MeasurementResult(intended_duration=intended_duration, intended_load=intended_load,
                                     offered_count=trial.tx_frames, loss_count=trial.lost_frames)

    def csit_goal(loss_ratio: float):
        return SearchGoal(loss_ratio=loss_ratio, exceed_ratio=0.5, relative_width=WIDTH,
                          initial_trial_duration=1.0, final_trial_duration=1.0, duration_sum=21.0,
                          preceding_targets=2, expansion_coefficient=2, fail_fast=False)

    config = Config()
    ndr_goal = csit_goal(0.0)
    config.goals = [ndr_goal, csit_goal(0.005)]
    config.min_load = MIN_LOAD_FPS
    config.max_load = MAX_LOAD_FPS
    config.warmup_duration = None
    config.search_duration_max = 1e9  # wall clock; the simulator answers instantly
    measurer = Measurer()
    results = MultipleLossRatioSearch(config).search(measurer, debug=lambda _msg: None)
    ndr_bound = results[ndr_goal].relevant_lower_bound
    return Outcome(float(ndr_bound) if ndr_bound is not None else None, measurer.seconds, measurer.trials)


def oracle_ndr(dut: SimulatedDut) -> float | None:
    """The exceed-ratio-50% NDR of a jitter/clean DUT on the vsbench grid, from its model."""
    if dut.burst_rate_per_s or dut.inversion_band:
        return None
    good = 1.0 - dut.spike_probability
    if dut.capacity_jitter == 0:
        crossing = dut.capacity_fps
    else:  # P(bad at L) = 1 - good * P(capacity >= L) = 0.5
        z = statistics.NormalDist().inv_cdf(1.0 - 0.5 / good)
        crossing = dut.capacity_fps * (1.0 + dut.capacity_jitter * z)
    grid = LoadGrid(MIN_LOAD_FPS, MAX_LOAD_FPS, WIDTH)
    return grid.load(grid.index_at_or_below(crossing))


def wrong(ndr_fps: float | None, capacity_fps: float) -> bool:
    return ndr_fps is None or ndr_fps > capacity_fps or ndr_fps < capacity_fps * (1.0 - WIDTH)


METHODS = {"vsbench": run_vsbench, "binary": run_binary, "rfc2544": run_rfc2544, "mlrsearch": run_mlrsearch}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duts", type=int, default=1000,
                        help="seeded DUTs per kind (default 1000: with 200 the standard error of a wrong "
                             "rate near 0.65 is 3.4 points, more than the differences measured)")
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--kinds", default=",".join(DUT_KINDS))
    args = parser.parse_args(argv)
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in DUT_KINDS]
    if unknown or args.duts < 1:
        print(f"error: kinds must be among {', '.join(DUT_KINDS)} and --duts >= 1", file=sys.stderr)
        return 2
    try:
        import MLRsearch  # noqa: F401
    except ImportError:
        print("error: the MLRsearch package is missing: pip install 'MLRsearch==1.2.1'", file=sys.stderr)
        return 2
    started = time.perf_counter()
    medians: dict[tuple[str, str], float] = {}
    wrong_rate: dict[tuple[str, str], float] = {}
    wrong_sets: dict[tuple[str, str], set[int]] = {}
    seeds = range(args.first_seed, args.first_seed + args.duts)
    for kind in kinds:
        for name, method in METHODS.items():
            seconds, trials, wrong_seeds = [], [], set()
            for seed in seeds:
                dut = make_dut(kind, seed)
                outcome = method(dut)
                seconds.append(outcome.trial_seconds)
                trials.append(outcome.trials)
                if wrong(outcome.ndr_fps, dut.capacity_fps):
                    wrong_seeds.add(seed)
            bad = len(wrong_seeds)
            rate = bad / len(seeds)
            medians[kind, name] = statistics.median(seconds)
            wrong_rate[kind, name] = rate
            wrong_sets[kind, name] = wrong_seeds
            stderr = math.sqrt(rate * (1 - rate) / len(seeds))
            print(f"kind={kind:9s} method={name:9s} median_trial_s={statistics.median(seconds):7.1f} "
                  f"median_trials={statistics.median(trials):5.1f} wrong={bad}/{len(seeds)} "
                  f"({rate:.3f} +- {stderr:.3f})", flush=True)
        ours, theirs = wrong_sets[kind, "vsbench"], wrong_sets[kind, "mlrsearch"]
        print(f"kind={kind:9s} paired: only_vsbench_wrong={len(ours - theirs)} "
              f"only_mlrsearch_wrong={len(theirs - ours)}", flush=True)
        if kind in ("clean", "jitter"):
            duts = [make_dut(kind, seed) for seed in seeds]
            bad = sum(wrong(oracle_ndr(d), d.capacity_fps) for d in duts)
            print(f"kind={kind:9s} method=oracle    (exact exceed-ratio-50% NDR on the grid) "
                  f"wrong={bad}/{len(seeds)} ({bad / len(seeds):.3f})", flush=True)
    print(f"elapsed_s={time.perf_counter() - started:.1f}")
    if "jitter" in kinds:
        ours, mlr = medians["jitter", "vsbench"], medians["jitter", "mlrsearch"]
        print(f"ratio_vs_mlrsearch={ours / mlr:.3f} wrong_ours={wrong_rate['jitter', 'vsbench']:.3f} "
              f"wrong_mlrsearch={wrong_rate['jitter', 'mlrsearch']:.3f} "
              f"wrong_binary={wrong_rate['jitter', 'binary']:.3f} "
              f"ratio_vs_rfc2544={ours / medians['jitter', 'rfc2544']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
