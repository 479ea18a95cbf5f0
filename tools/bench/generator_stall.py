#!/usr/bin/env python3
"""A stalled generator in the middle of a real search (search revision 7).

Why: CI once saw the real PROX send about 17 frames in a 1 s search trial on a loaded host;
the search lowered max_load to that and the frame size ended without a result. This script
makes the stall on purpose and shows what each search revision makes of it: it runs
``vsbench --test phy2phy_tput --trafficgen prox --vswitch linux_bridge`` (the real PROX,
built by tools/build_prox.sh, one direction, 1 s trials, as tests/integration/
test_prox_real.py does) and stops PROX (SIGSTOP, then SIGCONT, by the pid of the binary it
built) for ``--stall-s`` seconds 50 ms after its ``--burst``-th sending burst begins, as seen
on the generator namespace's transmit counters (/proc/PID/net/dev): burst 1 is the warm-up,
2 the first search trial, 3 its retry.

One line per run, then per revision the median max_load and NDR over the runs. Run it as
root, alone on the testbed (``flock /tmp/vsbench-testbed.lock``): it sends real traffic.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PARAMS = ("frame_sizes=[64];trial_duration=1;warmup_s=1;bidirectional=false;relative_width=0.1;"
          "search.max_trials_per_load=3;latency.trial_duration_s=1;latency.load_fractions=[0.0]")
#: Counter growth that marks a burst, and the quiet gap that ends one.
BURST_FRAMES = 100
QUIET_S = 0.3


def pid_of(binary: str) -> int | None:
    """The pid of the process running exactly ``binary`` (the PROX this script's run started)."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.path.realpath(f"/proc/{entry}/exe") == binary:
                    return int(entry)
            except OSError:
                continue
    return None


def tx_frames(pid: int) -> int:
    """Frames sent by every interface of ``pid``'s network namespace but loopback."""
    total = 0
    for line in Path(f"/proc/{pid}/net/dev").read_text().splitlines()[2:]:
        name, counters = line.split(":", 1)
        if name.strip() != "lo":
            total += int(counters.split()[9])  # after 8 receive columns: bytes, packets
    return total


def stall_burst(run: subprocess.Popen, binary: str, burst: int, stall_s: float, log: dict) -> None:
    """Stop PROX for ``stall_s`` seconds 50 ms into its ``burst``-th sending burst."""
    pid = None
    while run.poll() is None and pid is None:
        pid = pid_of(binary)
        time.sleep(0.05)
    seen, last, last_rise, sending = 0, None, time.monotonic(), False
    while run.poll() is None and pid is not None:
        try:
            now_tx = tx_frames(pid)
        except OSError:
            return
        now = time.monotonic()
        if last is not None and now_tx > last + BURST_FRAMES:
            last_rise = now
            if not sending:
                seen, sending = seen + 1, True
                if seen == burst:
                    time.sleep(0.05)
                    os.kill(pid, signal.SIGSTOP)
                    try:
                        time.sleep(stall_s)
                    finally:
                        os.kill(pid, signal.SIGCONT)
                    log["stalled"] = True
                    return
        elif sending and now - last_rise > QUIET_S:
            sending = False
        last = now_tx
        time.sleep(0.005)


def one_run(binary: str, revision: int, burst: int, stall_s: float, where: Path) -> dict:
    conf = where / "prox.yaml"
    conf.write_text("trafficgen:\n  prox:\n    launch: testbed\n"
                    f"    binary: {binary}\n    master_core: 1\n"
                    "    gen_cores: [[0], [0]]\n    lat_cores: [[0], [0]]\n    reply_timeout_s: 5.0\n")
    argv = [sys.executable, "-m", "vsbench", "--test", "phy2phy_tput", "--vswitch", "linux_bridge",
            "--trafficgen", "prox", "--conf-file", str(conf), "--test-params",
            f"{PARAMS};search.revision={revision}", "--results-dir", str(where / "results")]
    log: dict = {"stalled": False}
    with open(where / "console.txt", "w") as console:
        run = subprocess.Popen(argv, stdout=console, stderr=subprocess.STDOUT, cwd=ROOT)
        injector = threading.Thread(target=stall_burst, args=(run, binary, burst, stall_s, log))
        injector.start()
        run.wait()
        injector.join()
    [results] = (where / "results").glob("*/results.json")
    [fs] = json.loads(results.read_text())["tests"][0]["frame_sizes"]
    trials = [json.loads(line) for line in (results.parent / "trials.jsonl").read_text().splitlines()]
    search = [t for t in trials if t["role"] == "search"]
    return {"revision": revision, "exit": run.returncode, "stalled": log["stalled"],
            "max_load_fps": round(fs["max_load_fps"]), "ndr_fps": fs["points"][0]["throughput_fps"],
            "first_trials_tx_frames": [t["tx_frames"] for t in search[:3]], "search_trials": len(search)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--revisions", type=int, nargs="+", default=[6, 7])
    parser.add_argument("--rounds", type=int, default=3, help="runs per revision, alternating")
    parser.add_argument("--burst", type=int, default=3, help="which sending burst stalls (3: the first search retry)")
    parser.add_argument("--stall-s", type=float, default=1.5)
    parser.add_argument("--third-party", default=os.environ.get("VSBENCH_THIRD_PARTY", str(ROOT.parent / "shared" / "third_party")),
                        help="where samplevnf-prox-*.tar.gz is (default $VSBENCH_THIRD_PARTY, else ../shared/third_party)")
    args = parser.parse_args()
    tarballs = sorted(Path(args.third_party).glob("samplevnf-prox-*.tar.gz"))
    if not tarballs:
        sys.exit(f"generator_stall: no samplevnf-prox-*.tar.gz in {args.third_party} (--third-party)")
    built = subprocess.run([str(ROOT / "tools" / "build_prox.sh"), str(tarballs[-1])], capture_output=True, text=True)
    if built.returncode != 0:
        sys.exit(f"generator_stall: PROX could not be built: {built.stderr.strip().splitlines()[-1:]}")
    binary = os.path.realpath(built.stdout.strip().splitlines()[-1])
    runs: dict[int, list[dict]] = {r: [] for r in args.revisions}
    with tempfile.TemporaryDirectory(prefix="vsbench-stall-") as tmp:
        for n in range(args.rounds):
            for revision in args.revisions:
                where = Path(tmp) / f"r{revision}-{n}"
                where.mkdir()
                outcome = one_run(binary, revision, args.burst, args.stall_s, where)
                print(json.dumps(outcome), flush=True)
                runs[revision].append(outcome)
    for revision, outcomes in runs.items():
        ndrs = [o["ndr_fps"] or 0.0 for o in outcomes]
        print(f"revision {revision}: median max_load {statistics.median(o['max_load_fps'] for o in outcomes):.0f} fps, "
              f"median NDR {statistics.median(ndrs):.0f} fps over {len(outcomes)} runs (stall {args.stall_s:g} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
