"""Where the CPU time went: per-thread time, softirq time, and oversubscribed placements.

A vSwitch's cost is the CPU time of its threads (PMDs, handlers, main) for a userspace
datapath, and softirq time for a kernel datapath. Both are read from /proc around a trial
(:func:`sample` before, :func:`sample` after, :func:`delta`).

On a small machine the numbers are only meaningful if busy-polling threads each own a core:
a PMD sharing a core with the generator starves both and the "throughput" measured is the
scheduler's. :func:`check_oversubscription` says so as structured warnings the runner puts
in the results instead of publishing a starved figure as the switch's.

Clock ticks are USER_HZ (``os.sysconf('SC_CLK_TCK')``, 100 on Linux): 10 ms resolution, so
deltas are meaningful over trials of a second or more.
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable, Mapping

PROC = Path("/proc")
CPU_ONLINE = Path("/sys/devices/system/cpu/online")
CLK_TCK = os.sysconf("SC_CLK_TCK")

# /proc/stat cpu line columns, in order (ticks of USER_HZ).
PROC_STAT_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


# --------------------------------------------------------------------------- parsing


@dataclass(frozen=True)
class TaskStat:
    """One line of /proc/<pid>/task/<tid>/stat, the parts we use. Times in seconds."""

    tid: int
    comm: str
    state: str
    user_s: float
    system_s: float
    last_cpu: int

    @property
    def total_s(self) -> float:
        return self.user_s + self.system_s


def parse_task_stat(text: str, clk_tck: int = CLK_TCK) -> TaskStat:
    """Parse a ``stat`` line. ``comm`` may contain spaces and parentheses, so the fields
    after it are found from the *last* ``)``."""
    open_paren = text.index("(")
    close_paren = text.rindex(")")
    tid = int(text[:open_paren].strip())
    comm = text[open_paren + 1 : close_paren]
    rest = text[close_paren + 2 :].split()
    # rest[0] is field 3 (state); utime is field 14, stime 15, processor 39.
    return TaskStat(
        tid=tid,
        comm=comm,
        state=rest[0],
        user_s=int(rest[11]) / clk_tck,
        system_s=int(rest[12]) / clk_tck,
        last_cpu=int(rest[36]) if len(rest) > 36 else -1,
    )


@dataclass(frozen=True)
class CpuTimes:
    """One ``cpu``/``cpuN`` line of /proc/stat, in seconds."""

    user_s: float
    nice_s: float
    system_s: float
    idle_s: float
    iowait_s: float
    irq_s: float
    softirq_s: float
    steal_s: float

    @property
    def busy_s(self) -> float:
        return self.user_s + self.nice_s + self.system_s + self.irq_s + self.softirq_s + self.steal_s

    @property
    def total_s(self) -> float:
        return self.busy_s + self.idle_s + self.iowait_s

    def minus(self, other: "CpuTimes") -> "CpuTimes":
        return CpuTimes(*(a - b for a, b in zip(_values(self), _values(other))))


def _values(times: CpuTimes) -> tuple[float, ...]:
    return tuple(asdict(times).values())


def parse_proc_stat(text: str, clk_tck: int = CLK_TCK) -> dict[str, CpuTimes]:
    """``{"cpu": totals, "cpu0": ..., "cpu1": ...}`` from the text of /proc/stat."""
    result: dict[str, CpuTimes] = {}
    for line in text.splitlines():
        if not line.startswith("cpu"):
            continue
        name, *ticks = line.split()
        numbers = [int(t) for t in ticks[: len(PROC_STAT_FIELDS)]]
        numbers += [0] * (len(PROC_STAT_FIELDS) - len(numbers))
        result[name] = CpuTimes(*(n / clk_tck for n in numbers))
    return result


def parse_cpu_list(text: str) -> set[int]:
    """``"0-3,6,8-9"`` (the kernel's cpu list format) -> ``{0,1,2,3,6,8,9}``."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        if not part:
            continue
        if "-" in part:
            lo, hi = part.split("-", 1)
            cpus.update(range(int(lo), int(hi) + 1))
        else:
            cpus.add(int(part))
    return cpus


def format_cpu_list(cpus: Iterable[int]) -> str:
    """``{0,1,2,3,6}`` -> ``"0-3,6"``: the kernel's cpu list format, as isolcpus= takes it."""
    runs: list[list[int]] = []
    for cpu in sorted(set(cpus)):
        if runs and cpu == runs[-1][1] + 1:
            runs[-1][1] = cpu
        else:
            runs.append([cpu, cpu])
    return ",".join(f"{lo}-{hi}" if hi > lo else str(lo) for lo, hi in runs)


def mask_to_cpus(mask: str | int) -> set[int]:
    """A CPU bitmask (``"0x2"``, ``"2"`` hex as OvS reads it, or an int) -> set of CPUs."""
    value = mask if isinstance(mask, int) else int(str(mask).lower().removeprefix("0x") or "0", 16)
    if value < 0:
        raise ValueError(f"negative CPU mask {mask!r}")
    return {bit for bit in range(value.bit_length()) if value >> bit & 1}


def cpus_to_mask(cpus: Iterable[int]) -> str:
    """``{1}`` -> ``"0x2"``."""
    value = 0
    for cpu in cpus:
        value |= 1 << cpu
    return hex(value)


# --------------------------------------------------------------------------- reading /proc


def online_cpus() -> set[int]:
    return parse_cpu_list(CPU_ONLINE.read_text())


def read_task(pid: int, tid: int, proc: Path = PROC) -> TaskStat | None:
    """Stat of one thread, or None if it has exited."""
    try:
        return parse_task_stat((proc / str(pid) / "task" / str(tid) / "stat").read_text())
    except (FileNotFoundError, ProcessLookupError):
        return None


def task_ids(pid: int, proc: Path = PROC) -> list[int]:
    """Thread ids of ``pid`` (empty if it has exited)."""
    try:
        return sorted(int(p.name) for p in (proc / str(pid) / "task").iterdir())
    except FileNotFoundError:
        return []


def task_names(pid: int, proc: Path = PROC) -> dict[int, str]:
    """``{tid: comm}`` for every thread of ``pid``."""
    names = {}
    for tid in task_ids(pid, proc):
        try:
            names[tid] = (proc / str(pid) / "task" / str(tid) / "comm").read_text().strip()
        except FileNotFoundError:
            continue
    return names


def thread_affinity(tid: int) -> set[int]:
    """CPUs ``tid`` may run on (empty if it has exited)."""
    try:
        return set(os.sched_getaffinity(tid))
    except ProcessLookupError:
        return set()


# --------------------------------------------------------------------------- before/after


@dataclass(frozen=True)
class CpuSample:
    """A point-in-time reading: the tasks asked for, and /proc/stat per CPU."""

    monotonic_s: float
    tasks: Mapping[tuple[int, int], TaskStat]
    cpus: Mapping[str, CpuTimes]


def sample(threads: Iterable[tuple[int, int]] = (), pids: Iterable[int] = (), proc: Path = PROC) -> CpuSample:
    """Read the given ``(pid, tid)`` threads and every thread of ``pids``, plus /proc/stat."""
    wanted = set(threads)
    for pid in pids:
        wanted.update((pid, tid) for tid in task_ids(pid, proc))
    tasks = {}
    for pid, tid in sorted(wanted):
        stat = read_task(pid, tid, proc)
        if stat is not None:
            tasks[(pid, tid)] = stat
    cpus = parse_proc_stat((proc / "stat").read_text())
    return CpuSample(time.monotonic(), tasks, cpus)


@dataclass(frozen=True)
class ThreadUsage:
    """CPU a thread consumed between two samples; ``utilization`` is busy/elapsed
    (1.0 = one core fully busy, as a busy-polling PMD is)."""

    pid: int
    tid: int
    name: str
    user_s: float
    system_s: float
    utilization: float
    last_cpu: int = -1

    @property
    def busy_s(self) -> float:
        return self.user_s + self.system_s


@dataclass(frozen=True)
class CpuUsage:
    """What happened between two samples. ``softirq_s`` per CPU (``cpu`` = all) is where a
    kernel datapath's forwarding cost shows up; threads are a userspace datapath's.
    ``steal_s`` is the time a hypervisor ran something else while the CPU had work (a
    virtual machine's noisy neighbours): a generator that fell behind while its CPU was
    stolen was descheduled by the host, not short of capacity."""

    elapsed_s: float
    threads: list[ThreadUsage]
    softirq_s: dict[str, float]
    busy_s: dict[str, float]
    steal_s: dict[str, float] = field(default_factory=dict)

    @property
    def threads_busy_s(self) -> float:
        return sum(t.busy_s for t in self.threads)

    def to_dict(self) -> dict:
        return {
            "elapsed_s": self.elapsed_s,
            "threads_busy_s": self.threads_busy_s,
            "threads": [{**asdict(t), "busy_s": t.busy_s} for t in self.threads],
            "softirq_s": dict(self.softirq_s),
            "cpu_busy_s": dict(self.busy_s),
            "steal_s": dict(self.steal_s),
        }


def delta(before: CpuSample, after: CpuSample) -> CpuUsage:
    """CPU consumed between ``before`` and ``after``. A thread present only in ``after``
    counts from zero (it started during the interval); one that exited is left out."""
    elapsed = max(after.monotonic_s - before.monotonic_s, 1e-9)
    usages = []
    for key, end in after.tasks.items():
        start = before.tasks.get(key)
        user = end.user_s - (start.user_s if start else 0.0)
        system = end.system_s - (start.system_s if start else 0.0)
        usages.append(ThreadUsage(key[0], key[1], end.comm, user, system, (user + system) / elapsed,
                                  end.last_cpu))
    softirq, busy, steal = {}, {}, {}
    for name, end_times in after.cpus.items():
        if name in before.cpus:
            diff = end_times.minus(before.cpus[name])
            softirq[name] = diff.softirq_s
            busy[name] = diff.busy_s
            steal[name] = diff.steal_s
    return CpuUsage(elapsed, usages, softirq, busy, steal)


# --------------------------------------------------------------------------- placement


@dataclass(frozen=True)
class CpuPlacementWarning:
    """A reason the figures of a run may be the scheduler's rather than the DUT's.

    ``code`` is stable for machines; ``message`` is one line for people; ``cpus`` are the
    CPUs involved. ``oversubscribed`` is True when busy threads demonstrably compete for a
    CPU (the figures are starved and must not be published as the DUT's); False for a
    tight-but-sane placement worth recording (e.g. on 2 cores the kernel's softirq work
    shares the generator's CPU).

    Codes: ``busy_poll_shares_generator``, ``busy_poll_overlap``, ``busy_poll_all_cpus``,
    ``cpu_offline``, ``busy_poll_starved`` (oversubscribed); ``no_spare_cpu`` (not).
    """

    code: str
    message: str
    cpus: tuple[int, ...] = field(default_factory=tuple)
    oversubscribed: bool = True

    def to_dict(self) -> dict:
        return asdict(self) | {"cpus": list(self.cpus)}


def check_oversubscription(
    busy_poll: Mapping[str, Iterable[int]],
    generator_cpus: Iterable[int],
    online: Iterable[int] | None = None,
) -> list[CpuPlacementWarning]:
    """Is the machine oversubscribed by busy-polling threads?

    ``busy_poll`` maps an owner (``"ovs_dpdk pmd"``, ``"testpmd"``) to the CPUs its
    busy-polling threads are pinned to; ``generator_cpus`` are the traffic generator's
    (also busy: it sends as fast as it can). Oversubscribed when a busy-polling CPU is
    shared with the generator or with another busy-polling owner, when busy-polling
    threads cover every online CPU, or when they are pinned to CPUs that are not online.
    A placement where busy-polling and generator together fill every CPU gets a
    non-oversubscribed ``no_spare_cpu`` note. An empty list means a roomy placement.
    """
    online_set = set(online) if online is not None else online_cpus()
    gen = set(generator_cpus)
    warnings: list[CpuPlacementWarning] = []
    owners = {name: set(cpus) for name, cpus in busy_poll.items()}

    for name, cpus in owners.items():
        offline = cpus - online_set
        if offline:
            warnings.append(CpuPlacementWarning(
                "cpu_offline", f"{name} is pinned to CPUs {_fmt(offline)} which are not online",
                tuple(sorted(offline))))
        shared = cpus & gen
        if shared:
            warnings.append(CpuPlacementWarning(
                "busy_poll_shares_generator",
                f"{name} busy-polls on CPUs {_fmt(shared)} that the generator also uses",
                tuple(sorted(shared))))
    names = sorted(owners)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            shared = owners[a] & owners[b]
            if shared:
                warnings.append(CpuPlacementWarning(
                    "busy_poll_overlap", f"{a} and {b} both busy-poll on CPUs {_fmt(shared)}",
                    tuple(sorted(shared))))
    busy_all = set().union(*owners.values()) if owners else set()
    if online_set and online_set <= busy_all:
        warnings.append(CpuPlacementWarning(
            "busy_poll_all_cpus",
            f"busy-polling threads occupy every online CPU ({_fmt(online_set)})",
            tuple(sorted(online_set))))
    elif online_set and not online_set - busy_all - gen:
        warnings.append(CpuPlacementWarning(
            "no_spare_cpu",
            f"busy-polling threads and the generator fill every online CPU ({_fmt(online_set)}); "
            "kernel softirq work shares the generator's CPUs",
            tuple(sorted(online_set)), oversubscribed=False))
    return warnings


def starved_busy_pollers(
    usage: CpuUsage,
    prefixes: tuple[str, ...] = ("pmd",),
    min_utilization: float = 0.9,
) -> list[CpuPlacementWarning]:
    """Busy-polling threads that did *not* get a whole CPU during the interval.

    A PMD polls without sleeping, so anything below ~100% of a CPU means something else
    ran on its CPU: our generator, another busy poller, or another tenant of a shared
    machine. This is the measured counterpart of :func:`check_oversubscription` (which
    only sees the placement vsbench chose). ``prefixes`` select the threads by name
    (``pmd`` matches OvS's ``pmd-c01/id:8``).

    Softirq work a thread triggers (e.g. a PMD transmitting into a veth runs the peer's
    receive path) is accounted to its CPU's softirq time, not to the thread, so the
    softirq share of the thread's last CPU counts as the thread's.
    """
    warnings = []
    for thread in usage.threads:
        if not thread.name.startswith(prefixes):
            continue
        softirq = usage.softirq_s.get(f"cpu{thread.last_cpu}", 0.0) / usage.elapsed_s
        share = thread.utilization + softirq
        if share < min_utilization:
            where = f"CPU {thread.last_cpu}" if thread.last_cpu >= 0 else "its CPU"
            warnings.append(CpuPlacementWarning(
                "busy_poll_starved",
                f"busy-polling thread {thread.name} (tid {thread.tid}) got {share:.0%} of {where} "
                f"over {usage.elapsed_s:.1f} s; something else competes for it",
                (thread.last_cpu,) if thread.last_cpu >= 0 else ()))
    return warnings


def is_oversubscribed(warnings: Iterable[CpuPlacementWarning]) -> bool:
    return any(w.oversubscribed for w in warnings)


def _fmt(cpus: Iterable[int]) -> str:
    return ",".join(str(c) for c in sorted(cpus))
