"""vsbench's own paced senders, built on first use: engine ``pacer`` (``csrc/vsbench_pacer.c``)
and engine ``xdp`` (``csrc/vsbench_xdpgen.c``, the same protocol, the frames sent from an XDP
program the kernel runs in "live frames" mode).

Why a sender of our own: trafgen paces only through a tbf shaper (:mod:`.shaper`), whose
qdisc and timer cost per frame halve what one core sends on this kind of VM, and whose
bucket lets any short window carry more or less than the nominal rate. The pacer sends
frame ``j`` of a trial at ``t0 + j / rate`` by its own clock, through a packet socket
with ``PACKET_QDISC_BYPASS`` (a TX ring by default), and reports how exact it was: the
largest deviation of any 10 ms window from the nominal rate, the most frames in any 1 ms.

The xdp sender goes further: the whole trial is one ``BPF_PROG_TEST_RUN`` in which the
kernel runs a small XDP program (assembled by the sender) over and over; the program sends
frame ``j`` once it is due and drops the run's frame before, so no system call, socket
buffer or user-space copy is paid per frame and no other task preempts the sender between
frames. Both read the same configuration and print the same summary
(``csrc/vsbench_streams.h``).

This module is the Python side: compiling a sender once per source version into a cache
directory (a C compiler and libc headers are the only build dependencies), the
configuration file the senders read, their command lines and the summary they print. Pure
except :func:`ensure_built` and :func:`probe_xdp`. Imports nothing from vsbench but the
plugin contract.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

from vsbench.interfaces.traffic import FlowFields, PacingStats

CSRC = Path(__file__).resolve().parent / "csrc"
CFLAGS = ("-O2", "-Wall", "-Wextra", "-std=gnu11")


@dataclass(frozen=True)
class Sender:
    """One of the C senders: its executable's name, its source and what it links."""

    name: str
    source: Path
    libs: tuple[str, ...] = ()


PACER = Sender("vsbench-pacer", CSRC / "vsbench_pacer.c")
XDPGEN = Sender("vsbench-xdpgen", CSRC / "vsbench_xdpgen.c", ("-pthread",))
SOURCE = PACER.source
#: What every sender includes (part of each one's source version).
HEADERS = (CSRC / "vsbench_streams.h",)
#: Where built senders are kept (one file per source version), unless
#: ``VSBENCH_CACHE_DIR`` says otherwise.
DEFAULT_CACHE_DIR = Path("/var/cache/vsbench")
#: Line the sender prints once its sockets are ready (it then waits for one on stdin).
READY_MARK = "ready"
RUNNING_MARK = "running"
TX_MODES = ("ring", "mmsg")
#: Exit status when SIGTERM stopped it before every frame was handed over.
EXIT_STOPPED = 3
#: Pacing is judged on the trial's consecutive windows of this length (the sender counts in
#: 100 us bins).
WINDOW_S = 0.010
BURST_WINDOW_S = 0.001


class PacerBuildError(RuntimeError):
    """The sender could not be compiled; one line saying why and how to fix it."""


def compiler() -> str | None:
    for name in ("cc", "gcc"):
        found = shutil.which(name)
        if found:
            return found
    return None


def cache_dir() -> Path:
    configured = os.environ.get("VSBENCH_CACHE_DIR")
    return Path(configured) if configured else DEFAULT_CACHE_DIR


def source_digest(sender: Sender = PACER) -> str:
    """The sender's source version: its source, the shared headers and how it is built."""
    h = hashlib.sha256(sender.source.read_bytes())
    for header in HEADERS:
        h.update(header.read_bytes())
    h.update(" ".join(CFLAGS + sender.libs).encode())
    return h.hexdigest()[:16]


def binary_path(directory: Path | None = None, sender: Sender = PACER) -> Path:
    return (directory or cache_dir()) / f"{sender.name}-{source_digest(sender)}"


def ensure_built(directory: Path | None = None, sender: Sender = PACER) -> Path:
    """The sender's executable for this source version, compiled now if not cached.

    Compiled into a temporary file in the cache directory and renamed into place, so two
    runs building at once both end with a whole binary."""
    target = binary_path(directory, sender)
    if target.is_file() and os.access(target, os.X_OK):
        return target
    what = sender.name.replace("vsbench-", "")
    cc = compiler()
    if cc is None:
        raise PacerBuildError(f"no C compiler to build the {what} sender (apt-get install gcc libc6-dev)")
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{sender.name}-", dir=target.parent)
    os.close(fd)
    try:
        proc = subprocess.run([cc, *CFLAGS, "-o", tmp, str(sender.source), *sender.libs], capture_output=True,
                              text=True, timeout=120, check=False)
        if proc.returncode != 0:
            first = (proc.stderr.strip().splitlines() or ["no output"])[0]
            hint = " (apt-get install libc6-dev)" if "No such file" in proc.stderr else ""
            raise PacerBuildError(f"cannot build the {what} sender with {cc}: {first}{hint}")
        os.chmod(tmp, 0o755)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


# -- what the sender sends -----------------------------------------------------------------


@dataclass(frozen=True)
class CounterField:
    """One varying field: ``width`` bytes at ``offset`` carry ``base + (k mod period)``."""

    offset: int
    width: int
    base: int
    period: int


def field_offsets(ip_offset: int) -> dict[str, tuple[int, int]]:
    """(offset, width) of the varying part of each flow field (a MAC's last 4 bytes)."""
    return {
        "dst_mac": (2, 4),
        "src_mac": (8, 4),
        "src_ip": (ip_offset + 12, 4),
        "dst_ip": (ip_offset + 16, 4),
        "src_port": (ip_offset + 20, 2),
        "dst_port": (ip_offset + 22, 2),
    }


def counter_fields(fields: FlowFields, plan: Any, ip_offset: int) -> list[CounterField]:
    """The counters of a :class:`~.flows.FlowPlan`: the same lock-step scheme as trafgen's."""
    from vsbench_plugins.trafficgen.trafgen.flows import base_value

    offsets = field_offsets(ip_offset)
    out = []
    for name, period in plan.periods:
        if period > 1:
            offset, width = offsets[name]
            out.append(CounterField(offset, width, base_value(fields, name), int(period)))
    return out


@dataclass(frozen=True)
class StreamSpec:
    """What the sender sends out of one port."""

    iface: str
    frame: bytes
    ip_offset: int
    counters: tuple[CounterField, ...] = ()
    #: Consecutive frames of one flow (the burst pattern): frame k's counters are those of
    #: frame ``k // run`` of the scatter pattern.
    run: int = 1
    #: A frame mix: frame k is ``sizes[k % len(sizes)]`` bytes long (no FCS), ``frame``
    #: cut to that length with its IPv4 and UDP lengths and checksums set; () : ``frame``.
    sizes: tuple[int, ...] = ()


#: Streams one sender takes (``MAX_STREAMS`` of ``csrc/vsbench_streams.h``).
MAX_STREAMS = 128
#: Frames in one cycle of a stream's frame mix (``MAX_SIZES`` there).
MAX_SIZES = 64


def render_config(streams: Sequence[StreamSpec], comment: str = "") -> str:
    """The configuration file of :data:`SOURCE`'s sender (one ``stream`` block per stream;
    several may leave one port)."""
    if not 1 <= len(streams) <= MAX_STREAMS:
        raise ValueError(f"the senders send 1 to {MAX_STREAMS} streams, not {len(streams)}")
    lines = [f"# {line}" for line in comment.splitlines()]
    for st in streams:
        lines += [f"stream {st.iface}", f"frame {st.frame.hex()}", f"ip {st.ip_offset}"]
        lines += [f"field {c.offset} {c.width} {c.base} {c.period}" for c in st.counters]
        if int(st.run) > 1:
            lines.append(f"run {int(st.run)}")
        if st.sizes:
            if len(st.sizes) > MAX_SIZES or max(st.sizes) > len(st.frame):
                raise ValueError(f"a stream's sizes: at most {MAX_SIZES}, none longer than its frame")
            lines.append("sizes " + " ".join(str(int(n)) for n in st.sizes))
    return "\n".join(lines) + "\n"


def argv(binary: str, config_path: str, frames_per_stream: int, rate_fps: float | None, *,
         cpu: int | None, tx: str = "ring", batch: int = 32, ring_slots: int = 1024,
         fifo_priority: int = 0, yield_period_us: int = 0, yield_us: int = 0, catchup_share: float = 0.0,
         wait_for_go: bool = True) -> list[str]:
    """The sender's command line: ``frames_per_stream`` per port at aggregate ``rate_fps``
    (None: as fast as it can); behind schedule it catches up at most ``1 + catchup_share``
    times the rate (0: as fast as it can)."""
    if frames_per_stream < 1:
        raise ValueError("the pacer needs at least one frame per stream")
    if tx not in TX_MODES:
        raise ValueError(f"pacer tx must be one of {', '.join(TX_MODES)}")
    out = [binary, "-c", config_path, "-n", str(int(frames_per_stream)),
           "-r", repr(float(rate_fps)) if rate_fps else "0", "-t", tx, "-b", str(int(batch)),
           "-R", str(int(ring_slots))]
    if cpu is not None:
        out += ["-C", str(int(cpu))]
    if fifo_priority:
        out += ["-P", str(int(fifo_priority))]
        if yield_period_us and yield_us:
            out += ["-Y", f"{int(yield_period_us)},{int(yield_us)}"]
    if catchup_share and rate_fps:
        out += ["-K", repr(float(catchup_share))]
    if wait_for_go:
        out.append("-w")
    return out


def xdp_argv(binary: str, config_path: str, frames_per_stream: int, rate_fps: float | None, *,
             cpu: int | None, batch: int = 16, nice: int = 0, catchup_share: float = 0.0,
             wait_for_go: bool = True) -> list[str]:
    """The xdp sender's command line (the pacer's protocol): ``frames_per_stream`` per port
    at aggregate ``rate_fps`` (None: as fast as it can), ``batch`` frames between the
    kernel's transmit flushes, at niceness ``nice``; behind schedule it catches up at most
    ``1 + catchup_share`` times the rate (0: as fast as it can)."""
    if frames_per_stream < 1:
        raise ValueError("the xdp sender needs at least one frame per stream")
    out = [binary, "-c", config_path, "-n", str(int(frames_per_stream)),
           "-r", repr(float(rate_fps)) if rate_fps else "0", "-b", str(int(batch))]
    if cpu is not None:
        out += ["-C", str(int(cpu))]
    if nice:
        out += ["-N", str(int(nice))]
    if catchup_share and rate_fps:
        out += ["-K", repr(float(catchup_share))]
    if wait_for_go:
        out.append("-w")
    return out


def probe_xdp(binary: str, netns: str | None = None, timeout_s: float = 10.0) -> str | None:
    """None when this kernel runs the xdp sender's live XDP frames (one run of a trivial
    program on ``lo``), else the sender's one-line reason."""
    argv = (["ip", "netns", "exec", netns] if netns else []) + [binary, "--probe"]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"the xdp sender did not run: {exc}"
    if proc.returncode == 0:
        return None
    return (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]


# -- what it reports -----------------------------------------------------------------------


@dataclass(frozen=True)
class PacerSummary:
    """The sender's closing JSON line."""

    sent: int
    asked: int
    #: Frames sent out of each port (its streams summed).
    per_stream: dict[str, int]
    rate_fps: float
    first_s: float
    last_s: float
    elapsed_s: float
    max_frames_1ms: int
    windows_10ms: int
    max_dev_frames_10ms: float
    max_dev_frames_sliding_10ms: float
    max_late_s: float
    max_gap_s: float
    stopped: bool
    bin_s: float
    late_frames: int | None = None

    def send_time_s(self) -> float | None:
        """How long sending took: the schedule's t0 to the last frame, plus one frame time
        when paced (frame ``j`` is due at ``j / rate``, so N frames span (N-1)/rate)."""
        if self.sent <= 0:
            return None
        extra = 1.0 / self.rate_fps if self.rate_fps > 0 else 0.0
        return self.last_s + extra

    def pacing(self) -> PacingStats | None:
        """The pacing figures of a paced run (None for an unpaced one)."""
        if self.rate_fps <= 0:
            return None
        return PacingStats(
            window_s=WINDOW_S,
            resolution_s=self.bin_s,
            windows=self.windows_10ms,
            nominal_frames_per_window=self.rate_fps * WINDOW_S,
            max_window_deviation_frames=self.max_dev_frames_10ms,
            max_sliding_deviation_frames=self.max_dev_frames_sliding_10ms,
            burst_window_s=BURST_WINDOW_S,
            max_frames_per_burst_window=self.max_frames_1ms,
            max_late_s=self.max_late_s,
            late_frames=self.late_frames,
        )


def parse_summary(text: str) -> PacerSummary | None:
    """The summary in the sender's output (its last JSON line), or None."""
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                doc = json.loads(line)
            except json.JSONDecodeError:
                return None
            return PacerSummary(
                sent=int(doc["sent"]), asked=int(doc["asked"]),
                per_stream=_per_port(doc.get("streams", [])),
                rate_fps=float(doc["rate_fps"]), first_s=doc["first_ns"] / 1e9, last_s=doc["last_ns"] / 1e9,
                elapsed_s=float(doc["elapsed_s"]), max_frames_1ms=int(doc["max_frames_1ms"]),
                windows_10ms=int(doc["aligned_windows_10ms"]),
                max_dev_frames_10ms=float(doc["max_dev_frames_aligned_10ms"]),
                max_dev_frames_sliding_10ms=float(doc["max_dev_frames_10ms"]),
                max_late_s=doc["max_late_ns"] / 1e9, max_gap_s=doc["max_gap_ns"] / 1e9,
                stopped=bool(doc["stopped"]), bin_s=doc["bin_ns"] / 1e9,
                late_frames=int(doc["late_frames"]) if "late_frames" in doc else None,
            )
    return None


def _per_port(streams: Iterable[dict]) -> dict[str, int]:
    out: dict[str, int] = {}
    for s in streams:
        out[s["iface"]] = out.get(s["iface"], 0) + int(s["sent"])
    return out


def streams_for(directions: Iterable[Any]) -> list[StreamSpec]:
    """One :class:`StreamSpec` per direction of the plugin (tx port, template, flow plan)."""
    return [StreamSpec(iface=d.tx.iface, frame=d.template.data, ip_offset=d.template.ip_offset,
                       counters=tuple(counter_fields(d.fields, d.plan, d.template.ip_offset)),
                       run=max(1, int(getattr(d.plan, "run", 1))),
                       sizes=tuple(len(t.data) for t in getattr(d, "mix", ()) or ()))
            for d in directions]


# -- one running sender ----------------------------------------------------------------------


class PacerProcess:
    """One run of the sender inside a network namespace, ended by its pid only.

    ``start`` launches it and waits until its sockets are ready (``-w``); ``go`` releases
    it; ``wait`` returns its summary once it has exited, stopping it (SIGTERM: it still
    prints what it sent) when it is not done by the deadline. Its stderr goes to
    ``log_path``."""

    def __init__(self, argv_: Sequence[str], *, netns: str | None, log_path: Path) -> None:
        self.argv = (["ip", "netns", "exec", netns] if netns else []) + list(argv_)
        self.log_path = log_path
        self.proc: subprocess.Popen | None = None
        self.cut = False
        self._out: list[str] = []
        self._log = None

    @property
    def pid(self) -> int | None:
        return None if self.proc is None else self.proc.pid

    def start(self, timeout_s: float) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "a", encoding="utf-8")  # noqa: SIM115 - closed in stop()
        self._log.write(f"$ {' '.join(self.argv)}\n")
        self._log.flush()
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._log, text=True, start_new_session=True)
        line = self._readline(timeout_s)
        if line != READY_MARK:
            self.stop()
            raise RuntimeError(f"the pacer did not start: {self._tail()}")

    def go(self) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def wait(self, deadline: float, grace_s: float = 5.0) -> tuple[PacerSummary | None, int]:
        """The summary and exit status; stopped with SIGTERM at ``deadline`` (monotonic)."""
        import time

        assert self.proc is not None
        remaining = max(0.0, deadline - time.monotonic())
        try:
            out, _ = self.proc.communicate(timeout=remaining)
        except subprocess.TimeoutExpired:
            self.cut = True
            self._signal(15)
            try:
                out, _ = self.proc.communicate(timeout=grace_s)
            except subprocess.TimeoutExpired:
                self._signal(9)
                out, _ = self.proc.communicate()
        self._out.append(out or "")
        text = "".join(self._out)
        if self._log is not None:
            self._log.write(text)
            self._log.flush()
        return parse_summary(text), self.proc.returncode

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self._signal(15)
            try:
                self.proc.wait(timeout=5.0)
            except subprocess.TimeoutExpired:
                self._signal(9)
                self.proc.wait()
        if self._log is not None:
            self._log.close()
            self._log = None

    def _signal(self, sig: int) -> None:
        try:
            os.killpg(self.proc.pid, sig)  # its own session: ip netns exec and the sender
        except ProcessLookupError:
            pass

    def _readline(self, timeout_s: float) -> str | None:
        import select

        assert self.proc is not None and self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout_s)
        if not ready:
            return None
        line = self.proc.stdout.readline()
        self._out.append(line)
        return line.strip() if line else None

    def _tail(self) -> str:
        try:
            lines = self.log_path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
        except OSError:
            lines = []
        return lines[-1] if lines else "no output"
