#!/usr/bin/env python3
"""PROX's NDR against the embedded generator's, through the same OvS-DPDK (issue 29 item 1).

One invocation, three ``phy2phy_tput`` runs on the embedded testbed through ``ovs_dpdk`` at
64 B, each a full vsbench run (own testbed, own switch, torn down after):

* ``prox``          the real PROX (``launch: testbed``), built by tools/build_prox.sh;
* ``trafgen``       the embedded generator with its default engine (netsniff-ng trafgen,
                    paced by a tbf shaper: ``trafficgen.trafgen.engine=trafgen``);
* ``trafgen xdp``   the embedded generator's in-kernel XDP sender
                    (``trafficgen.trafgen.engine=xdp``).

All three send one way (``bidirectional=false``): on a 2-CPU host PROX has one worker lcore
besides its master and runs one generator task per core, so it cannot send both ways; the
others are held to the same traffic so the ratio compares generators, not directions.
The NDR is the run's ``NDR`` point (zero loss) from results.json. The last line is
``prox_vs_trafgen=<prox NDR / trafgen NDR> prox_vs_xdp=<prox NDR / xdp NDR>``.

Run as root under ``flock /tmp/vsbench-testbed.lock`` (it sends real traffic):

    .venv/bin/python tools/bench/prox_vs_trafgen.py [--prox-binary PATH] [--trial-s 1]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_PROX = "/var/cache/vsbench/prox-c9716490/prox"


def prox_conf(binary: str) -> str:
    """The PROX settings for the 2-CPU testbed: master on CPU 1 (it sleeps between
    commands), every task on CPU 0, away from OvS-DPDK's PMD on CPU 1."""
    return (
        "trafficgen:\n  prox:\n    launch: testbed\n"
        f"    binary: {binary}\n    master_core: 1\n"
        "    gen_cores: [[0], [0]]\n    lat_cores: [[0], [0]]\n    reply_timeout_s: 5.0\n"
    )


def ndr_of(run_dir: Path) -> tuple[float, dict]:
    """NDR (frames/s) and its latency from a run's results.json; 0 when the run failed."""
    data = json.loads((run_dir / "results.json").read_text())
    test = data["tests"][0]
    for size in test.get("frame_sizes") or []:
        for point in size.get("points") or []:
            if str(point.get("name", "")).upper() == "NDR":
                return float(point.get("throughput_fps") or 0.0), point.get("latency") or {}
    return 0.0, {}


def run(label: str, trafficgen: str, params: str, conf: Path | None, results: Path, vsbench: str) -> tuple[float, dict]:
    argv = [vsbench, "--test", "phy2phy_tput", "--vswitch", "ovs_dpdk", "--trafficgen", trafficgen,
            "--test-params", params, "--results-dir", str(results / label.replace(" ", "_"))]
    if conf is not None:
        argv[1:1] = ["--conf-file", str(conf)]
    began = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True)
    runs = sorted((results / label.replace(" ", "_")).glob("*/results.json"))
    if not runs:
        print(f"{label}: no results ({done.returncode}): {(done.stdout + done.stderr).strip().splitlines()[-1:]}")
        return 0.0, {}
    ndr, lat = ndr_of(runs[-1].parent)
    print(f"{label:12s} NDR {ndr:12.0f} fps  latency avg {lat.get('avg_ns', 0) or 0:10.0f} ns  "
          f"({time.monotonic() - began:.0f} s, {runs[-1].parent})")
    return ndr, lat


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--prox-binary", default=os.environ.get("VSBENCH_PROX_BINARY", DEFAULT_PROX))
    p.add_argument("--trial-s", type=float, default=1.0)
    p.add_argument("--results-dir", type=Path, default=None)
    args = p.parse_args(argv)
    if not Path(args.prox_binary).is_file():
        print(f"prox_vs_trafgen: no PROX at {args.prox_binary}: build it with tools/build_prox.sh", file=sys.stderr)
        return 2
    vsbench = str(Path(sys.executable).with_name("vsbench"))
    results = args.results_dir or Path(tempfile.mkdtemp(prefix="vsb-prox-bench-"))
    conf = results / "prox.yaml"
    results.mkdir(parents=True, exist_ok=True)
    conf.write_text(prox_conf(args.prox_binary), encoding="utf-8")
    params = f"frame_sizes=[64];trial_duration={args.trial_s:g};bidirectional=false"
    prox, _ = run("prox", "prox", params, conf, results, vsbench)
    trafgen, _ = run("trafgen", "trafgen", params + ";trafficgen.trafgen.engine=trafgen", None, results, vsbench)
    xdp, _ = run("trafgen xdp", "trafgen", params + ";trafficgen.trafgen.engine=xdp", None, results, vsbench)

    def ratio(a: float, b: float) -> str:
        return f"{a / b:.3f}" if b > 0 else "nan"

    print(f"prox_vs_trafgen={ratio(prox, trafgen)} prox_vs_xdp={ratio(prox, xdp)}")
    return 0 if prox > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
