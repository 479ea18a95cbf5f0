"""The network function itself: forward frames between interface pairs, count them.

    python -m vsbench_example_vnf.forwarder --pair IF0 IF1 [--pair IF2 IF3] --stats FILE [--macswap]

Opens a packet socket on every interface (failing at once, with one line on stderr and
exit 2, if one does not exist), then forwards each frame received on one port of a pair
out of the other. Every 0.2 s, and when it ends (SIGTERM), it rewrites ``FILE`` atomically
with its counters as JSON: ``{"ports": {IF: {"rx_frames", "tx_frames", "tx_errors"}},
"ready": true}``. The first write says it is ready: the plugin waits for it.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import signal
import socket
import sys
import time
from pathlib import Path

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
STATS_EVERY_S = 0.2
#: Receive buffer of each port's socket: a Python forwarder on a busy host can be off the CPU
#: for tens of milliseconds, and the default buffer (~200 KB, a few hundred small frames)
#: then overflows although the forwarder would keep up on average.
RCVBUF_BYTES = 8 * 1024 * 1024
#: Linux's option to set it above net.core.rmem_max as root; Python's socket does not name it.
SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)


def write_stats(path: Path, counters: dict[str, dict[str, int]]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"ready": True, "ports": counters}))
    os.replace(tmp, path)  # a reader never sees half a file


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="pyfwd-forwarder")
    parser.add_argument("--pair", nargs=2, action="append", required=True, metavar=("IF_A", "IF_B"))
    parser.add_argument("--stats", type=Path, required=True)
    parser.add_argument("--macswap", action="store_true", help="swap source and destination MAC")
    args = parser.parse_args(argv)

    peers: dict[str, str] = {}
    for a, b in args.pair:
        peers[a], peers[b] = b, a
    socks: dict[str, socket.socket] = {}
    for iface in peers:
        try:
            sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
            sock.bind((iface, 0))
        except OSError as exc:
            print(f"pyfwd: cannot open port {iface}: {exc.strerror or exc}", file=sys.stderr, flush=True)
            return 2
        try:
            sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, RCVBUF_BYTES)  # root
        except PermissionError:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF_BYTES)  # up to rmem_max
        sock.setblocking(False)
        socks[iface] = sock
    by_fd = {s.fileno(): iface for iface, s in socks.items()}
    counters = {iface: {"rx_frames": 0, "tx_frames": 0, "tx_errors": 0} for iface in socks}
    running = True

    def stop(*_args) -> None:
        nonlocal running
        running = False

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    write_stats(args.stats, counters)
    next_stats = time.monotonic() + STATS_EVERY_S
    poller = select.epoll()
    for sock in socks.values():
        poller.register(sock.fileno(), select.EPOLLIN)
    while running:
        for fd, _ in poller.poll(0.05):
            iface = by_fd[fd]
            out = socks[peers[iface]]
            for _ in range(256):  # a batch, then let the other ports have a turn
                try:
                    frame, addr = socks[iface].recvfrom(65535)
                except BlockingIOError:
                    break
                if addr[2] == PACKET_OUTGOING:
                    continue  # our own transmission, seen by the tap
                counters[iface]["rx_frames"] += 1
                if args.macswap:
                    frame = frame[6:12] + frame[0:6] + frame[12:]
                try:
                    out.send(frame)
                    counters[peers[iface]]["tx_frames"] += 1
                except OSError:
                    counters[peers[iface]]["tx_errors"] += 1
        if time.monotonic() >= next_stats:
            write_stats(args.stats, counters)
            next_stats = time.monotonic() + STATS_EVERY_S
    write_stats(args.stats, counters)
    return 0


if __name__ == "__main__":
    sys.exit(main())
