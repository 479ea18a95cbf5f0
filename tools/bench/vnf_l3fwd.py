#!/usr/bin/env python3
"""What l3fwd and a VNF VM cost and forward here: build times, boot time, forwarding rates.

* l3fwd build from Debian's sources: cold (empty cache) and warm (cached), and whether two
  cold builds give byte-identical binaries (reproducible);
* guest image build (cold, warm);
* l3fwd as a process on OvS-DPDK vhost-user ports (pvp: generator -> OvS -> l3fwd -> OvS ->
  generator), unidirectional 64 B blast from trafgen on CPU 0, l3fwd's lcore on CPU 1 beside
  the OvS PMD (2 cores: oversubscribed, as printed);
* the same l3fwd in a libvirt VM under TCG: boot time and forwarding rate.

Each figure is the median of ``--repeat`` runs (the machine is shared and noisy).

    sudo .venv/bin/python tools/bench/vnf_l3fwd.py [--repeat 3] [--frames 1000000] [--no-vm]

Needs root, openvswitch-switch-dpdk, trafgen, the l3fwd build packages and, for the VM,
libvirt-daemon-driver-qemu, qemu-system-x86, linux-image-amd64, busybox-static.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "integration"))

from vswitch_helpers import PvpRig, veth_testbed  # noqa: E402

from vsbench.interfaces import FlowFields, TrafficProfile  # noqa: E402
from vsbench.system import naming  # noqa: E402
from vsbench.system.resources import ResourceStack  # noqa: E402
from vsbench.system.vm import image  # noqa: E402
from vsbench_plugins.vnf.l3fwd import build  # noqa: E402

PROFILE = TrafficProfile(64, flows=1, fields=FlowFields(src_ip="10.0.0.1", dst_ip="10.1.0.1"))


def median(values):
    return statistics.median(values) if values else float("nan")


def bench_build(repeat: int) -> None:
    cold, digests = [], set()
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="vsb-l3fwd-bench-") as cache:
            result = build.ensure_built(Path(cache))
            cold.append(result.build_s)
            digests.add(hashlib.sha256(result.binary.read_bytes()).hexdigest())
            started = time.monotonic()
            build.ensure_built(Path(cache))
            warm = time.monotonic() - started
    print(f"l3fwd build, DPDK {result.dpdk_version}: cold {median(cold):.2f} s, warm {warm:.3f} s "
          f"(median of {repeat}); reproducible: {'yes' if len(digests) == 1 else 'NO'} "
          f"({len(digests)} distinct binaries)")


def bench_image(repeat: int) -> None:
    built = build.ensure_built()
    programs = [built.binary, built.telemetry_client]
    cold = []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="vsb-vm-bench-") as cache:
            started = time.monotonic()
            img = image.ensure_image(programs, cache_dir=Path(cache))
            cold.append(time.monotonic() - started)
            started = time.monotonic()
            image.ensure_image(programs, cache_dir=Path(cache))
            warm = time.monotonic() - started
    print(f"guest image ({img.size_bytes / 1e6:.1f} MB, kernel {img.kernel_version}): cold {median(cold):.2f} s, "
          f"warm {warm:.2f} s (median of {repeat})")


def bench_forwarding(settings: dict, frames: int, repeat: int, label: str, rate_pps: int | None = None) -> None:
    run_id = naming.new_run_id()
    with tempfile.TemporaryDirectory(prefix="vsb-l3fwd-bench-") as tmp, veth_testbed(run_id, 2) as testbed, \
            ResourceStack() as stack:
        started = time.monotonic()
        rig = PvpRig(testbed, stack, Path(tmp), settings)
        rig.vnf.configure(PROFILE)
        ready_s = time.monotonic() - started
        rows = []
        rig.blast(Path(tmp), min(frames, 20000), rate_pps=rate_pps)  # warm-up
        for _ in range(repeat):
            rig.vnf.trial_begin()
            result = rig.blast(Path(tmp), frames, rate_pps=rate_pps)
            vnf = rig.vnf.trial_end().get("ports") or [{}, {}]
            rows.append((result.tx_fps, result.rx_fps, 1 - result.received / result.sent,
                         vnf[0].get("rx_frames", 0), vnf[1].get("tx_frames", 0), result.sent))
        boot = rig.vnf.vm.boot_figures.boot_s if rig.vnf.vm is not None and rig.vnf.vm.boot_figures else None
    tx, rx, loss = median(r[0] for r in rows), median(r[1] for r in rows), median(r[2] for r in rows)
    print(f"{label}: offered {tx / 1e3:.1f} kfps, forwarded {rx / 1e3:.1f} kfps, loss {loss:.1%} "
          f"(median of {repeat} x {frames} frames of 64 B); ready in {ready_s:.1f} s"
          + (f" (VM boot {boot:.1f} s)" if boot else ""))
    for tx_fps, rx_fps, _, vnf_rx, vnf_tx, sent in rows:
        print(f"    sent {sent}, l3fwd rx {vnf_rx} tx {vnf_tx}, generator rx rate {rx_fps / 1e3:.1f} kfps")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--frames", type=int, default=1_000_000)
    parser.add_argument("--vm-frames", type=int, default=100_000)
    parser.add_argument("--no-vm", action="store_true")
    parser.add_argument("--no-build", action="store_true")
    args = parser.parse_args()
    if not args.no_build:
        bench_build(args.repeat)
        bench_image(args.repeat)
    bench_forwarding({"lookup": "lpm"}, args.frames, args.repeat, "l3fwd lpm process (lcore CPU 1 with the OvS PMD)")
    bench_forwarding({"lookup": "em"}, args.frames, args.repeat, "l3fwd em process (lcore CPU 1 with the OvS PMD)")
    if not args.no_vm:
        bench_forwarding({"mode": "vm"}, args.vm_frames, args.repeat, "l3fwd lpm in a TCG VM (memfd, unpinned)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
