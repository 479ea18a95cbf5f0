#!/usr/bin/env python3
"""How exact the embedded generator's pacing is, at shares of its ceiling (issue 13 item 2).

On the loopback testbed (generator port 0 wired to port 1, no DUT), through the ``trafgen``
plugin exactly as a run uses it: the ceiling measured once per round as the runner does (one
unpaced calibration burst, :mod:`vsbench.measurement.ceiling`), then ``--trials`` paced
trials of ``--duration-s`` at each ``--shares`` of it, the shares interleaved so a noisy
moment hits every share alike. For each share it prints:

* the share of trials whose worst consecutive 10 ms window was more than 0.5 %, 1 %, 2 %
  and 5 % (and at least 2 frames) off its nominal count -- what a window tolerance would
  reject (the validity rule uses :data:`vsbench.measurement.validity.PACING_TOLERANCE`);
* the median and worst of that deviation, the worst time behind schedule, and the
  burstiness: the most frames in any 1 ms over the nominal count of 1 ms;
* the trials the rules call generator-limited (frames short or sending overran).

Run it on a quiet machine, under ``flock /work/.testbed.lock``; needs root.

    .venv/bin/python tools/bench/pacing_windows.py [--trials 20] [--shares 0.5,0.8,0.95]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

from vsbench.deployment.ports import generator_ports_of
from vsbench.interfaces.plugin import PluginContext, RunParameters
from vsbench.interfaces.traffic import INVALID_LIMITED, TrafficProfile
from vsbench.measurement import ceiling as ceilings
from vsbench.measurement import validity
from vsbench.system import naming, runstate
from vsbench.system.resources import ResourceStack
from vsbench.system.testbed import create_loopback_testbed

TOLERANCES = (0.005, 0.01, 0.02, 0.05)


def loadavg() -> str:
    return Path("/proc/loadavg").read_text().split(" ", 3)[0]


def fails(pacing, tolerance: float) -> bool:
    allowed = max(tolerance * pacing.nominal_frames_per_window, validity.PACING_SLACK_FRAMES)
    return pacing.max_window_deviation_frames > allowed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20, help="paced trials per share")
    parser.add_argument("--rounds", type=int, default=1, help="testbeds, each with its own ceiling")
    parser.add_argument("--shares", default="0.5,0.8,0.95")
    parser.add_argument("--duration-s", type=float, default=1.0)
    parser.add_argument("--frame-size", type=int, default=64)
    parser.add_argument("--flows", type=int, default=1024)
    parser.add_argument("--unidirectional", action="store_true")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a trafficgen.trafgen setting (YAML scalar), e.g. pacer_catchup_share=0.5")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        print("pacing_windows: needs root (network namespaces)", file=sys.stderr)
        return 2
    import yaml

    from vsbench_plugins.trafficgen.trafgen import Trafgen

    settings = {}
    for item in args.set:
        key, _, value = item.partition("=")
        settings[key] = yaml.safe_load(value)
    shares = [float(s) for s in args.shares.split(",")]
    rows: dict[float, list] = {s: [] for s in shares}
    ceilings_fps = []
    print(f"pacing at shares of the ceiling: {args.frame_size} B, {args.flows} flows, "
          f"{'uni' if args.unidirectional else 'bi'}directional, loopback, {args.trials} x {args.duration_s:g} s "
          f"per share and round, settings {settings or 'default'}; load average {loadavg()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="vsb-pacing-") as tmp:
        work = Path(tmp)
        for round_ in range(args.rounds):
            run_id = naming.new_run_id()
            with runstate.claim(run_id), ResourceStack() as resources:
                tb = create_loopback_testbed(run_id, resources)
                ctx = PluginContext(run_id=run_id, settings=settings, log_dir=work / "logs", resources=resources,
                                    work_dir=work / f"gen-{round_}", run=RunParameters(drain_s=0.1))
                gen = Trafgen(ctx)
                gen.start()
                resources.register("generator", gen.stop)
                profile = TrafficProfile(frame_size_bytes=args.frame_size, flows=args.flows,
                                         bidirectional=not args.unidirectional)
                gen.configure(profile, generator_ports_of(tb))
                burst = gen.run_burst(ceilings.calibration_frames(1e6, profile.directions))
                ceiling = ceilings.ceiling_from(burst, 1.0).burst_rate_fps
                ceilings_fps.append(ceiling)
                print(f"round {round_ + 1}: ceiling {ceiling / 1e3:.0f} kfps", flush=True)
                for _ in range(args.trials):
                    for share in shares:
                        r = gen.run_trial(ceiling * share, args.duration_s)
                        checked, verdict = validity.apply(r)
                        rows[share].append((r, checked, verdict))
    print(f"ceiling median {statistics.median(ceilings_fps) / 1e3:.0f} kfps; load average after {loadavg()}")
    header = " ".join(f">{t:.1%}".rjust(7) for t in TOLERANCES)
    print(f"{'share':>5} {'trials':>6} {header}  {'dev med':>7} {'dev max':>7} {'late max':>8} "
          f"{'1ms/nom max':>11} {'limited':>7}")
    for share in shares:
        paced = [(r, c, v) for r, c, v in rows[share] if r.pacing is not None and r.pacing.windows > 0]
        n = len(paced)
        if not n:
            print(f"{share:5.2f} {0:6d}  no pacing figures")
            continue
        shares_failing = " ".join(f"{sum(fails(r.pacing, t) for r, _, _ in paced) / n:7.0%}" for t in TOLERANCES)
        devs = [r.pacing.max_window_deviation_ratio for r, _, _ in paced]
        late = max(r.pacing.max_late_s or 0.0 for r, _, _ in paced)
        burst = max(r.pacing.burst_ratio or 0.0 for r, _, _ in paced)
        limited = sum(c.invalid_kind == INVALID_LIMITED for _, c, _ in paced)
        print(f"{share:5.2f} {n:6d} {shares_failing}  {statistics.median(devs):7.2%} {max(devs):7.2%} "
              f"{late * 1e3:6.2f}ms {burst:11.2f} {limited:7d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
