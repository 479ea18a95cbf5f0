"""Prove, in about a second, that DPDK can run the embedded testbed's ports on this host.

Debian ships each DPDK driver in its own package (``librte-net-af-packet23``, ...), and the
``dpdk`` package only *Recommends* them, so a ``--no-install-recommends`` install has
OvS-DPDK's own libraries but not the drivers its EAL loads at start from the driver
directory (``/usr/lib/x86_64-linux-gnu/dpdk/pmds-23.0``). OvS then starts fine and fails
minutes later, when a port is added: ``Error attaching device 'net_af_packet0,...'``.

Looking for files would only prove that files exist. Instead a child process loads the
same shared libraries ovs-vswitchd-dpdk links against (``librte_eal.so.23`` and friends)
with :mod:`ctypes` and does, for real, what OvS does with a testbed port:

1. ``rte_eal_init`` with ``--no-pci --no-huge --no-shconf`` (no PCI device is ever probed, no
   hugepage is used; the EAL loads every driver of its driver directory, as in OvS);
2. ``rte_dev_probe("net_af_packet0,iface=lo")`` -- the vdev bus and the af_packet PMD
   (OvS's ``options:dpdk-devargs``), then counts the ethdev ports;
3. ``rte_pktmbuf_pool_create`` -- the default mempool handler (``ring_mp_mc``, in
   ``librte_mempool_ring.so``) that every OvS mbuf pool uses.

The child prints one JSON line; :func:`findings` (pure) turns it into one line per problem
with the command that fixes it. The EAL's file prefix carries a run id (``vsb<id>probe``),
so ``vsbench cleanup`` recognises its runtime directory if the child is ever killed; the
parent removes that directory itself otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from vsbench.system import naming, runstate

#: The DPDK ABI of Debian 12's DPDK 22.11 (sonames ``librte_*.so.23``, packages ``*23``).
DPDK_ABI = "23"
DRIVER_DIR_GLOB = f"/usr/lib/*/dpdk/pmds-{DPDK_ABI}*"
DPDK_RUNTIME_ROOT = Path("/var/run/dpdk")
PROBE_IFACE = "lo"
TIMEOUT_S = 20.0

#: Driver -> (shared object in the driver dir, Debian package shipping it).
TESTBED_DRIVERS = {
    "bus_vdev": ("librte_bus_vdev.so", f"librte-bus-vdev{DPDK_ABI}"),
    "net_af_packet": ("librte_net_af_packet.so", f"librte-net-af-packet{DPDK_ABI}"),
    "mempool_ring": ("librte_mempool_ring.so", f"librte-mempool-ring{DPDK_ABI}"),
}
INSTALL = "apt-get install --no-install-recommends"


@dataclass
class ProbeResult:
    """What the child could do; ``error`` is set when it could not even try."""

    libraries_ok: bool = False
    eal_init_ok: bool = False
    vdev_ok: bool = False
    ports: int = 0
    mempool_ok: bool = False
    error: str = ""
    eal_log: list[str] = field(default_factory=list)
    driver_dir: str | None = None
    driver_files: list[str] = field(default_factory=list)


def driver_dir() -> Path | None:
    """The EAL's driver directory on this host (``.../dpdk/pmds-23.0``), if any."""
    found = sorted(Path("/").glob(DRIVER_DIR_GLOB.lstrip("/")))
    return found[0] if found else None


def links_shared_dpdk(binary: str | Path) -> bool:
    """True when ``binary`` is dynamically linked against this DPDK ABI's EAL (its ELF
    names ``librte_eal.so.23``), so its drivers come from the shared driver directory the
    probe tests. A static or differently versioned DPDK build brings its own drivers and
    the probe would say nothing about it."""
    import mmap

    needle = f"librte_eal.so.{DPDK_ABI}\0".encode()
    try:
        with open(binary, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return data.find(needle) >= 0
    except (OSError, ValueError):
        return False


def findings(result: ProbeResult) -> list[tuple[str, str]]:
    """``(what is missing, the command that fixes it)`` for each problem; empty when the
    probe proved the testbed's DPDK drivers load."""
    if result.error and not result.libraries_ok:
        return [(f"DPDK {DPDK_ABI} libraries ({result.error})",
                 f"{INSTALL} openvswitch-switch-dpdk")]
    absent = [(drv, pkg) for drv, (so, pkg) in TESTBED_DRIVERS.items()
              if result.driver_dir is not None
              and not any(f.startswith(so) for f in result.driver_files)]
    where = f"not in {result.driver_dir}" if result.driver_dir else f"no driver directory {DRIVER_DIR_GLOB}"
    out: list[tuple[str, str]] = []
    if not result.eal_init_ok:
        last = result.eal_log[-1] if result.eal_log else result.error or "no message"
        return [(f"DPDK EAL does not start ({last})",
                 f"{INSTALL} openvswitch-switch-dpdk " + " ".join(p for _, p in TESTBED_DRIVERS.values()))]
    if not result.vdev_ok or result.ports < 1:
        pkgs = [pkg for drv, pkg in absent if drv in ("bus_vdev", "net_af_packet")] or \
               [TESTBED_DRIVERS["bus_vdev"][1], TESTBED_DRIVERS["net_af_packet"][1]]
        names = [drv for drv, _ in absent if drv in ("bus_vdev", "net_af_packet")] or ["net_af_packet"]
        out.append((f"DPDK driver {'/'.join(names)}: a net_af_packet vdev cannot be attached "
                    f"({where})", f"{INSTALL} {' '.join(pkgs)}"))
    if not result.mempool_ok:
        out.append((f"DPDK mempool driver mempool_ring: no mbuf pool can be created ({where})"
                    if result.driver_dir is None or any(d == "mempool_ring" for d, _ in absent) else
                    "DPDK mempool driver mempool_ring: no mbuf pool can be created",
                    f"{INSTALL} {TESTBED_DRIVERS['mempool_ring'][1]}"))
    return out


def _first_cpu() -> int:
    return min(os.sched_getaffinity(0))


def run_probe(timeout_s: float = TIMEOUT_S) -> ProbeResult:
    """Run the probe in a child process (a crash or hang there cannot hurt the caller)."""
    run_id = naming.new_run_id()
    prefix = f"{naming.NAME_PREFIX}{run_id}probe"
    with runstate.claim(run_id):  # a concurrent `vsbench cleanup` leaves a live probe alone
        return _run_probe(prefix, timeout_s)


def _run_probe(prefix: str, timeout_s: float) -> ProbeResult:
    ddir = driver_dir()
    base = ProbeResult(driver_dir=str(ddir) if ddir else None,
                       driver_files=sorted(p.name for p in ddir.iterdir()) if ddir else [])
    argv = [sys.executable, "-m", "vsbench.system.dpdk_probe", "--child",
            "--file-prefix", prefix, "--cpu", str(_first_cpu()), "--iface", PROBE_IFACE]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s,
                              env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    except subprocess.TimeoutExpired:
        base.libraries_ok, base.error = True, f"the probe did not finish within {timeout_s:.0f} s"
        return base
    finally:
        runtime = DPDK_RUNTIME_ROOT / prefix
        if runtime.is_dir() and not runtime.is_symlink():
            shutil.rmtree(runtime, ignore_errors=True)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    base.eal_log = [ln.strip() for ln in done.stderr.splitlines() if ln.strip()][-20:]
    if not lines:
        base.libraries_ok = True
        base.error = f"probe exited {done.returncode} without a result"
        return base
    for key, value in json.loads(lines[-1]).items():
        setattr(base, key, value)
    return base


@lru_cache(maxsize=1)
def cached_findings() -> tuple[tuple[str, str], ...]:
    """:func:`findings` of one probe per process (several plans need it only once)."""
    return tuple(findings(run_probe()))


def _child(file_prefix: str, cpu: int, iface: str) -> dict:
    """Runs in the child process: the real EAL calls. Returns the JSON-able outcome."""
    import ctypes

    out: dict = {}
    try:
        mode = ctypes.RTLD_GLOBAL
        eal = ctypes.CDLL(f"librte_eal.so.{DPDK_ABI}", mode=mode)
        ethdev = ctypes.CDLL(f"librte_ethdev.so.{DPDK_ABI}", mode=mode)
        mbuf = ctypes.CDLL(f"librte_mbuf.so.{DPDK_ABI}", mode=mode)
    except OSError as exc:
        return {"libraries_ok": False, "error": str(exc)}
    out["libraries_ok"] = True
    args = [b"vsbench-dpdk-probe", b"--no-pci", b"--no-huge", b"-m", b"64", b"--no-shconf",
            b"--no-telemetry", b"-l", str(cpu).encode(), b"--file-prefix", file_prefix.encode()]
    argv = (ctypes.c_char_p * len(args))(*args)
    out["eal_init_ok"] = eal.rte_eal_init(len(args), argv) >= 0
    if not out["eal_init_ok"]:
        return out
    eal.rte_dev_probe.argtypes = [ctypes.c_char_p]
    out["vdev_ok"] = eal.rte_dev_probe(f"net_af_packet0,iface={iface}".encode()) == 0
    out["ports"] = int(ethdev.rte_eth_dev_count_avail())
    mbuf.rte_pktmbuf_pool_create.restype = ctypes.c_void_p
    mbuf.rte_pktmbuf_pool_create.argtypes = [ctypes.c_char_p, ctypes.c_uint, ctypes.c_uint,
                                             ctypes.c_uint16, ctypes.c_uint16, ctypes.c_int]
    pool = mbuf.rte_pktmbuf_pool_create(b"vsbprobe", 511, 0, 0, 2176, -1)
    out["mempool_ok"] = bool(pool)
    eal.rte_eal_cleanup()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="vsbench's DPDK driver probe (child side)")
    parser.add_argument("--child", action="store_true")
    parser.add_argument("--file-prefix", default=f"{naming.NAME_PREFIX}{naming.new_run_id()}probe")
    parser.add_argument("--cpu", type=int, default=None)
    parser.add_argument("--iface", default=PROBE_IFACE)
    args = parser.parse_args(argv)
    if not args.child:
        problems = findings(run_probe())
        for what, remedy in problems:
            print(f"MISSING {what}: {remedy}")
        return 2 if problems else 0
    cpu = args.cpu if args.cpu is not None else _first_cpu()
    print(json.dumps(_child(args.file_prefix, cpu, args.iface)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
