#!/usr/bin/env python3
"""Self-test of generator + search against a DUT of known capacity (issue 13 item 4).

The reference DUT is OvS-DPDK with an OpenFlow meter of N frames/s on its forwarding path
(testcase ``phy2phy_meter``, ``dut.meter_pps``): it forwards N and drops the rest, so a
correct generator and search find an NDR in [0.95 N, N] -- never above N (the generator
offered more than it claims, or the counters are wrong) and not far below (the search or
the pacing lost throughput). N is drawn uniformly between ``--min-pps`` (50 kpps) and the
embedded generator's usable ceiling through this DUT (measured first, as every run
measures it: :mod:`vsbench.measurement.ceiling`), ``--draws`` times in a row.

Needs root and the ovs_dpdk prerequisites; run it under ``flock /work/.testbed.lock``.
Prints one line per draw and ``meter_selftest: K/D draws in [0.95 N, N]`` last; exit 1 when
a draw missed.

    .venv/bin/python tools/bench/meter_selftest.py [--draws 5] [--seed S]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VSBENCH = ROOT / ".venv" / "bin" / "vsbench"


def run_vsbench(results: Path, params: str) -> tuple[dict, float]:
    """One ``vsbench --test phy2phy_meter --vswitch ovs_dpdk`` run: (its frame size's
    result, wall seconds)."""
    t0 = time.monotonic()
    out = subprocess.run([str(VSBENCH), "--test", "phy2phy_meter", "--vswitch", "ovs_dpdk",
                          "--test-params", params, "--results-dir", str(results)],
                         capture_output=True, text=True, timeout=1800)
    elapsed = time.monotonic() - t0
    if out.returncode != 0:
        raise RuntimeError(f"vsbench failed (exit {out.returncode}): {(out.stderr or out.stdout).strip()[-400:]}")
    [run_dir] = list(results.iterdir())
    doc = json.loads((run_dir / "results.json").read_text())
    return doc["tests"][0]["frame_sizes"][0], elapsed


def usable_ceiling(work: Path, extra_params: str = "") -> float:
    """The load the search may ask through the metered switch: a load_sweep of 99..100 % of the
    frame size's max load, whose calibration burst measures the ceiling (with the draws'
    extra parameters: the same generator engine)."""
    params = ("meter_pps=10000000;traffic.type=load_sweep;sweep_min_percent=99;sweep_max_percent=100;"
              "traffic.trial_duration_s=0.5;warmup_s=0;latency.enabled=false;search.max_load_fps=null"
              + (f";{extra_params}" if extra_params else ""))
    fs, _ = run_vsbench(work / "calibrate", params)
    if not fs.get("generator_ceiling_fps"):
        raise RuntimeError("the calibration run measured no generator ceiling")
    return float(fs["max_load_fps"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=5)
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: time)")
    parser.add_argument("--min-pps", type=float, default=50_000)
    parser.add_argument("--max-pps", type=float, default=None, help="default: the generator's usable ceiling")
    parser.add_argument("--extra-params", default="", help="appended to --test-params")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        print("meter_selftest: needs root (network namespaces)", file=sys.stderr)
        return 2
    seed = args.seed if args.seed is not None else int(time.time())
    rng = random.Random(seed)
    passed = 0
    with tempfile.TemporaryDirectory(prefix="vsb-meter-") as tmp:
        work = Path(tmp)
        top = args.max_pps or usable_ceiling(work, args.extra_params)
        print(f"meter self-test: N uniform in [{args.min_pps / 1e3:.0f}k, {top / 1e3:.0f}k] (the generator's "
              f"usable ceiling through the metered switch), seed {seed}, {args.draws} draws", flush=True)
        for i in range(args.draws):
            n = round(rng.uniform(args.min_pps, top))
            params = f"meter_pps={n};search.max_load_fps={min(top, 1.25 * n):.0f}" + (
                f";{args.extra_params}" if args.extra_params else "")
            fs, elapsed = run_vsbench(work / f"draw-{i}", params)
            ndr = next((p for p in fs["points"] if p["name"] == "NDR"), {})
            value = ndr.get("throughput_fps") or 0.0
            ok = 0.95 * n <= value <= n
            passed += ok
            print(f"draw {i + 1}: N {n / 1e3:.1f} kpps  NDR {value / 1e3:.1f} kfps = {value / n:.4f} N  "
                  f"{'in' if ok else 'NOT in'} [0.95 N, N]  ({fs['trial_count']} trials, "
                  f"{fs['invalid_trial_count']} invalid, {elapsed:.0f} s"
                  f"{', NDR at the generator ceiling' if ndr.get('at_generator_ceiling') else ''})", flush=True)
    print(f"meter_selftest: {passed}/{args.draws} draws in [0.95 N, N]")
    return 0 if passed == args.draws else 1


if __name__ == "__main__":
    sys.exit(main())
