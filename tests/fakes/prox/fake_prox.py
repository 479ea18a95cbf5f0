#!/usr/bin/env python3
"""A stand-in for PROX that speaks its control protocol and models a device under test.

Run as its own process, like PROX: ``fake_prox.py -e -t -f gen.cfg [model options]``. It
listens on TCP (``-t``, port 8474 or ``--tcp-port``; 0 picks a free port, written to
``--port-file``) and/or a UNIX socket (``-u``, ``/tmp/prox.sock`` or ``--unix-path``).

Faithful to PROX where a client can tell:

* newline-terminated commands, matched by the longest registered command prefix;
* only query commands reply (one CSV line each, or the documented multi-line replies);
  unknown commands and bad arguments are silent (logged to stdout only);
* statistics are *published* once per ``--stats-interval`` (PROX: about 1 s): replies carry
  the last published sample and its TSC, never live counters; with ``-o none`` never after
  start-up (real PROX has no statistics consumer then and refreshes nothing);
* ``lat stats`` in the 7-, 9- or 12-field format (``--lat-format``), latencies in µs;
  ``lat all stats`` adds 128 ``Bucket [i]: n`` lines (buckets of ``2**bucket`` TSC cycles);
* ``speed`` is a percent of 10 Gb/s per core, float32, 0..1000 (out of range: ignored, the
  old rate stays); the generator charges ``max(pkt_size,60)+24`` wire bytes per packet;
* a command takes effect when it arrived (on TCP, the kernel's receive timestamp), not when
  this process got round to it: PROX's control loop answers in microseconds, while a Python
  process on a busy 2-core host can be descheduled for a millisecond -- 0.4 % of a 0.25 s
  trial, which a late ``start`` would turn into a generator that fell short.

The modelled DUT: frames sent on port p arrive on its peer (0<->1, 2<->3); up to
``--dut-capacity-fps`` (aggregate over all ports) are forwarded, the excess is lost. Latency
is ``--dut-latency-ns`` plus queueing growing with load, capped by ``--dut-buffer-ns``. A
generator core sends at most ``--gen-core-max-fps`` and a port at most its line rate
(``--link-gbps``). ``--no-replies`` makes it accept connections and never answer.

Standard library only, so it runs with any python3.
"""

from __future__ import annotations

import argparse
import os
import re
import selectors
import socket
import struct
import sys
import time
from dataclasses import dataclass, field

SPEED_UNIT = 12_500_000  # bytes/s per percent
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)  # Linux; Python does not export it
LAT_BUCKETS = 128


def log(msg: str) -> None:
    print(f"{time.monotonic():.3f} {msg}", flush=True)


def wire_bytes(pkt_size: int) -> int:
    return max(pkt_size, 60) + 4 + 20


def float32(x: float) -> float:
    return struct.unpack("f", struct.pack("f", x))[0]


def parse_list(text: str) -> list[int] | None:
    """PROX core/port lists: ``1``, ``1,3``, ``2-4``, ``all`` (None) ."""
    out: list[int] = []
    for part in text.split(","):
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part.strip())
        if not m:
            raise ValueError(part)
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        out.extend(range(lo, hi + 1))
    return out


# ----------------------------------------------------------------------------- config


@dataclass
class Gen:
    core: int
    port: int
    running: bool = False
    speed: float = 0.0
    pkt_size: int = 60
    values: dict = field(default_factory=dict)
    randoms: dict = field(default_factory=dict)
    tx: float = 0.0  # since reset

    @property
    def flows(self) -> int:
        return 2 ** sum(m.count("X") for m in self.randoms.values())


@dataclass
class Lat:
    core: int
    port: int
    running: bool = False
    rx: float = 0.0
    # interval accumulation (current, unpublished)
    n: float = 0.0
    sum_ns: float = 0.0
    min_ns: float | None = None
    max_ns: float | None = None
    buckets: list = field(default_factory=lambda: [0.0] * LAT_BUCKETS)
    tot_min_ns: float | None = None
    tot_max_ns: float | None = None
    tot_received: float = 0.0  # latency packets since 'reset lat stats'
    tot_measured: float = 0.0  # of which within the accuracy limit


@dataclass
class Port:
    tx: float = 0.0
    rx: float = 0.0
    errors: float = 0.0
    no_mbufs: float = 0.0


def read_layout(path: str | None) -> tuple[dict[int, Gen], dict[int, Lat], int, set[int]]:
    """Generator/latency cores and the bucket size from a PROX config (INI-like)."""
    gens: dict[int, Gen] = {}
    lats: dict[int, Lat] = {}
    bucket = 11
    if not path:
        gens = {1: Gen(1, 0), 2: Gen(2, 1)}
        lats = {3: Lat(3, 0), 4: Lat(4, 1)}
        return gens, lats, bucket, {0, 1}
    port_names: dict[str, int] = {}
    sections: list[tuple[str, dict[str, str]]] = []
    current: dict[str, str] | None = None
    with open(path, encoding="utf-8") as f:
        for raw in f:
            line = raw.split(";", 1)[0].strip()
            if not line:
                continue
            m = re.fullmatch(r"\[(.+)\]", line)
            if m:
                current = {}
                sections.append((m.group(1).strip(), current))
                continue
            if current is not None and "=" in line:
                k, v = line.split("=", 1)
                current[k.strip()] = v.strip()
    for name, kv in sections:
        m = re.fullmatch(r"port (\d+)", name)
        if m:
            port_names[kv.get("name", f"p{m.group(1)}")] = int(m.group(1))
    for name, kv in sections:
        m = re.fullmatch(r"core (.+)", name)
        if not m:
            continue
        cores = parse_list(m.group(1)) or []
        mode = kv.get("mode")
        for core in cores:
            if mode == "gen":
                gens[core] = Gen(core, port_names[kv["tx port"]])
            elif mode == "lat":
                lats[core] = Lat(core, port_names[kv["rx port"]])
                bucket = int(kv.get("latency bucket size", bucket))
    return gens, lats, bucket, set(port_names.values())


# ----------------------------------------------------------------------------- model


class Model:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.gens, self.lats, self.bucket_exp, port_ids = read_layout(args.f)
        self.ports = {p: Port() for p in port_ids}
        self.hz = int(args.tsc_hz)
        self.t0 = time.monotonic()
        self.last = self.t0
        #: When the command being handled arrived (monotonic), None between commands.
        self.arrived_at: float | None = None
        self.published: dict = {}
        self.publish()

    def tsc(self, t: float | None = None) -> int:
        return int(((t if t is not None else time.monotonic()) - self.t0) * self.hz) + 10**9

    def peer(self, port: int) -> int:
        return port ^ 1

    def gen_fps(self, g: Gen) -> float:
        if not g.running:
            return 0.0
        fps = g.speed * SPEED_UNIT / wire_bytes(g.pkt_size)
        if self.args.gen_core_max_fps:
            fps = min(fps, self.args.gen_core_max_fps)
        return fps

    def port_tx_fps(self) -> dict[int, dict[int, float]]:
        """Per port, per generator core, the frames/s actually sent (line-rate capped)."""
        out: dict[int, dict[int, float]] = {p: {} for p in self.ports}
        for g in self.gens.values():
            out.setdefault(g.port, {})[g.core] = self.gen_fps(g)
        line_bps = self.args.link_gbps * 1e9 / 8
        for p, cores in out.items():
            total_bytes = sum(f * wire_bytes(self.gens[c].pkt_size) for c, f in cores.items())
            if total_bytes > line_bps:
                scale = line_bps / total_bytes
                for c in cores:
                    cores[c] *= scale
        return out

    def latency_ns(self, load_ratio: float) -> tuple[float, float, float]:
        base, buf = self.args.dut_latency_ns, self.args.dut_buffer_ns
        if load_ratio < 1.0:
            avg = min(base + base * 0.5 * load_ratio / (1.0 - load_ratio), base + buf)
        else:
            avg = base + buf
        lo = base * 0.8
        return lo, avg, 2 * avg - lo

    def advance(self) -> None:
        """Integrate counters from the last call to now (or to the arrival of the command
        being handled) at the current rates."""
        now = time.monotonic() if self.arrived_at is None else max(self.last, self.arrived_at)
        dt = now - self.last
        self.last = now
        if dt <= 0:
            return
        tx = self.port_tx_fps()
        offered = sum(sum(c.values()) for c in tx.values())
        cap = self.args.dut_capacity_fps
        fwd = min(1.0, cap / offered) if offered > 0 else 1.0
        lo, avg, hi = self.latency_ns(offered / cap if cap > 0 else 0.0)
        width_ns = (2**self.bucket_exp) * 1e9 / self.hz
        for p, cores in tx.items():
            sent = sum(cores.values()) * dt
            self.ports[p].tx += sent
            for core, fps in cores.items():
                self.gens[core].tx += fps * dt
            q = self.peer(p)
            if q not in self.ports or sent <= 0:
                continue
            arrived = sent * fwd
            receivers = [l for l in self.lats.values() if l.port == q and l.running]
            if not receivers:
                self.ports[q].errors += arrived  # nobody polls the queue: imissed
                continue
            self.ports[q].rx += arrived
            share = arrived / len(receivers)
            measured = share * (1.0 - self.args.lat_unmeasured_share)
            for l in receivers:
                l.rx += share
                l.tot_received += share
                l.tot_measured += measured
                if measured <= 0:
                    continue  # PROX: received, transmit time not vouched for, not measured
                l.n += measured
                l.sum_ns += avg * measured
                l.min_ns = lo if l.min_ns is None else min(l.min_ns, lo)
                l.max_ns = hi if l.max_ns is None else max(l.max_ns, hi)
                l.tot_min_ns = lo if l.tot_min_ns is None else min(l.tot_min_ns, lo)
                l.tot_max_ns = hi if l.tot_max_ns is None else max(l.tot_max_ns, hi)
                first, last = int(lo / width_ns), int(hi / width_ns)
                span = [min(i, LAT_BUCKETS - 1) for i in range(first, last + 1)]
                for i in span:
                    l.buckets[i] += measured / len(span)

    def publish(self) -> None:
        """Take the stats sample that replies report until the next one."""
        self.advance()
        tsc = self.tsc()
        prev = self.published
        ports = {}
        for p, st in self.ports.items():
            old = prev.get("ports", {}).get(p, {"tx": 0, "rx": 0, "errors": 0, "no_mbufs": 0,
                                                  "rx_bytes": 0, "tx_bytes": 0, "tsc": tsc})
            ports[p] = {"tx": int(st.tx), "rx": int(st.rx), "errors": int(st.errors),
                        "no_mbufs": int(st.no_mbufs), "tsc": tsc, "prev_tsc": old["tsc"],
                        "prev": old}
        lats = {}
        for core, l in self.lats.items():
            n = l.n
            lats[core] = {
                "min": (l.min_ns or 0.0) if n else 0.0,
                "max": (l.max_ns or 0.0) if n else 0.0,
                "avg": l.sum_ns / n if n else 0.0,
                "tot_min": l.tot_min_ns or 0.0,
                "tot_max": l.tot_max_ns or 0.0,
                "buckets": [int(round(b)) for b in l.buckets],
                "rx": int(l.rx),
                "tot_received": int(l.tot_received),
                "tot_measured": int(l.tot_measured),
            }
            l.n, l.sum_ns, l.min_ns, l.max_ns = 0.0, 0.0, None, None
            l.buckets = [0.0] * LAT_BUCKETS
        self.published = {
            "tsc": tsc,
            "ports": ports,
            "lats": lats,
            "tot_rx": int(sum(l.rx for l in self.lats.values())),
            "tot_tx": int(sum(g.tx for g in self.gens.values())),
        }

    def reset_stats(self) -> None:
        self.advance()
        for st in self.ports.values():
            st.tx = st.rx = st.errors = st.no_mbufs = 0.0
        for g in self.gens.values():
            g.tx = 0.0
        for l in self.lats.values():
            l.rx = 0.0
            l.tot_min_ns = l.tot_max_ns = None

    def reset_lat(self) -> None:
        self.advance()
        for l in self.lats.values():
            l.tot_min_ns = l.tot_max_ns = None
            l.tot_received = l.tot_measured = 0.0


# ----------------------------------------------------------------------------- commands


class Silent(Exception):
    """Bad syntax or an invalid target: PROX logs and replies nothing."""


class Server:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.model = Model(args)
        self.quit = False
        # longest prefix wins, as in PROX's cmd_parser
        self.table = {
            "start": self.c_start, "stop": self.c_stop, "speed": self.c_speed,
            "pkt_size": self.c_pkt_size, "set value": self.c_set_value,
            "set random": self.c_set_random, "reset values all": self.c_reset_values,
            "reset randoms all": self.c_reset_randoms, "reset stats": self.c_reset_stats,
            "reset lat stats": self.c_reset_lat, "tot stats": self.c_tot_stats,
            "tot ierrors tot": self.c_tot_ierrors, "port_stats": self.c_port_stats,
            "multi port stats": self.c_multi_port_stats, "lat stats": self.c_lat_stats,
            "core stats": self.c_core_stats, "quit": self.c_quit, "quit_force": self.c_quit,
            "stats": self.c_stats,
        }
        if args.lat_format != 7:
            self.table["lat all stats"] = self.c_lat_all_stats
            self.table["version"] = self.c_version

    def handle(self, line: str) -> list[str]:
        line = line.strip()
        log(f"cmd: {line}")
        if self.args.no_replies:
            return []
        best = None
        for name in self.table:
            if (line == name or line.startswith(name + " ")) and (best is None or len(name) > len(best)):
                best = name
        if best is None:
            log(f"Unknown command: {line}")
            return []
        try:
            return self.table[best](line[len(best):].strip())
        except (Silent, ValueError, IndexError, KeyError) as exc:
            log(f"Invalid syntax or target in '{line}': {exc}")
            return []

    # -- helpers
    def cores_task(self, arg: str, n_extra: int) -> tuple[list[int], int, list[str]]:
        parts = arg.split()
        if len(parts) != 2 + n_extra:
            raise Silent("argument count")
        cores = parse_list(parts[0])
        return cores, int(parts[1]), parts[2:]

    def gen_targets(self, cores: list[int], task: int) -> list[Gen]:
        bad = [c for c in cores if c not in self.model.gens and c not in self.model.lats]
        if bad or task != 0:
            raise Silent(f"invalid core/task {cores} {task}")
        out = []
        for c in cores:
            if c in self.model.gens:
                out.append(self.model.gens[c])
            else:
                log(f"Core {c} task {task} is not generating packets")
        return out

    # -- actions (no reply)
    def _set_running(self, arg: str, running: bool) -> list[str]:
        parts = arg.split()
        if not parts:
            raise Silent("no cores")
        cores = list(self.model.gens) + list(self.model.lats) if parts[0] == "all" else parse_list(parts[0])
        self.model.advance()
        for c in cores:
            target = self.model.gens.get(c) or self.model.lats.get(c)
            if target is None:
                log(f"Invalid core id {c} (lcore is not active)")
                continue
            target.running = running
        return []

    def c_start(self, arg: str) -> list[str]:
        return self._set_running(arg, True)

    def c_stop(self, arg: str) -> list[str]:
        return self._set_running(arg, False)

    def c_speed(self, arg: str) -> list[str]:
        cores, task, (value,) = self.cores_task(arg, 1)
        speed = float32(float(value))
        gens = self.gen_targets(cores, task)
        if speed > 1000.0 or speed < 0.0:
            log("Speed out of range (must be betweeen 0% and 1000%)")
            return []
        self.model.advance()
        for g in gens:
            g.speed = speed
        return []

    def c_pkt_size(self, arg: str) -> list[str]:
        cores, task, (value,) = self.cores_task(arg, 1)
        size = int(value)
        gens = self.gen_targets(cores, task)
        if not 1 <= size <= 9600:
            log(f"invalid packet size {size}")
            return []
        self.model.advance()
        for g in gens:
            g.pkt_size = size
        return []

    def c_set_value(self, arg: str) -> list[str]:
        cores, task, (offset, value, length) = self.cores_task(arg, 3)
        if not 1 <= int(length) <= 4 or int(value) >= 2 ** (8 * int(length)):
            raise Silent("bad value/length")
        for g in self.gen_targets(cores, task):
            g.values[int(offset)] = (int(value), int(length))
        return []

    def c_set_random(self, arg: str) -> list[str]:
        cores, task, (offset, mask, length) = self.cores_task(arg, 3)
        if len(mask) != int(length) * 8 or set(mask) - set("01X"):
            raise Silent("bad random mask")
        for g in self.gen_targets(cores, task):
            g.randoms[int(offset)] = mask
        return []

    def c_reset_values(self, arg: str) -> list[str]:
        for g in self.model.gens.values():
            g.values.clear()
        return []

    def c_reset_randoms(self, arg: str) -> list[str]:
        for g in self.model.gens.values():
            g.randoms.clear()
        return []

    def c_reset_stats(self, arg: str) -> list[str]:
        if arg:
            raise Silent("extra args")
        self.model.reset_stats()
        return []

    def c_reset_lat(self, arg: str) -> list[str]:
        if arg:
            raise Silent("extra args")
        self.model.reset_lat()
        return []

    def c_quit(self, arg: str) -> list[str]:
        self.quit = True
        return []

    # -- queries
    def c_tot_stats(self, arg: str) -> list[str]:
        if arg:
            raise Silent("extra args")
        p = self.model.published
        return [f"{p['tot_rx']},{p['tot_tx']},{p['tsc']},{self.model.hz}"]

    def c_tot_ierrors(self, arg: str) -> list[str]:
        p = self.model.published
        errors = sum(s["errors"] for s in p["ports"].values())
        return [f"{errors},{p['tsc']},{self.model.hz}"]

    def c_port_stats(self, arg: str) -> list[str]:
        port = int(arg)
        s = self.model.published["ports"].get(port)
        if s is None:
            log(f"Invalid port {port}")
            return []
        old = s["prev"]
        size = 64
        fields = [
            s["no_mbufs"] - old["no_mbufs"], s["errors"] - old["errors"],
            (s["rx"] - old["rx"]) * size, (s["tx"] - old["tx"]) * size,
            s["rx"] - old["rx"], s["tx"] - old["tx"], s["rx"], s["tx"],
            s["no_mbufs"], s["errors"], s["tsc"], s["prev_tsc"],
        ]
        return [",".join(str(int(v)) for v in fields)]

    def c_multi_port_stats(self, arg: str) -> list[str]:
        out = []
        for port in parse_list(arg):
            s = self.model.published["ports"].get(port)
            if s is None:
                log(f"Invalid port {port}")
                return []
            out.append(f"{port},{s['rx']},{s['tx']},{s['no_mbufs']},{s['errors']},{s['tsc']}")
        return [";".join(out)]

    def _lat_lines(self, arg: str, with_buckets: bool) -> list[str]:
        parts = arg.split()
        if len(parts) != 2:
            return ["error: invalid syntax"]
        cores, tasks = parse_list(parts[0]), parse_list(parts[1])
        out = []
        p = self.model.published
        for core in cores:
            for task in tasks:
                if core not in self.model.lats and core not in self.model.gens or task != 0:
                    out.append(f"error: invalid core {core}, task {task}")
                    continue
                if core not in self.model.lats:
                    out.append(f"error: core {core} task {task} is not measuring latency")
                    continue
                s = p["lats"][core]
                us = [int(s[k] // 1000) for k in ("min", "max", "avg", "tot_min", "tot_max")]
                fields = [*us, p["tsc"], self.model.hz]
                if self.args.lat_format >= 9:
                    fields += [core, task]
                if self.args.lat_format >= 12:
                    fields += [0, 0, 0]  # mis_ordered, extent, duplicate
                out.append(",".join(str(v) for v in fields))
                if with_buckets:
                    out.extend(f"Bucket [{i}]: {n}" for i, n in enumerate(s["buckets"]))
        return out

    def c_lat_stats(self, arg: str) -> list[str]:
        return self._lat_lines(arg, False)

    def c_lat_all_stats(self, arg: str) -> list[str]:
        return self._lat_lines(arg, True)

    def c_stats(self, arg: str) -> list[str]:
        """PROX's stats parser, for the latency task counters: ``latency(i).tot.total`` and
        ``.tot.used`` of the i-th latency task (cores in order), PROX's -1 (2**64-1) before
        it received a packet or beyond the last task; any other path reads 0."""
        lats = [self.model.lats[c] for c in sorted(self.model.lats)]
        published = self.model.published.get("lats", {})
        values = []
        for path in arg.split(","):
            match = re.fullmatch(r"latency\((\d+)\)\.tot\.(used|total)", path.strip())
            if match is None:
                values.append(0)
                continue
            index = int(match.group(1))
            counts = published.get(lats[index].core) if index < len(lats) else None
            if not counts or not counts["tot_received"]:
                values.append(2**64 - 1)
            else:
                values.append(counts["tot_measured" if match.group(2) == "used" else "tot_received"])
        return [",".join(str(v) for v in values)]

    def c_core_stats(self, arg: str) -> list[str]:
        cores, task, _ = self.cores_task(arg, 0)
        p = self.model.published
        out = []
        for c in cores:
            g, l = self.model.gens.get(c), self.model.lats.get(c)
            if g is None and l is None:
                raise Silent(f"invalid core {c}")
            rx = p["lats"][c]["rx"] if l else 0
            tx = int(g.tx) if g else 0
            out.append(f"{rx},{tx},0,{p['tsc']},{self.model.hz}")
        return out

    def c_version(self, arg: str) -> list[str]:
        # upstream version.h: MAJOR 0, MINOR 2212 (overflowing its byte), REV 0; DPDK 22.11.11
        return [f"{2212 << 16},{(22 << 24) + (11 << 16) + (11 << 8) + 99}"]


# ----------------------------------------------------------------------------- server loop


def arrival_time(ancillary: list) -> float | None:
    """The kernel's receive time of the data (SCM_TIMESTAMPNS, wall clock) on the monotonic
    clock; None without one (a UNIX socket)."""
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(data) >= 16:
            sec, nsec = struct.unpack("qq", data[:16])
            return time.monotonic() - (time.time() - (sec + nsec / 1e9))
    return None


def serve(args: argparse.Namespace) -> int:
    server = Server(args)
    sel = selectors.DefaultSelector()
    listeners = []
    if args.t:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", args.tcp_port))
        s.listen(8)
        listeners.append(s)
        if args.port_file:
            tmp = args.port_file + ".tmp"
            with open(tmp, "w") as f:
                f.write(str(s.getsockname()[1]))
            os.replace(tmp, args.port_file)
        log(f"listening on TCP 127.0.0.1:{s.getsockname()[1]}")
    if args.u:
        if os.path.exists(args.unix_path):
            os.unlink(args.unix_path)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        # bound under a temporary name and renamed once listening: a client that sees the
        # path may connect at once (binding creates the file before listen() accepts)
        staging = f"{args.unix_path}.{os.getpid()}"
        s.bind(staging)
        s.listen(8)
        os.rename(staging, args.unix_path)
        listeners.append(s)
        log(f"listening on UNIX {args.unix_path}")
    for s in listeners:
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ, "listen")
    buffers: dict[socket.socket, bytes] = {}
    next_sample = time.monotonic() + args.stats_interval
    try:
        while not server.quit:
            timeout = max(0.0, next_sample - time.monotonic())
            for key, _ in sel.select(timeout):
                sock = key.fileobj
                if key.data == "listen":
                    conn, _ = sock.accept()
                    if len(buffers) >= 32:
                        conn.close()
                        continue
                    conn.setblocking(False)
                    if conn.family != socket.AF_UNIX:
                        conn.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
                    buffers[conn] = b""
                    sel.register(conn, selectors.EVENT_READ, "client")
                    continue
                try:
                    data, ancillary, _, _ = sock.recvmsg(65536, socket.CMSG_SPACE(16))
                except OSError:
                    data, ancillary = b"", []
                server.model.arrived_at = arrival_time(ancillary)
                if not data:
                    sel.unregister(sock)
                    buffers.pop(sock, None)
                    sock.close()
                    continue
                buffers[sock] += data
                while b"\n" in buffers[sock]:
                    raw, buffers[sock] = buffers[sock].split(b"\n", 1)
                    reply = server.handle(raw.decode("ascii", "replace").rstrip("\r"))
                    if reply:
                        sock.setblocking(True)
                        sock.sendall(("\n".join(reply) + "\n").encode())
                        sock.setblocking(False)
                    if server.quit:
                        break
                server.model.arrived_at = None
            if time.monotonic() >= next_sample:
                if args.o != "none":  # PROX: -o none has no stats consumer, nothing refreshes
                    server.model.publish()
                next_sample += args.stats_interval
                if next_sample < time.monotonic():
                    next_sample = time.monotonic() + args.stats_interval
    finally:
        for s in list(buffers) + listeners:
            s.close()
        if args.u and os.path.exists(args.unix_path):
            os.unlink(args.unix_path)
    log("quit")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-f", help="PROX configuration file")
    p.add_argument("-e", action="store_true", help="do not autostart cores (accepted)")
    p.add_argument("-t", action="store_true", help="listen on TCP")
    p.add_argument("-u", action="store_true", help="listen on a UNIX socket")
    p.add_argument("-o", default="curses", choices=("curses", "cli", "none"),
                   help="display; none: statistics are never published after start-up, as in PROX")
    p.add_argument("-l", dest="log_file", help="PROX's own log file (accepted; PROX writes ./prox.log without it)")
    p.add_argument("--tcp-port", type=int, default=8474)
    p.add_argument("--unix-path", default="/tmp/prox.sock")
    p.add_argument("--port-file")
    p.add_argument("--stats-interval", type=float, default=1.0)
    p.add_argument("--lat-format", type=int, choices=(7, 9, 12), default=12)
    p.add_argument("--tsc-hz", type=float, default=2.0e9)
    p.add_argument("--dut-capacity-fps", type=float, default=1.0e6)
    p.add_argument("--dut-latency-ns", type=float, default=10_000.0)
    p.add_argument("--dut-buffer-ns", type=float, default=200_000.0)
    p.add_argument("--gen-core-max-fps", type=float, default=0.0)
    p.add_argument("--link-gbps", type=float, default=10.0)
    p.add_argument("--no-replies", action="store_true")
    p.add_argument("--lat-unmeasured-share", type=float, default=0.0,
                   help="share of latency packets received but not measured (beyond the accuracy limit)")
    args = p.parse_args(argv)
    if not (args.t or args.u):
        p.error("give -t and/or -u")
    return serve(args)


if __name__ == "__main__":
    sys.exit(main())
