#!/usr/bin/env python3
"""Soak: many short vsbench runs in a row, and whether anything on the host grows.

Why: one run that tears down cleanly proves little about a lab that runs vsbench nightly for
months. A leak of one netns, one mount, one hugepage file or one state file per run is
invisible in any single run and fills a host in a year. This script runs the vsbench CLI
``--runs`` times (default 50) over a mix of switches and testcases on the embedded testbed
and samples the host before the first run and after each one.

vsbench leaves no long-lived process: the CLI is one process per run, and every switch,
generator and VNF it starts is its own and stopped when the run ends. So there is no
process whose open files or RSS could be watched across runs; the host is sampled instead
(netns, links, mounts, hugepages in use, the state directory, the runs' TMPDIR, processes
named ovs*/trafgen/testpmd/l3fwd/qemu*, open files system-wide from /proc/sys/fs/file-nr).

Each run holds the testbed lock (``flock /tmp/vsbench-testbed.lock``, the same lock
flock(1) takes) for the run *and* the sample after it, so another traffic run on this host
is never counted as this run's residue. Runs use a private state directory (what vsbench
leaves there is then exactly this soak's) and a temporary results directory, both removed
at the end.

Growth is judged per metric by :func:`judge`: the Theil-Sen slope over the samples times
the number of runs, and the last quarter's median against the first quarter's, each
against the metric's tolerance. Output: one line per metric, then last::

    soak_runs=N failed=N growth=none            (or growth=metric1,metric2)

Exit 0 only when every run exited 0 and nothing grew.

    sudo .venv/bin/python tools/bench/soak.py [--runs 50] [--quick]

``tools/bench/faults.py --soak`` calls :func:`main`; a caller that already holds the
testbed lock passes ``--lock ''`` (flock locks are per open file: taking it twice in one
process would wait forever).
"""

from __future__ import annotations

import argparse
import fcntl
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

DEFAULT_LOCK = "/tmp/vsbench-testbed.lock"
#: Names of the processes vsbench starts (switch, generator, VNFs): none may outlive a run.
PROCESS_NAMES = ("ovs-vswitchd", "ovsdb-server", "trafgen", "dpdk-testpmd", "testpmd", "dpdk-l3fwd",
                 "l3fwd", "qemu-system-x86", "iperf3")
RUN_TIMEOUT_S = 300.0
TERM_GRACE_S = 30.0


# ---------------------------------------------------------------- the run mix

@dataclass(frozen=True)
class RunSpec:
    """One vsbench invocation of the mix."""

    vswitch: str
    test: str
    extra: tuple[str, ...] = ()

    def label(self) -> str:
        return f"{self.vswitch}/{self.test}" + (f" {' '.join(self.extra)}" if self.extra else "")


#: Short runs: fixed-rate trials (no search) so 50 runs stay minutes, not hours. Both
#: switches the embedded testbed has (a kernel one, a userspace DPDK one with hugepages and a
#: private OvS DB), continuous and RFC 2544 testcases.
MIX: tuple[RunSpec, ...] = (
    RunSpec("linux_bridge", "phy2phy_cont"),
    RunSpec("ovs_dpdk", "phy2phy_cont"),
    RunSpec("linux_bridge", "phy2phy_tput", ("--rate", "20kpps")),
    RunSpec("ovs_dpdk", "phy2phy_tput", ("--rate", "20kpps")),
)
TEST_PARAMS = "frame_sizes=[64];trial_duration=1"
QUICK_TEST_PARAMS = "frame_sizes=[64];trial_duration=0.5"


def run_plan(runs: int, mix: Sequence[RunSpec] = MIX) -> list[RunSpec]:
    """The ``runs`` invocations, cycling through the mix (every switch early on)."""
    return [mix[i % len(mix)] for i in range(runs)]


def vsbench_argv(spec: RunSpec, results_dir: Path, test_params: str,
                 vsbench: Sequence[str] | None = None) -> list[str]:
    """The argv of one run (never a shell string)."""
    cmd = list(vsbench) if vsbench else [sys.executable, "-m", "vsbench"]
    return [*cmd, "--test", spec.test, "--vswitch", spec.vswitch, "--trafficgen", "trafgen",
            "--test-params", test_params, *spec.extra, "--results-dir", str(results_dir), "--no-store"]


# ---------------------------------------------------------------- sampling (pure parsers)

@dataclass(frozen=True)
class Metric:
    """A sampled figure, its unit and how much it may grow over the whole soak.

    ``abs_tol`` is in the metric's unit; ``rel_tol`` a fraction of the first quarter's
    median (for host-wide figures other processes move); the larger of the two applies.
    """

    name: str
    unit: str
    abs_tol: float
    rel_tol: float = 0.0


METRICS: tuple[Metric, ...] = (
    Metric("netns_vsb", "netns", 0.5),
    Metric("netns_total", "netns", 2),
    Metric("links_vsb", "links", 0.5),
    Metric("links_total", "links", 4),
    Metric("mounts_vsb", "mounts", 0.5),
    Metric("mounts_total", "mounts", 2),
    Metric("hugepages_used", "pages", 0.5),
    Metric("state_entries", "files", 0.5),
    Metric("state_bytes", "bytes", 512),
    Metric("tmp_entries", "entries", 0.5),
    Metric("dpdk_runtime_vsb", "entries", 0.5),
    Metric("procs_vsbench_started", "processes", 0.5),
    Metric("fds_system", "files", 512, 0.15),
)


def parse_file_nr(text: str) -> int:
    """Allocated file handles system-wide: the first field of /proc/sys/fs/file-nr."""
    return int(text.split()[0])


def parse_hugepages(meminfo: str) -> tuple[int, int]:
    """(total, free) default-size hugepages from /proc/meminfo."""
    values: dict[str, int] = {}
    for line in meminfo.splitlines():
        key, _, rest = line.partition(":")
        if key in ("HugePages_Total", "HugePages_Free"):
            values[key] = int(rest.split()[0])
    return values.get("HugePages_Total", 0), values.get("HugePages_Free", 0)


def count_prefixed(names: Iterable[str], prefix: str = "vsb") -> int:
    """How many names start with ``prefix`` (vsbench's resources all carry ``vsb``)."""
    return sum(1 for name in names if name.startswith(prefix))


def count_mounts(mounts: str, needles: Sequence[str]) -> tuple[int, int]:
    """(all mounts, mounts whose mount point contains one of ``needles``) from /proc/self/mounts."""
    total = matching = 0
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) < 2:
            continue
        total += 1
        if any(needle in fields[1] for needle in needles):
            matching += 1
    return total, matching


def count_processes(comms: Iterable[str], names: Sequence[str] = PROCESS_NAMES) -> int:
    """How many process names (``/proc/PID/comm``, at most 15 characters) are vsbench's kinds."""
    wanted = {name[:15] for name in names}
    return sum(1 for comm in comms if comm.strip() in wanted or comm.strip().startswith("qemu-system"))


def tree_size(entries: Iterable[tuple[bool, int]]) -> tuple[int, int]:
    """(entries, bytes of regular files) from (is_regular_file, size) pairs of a walk."""
    count = size = 0
    for is_file, nbytes in entries:
        count += 1
        if is_file:
            size += nbytes
    return count, size


# ---------------------------------------------------------------- sampling (I/O)

def _read(path: str | Path) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def _listdir(path: str | Path) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


def _walk(root: Path) -> Iterator[tuple[bool, int]]:
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            try:
                st = os.lstat(os.path.join(dirpath, name))
            except OSError:
                continue
            yield (os.path.isfile(os.path.join(dirpath, name)) and not os.path.islink(os.path.join(dirpath, name)),
                   st.st_size)


def _comms() -> Iterator[str]:
    for pid in _listdir("/proc"):
        if pid.isdigit():
            yield _read(f"/proc/{pid}/comm")


def sample_host(state_dir: Path, tmp_dir: Path) -> dict[str, float]:
    """One sample of every metric of :data:`METRICS` (vsbench's resources are named vsb*)."""
    netns = _listdir("/run/netns")
    links = _listdir("/sys/class/net")
    mounts_total, mounts_vsb = count_mounts(_read("/proc/self/mounts"), ("/vsb", str(state_dir)))
    huge_total, huge_free = parse_hugepages(_read("/proc/meminfo"))
    state_entries, state_bytes = tree_size(_walk(state_dir))
    return {
        "netns_vsb": count_prefixed(netns),
        "netns_total": len(netns),
        "links_vsb": count_prefixed(links),
        "links_total": len(links),
        "mounts_vsb": mounts_vsb,
        "mounts_total": mounts_total,
        "hugepages_used": huge_total - huge_free,
        "state_entries": state_entries,
        "state_bytes": state_bytes,
        "tmp_entries": len(_listdir(tmp_dir)),
        "dpdk_runtime_vsb": count_prefixed(_listdir("/var/run/dpdk")),
        "procs_vsbench_started": count_processes(_comms()),
        "fds_system": parse_file_nr(_read("/proc/sys/fs/file-nr") or "0"),
    }


# ---------------------------------------------------------------- growth (pure)

def theil_sen_slope(values: Sequence[float]) -> float:
    """Median of the pairwise slopes of ``values`` over their index: one outlier (a sample
    taken while something else ran) moves it little, a steady leak moves it fully."""
    slopes = [(values[j] - values[i]) / (j - i) for i in range(len(values)) for j in range(i + 1, len(values))]
    return statistics.median(slopes) if slopes else 0.0


def quarters(values: Sequence[float]) -> tuple[float, float]:
    """(lowest of the first quarter, median of the last quarter), at least one sample each.

    The first quarter's lowest sample is the host as clean as it was before the runs could
    have left much (a disturbed sample is higher, never lower); the last quarter's median is
    what stays at the end, a disturbed sample there outvoted.
    """
    k = max(1, len(values) // 4)
    return min(values[:k]), statistics.median(values[-k:])


@dataclass(frozen=True)
class Verdict:
    """What :func:`judge` found for one metric."""

    metric: Metric
    first: float
    last: float
    slope_per_run: float
    allowed: float
    grew: bool

    def line(self) -> str:
        m = self.metric
        return (f"{m.name}: first={_fmt(self.first)} last={_fmt(self.last)} "
                f"slope={self.slope_per_run:+.3f}/run unit={m.unit} tolerance={_fmt(self.allowed)} "
                f"{'GREW' if self.grew else 'flat'}")


def _fmt(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.1f}"


def judge(metric: Metric, values: Sequence[float]) -> Verdict:
    """Did ``values`` (one sample before the runs, one after each) grow beyond tolerance?

    Grown when the fitted growth over the soak (Theil-Sen slope x intervals) or the step
    from the first quarter's lowest sample to the last quarter's median exceeds the
    tolerance: the slope catches a steady leak, the quarters a resource left once and never
    removed (a step, whose pairwise slopes are mostly 0). Both are robust to a few samples
    disturbed by something else on the host.
    """
    slope = theil_sen_slope(values)
    first_q, last_q = quarters(values)
    allowed = max(metric.abs_tol, metric.rel_tol * abs(first_q))
    grew = slope * max(0, len(values) - 1) > allowed or last_q - first_q > allowed
    return Verdict(metric, values[0], values[-1], slope, allowed, grew)


def judge_all(samples: Sequence[Mapping[str, float]], metrics: Sequence[Metric] = METRICS) -> list[Verdict]:
    """One verdict per metric over the samples."""
    return [judge(m, [s[m.name] for s in samples]) for m in metrics]


def summary_line(runs: int, failed: int, verdicts: Sequence[Verdict]) -> str:
    grown = [v.metric.name for v in verdicts if v.grew]
    return f"soak_runs={runs} failed={failed} growth={','.join(grown) or 'none'}"


# ---------------------------------------------------------------- running

@contextmanager
def testbed_lock(path: str) -> Iterator[None]:
    """Hold the testbed lock flock(1) takes; ``''`` for a caller that already holds it."""
    if not path:
        yield
        return
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def run_one(argv: list[str], log_path: Path, env: Mapping[str, str], timeout_s: float) -> int:
    """Run vsbench once, output to ``log_path``; on a timeout SIGTERM it (its own teardown),
    then SIGKILL after a grace period. Returns the exit status (negative: killed)."""
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=dict(env))
        try:
            return proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=TERM_GRACE_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            return 124
        except BaseException:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=TERM_GRACE_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            raise


def _last_line(path: Path) -> str:
    lines = [line for line in _read(path).splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=50, help="how many vsbench runs (default 50)")
    parser.add_argument("--quick", action="store_true",
                        help=f"shorter trials ({QUICK_TEST_PARAMS}) for a test of the soak itself")
    parser.add_argument("--lock", default=DEFAULT_LOCK,
                        help="testbed lock held for each run and its sample ('' when the caller holds it)")
    parser.add_argument("--state-dir", type=Path,
                        help="vsbench's state directory for the runs (default: a private one, removed at the end)")
    parser.add_argument("--budget-s", type=float, metavar="S",
                        help="start no run after S seconds; judge the runs done (the summary's soak_runs says how many)")
    parser.add_argument("--keep", type=Path, metavar="DIR",
                        help="keep the run logs and results here instead of a removed temp dir")
    args = parser.parse_args(argv)
    if args.runs < 2:
        parser.error("--runs must be at least 2 (growth needs a series)")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if os.geteuid() != 0:
        print("soak: needs root (the embedded testbed creates netns and veth)", file=sys.stderr)
        return 2
    test_params = QUICK_TEST_PARAMS if args.quick else TEST_PARAMS
    work = Path(tempfile.mkdtemp(prefix="soak-")) if args.keep is None else args.keep
    work.mkdir(parents=True, exist_ok=True)
    own_state = args.state_dir is None
    state = Path(tempfile.mkdtemp(prefix="vsbsoak-", dir="/run")) if own_state else args.state_dir
    # The runs' own TMPDIR: /tmp is shared with everything else on the host, this one holds
    # exactly what the runs leave there.
    tmp_dir = work / "tmp"
    tmp_dir.mkdir(exist_ok=True)
    env = {**os.environ, "VSBENCH_STATE_DIR": str(state), "TMPDIR": str(tmp_dir)}
    failed = 0
    samples: list[dict[str, float]] = []
    started = time.monotonic()
    try:
        with testbed_lock(args.lock):
            samples.append(sample_host(state, tmp_dir))
        for index, spec in enumerate(run_plan(args.runs), start=1):
            if args.budget_s is not None and time.monotonic() - started > args.budget_s and len(samples) > 2:
                print(f"soak: budget of {args.budget_s:.0f} s spent: stopped after {index - 1} of {args.runs} runs",
                      flush=True)
                break
            log_path = work / f"run{index:03d}.log"
            t0 = time.monotonic()
            with testbed_lock(args.lock):
                status = run_one(vsbench_argv(spec, work / "results", test_params), log_path, env, RUN_TIMEOUT_S)
                samples.append(sample_host(state, tmp_dir))
            failed += status != 0
            print(f"run {index}/{args.runs} {spec.label()}: exit {status} in {time.monotonic() - t0:.1f} s"
                  + (f" -- {_last_line(log_path)}" if status != 0 else ""), flush=True)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
        if own_state:
            shutil.rmtree(state, ignore_errors=True)
    runs_done = len(samples) - 1
    verdicts = judge_all(samples)
    print(f"soak: {runs_done} runs in {time.monotonic() - started:.0f} s; no long-lived vsbench process "
          "(one CLI process per run, everything it starts stops with it): sampled the host")
    for verdict in verdicts:
        print(verdict.line())
    print(summary_line(runs_done, failed, verdicts), flush=True)
    return 0 if failed == 0 and not any(v.grew for v in verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
