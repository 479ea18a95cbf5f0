#!/usr/bin/env python3
"""Route installation time and FIB memory of the vrouter's kernel data plane, per table size.

In a private network namespace (name carrying a fresh run id, removed at the end) with
one veth port and one next-hop object, each table size of ``--routes`` is installed and
removed ``--repeat`` times per method:

* ``bulk``: the vrouter's path (``netlink_bulk.BulkSocket.routes``): 44 B ``RTM_NEWROUTE``
  messages laid out by numpy, ``--batch-kib`` KiB of them per ``sendmsg``, one ACK per batch;
  the batch size is swept with ``--batch-sweep``;
* ``ip-batch``: ``ip -batch`` of the same routes (one process reading a file; a comparison
  point only, vsbench never installs routes this way);
* ``naive``: pyroute2 ``IPRoute.route("add")`` per route, one round trip each (what
  "one message per route" costs), only up to ``--naive-max`` routes (it is ~3 orders of
  magnitude slower; the rate is printed, nothing is extrapolated).

After each install the routes are counted from a kernel dump (every one must be there),
the FIB's slab memory (``ip_fib_trie`` + ``ip_fib_alias`` in /proc/slabinfo, host-wide,
so other activity on the host adds noise) is read, the table is removed by deleting
the next-hop object (the kernel drops every route using it; the count must then be 0),
and the memory is the difference to the slab figure once the freed entries have left it.
Medians over the repetitions. The last line is the headline:

    routes=1000000 bulk_install_s=.. (target < 30 s)

    sudo .venv/bin/python tools/bench/vrouter_routes.py [--routes 1000,64000,1000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from pyroute2 import IPRoute
from pyroute2 import netns as pr_netns

from vsbench.system import naming
from vsbench_plugins.vnf.vrouter import netlink_bulk as nl
from vsbench_plugins.vnf.vrouter.kernel import count_nexthops, fib_slab_bytes

BASE = int.from_bytes(bytes([10, 0, 0, 0]), "big")
NH_ID = 1
TARGET_S = 30.0


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=60)


def setup(ns: str) -> int:
    pr_netns.create(ns)
    ip("-n", ns, "link", "add", "vsbrt0", "type", "veth", "peer", "name", "vsbrt1")
    ip("-n", ns, "link", "set", "vsbrt0", "up")
    ip("-n", ns, "link", "set", "vsbrt1", "up")
    ip("-n", ns, "addr", "add", "198.18.1.254/24", "dev", "vsbrt0")
    with IPRoute(netns=ns, flags=0) as ipr:
        return ipr.link_lookup(ifname="vsbrt0")[0]


def add_nexthop(sock: nl.BulkSocket, oif: int) -> None:
    sock.request(lambda s: nl.encode_nexthop(s, NH_ID, gateway="198.18.1.1", oif=oif))


def clear(sock: nl.BulkSocket, oif: int, ns: str) -> float:
    """Delete the next hop (and with it every route using it), check nothing is left,
    re-add it. The naive method's routes carry a gateway, not the next-hop object (pyroute2
    cannot encode ``RTA_NH_ID``): they go with ``ip route flush proto static``."""
    started = time.monotonic()
    sock.request(lambda s: nl.encode_nexthop_delete(s, NH_ID))
    if sock.count_routes():
        ip("-n", ns, "route", "flush", "proto", "static")
    elapsed = time.monotonic() - started
    left = sock.count_routes()
    if left or count_nexthops(sock):
        raise SystemExit(f"vrouter_routes: {left} route(s) left after removing the next hop")
    add_nexthop(sock, oif)
    return elapsed


def install_bulk(sock: nl.BulkSocket, dst: np.ndarray, batch_bytes: int) -> float:
    started = time.monotonic()
    result = sock.routes(dst, 32, NH_ID, batch_bytes=batch_bytes)
    elapsed = time.monotonic() - started
    if result.failed:
        raise SystemExit(f"vrouter_routes: bulk install refused {result.failed} routes: {result.first_error}")
    return elapsed


def install_ip_batch(ns: str, dst: np.ndarray, workdir: Path) -> float:
    path = workdir / "routes.batch"
    octets = dst.astype(">u4").view(np.uint8).reshape(-1, 4)
    with path.open("w") as out:
        for a, b, c, d in octets.tolist():
            out.write(f"route add {a}.{b}.{c}.{d}/32 nhid {NH_ID} proto static\n")
    started = time.monotonic()
    subprocess.run(["ip", "-n", ns, "-batch", str(path)], check=True, capture_output=True, timeout=900)
    return time.monotonic() - started


def install_naive(ns: str, dst: np.ndarray) -> float:
    octets = dst.astype(">u4").view(np.uint8).reshape(-1, 4).tolist()
    with IPRoute(netns=ns, flags=0) as ipr:
        started = time.monotonic()
        for a, b, c, d in octets:
            ipr.route("add", dst=f"{a}.{b}.{c}.{d}/32", gateway="198.18.1.1", oif=ipr.link_lookup(ifname="vsbrt0")[0],
                      proto=nl.RTPROT_STATIC)
        return time.monotonic() - started


def settled_slab_bytes(timeout_s: float = 5.0) -> int | None:
    """The FIB slab figure once freed entries have left it: the kernel frees FIB nodes
    after an RCU grace period, so right after a delete they still count."""
    last = fib_slab_bytes()
    deadline = time.monotonic() + timeout_s
    while last is not None and time.monotonic() < deadline:
        time.sleep(0.25)
        now = fib_slab_bytes()
        if now == last:
            break
        last = now
    return last


def measure(label: str, n: int, repeat: int, install, sock: nl.BulkSocket, oif: int, ns: str) -> dict:
    times, mems, clears = [], [], []
    for _ in range(repeat):
        times.append(install())
        count = sock.count_routes()
        if count != n:
            raise SystemExit(f"vrouter_routes: {label}: {count} routes in the table, {n} installed")
        with_table = fib_slab_bytes()
        clears.append(clear(sock, oif, ns))
        without = settled_slab_bytes()
        if with_table is not None and without is not None:
            mems.append(with_table - without)
    med = statistics.median(times)
    mem = statistics.median(mems) if mems else None
    mem_text = "n/a" if mem is None else f"{mem / 2**20:.1f} MiB ({mem / n:.0f} B/route)"
    print(f"  {label:<22} routes={n:>8}  install_s={med:8.3f}  rate={n / med:>12,.0f}/s  "
          f"fib_slab={mem_text}  teardown_s={statistics.median(clears):.3f}", flush=True)
    return {"install_s": med, "fib_bytes": mem}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--routes", default="1000,64000,1000000",
                        help="comma-separated table sizes (routes)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--batch-kib", type=int, default=nl.BATCH_BYTES // 1024)
    parser.add_argument("--batch-sweep", default="4,64,256,1024",
                        help="batch sizes (KiB per sendmsg) tried at the largest table size; empty: none")
    parser.add_argument("--naive-max", type=int, default=20000,
                        help="largest table installed one route per request")
    parser.add_argument("--no-ip-batch", action="store_true")
    args = parser.parse_args()
    try:
        sizes = [int(s) for s in args.routes.split(",") if s.strip()]
        sweep = [int(s) for s in args.batch_sweep.split(",") if s.strip()]
    except ValueError:
        parser.error("--routes and --batch-sweep take comma-separated integers")
    if not sizes or min(sizes) < 1 or max(sizes) > 1 << 23 or args.repeat < 1:
        parser.error("--routes must be 1..8388608 and --repeat positive")

    ns = naming.netns_name(naming.new_run_id(), "dut")
    headline = None
    try:
        oif = setup(ns)
        with nl.BulkSocket(ns) as sock, tempfile.TemporaryDirectory(prefix="vsb-vrouter-") as tmp:
            add_nexthop(sock, oif)
            print(f"vrouter route install, netns {ns}, medians of {args.repeat}, /32 routes via one next-hop object")
            for n in sizes:
                dst = (np.arange(n, dtype=np.uint64) + BASE).astype(np.uint32)
                bulk = measure(f"bulk {args.batch_kib} KiB/sendmsg", n, args.repeat,
                               lambda: install_bulk(sock, dst, args.batch_kib * 1024), sock, oif, ns)
                if not args.no_ip_batch:
                    measure("ip -batch", n, args.repeat, lambda: install_ip_batch(ns, dst, Path(tmp)), sock, oif, ns)
                if n <= args.naive_max:
                    measure("naive (pyroute2/route)", n, args.repeat, lambda: install_naive(ns, dst), sock, oif, ns)
                if n == max(sizes):
                    headline = (n, bulk["install_s"])
            n = max(sizes)
            dst = (np.arange(n, dtype=np.uint64) + BASE).astype(np.uint32)
            for kib in sweep:
                measure(f"bulk {kib} KiB/sendmsg", n, args.repeat,
                        lambda: install_bulk(sock, dst, kib * 1024), sock, oif, ns)
            sock.request(lambda s: nl.encode_nexthop_delete(s, NH_ID))
    finally:
        if pr_netns.listnetns().count(ns):
            pr_netns.remove(ns)
    n, seconds = headline
    verdict = "OK" if seconds < TARGET_S else "OVER TARGET"
    print(f"routes={n} bulk_install_s={seconds:.2f} (target < {TARGET_S:.0f} s: {verdict})")
    return 0 if seconds < TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
