#!/usr/bin/env python3
"""What the embedded generator can do on this machine: trafgen on the loopback testbed.

Generator port 0 is wired straight to port 1 (no DUT), so every figure is the generator's
own limit:

* **max rate** -- on a grid of aggregate loads (64 B by default), the share of
  ``--repeats`` trials that were valid (trafgen sent >= 99.9 % of the intended frames within
  duration x 1.001) with nothing lost; the *sustained* maximum is the highest grid load at
  which every trial at that load and at every lower load was good. A grid, not a bisection:
  on this VM the shaper's cost per frame is highest around 100-400 kfps (one timer
  interrupt per frame until frames batch), so validity is not monotonic in the load when
  the CPU is shared, and a bisection would report whichever side it happened to probe;
* **latency floor** -- one-way delay of the probe stream (kernel TX timestamp in the veth
  driver to kernel RX timestamp at the peer), median and p99, with no bulk traffic and under
  bulk traffic at ``--load-share`` of the measured unidirectional maximum; medians over the
  repeats.

The machine is shared and noisy (2 cores): read the spread, not one run. The load average
is printed before and after. Needs root and netsniff-ng.

    .venv/bin/python tools/bench/trafgen_capacity.py [--repeats 3] [--duration-s 2] [--skip bi]
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from vsbench.deployment.ports import generator_ports_of
from vsbench.interfaces.plugin import PluginContext, RunParameters
from vsbench.interfaces.traffic import TrafficProfile
from vsbench.system import naming, runstate
from vsbench.system.commands import which
from vsbench.system.resources import ResourceStack
from vsbench.system.testbed import create_loopback_testbed


def _loadavg() -> str:
    return Path("/proc/loadavg").read_text().split(" ", 3)[0]


def _good(result) -> bool:
    return result.valid and result.tx_frames >= 0.999 * result.intended_frames and result.rx_frames == result.tx_frames


def scan(gen, grid: list[float], duration_s: float, repeats: int) -> dict[float, list]:
    """Trials at each grid load, ``repeats`` times, interleaved (so a noisy minute hits
    every load alike); returns load -> [(good, achieved fps)]."""
    results: dict[float, list] = {load: [] for load in grid}
    for _ in range(repeats):
        for load in grid:
            r = gen.run_trial(load, duration_s)
            achieved = r.tx_frames / r.tx_duration_s if r.tx_duration_s else 0.0
            results[load].append((_good(r), achieved))
    return results


def sustained(results: dict[float, list]) -> float:
    best = 0.0
    for load in sorted(results):
        if not all(good for good, _ in results[load]):
            break
        best = load
    return best


def latency(gen, load: float, duration_s: float) -> tuple[float, float, int, int]:
    """(median ns, p99 ns, probes sent, probes received) of one probe trial at ``load``; NaN
    figures when no probe came back (a stalled host can lose every probe of a short trial:
    that is a figure to print, not a crash)."""
    r = gen.run_trial(load, duration_s, latency=True)
    if r.probes is None:
        return math.nan, math.nan, 0, 0
    lat = r.probes.latency_ns
    if len(lat) == 0:
        return math.nan, math.nan, r.probes.sent, 0
    return float(np.median(lat)), float(np.percentile(lat, 99)), r.probes.sent, len(lat)


def _fmt_scan(results: dict[float, list]) -> str:
    cells = []
    for load in sorted(results):
        runs = results[load]
        good = sum(1 for ok, _ in runs if ok)
        achieved = statistics.median(a for _, a in runs)
        cells.append(f"{load / 1e3:.0f}k {good}/{len(runs)} ({achieved / 1e3:.0f}k)")
    return "; ".join(cells)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frame-size", type=int, default=64)
    parser.add_argument("--duration-s", type=float, default=2.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--grid-kfps", default="25,50,100,200,300,400,500,600,700,800,900,1000,1100,1200,1300,1400,1600",
                        help="comma-separated aggregate loads in kfps")
    parser.add_argument("--flows", type=int, default=1)
    parser.add_argument("--load-share", type=float, default=0.5,
                        help="bulk load for the loaded latency figure, share of the uni max")
    parser.add_argument("--tx-path", choices=["sendto", "ring"], default=None)
    parser.add_argument("--bidirectional-shaper", choices=["shared", "per_port"], default=None)
    parser.add_argument("--cpus", default=None, help="comma-separated CPUs for trafgen (default: settings)")
    parser.add_argument("--rx-cpus", default=None,
                        help="comma-separated CPUs that process frames arriving at the generator ports (RPS)")
    parser.add_argument("--burst-s", type=float, default=None, help="tbf bucket depth (default: settings)")
    parser.add_argument("--skip", default="", help="comma-separated: uni,bi,latency")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        print("trafgen_capacity: needs root (network namespaces)", file=sys.stderr)
        return 2
    if which("trafgen") is None:
        print("trafgen_capacity: trafgen missing (apt-get install netsniff-ng)", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.WARNING)
    from vsbench_plugins.trafficgen.trafgen import Trafgen

    settings: dict = {}
    if args.tx_path:
        settings["tx_path"] = args.tx_path
    if args.bidirectional_shaper:
        settings["bidirectional_shaper"] = args.bidirectional_shaper
    if args.cpus:
        settings["cpus"] = [int(c) for c in args.cpus.split(",")]
    if args.burst_s:
        settings["shaper_burst_s"] = args.burst_s
    skip = set(filter(None, args.skip.split(",")))

    print(f"trafgen capacity on the loopback testbed: {args.frame_size} B, {args.flows} flow(s), "
          f"{args.duration_s:g} s trials, {args.repeats} repeat(s), settings {settings or 'defaults'}, "
          f"receive CPUs {args.rx_cpus or 'kernel default'}")
    print(f"load average before: {_loadavg()} ({os.cpu_count()} CPUs)")
    run_id = naming.new_run_id()
    t0 = time.monotonic()
    # A claimed run id is live: another user's `vsbench cleanup` leaves this testbed alone.
    with runstate.claim(run_id), ResourceStack() as resources, tempfile.TemporaryDirectory() as tmp:
        rx_cpus = [int(c) for c in args.rx_cpus.split(",")] if args.rx_cpus else None
        tb = create_loopback_testbed(run_id, resources, tg_rx_cpus=rx_cpus)
        ctx = PluginContext(run_id=run_id, settings=settings, log_dir=Path(tmp) / "logs",
                            resources=resources, work_dir=Path(tmp) / "work",
                            run=RunParameters(drain_s=0.2))
        gen = Trafgen(ctx)
        gen.start()
        uni_max: list[float] = []
        for bidir in (False, True):
            name = "bi" if bidir else "uni"
            if name in skip:
                continue
            gen.configure(TrafficProfile(frame_size_bytes=args.frame_size, flows=args.flows,
                                         bidirectional=bidir), generator_ports_of(tb))
            grid = [float(k) * 1e3 for k in args.grid_kfps.split(",")]
            results = scan(gen, grid, args.duration_s, args.repeats)
            best = sustained(results)
            if not bidir:
                uni_max = [best]
            label = "bidirectional (aggregate)" if bidir else "unidirectional"
            print(f"max rate {label}: sustained {best / 1e3:.0f} kfps (every trial good up to here)")
            print(f"  grid (good/trials, median achieved): {_fmt_scan(results)}")

        if "latency" not in skip:
            gen.configure(TrafficProfile(frame_size_bytes=args.frame_size, flows=args.flows,
                                         bidirectional=False), generator_ports_of(tb))
            loads = [("idle (probes only)", 0.0)]
            if uni_max:
                loads.append((f"bulk {args.load_share:.0%} of uni max", args.load_share * statistics.median(uni_max)))
            for label, load in loads:
                medians, p99s, lost = [], [], 0
                for _ in range(args.repeats):
                    med, p99, sent, got = latency(gen, load, args.duration_s)
                    medians.append(med)
                    p99s.append(p99)
                    lost += sent - got
                print(f"probe latency {label} ({load / 1e3:.0f} kfps): median {statistics.median(medians) / 1e3:.2f} us "
                      f"(runs {', '.join(f'{m / 1e3:.2f}' for m in medians)}), "
                      f"p99 {statistics.median(p99s) / 1e3:.2f} us (runs {', '.join(f'{p / 1e3:.2f}' for p in p99s)}), "
                      f"probes lost {lost}")
        gen.stop()
    print(f"load average after: {_loadavg()}; {time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
