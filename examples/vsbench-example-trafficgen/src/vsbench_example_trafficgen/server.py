"""toygen-server: the generator itself, a separate process the plugin talks to over a socket.

    python -m vsbench_example_trafficgen.server --listen unix:/run/toygen.sock
    python -m vsbench_example_trafficgen.server --listen tcp:0.0.0.0:4501 --model-capacity-fps 1e6

In **testbed** mode it sends real frames on the interfaces it is configured with (it must
run in their network namespace: the plugin starts it there) through AF_PACKET sockets,
paced in 1 ms batches, and counts the marked frames arriving on the peer port. In **model**
mode it touches no interface: it models a device under test that forwards up to
``--model-capacity-fps`` frames/s (aggregate) and drops the rest -- the generator's own
fake, so the plugin is tested without root or a testbed. Either way a trial takes the time
it lasts, as a real generator's does.

One client at a time; the protocol is in :mod:`.protocol`. ``--port-file`` receives the TCP
port actually bound (``tcp:HOST:0``), for whoever started the server.
"""

from __future__ import annotations

import argparse
import os
import select
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

from vsbench_example_trafficgen import frames
from vsbench_example_trafficgen.protocol import PROTOCOL_VERSION, LineChannel, ProtocolError

#: What Python paces reliably on one core; asked for more, the server sends what it can
#: (and says so in its counters: the trial is then generator-limited, never DUT loss).
TESTBED_MAX_RATE_FPS = 100_000
MODEL_MAX_RATE_FPS = 10_000_000
BATCH_S = 0.001
ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4


class ServerError(Exception):
    """A request cannot be served; the message goes back to the client, one line."""


class Counter(threading.Thread):
    """Counts frames of the current trial arriving on one interface."""

    def __init__(self, iface: str) -> None:
        super().__init__(daemon=True)
        self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        self.sock.bind((iface, 0))
        self.sock.setblocking(False)
        self.expected = b""
        self.count = 0
        self.running = True

    def run(self) -> None:
        lo, hi = frames.MARKER_OFFSET, frames.MARKER_OFFSET + frames.MARKER_BYTES
        while self.running:
            ready, _, _ = select.select([self.sock], [], [], 0.05)
            if not ready:
                continue
            while True:
                try:
                    data, addr = self.sock.recvfrom(65535)
                except BlockingIOError:
                    break
                if addr[2] != PACKET_OUTGOING and data[lo:hi] == self.expected:
                    self.count += 1

    def expect(self, marker: bytes) -> None:
        self.expected, self.count = marker, 0

    def close(self) -> None:
        self.running = False
        self.join(timeout=1)
        self.sock.close()


class Generator:
    """The generator's state: configured ports and the trials it runs."""

    def __init__(self, model_capacity_fps: float | None) -> None:
        self.model_capacity_fps = model_capacity_fps
        self.config: dict[str, Any] | None = None
        self.tx_socks: list[socket.socket] = []
        self.counters: list[Counter] = []
        self.trials = 0

    @property
    def mode(self) -> str:
        return "testbed" if self.model_capacity_fps is None else "model"

    @property
    def max_rate_fps(self) -> int:
        return TESTBED_MAX_RATE_FPS if self.model_capacity_fps is None else MODEL_MAX_RATE_FPS

    def configure(self, request: dict[str, Any]) -> None:
        ports = request.get("ports") or []
        if len(ports) < 2:
            raise ServerError("configure needs two ports")
        self.release()
        if self.mode == "testbed":
            for port in ports[:2]:
                if not Path(f"/sys/class/net/{port['iface']}").exists():
                    raise ServerError(f"no interface {port['iface']} in this network namespace")
                tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
                tx.bind((port["iface"], 0))
                self.tx_socks.append(tx)
                counter = Counter(port["iface"])
                counter.start()
                self.counters.append(counter)
        self.config = request

    def trial(self, request: dict[str, Any]) -> dict[str, Any]:
        if self.config is None:
            raise ServerError("trial before configure")
        load, duration = float(request["load_fps"]), float(request["duration_s"])
        drain = float(request.get("drain_s", 0.5))
        if load < 0 or duration <= 0:
            raise ServerError(f"bad trial: {load} fps for {duration} s")
        self.trials += 1
        directions = [(0, 1), (1, 0)] if self.config.get("bidirectional", True) else [(0, 1)]
        per_direction = load / len(directions)
        if self.mode == "model":
            return self._modelled(directions, per_direction, duration)
        return self._sent(directions, per_direction, duration, drain)

    def _modelled(self, directions: list[tuple[int, int]], fps: float, duration: float) -> dict[str, Any]:
        time.sleep(duration)  # a trial takes its time, also in the model
        sent_fps = min(fps, self.max_rate_fps / len(directions))
        capacity = float(self.model_capacity_fps) / len(directions)
        out = []
        for tx_port, rx_port in directions:
            tx = int(round(sent_fps * duration))
            rx = tx if sent_fps <= capacity else int(round(capacity * duration))
            out.append({"tx_port": tx_port, "rx_port": rx_port, "tx_frames": tx, "rx_frames": rx})
        return {"directions": out, "tx_duration_s": duration}

    def _sent(self, directions: list[tuple[int, int]], fps: float, duration: float,
              drain: float) -> dict[str, Any]:
        cfg = self.config or {}
        ports, size = cfg["ports"], int(cfg.get("frame_size_bytes", 64))
        marker = frames.marker(self.trials)
        streams = []
        for tx_port, rx_port in directions:
            self.counters[rx_port].expect(marker)
            flow_frames = frames.flow_frames(ports, cfg.get("fields") or {}, int(cfg.get("flows", 1)), size,
                                             self.trials, reverse=tx_port == 1)
            streams.append((tx_port, flow_frames))
        sent = [0] * len(streams)
        total = int(round(fps * duration))
        start = time.monotonic()
        # 1 ms batches: each batch tops every direction up to what the schedule asks
        while True:
            elapsed = time.monotonic() - start
            if elapsed >= duration and all(n >= total for n in sent):
                break
            if elapsed >= duration * 1.5 + 0.5:
                break  # far behind: stop, and report what really went out
            due = min(total, int(fps * min(elapsed + BATCH_S, duration)))
            for i, (tx_port, flow_frames) in enumerate(streams):
                sock = self.tx_socks[tx_port]
                # never more than two batches at once: after a stall, catching up in one
                # burst would overrun the DUT's queues (loss that is the generator's fault);
                # falling behind instead shows in the counters as a generator-limited trial
                limit = sent[i] + max(1, int(2 * fps * BATCH_S))
                while sent[i] < min(due, limit):
                    sock.send(flow_frames[sent[i] % len(flow_frames)])
                    sent[i] += 1
            pause = start + elapsed + BATCH_S - time.monotonic()
            if pause > 0:
                time.sleep(pause)
        tx_duration = time.monotonic() - start
        time.sleep(drain)
        out = []
        for (tx_port, rx_port), n in zip(directions, sent):
            out.append({"tx_port": tx_port, "rx_port": rx_port, "tx_frames": n,
                        "rx_frames": self.counters[rx_port].count})
        return {"directions": out, "tx_duration_s": tx_duration}

    def release(self) -> None:
        for counter in self.counters:
            counter.close()
        for sock in self.tx_socks:
            sock.close()
        self.counters, self.tx_socks = [], []


def serve(channel: LineChannel, generator: Generator) -> None:
    """Answer one client's requests until it says bye or goes away."""
    while True:
        try:
            request = channel.receive()
        except (ProtocolError, OSError):
            return
        cmd = request.get("cmd")
        try:
            if cmd == "hello":
                reply = {"server": "toygen", "version": PROTOCOL_VERSION, "mode": generator.mode,
                         "max_rate_fps": generator.max_rate_fps}
            elif cmd == "configure":
                generator.configure(request)
                reply = {}
            elif cmd == "trial":
                reply = generator.trial(request)
            elif cmd == "bye":
                channel.send({"ok": True})
                return
            else:
                raise ServerError(f"unknown command {cmd!r}")
        except ServerError as exc:
            channel.send({"ok": False, "error": str(exc)})
            continue
        except (KeyError, TypeError, ValueError, OSError) as exc:
            channel.send({"ok": False, "error": f"{cmd}: {type(exc).__name__}: {exc}"})
            continue
        channel.send({"ok": True, **reply})


def listen(address: str) -> socket.socket:
    """``unix:PATH`` or ``tcp:HOST:PORT``."""
    kind, _, rest = address.partition(":")
    if kind == "unix":
        # bound and listening under a temporary name, then renamed: whoever waits for the
        # path never finds a socket that refuses connections
        path, tmp = Path(rest), Path(rest + ".tmp")
        path.unlink(missing_ok=True)
        tmp.unlink(missing_ok=True)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(str(tmp))
        sock.listen(1)
        os.replace(tmp, path)
        return sock
    if kind == "tcp":
        host, _, port = rest.rpartition(":")
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, int(port)))
        sock.listen(1)
        return sock
    raise SystemExit(f"toygen-server: --listen unix:PATH or tcp:HOST:PORT, not {address!r}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="toygen-server")
    parser.add_argument("--listen", required=True, help="unix:PATH or tcp:HOST:PORT")
    parser.add_argument("--port-file", type=Path, help="write the bound TCP port here")
    parser.add_argument("--model-capacity-fps", type=float,
                        help="model a DUT of this aggregate capacity instead of sending frames")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    server = listen(args.listen)
    if args.port_file is not None and server.family == socket.AF_INET:
        tmp = args.port_file.with_suffix(".tmp")
        tmp.write_text(str(server.getsockname()[1]))
        os.replace(tmp, args.port_file)  # atomic: the reader never sees half a number
    generator = Generator(args.model_capacity_fps)
    print(f"toygen-server: {generator.mode} mode, listening on {args.listen}", flush=True)
    try:
        while True:
            conn, _ = server.accept()
            channel = LineChannel(conn)
            try:
                serve(channel, generator)
            finally:
                channel.close()
                generator.release()
    finally:
        generator.release()
        server.close()
        if args.listen.startswith("unix:"):
            Path(args.listen[5:]).unlink(missing_ok=True)


if __name__ == "__main__":
    sys.exit(main())
