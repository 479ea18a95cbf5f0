#!/usr/bin/env python3
"""Trial-seconds and wrong NDRs of the throughput searches on seeded simulated DUTs.

The default DUT models are issue 31's: per-trial capacity jitter and loss-spike
probability of 0/0 %, 0.5/2 %, 2/10 % and 5/30 % (``noise0`` .. ``noise3``; a spike loses
about 1e-4 of the trial's frames, so it fails the NDR and not the PDR), capacity
log-uniform in 0.2-2 Mpps, ``--duts`` (40) seeds each. ``--kinds`` also takes the older
kinds of :func:`vsbench.measurement.simulator.make_dut` (clean, jitter, bursty, inversion).
On every seed each search runs against an identical fresh copy of the same DUT, in this
process, at the same relative width (0.5%) and load range (10 kfps to 14.88 Mfps):

* ``vsbench``  -- the multi-goal search (NDR 0, PDR 0.5%; 1 s trials) under the default
  search revision, or ``--revision``;
* ``binary``   -- two plain binary searches, NDR then PDR, 1 s trials (``--with-binary``);
* ``rfc2544``  -- the RFC 2544 binary search for throughput (zero loss), 60 s trials;
* ``mlrsearch`` -- the PyPI MLRsearch package 1.2.1 (CSIT's code), installed in the
  benchmark's venv (``.venv/bin/pip install MLRsearch==1.2.1``), with CSIT's goals: NDR 0
  and PDR 0.5%, exceed ratio 50%, 1 s trials, 21 s duration sum.

A result is *wrong* when the reported NDR is above the DUT's mean capacity or more than
one width below it (or missing). The ``oracle`` line is context, not a search: the NDR an
exact exceed-ratio-50% classification would give on the vsbench grid, computed from the
DUT model, i.e. the floor the wrong count can reach with CSIT's goal definition.

The last line is ``ratio_vs_mlrsearch=R wrong_ours=W wrong_mlrsearch=M ratio_vs_rfc2544=Q``:
R and Q the worst (highest) ratio of median trial-seconds over the models run, W and M the
wrong NDRs summed over them (each model's own line says where they are).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from dataclasses import dataclass

import numpy as np

from vsbench.measurement.search import Goal, SearchConfig, search
from vsbench.measurement.search.api import SEARCH_REVISION
from vsbench.measurement.search.load_grid import LoadGrid
from vsbench.measurement.simulator import DUT_KINDS, SimulatedDut, make_dut

WIDTH = 0.005
MIN_LOAD_FPS = 10_000.0
MAX_LOAD_FPS = 14_880_952.0  # 10GbE line rate at 64 B
NDR = Goal("NDR", 0.0)
PDR = Goal("PDR", 0.005)

#: Issue 31's DUT models: (per-trial capacity jitter, loss-spike probability).
NOISE_MODELS = {"noise0": (0.0, 0.0), "noise1": (0.005, 0.02), "noise2": (0.02, 0.10), "noise3": (0.05, 0.30)}


@dataclass
class Outcome:
    ndr_fps: float | None
    trial_seconds: float
    trials: int


def make_model(kind: str, seed: int) -> SimulatedDut:
    """The DUT of ``kind`` (a noise model or a simulator kind) for ``seed``."""
    if kind not in NOISE_MODELS:
        return make_dut(kind, seed)
    jitter, spikes = NOISE_MODELS[kind]
    rng = np.random.default_rng([seed, 7919])
    capacity = float(math.exp(rng.uniform(math.log(2e5), math.log(2e6))))
    return SimulatedDut(capacity, seed=seed, capacity_jitter=jitter, spike_probability=spikes,
                        spike_loss_ratio=1e-4)


def run_vsbench(dut: SimulatedDut, revision: int = SEARCH_REVISION) -> Outcome:
    result = search(dut, SearchConfig(mode="multi", goals=(NDR, PDR), min_load_fps=MIN_LOAD_FPS,
                                      max_load_fps=MAX_LOAD_FPS, relative_width=WIDTH, revision=revision))
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--duts", type=int, default=40, help="seeded DUTs per model (default 40, issue 31's)")
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--kinds", default=",".join(NOISE_MODELS),
                        help=f"DUT models: {', '.join(NOISE_MODELS)} and/or {', '.join(DUT_KINDS)}")
    parser.add_argument("--revision", type=int, default=SEARCH_REVISION,
                        help=f"the vsbench search revision (default {SEARCH_REVISION})")
    parser.add_argument("--with-binary", action="store_true", help="also run two plain binary searches")
    args = parser.parse_args(argv)
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in DUT_KINDS and k not in NOISE_MODELS]
    if unknown or not kinds or args.duts < 1:
        print(f"error: kinds must be among {', '.join([*NOISE_MODELS, *DUT_KINDS])} and --duts >= 1",
              file=sys.stderr)
        return 2
    try:
        import MLRsearch  # noqa: F401
    except ImportError:
        print("error: the MLRsearch package is missing: .venv/bin/pip install 'MLRsearch==1.2.1'", file=sys.stderr)
        return 2
    methods = {"vsbench": lambda dut: run_vsbench(dut, args.revision), "rfc2544": run_rfc2544,
               "mlrsearch": run_mlrsearch}
    if args.with_binary:
        methods["binary"] = run_binary
    started = time.perf_counter()
    medians: dict[tuple[str, str], float] = {}
    wrong_sets: dict[tuple[str, str], set[int]] = {}
    seeds = range(args.first_seed, args.first_seed + args.duts)
    for kind in kinds:
        for name, method in methods.items():
            seconds, trials, wrong_seeds = [], [], set()
            for seed in seeds:
                dut = make_model(kind, seed)
                outcome = method(dut)
                seconds.append(outcome.trial_seconds)
                trials.append(outcome.trials)
                if wrong(outcome.ndr_fps, dut.capacity_fps):
                    wrong_seeds.add(seed)
            medians[kind, name] = statistics.median(seconds)
            wrong_sets[kind, name] = wrong_seeds
            print(f"kind={kind:9s} method={name:9s} median_trial_s={statistics.median(seconds):7.1f} "
                  f"median_trials={statistics.median(trials):5.1f} wrong={len(wrong_seeds)}/{len(seeds)}",
                  flush=True)
        ours, theirs = wrong_sets[kind, "vsbench"], wrong_sets[kind, "mlrsearch"]
        print(f"kind={kind:9s} ratio_vs_mlrsearch={medians[kind, 'vsbench'] / medians[kind, 'mlrsearch']:.3f} "
              f"wrong_ours={len(ours)} wrong_mlrsearch={len(theirs)} "
              f"only_vsbench_wrong={len(ours - theirs)} only_mlrsearch_wrong={len(theirs - ours)}", flush=True)
        duts = [make_model(kind, seed) for seed in seeds]
        if all(not d.burst_rate_per_s and not d.inversion_band for d in duts):
            bad = sum(wrong(oracle_ndr(d), d.capacity_fps) for d in duts)
            print(f"kind={kind:9s} method=oracle    (exact exceed-ratio-50% NDR on the grid) "
                  f"wrong={bad}/{len(seeds)}", flush=True)
    print(f"elapsed_s={time.perf_counter() - started:.1f}")
    worst_mlr = max(medians[k, "vsbench"] / medians[k, "mlrsearch"] for k in kinds)
    worst_rfc = max(medians[k, "vsbench"] / medians[k, "rfc2544"] for k in kinds)
    print(f"ratio_vs_mlrsearch={worst_mlr:.3f} wrong_ours={sum(len(wrong_sets[k, 'vsbench']) for k in kinds)} "
          f"wrong_mlrsearch={sum(len(wrong_sets[k, 'mlrsearch']) for k in kinds)} ratio_vs_rfc2544={worst_rfc:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
