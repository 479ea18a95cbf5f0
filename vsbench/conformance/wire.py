"""Send marked frames on one interface and count them arriving on another (kit helper).

The conformance kit checks that a switch or VNF really forwards by running this module
inside the generator's network namespace (``ip netns exec NS python -m
vsbench.conformance.wire ...``): it opens a packet socket on the receiving interface
first, sends ``--count`` copies of the frame (``--frame``, hex, its last 8 bytes replaced
by a random marker so nothing else is counted) on the sending interface at ``--pps``, then counts
the marked frames that arrive until all did or ``--wait`` seconds passed. It prints one
JSON line ``{"sent": N, "received": M}``.

Packet sockets see frames before the testbed's ingress filter drops them, and frames sent
on the receiving interface itself are ignored.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import socket
import sys
import time

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4


#: Receive buffer per frame to count: a 64 B frame costs the socket ~1 KiB (its skb).
RCVBUF_PER_FRAME = 2048
#: setsockopt option that sets a receive buffer above net.core.rmem_max (CAP_NET_ADMIN);
#: Linux's value, which Python's socket module does not name.
SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)


def _hold_a_burst(sock: socket.socket, count: int) -> None:
    """Room in the receiving socket for every frame of the exchange. This process sends and
    counts in one loop: descheduled on a busy machine, it sends what it owes in one burst
    on its return, and the default buffer (~200 KiB, a few hundred frames) would drop part
    of it before a single recv, counted as the plugin's loss."""
    size = count * RCVBUF_PER_FRAME
    try:
        sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, size)  # root (CAP_NET_ADMIN)
    except OSError:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, size)  # capped at net.core.rmem_max


def exchange(send_iface: str, recv_iface: str, frame: bytes, count: int, pps: float, wait_s: float) -> dict:
    marker = os.urandom(8)
    # the marker replaces the frame's last 8 bytes, inside its L4 payload: a router forwards
    # only the IP packet's length, so anything appended past it would be cut off
    payload = frame[:-len(marker)] + marker if len(frame) >= 14 + 20 + 8 + len(marker) else frame + marker
    rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    _hold_a_burst(rx, count)
    rx.bind((recv_iface, 0))
    rx.setblocking(False)
    tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    tx.bind((send_iface, 0))
    received = 0

    def drain() -> None:
        nonlocal received
        while True:
            try:
                data, addr = rx.recvfrom(65535)
            except BlockingIOError:
                return
            if addr[2] != PACKET_OUTGOING and data.endswith(marker):
                received += 1

    interval = 1.0 / pps if pps > 0 else 0.0
    start = time.monotonic()
    sent = 0
    try:
        for i in range(count):
            due = start + i * interval
            while time.monotonic() < due:
                drain()
                time.sleep(min(0.001, max(0.0, due - time.monotonic())))
            tx.send(payload)
            sent += 1
        deadline = time.monotonic() + wait_s
        while received < sent and time.monotonic() < deadline:
            select.select([rx], [], [], 0.05)
            drain()
    finally:
        rx.close()
        tx.close()
    return {"sent": sent, "received": received}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vsbench.conformance.wire")
    parser.add_argument("--send-iface", required=True)
    parser.add_argument("--recv-iface", required=True)
    parser.add_argument("--frame", required=True, help="the frame, hex (without FCS)")
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--pps", type=float, default=5000.0)
    parser.add_argument("--wait", type=float, default=2.0, help="seconds to wait for stragglers")
    args = parser.parse_args(argv)
    try:
        result = exchange(args.send_iface, args.recv_iface, bytes.fromhex(args.frame), args.count,
                          args.pps, args.wait)
    except OSError as exc:
        print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}))
        return 1
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
