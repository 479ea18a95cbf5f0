"""trafgen's command line and the summary it prints when it ends.

Rate control does not come from trafgen: its ``-b`` sends a second's worth of frames at full
speed and then sleeps for the rest of the second, and ``-t`` sleeps between frames (tens of
thousands of frames/s at most here, and below the asked rate). Both also force one CPU.
trafgen therefore runs unpaced with an exact frame count (``-n``) and through the kernel
qdisc path (``-q``), where a tbf shaper on the port sets the rate (:mod:`.shaper`).

Two ways to hand frames over: ``sendto`` (one blocking ``sendto()`` per frame; a full
send buffer puts trafgen to sleep) and ``ring`` (trafgen's TX_RING, a busy loop).

Options always given: ``--no-sock-mem`` (trafgen would otherwise rewrite
``/proc/sys/net/core/{r,w}mem_*`` for the run), ``--notouch-irq`` (veth has no IRQ and the
host's IRQ affinities are not ours to change).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Sequence

#: Frames longer than this need trafgen's jumbo ring frames (-J): its default TX_RING slot
#: is 2048 B including the ring header.
JUMBO_THRESHOLD_BYTES = 1518
#: TX_RING size in ring mode. trafgen treats EAGAIN from flushing its ring as fatal, and a
#: shaped port keeps the socket's send buffer full; a ring this small (64 slots) cannot
#: have more frames in flight than a default send buffer admits.
RING_SIZE = "128KiB"

TX_PATHS = ("ring", "sendto")
#: trafgen's sendto path (-t/--gap, also -b) forces a single worker, which trafgen pins to
#: CPU 0 itself: a config block for another CPU would silently send nothing.
SENDTO_CPU = 0

_PACKETS_RE = re.compile(r"^\s*(\d+)\s+packets outgoing", re.M)
_BYTES_RE = re.compile(r"^\s*(\d+)\s+bytes outgoing", re.M)
_CPU_RE = re.compile(r"^\s*(\d+)\s+sec,\s+(\d+)\s+usec on CPU(\d+)\s+\((\d+)\s+packets\)", re.M)
RUNNING_MARK = "Running!"


def worker_count(cpus: Sequence[int]) -> int:
    """``-P`` value: trafgen forks workers 0..P-1 and pins worker N to CPU N."""
    return max(cpus) + 1


def trafgen_argv(
    binary: str,
    iface: str,
    config_path: str,
    frames: int,
    cpus: Sequence[int] | None,
    *,
    tx_path: str = "ring",
    wire_len_bytes: int = 60,
) -> list[str]:
    """argv of one trafgen process sending exactly ``frames`` frames out of ``iface``."""
    if frames < 1:
        raise ValueError("trafgen -n 0 would send forever; ask for at least one frame")
    if tx_path not in TX_PATHS:
        raise ValueError(f"tx_path must be one of {', '.join(TX_PATHS)}")
    if tx_path == "sendto" and cpus:
        raise ValueError("trafgen's sendto path has one worker on CPU 0: no per-CPU blocks")
    argv = [
        binary,
        "--dev", iface,
        "--conf", config_path,
        "--num", str(frames),
        "--cpus", str(worker_count(cpus) if cpus else 1),
        "--no-sock-mem",
        "--notouch-irq",
        "--qdisc-path",
    ]
    if tx_path == "sendto":
        argv += ["--gap", "0"]  # the blocking sendto() path, without its per-frame sleep
    else:
        argv += ["--ring-size", RING_SIZE]
    if wire_len_bytes > JUMBO_THRESHOLD_BYTES:
        argv.append("--jumbo-support")
    return argv


@dataclass(frozen=True)
class TrafgenReport:
    """What trafgen said it sent; ``None`` fields when it printed no summary."""

    tx_packets: int | None
    tx_bytes: int | None
    worker_seconds: dict[int, float] = field(default_factory=dict)
    worker_packets: dict[int, int] = field(default_factory=dict)
    started: bool = False

    @property
    def send_time_s(self) -> float | None:
        """How long the slowest worker took to hand its frames to the kernel."""
        busy = [s for cpu, s in self.worker_seconds.items() if self.worker_packets.get(cpu, 0) > 0]
        return max(busy) if busy else None


def parse_report(text: str) -> TrafgenReport:
    """Parse trafgen's exit summary (``N packets outgoing`` ... ``s sec, us usec on CPUi``)."""
    packets = _PACKETS_RE.findall(text)
    bytes_ = _BYTES_RE.findall(text)
    seconds: dict[int, float] = {}
    per_cpu: dict[int, int] = {}
    for sec, usec, cpu, pkts in _CPU_RE.findall(text):
        seconds[int(cpu)] = int(sec) + int(usec) / 1e6
        per_cpu[int(cpu)] = int(pkts)
    return TrafgenReport(
        tx_packets=int(packets[-1]) if packets else None,
        tx_bytes=int(bytes_[-1]) if bytes_ else None,
        worker_seconds=seconds,
        worker_packets=per_cpu,
        started=RUNNING_MARK in text,
    )


def parse_version(text: str) -> str | None:
    m = re.search(r"trafgen\s+v?(\d+(?:\.\d+)+)", text)
    return m.group(1) if m else None
