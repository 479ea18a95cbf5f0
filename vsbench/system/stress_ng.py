"""A noisy neighbour: stress-ng instances vsbench starts, pins, measures and ends by pid.

VSPERF's ``phy2phy_cpu_load``/``phy2phy_mem_load`` ran the throughput test with stress-ng
loading the host beside the switch. What loaded the host must be *measured*, not assumed
from the command line: stress-ng's ``--cpu-load`` is a target its workers try to hold, and
a worker sharing a CPU with a busy poller gets what the scheduler gives it. So each loaded
CPU gets its own stress-ng instance, pinned there with stress-ng's ``--taskset`` and
started in its own process group (:func:`vsbench.system.commands.spawn`); the CPU time of
every process of that group, read from ``/proc/<pid>/stat``, over a wall-clock interval is
the load that CPU really carried, and the proportional set size (``Pss`` of
``/proc/<pid>/smaps_rollup``) of the group is the memory the ``mem`` pattern really held.

Ending: SIGCONT (a duty-cycled group may be stopped), SIGTERM to the group, SIGKILL after
a grace period -- by the group id of the process we started, never by name. ``--timeout``
is a backstop for a ``kill -9`` of vsbench itself (nothing is left to tear down then).
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from vsbench.system import commands
from vsbench.system.cpu import CLK_TCK, PROC

log = logging.getLogger(__name__)

BINARY = "stress-ng"
#: Duty-cycle period of a ``mem`` load below 100 % (stress-ng's vm stressor has no load knob).
DUTY_PERIOD_S = 0.1


@dataclass(frozen=True)
class GroupSample:
    """CPU time and resident memory of one process group at one instant."""

    cpu_s: float
    #: Proportional set size: each page's size divided among the processes sharing it, so
    #: the group's sum counts stress-ng's shared segments once (VmRSS would count them per process).
    pss_bytes: int
    processes: int
    allowed_cpus: frozenset[int]
    monotonic_s: float


def stress_argv(pattern: str, cpu: int, load_percent: float, vm_bytes: int | None, timeout_s: int,
                binary: str = BINARY, temp_path: Path | None = None) -> list[str]:
    """The argv of the one stress-ng instance loading ``cpu``.

    ``cpu``: one CPU worker (``--cpu 1``) at ``--cpu-load`` (stress-ng's own duty cycle).
    ``mem``: one vm worker that keeps ``vm_bytes`` mapped and keeps writing them
    (``--vm-keep``); it may be OOM-killed rather than the host's other processes
    (``--oomable``). Its load percent is applied by :class:`StressInstance` (SIGSTOP/SIGCONT).
    ``temp_path`` (the plan's work directory) puts the run's directory on every stress-ng
    command line, workers included: what ``vsbench cleanup`` recognises a dead run's
    processes by after a ``kill -9`` of vsbench.
    """
    common = ["--taskset", str(int(cpu)), "--timeout", f"{int(timeout_s)}s"]
    if temp_path is not None:
        common += ["--temp-path", str(temp_path)]
    if pattern == "cpu":
        return [binary, "--cpu", "1", "--cpu-load", str(int(round(load_percent))), *common]
    if pattern == "mem":
        if not vm_bytes or vm_bytes <= 0:
            raise ValueError("a mem load needs vm_bytes > 0")
        return [binary, "--vm", "1", "--vm-bytes", f"{int(vm_bytes)}", "--vm-keep", "--oomable", *common]
    raise ValueError(f"unknown load pattern {pattern!r} (cpu or mem)")


def parse_stat_line(text: str, clk_tck: int = CLK_TCK) -> tuple[int, float]:
    """``(pgrp, cpu seconds)`` of a ``/proc/<pid>/stat`` line: utime + stime + the reaped
    children's cutime + cstime (a worker that exited still counts)."""
    rest = text[text.rindex(")") + 2:].split()
    # rest[0] is field 3 (state): pgrp is field 5, utime..cstime fields 14..17.
    pgrp = int(rest[2])
    ticks = sum(int(t) for t in rest[11:15])
    return pgrp, ticks / clk_tck


def parse_status(text: str) -> tuple[int, frozenset[int]]:
    """``(VmRSS bytes, Cpus_allowed_list)`` of a ``/proc/<pid>/status``."""
    rss = 0
    allowed: set[int] = set()
    for line in text.splitlines():
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1]) * 1024
        elif line.startswith("Cpus_allowed_list:"):
            for part in line.split(":", 1)[1].strip().split(","):
                if "-" in part:
                    lo, hi = part.split("-")
                    allowed.update(range(int(lo), int(hi) + 1))
                elif part:
                    allowed.add(int(part))
    return rss, frozenset(allowed)


def parse_pss(text: str) -> int | None:
    """``Pss`` of a ``/proc/<pid>/smaps_rollup`` in bytes (None when absent)."""
    for line in text.splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1]) * 1024
    return None


def sample_group(pgrp: int, proc: Path = PROC) -> GroupSample:
    """Sum CPU time and PSS over every process whose process group is ``pgrp``."""
    cpu_s, rss, count, allowed = 0.0, 0, 0, set()
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            group, seconds = parse_stat_line((entry / "stat").read_text())
            if group != pgrp:
                continue
            resident, cpus = parse_status((entry / "status").read_text())
            try:
                resident = parse_pss((entry / "smaps_rollup").read_text()) or resident
            except (PermissionError, FileNotFoundError):
                pass  # an older kernel: VmRSS (shared pages counted per process)
        except (FileNotFoundError, ProcessLookupError, ValueError, IndexError):
            continue  # exited between listing and reading
        cpu_s += seconds
        rss += resident
        allowed |= cpus
        count += 1
    return GroupSample(cpu_s, rss, count, frozenset(allowed), time.monotonic())


class StressInstance:
    """One stress-ng process group loading one CPU; :meth:`stop` is its teardown."""

    def __init__(self, cpu: int, argv: Sequence[str], load_percent: float, duty_cycle: bool,
                 log_path: Path | None) -> None:
        self.cpu = cpu
        self.argv = list(argv)
        self.load_percent = float(load_percent)
        self.process = commands.spawn(self.argv, log_path=log_path)
        self._stop = threading.Event()
        self._duty: threading.Thread | None = None
        if duty_cycle and self.load_percent < 100:
            self._duty = threading.Thread(target=self._duty_cycle, name=f"stress-ng-duty-cpu{cpu}", daemon=True)
            self._duty.start()

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.alive()

    def sample(self) -> GroupSample:
        return sample_group(self.pid)

    def _signal(self, sig: int) -> None:
        try:
            os.killpg(self.pid, sig)
        except ProcessLookupError:
            pass

    def _duty_cycle(self) -> None:
        """Runs the group ``load_percent`` of every :data:`DUTY_PERIOD_S`, stops it the rest."""
        on_s = DUTY_PERIOD_S * self.load_percent / 100.0
        while not self._stop.is_set() and self.process.alive():
            self._signal(signal.SIGCONT)
            if self._stop.wait(on_s):
                break
            self._signal(signal.SIGSTOP)
            self._stop.wait(DUTY_PERIOD_S - on_s)
        self._signal(signal.SIGCONT)

    def stop(self, grace_s: float = 3.0) -> int | None:
        """End the group we started (by its pid), continuing it first if duty-cycled."""
        self._stop.set()
        if self._duty is not None:
            self._duty.join(timeout=2 * DUTY_PERIOD_S + 1)
        self._signal(signal.SIGCONT)
        code = self.process.stop(grace_s=grace_s)
        # workers that outlived their parent (they should not) are ours too: our group.
        # A group id is not reused while a member lives, so a non-empty group is still ours.
        if sample_group(self.pid).processes:
            self._signal(signal.SIGKILL)
        return code
