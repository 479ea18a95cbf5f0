#!/usr/bin/env python3
"""Fault-injection campaign on the embedded testbed (issue 28 item 1).

Why: the runner's promises under faults (docs/reliability.rst) are only worth what a real
fault proves. This script starts real, short ``vsbench --test`` runs (namespaces, veth, a real
switch, trafgen) and, at a seeded random moment of each, injects one fault: ``kill -9`` of
the switch's daemons or the generator's sender, SIGINT/SIGTERM/SIGHUP (once or twice), the
results directory's filesystem full, the state directory read-only, a second run at once,
a remote generator host lost (generator_hosts.py beside this file).
Each round then checks what vsbench promises:

* the exit code (1 for something dying, 128+signal for a signal, 0 for an isolated second run);
* the last line printed names what happened (the dead process, the signal, the full disk);
* every line of trials.jsonl parses (a half-written line is a lost trial);
* results.json is valid JSON, valid against its schema, with a terminal status;
* after the run's own teardown nothing of it is left: no netns, link, process, hugepage
  file, mount, nftables table or tc qdisc carrying the run id, no process the run started.

It prints one line per round and, last, ``faults=N survived=N trials_lost=N residue=N``.
``--soak`` hands the rest of the command line to ``soak.py`` beside this file.

Run it as root, alone on the testbed (``flock /tmp/vsbench-testbed.lock``): it sends
real traffic. The faults hit only processes of the runs it started (found by ancestry and by
the run's private state directory on their command line), never anything by name alone.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
RUN_DIR_RE = re.compile(r"-([a-z0-9]{6,12})$")
SHORT = "frame_sizes=[64];trial_duration=1"
RUN_TIMEOUT_S = 240.0
#: A mid-trial kill that found its process gone (the trial ended during the delay) waits for
#: the next trial this many times before the round is reported as not injected.
MISSED_MOMENT_RETRIES = 5
# a pvp search: short trials, no latency pass, a coarse search (a few trials, each a moment to hit)
PVP_SHORT = "frame_sizes=[64];trial_duration=1;warmup_s=1;latency.enabled=false;relative_width=0.2"


@dataclass(frozen=True)
class Fault:
    """One kind of fault at one kind of moment, on one switch."""

    kind: str            # kill / signal / disk_full / state_ro / second_run / generator_host
    switch: str          # linux_bridge / ovs_dpdk / external (a generator host that models the DUT)
    moment: str          # configure / trial / random / first_write / mid_run / start
    target: str = ""     # the process name killed (kill), the signal name(s) (signal)
    twice: bool = False  # a signal sent twice in a row
    test: str = "phy2phy_tput"
    vnf: str = ""        # --vnf (a pvp testcase's VNF), "" for the testcase's default
    params: str = SHORT  # --test-params
    trafficgen: str = "trafgen"

    @property
    def label(self) -> str:
        what = self.target + ("x2" if self.twice else "")
        return "/".join(p for p in (self.kind, what, self.moment, self.switch, self.test, self.vnf) if p)


def catalogue(quick: bool) -> list[Fault]:
    """Every fault of the campaign, in priority order. ``quick``: one of each family on the
    lightest switch (for the integration test)."""
    if quick:
        return [Fault("kill", "linux_bridge", "trial", "trafgen"),
                Fault("signal", "linux_bridge", "random", "SIGTERM"),
                Fault("signal", "linux_bridge", "trial", "SIGHUP", twice=True),
                Fault("disk_full", "linux_bridge", "mid_run"),
                Fault("disk_full", "linux_bridge", "first_write"),
                Fault("state_ro", "linux_bridge", "start")]
    faults = []
    for target in ("ovs-vswitchd", "ovsdb-server"):
        for moment in ("configure", "trial"):
            faults.append(Fault("kill", "ovs_dpdk", moment, target))
    faults.append(Fault("kill", "linux_bridge", "trial", "trafgen"))
    faults.append(Fault("kill", "ovs_dpdk", "trial", "trafgen", test="phy2phy_cont"))
    for sig in ("SIGINT", "SIGTERM", "SIGHUP"):
        faults.append(Fault("signal", "linux_bridge", "random", sig))
        faults.append(Fault("signal", "linux_bridge", "trial", sig, twice=True))
    faults.append(Fault("signal", "ovs_dpdk", "configure", "SIGTERM"))
    # a process VNF dying under the run (issue 28): the cheapest pvp runs that start it.
    # "configure": as soon as the VNF process exists (before or as its first trial starts)
    for moment in ("configure", "trial"):
        faults.append(Fault("kill", "linux_bridge", moment, "testpmd", test="pvp_tput", params=PVP_SHORT))
        faults.append(Fault("kill", "ovs_dpdk", moment, "l3fwd", test="pvp_tput", vnf="l3fwd", params=PVP_SHORT))
    # QEMU of a VNF VM (testpmd in a TCG guest on OvS-DPDK's vhost-user ports): killed mid-trial
    faults.append(Fault("kill", "ovs_dpdk", "trial", "qemu-system-x86_64", test="pvp_tput",
                        params=PVP_SHORT + ";vnf.testpmd.mode=vm"))
    # iperf3 (the TCP testcases' generator): its client or server killed while it sends
    faults.append(Fault("kill", "linux_bridge", "trial", "iperf3", test="tcp_tput", trafficgen="iperf3",
                        params="trial_duration=2;omit=0;tcp.tso=false"))
    # a remote generator host gone mid-run: the TRex server (the fake, a separate process
    # speaking TRex's JSON-RPC over ZMQ and modelling the DUT) killed after the first trial
    faults.append(Fault("generator_host", "external", "mid_run", "trex", trafficgen="trex",
                        params="frame_sizes=[64];trial_duration=0.5;latency.enabled=false"))
    # ... and a generator host reached with ssh (a lab host running the MoonGen fake) going
    # down after the first trial: its sshd, the trial's session and MoonGen killed
    faults.append(Fault("generator_host", "external", "mid_run", "ssh", trafficgen="moongen",
                        params="frame_sizes=[64];trial_duration=0.5;latency.enabled=false"))
    faults.append(Fault("disk_full", "linux_bridge", "first_write"))
    faults.append(Fault("disk_full", "linux_bridge", "mid_run"))
    faults.append(Fault("state_ro", "linux_bridge", "start"))
    faults.append(Fault("second_run", "linux_bridge", "trial"))
    return faults


# -- processes of a run ---------------------------------------------------------------------

@dataclass(frozen=True)
class Proc:
    pid: int
    start: str   # /proc/<pid>/stat field 22: with the pid, names one process for good
    name: str    # basename of argv[0]
    argv: str


def _read_proc(pid: int) -> tuple[int, str, Proc] | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return None
    rest = stat[stat.rindex(")") + 2:].split()
    if rest[0] == "Z":
        return None
    name = os.path.basename(argv.split(" ", 1)[0]) if argv else stat[stat.index("(") + 1:stat.rindex(")")]
    return int(rest[1]), rest[19], Proc(pid, rest[19], name, argv)


def alive(proc: Proc) -> bool:
    got = _read_proc(proc.pid)
    return got is not None and got[2].start == proc.start


class Tracker:
    """Watches, every 50 ms while a run lives, which processes belong to it: descendants of
    the vsbench process, and any process naming the run's private state directory (a daemon
    that detached, ovs-vswitchd). Remembered after they exit, so the residue check can ask
    whether each is still alive."""

    def __init__(self, root_pids: list[int], marks: list[str]) -> None:
        self.roots = set(root_pids)
        self.marks = marks
        self.seen: dict[tuple[int, str], Proc] = {}
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def add_root(self, pid: int) -> None:
        with self._lock:
            self.roots.add(pid)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.scan()
            self._stop.wait(0.05)

    def scan(self) -> None:
        table: dict[int, tuple[int, Proc]] = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                got = _read_proc(int(entry))
                if got:
                    table[int(entry)] = (got[0], got[2])
        with self._lock:
            family = set(self.roots)
            for pid, (_ppid, proc) in table.items():
                if any(m in proc.argv for m in self.marks):
                    family.add(pid)
            grew = True
            while grew:
                grew = False
                for pid, (ppid, _proc) in table.items():
                    if ppid in family and pid not in family:
                        family.add(pid)
                        grew = True
            for pid in family:
                if pid in table:
                    proc = table[pid][1]
                    self.seen[(proc.pid, proc.start)] = proc

    def live(self, name: str) -> list[Proc]:
        with self._lock:
            procs = list(self.seen.values())
        # ovs-vswitchd of the DPDK build is ovs-vswitchd-dpdk; DPDK's apps are dpdk-testpmd, dpdk-l3fwd
        # a DPDK app's driver probe (testpmd -v ... --file-prefix=vsbprobe..., 0.2 s) is not
        # the VNF: killing it tests nothing the run depends on
        return [p for p in procs if (p.name == name or p.name.startswith(name + "-") or p.name.endswith("-" + name))
                and "vsbprobe" not in p.argv and alive(p)]

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


# -- one run --------------------------------------------------------------------------------

@dataclass
class Started:
    proc: subprocess.Popen
    out_path: Path
    results_dir: Path

    def run_dir(self) -> Path | None:
        dirs = [d for d in self.results_dir.iterdir() if d.is_dir() and RUN_DIR_RE.search(d.name)] \
            if self.results_dir.is_dir() else []
        return dirs[0] if len(dirs) == 1 else None


def start_run(fault: Fault, results_dir: Path, state_dir: Path, out_path: Path,
              conf_file: Path | None = None) -> Started:
    argv = [sys.executable, "-m", "vsbench", "--test", fault.test, "--vswitch", fault.switch,
            "--trafficgen", fault.trafficgen, "--test-params", fault.params, "--results-dir", str(results_dir), "--no-store"]
    if conf_file is not None:
        argv += ["--conf-file", str(conf_file)]
    if fault.vnf:
        argv += ["--vnf", fault.vnf]
    env = {**os.environ, "VSBENCH_STATE_DIR": str(state_dir), "PYTHONUNBUFFERED": "1"}
    env.pop("VSBENCH_DB", None)
    out = open(out_path, "wb")
    # its own session: a signal reaches only the process group we aim it at (Ctrl-C and a
    # dropped ssh session signal the whole foreground group, so SIGINT/SIGHUP go to the group)
    proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            env=env, cwd=ROOT, start_new_session=True)
    out.close()
    return Started(proc, out_path, results_dir)


def catches(pid: int, signum: int) -> bool:
    """Whether process ``pid`` has a handler for ``signum`` (SigCgt of /proc/<pid>/status)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("SigCgt:"):
                return bool(int(line.split()[1], 16) & (1 << (signum - 1)))
    except OSError:
        pass
    return False


def wait_until(cond: Callable[[], bool], timeout_s: float, proc: subprocess.Popen) -> bool:
    """Poll ``cond`` until true (True), the run ends or the time is up (False)."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if cond():
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.03)
    return False


def trial_lines(run_dir: Path | None) -> int:
    try:
        return len((run_dir / "trials.jsonl").read_bytes().splitlines()) if run_dir else 0
    except OSError:
        return 0


# -- checks ---------------------------------------------------------------------------------

@dataclass
class Verdict:
    fault: Fault
    seed_delay_s: float
    problems: list[str] = field(default_factory=list)
    trials_lost: int = 0
    residue: list[str] = field(default_factory=list)
    exit_code: int | None = None
    last_line: str = ""
    duration_s: float = 0.0
    injected: str = ""

    @property
    def survived(self) -> bool:
        return not self.problems and not self.residue and self.trials_lost == 0


def last_line(out_path: Path) -> str:
    lines = [ln.strip() for ln in out_path.read_text(errors="replace").splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def check_files(run_dir: Path | None, statuses: tuple[str, ...], v: Verdict, announced_trials: int) -> None:
    """trials.jsonl parses line by line; results.json is whole, schema-valid, terminal."""
    from vsbench.results import schema

    if run_dir is None:
        return
    trials = run_dir / "trials.jsonl"
    parsed = 0
    if trials.exists():
        for number, line in enumerate(trials.read_bytes().splitlines(), 1):
            try:
                record = json.loads(line)
                schema.validate(record, "trial.schema.json")
                parsed += 1
            except Exception as exc:  # noqa: BLE001 - any unreadable line is a lost trial
                v.trials_lost += 1
                v.problems.append(f"trials.jsonl line {number}: {type(exc).__name__}")
    if announced_trials > parsed:
        v.trials_lost += announced_trials - parsed
        v.problems.append(f"{announced_trials} trial(s) were in trials.jsonl during the run, {parsed} after it")
    results = run_dir / "results.json"
    if not results.exists():
        if (run_dir / "config.yaml").exists():
            v.problems.append("results.json missing")
        return
    try:
        data = json.loads(results.read_text())
        schema.validate(data, "results.schema.json")
    except Exception as exc:  # noqa: BLE001
        v.problems.append(f"results.json unreadable: {type(exc).__name__}: {str(exc)[:120]}")
        return
    if data.get("status") not in statuses:
        v.problems.append(f"results.json status {data.get('status')!r}, expected {'/'.join(statuses)}")


def run_id_of(run_dir: Path | None) -> str | None:
    match = RUN_DIR_RE.search(run_dir.name) if run_dir else None
    return match.group(1) if match else None


def residue(run_ids: list[str], tracker: Tracker, marks: list[str], own_mounts: list[Path]) -> list[str]:
    """What of the runs is still there after they ended (every check independent of
    vsbench's own cleanup code, so a blind spot there is not one here)."""
    left: list[str] = []
    for proc in list(tracker.seen.values()):
        if alive(proc):
            left.append(f"process {proc.pid} {proc.argv[:80]}")
    names = [r for r in run_ids if r]

    def mentions(text: str) -> bool:
        return any(r in text for r in names) or any(m in text for m in marks)

    def lines(argv: list[str]) -> list[str]:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        return done.stdout.splitlines()

    for line in lines(["ip", "netns", "list"]):
        if mentions(line):
            left.append(f"netns {line.split()[0]}")
    for line in lines(["ip", "-o", "link", "show"]):
        if mentions(line.split(":")[1] if ":" in line else line):
            left.append(f"link {line.split(':')[1].strip()}")
    for line in lines(["tc", "qdisc", "show"]):
        if mentions(line):
            left.append(f"qdisc {line[:60]}")
    if shutil.which("nft"):
        for line in lines(["nft", "list", "tables"]):
            if mentions(line):
                left.append(f"nft {line}")
    for line in Path("/proc/self/mounts").read_text().splitlines():
        if mentions(line.split()[1]) and Path(line.split()[1]) not in own_mounts:
            left.append(f"mount {line.split()[1]}")
    huge = Path("/dev/hugepages")
    if huge.is_dir():
        for entry in huge.iterdir():
            if mentions(entry.name):
                left.append(f"hugepage file {entry}")
    for base in (Path("/run/dpdk"), Path("/var/run/dpdk"), Path(tempfile.gettempdir())):
        if base.is_dir():
            for entry in base.iterdir():
                if any(r in entry.name for r in names):
                    left.append(f"file {entry}")
    return sorted(set(left))


# -- injecting ------------------------------------------------------------------------------

EXPECT_WORDS = {
    "ovs-vswitchd": r"ovs-vswitchd",
    "ovsdb-server": r"ovsdb|db\.sock",  # the daemon, or the database socket that went dead with it
    "trex": r"trex.*(no reply|unreachable|refused|[Cc]onnection|gone)",
    "ssh": r"moongen.*generator host \S+ lost",
    "trafgen": r"trafgen|generator",
    # mid-trial: the VNF's liveness check at a trial boundary; at configure: its start saw it exit
    # (a bare "testpmd" would match every pvp line: "vnf testpmd: ...")
    "testpmd": r"testpmd (\(pid \d+\) died|exited)",
    "l3fwd": r"l3fwd (\(pid \d+\) died|exited)",
    "iperf3": r"iperf3 .*exit -9",
    "qemu-system-x86_64": r"QEMU of VM \S+ \(pid \d+\) died",
    "SIGINT": r"SIGINT", "SIGTERM": r"SIGTERM", "SIGHUP": r"SIGHUP",
    "disk_full": r"[Nn]o space left",
    "state_ro": r"[Rr]ead-only",
}


def one_round(fault: Fault, rng: random.Random, work: Path) -> Verdict:
    """Start a run, inject ``fault`` at a random moment, wait for the end, check."""
    delay = round(rng.uniform(0.0, 0.6), 3)
    verdict = Verdict(fault, delay)
    began = time.monotonic()
    work.mkdir(parents=True)
    state_dir = work / "state"
    results_dir = work / "results"
    state_dir.mkdir()
    results_dir.mkdir()
    mounts: list[Path] = []
    marks = [str(state_dir)]
    tracker = Tracker([], marks)
    runs: list[Started] = []
    generator_host = None
    try:
        if fault.kind == "disk_full":
            subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m,mode=0755", "vsbfaults", str(results_dir)],
                           check=True)
            mounts.append(results_dir)
            if fault.moment == "first_write":
                fill(results_dir)
        if fault.kind == "state_ro":
            subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k,mode=0755", "vsbfaults", str(state_dir)], check=True)
            mounts.append(state_dir)
        conf_file = None
        if fault.kind == "generator_host":
            sys.path.insert(0, str(HERE))
            import generator_hosts  # noqa: PLC0415 - beside this file, needed by these faults only

            try:
                generator_host = generator_hosts.HOSTS[fault.target](work)
            except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
                verdict.problems.append(f"the generator host did not start: {exc}")
                return verdict
            conf_file = work / "generator-host.yaml"
            conf_file.write_text(json.dumps(generator_host.conf()))  # YAML reads JSON
        first = start_run(fault, results_dir, state_dir, work / "out.txt", conf_file)
        tracker.add_root(first.proc.pid)
        runs.append(first)
        announced = inject(fault, first, tracker, rng, delay, verdict, work, runs, generator_host)
        for started in runs:
            try:
                started.proc.wait(timeout=RUN_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                verdict.problems.append(f"run did not end within {RUN_TIMEOUT_S:g} s of the fault")
                os.killpg(started.proc.pid, signal.SIGKILL)  # our own child's group
                started.proc.wait()
        time.sleep(0.2)
        tracker.scan()
        verdict.exit_code = first.proc.returncode
        verdict.last_line = last_line(first.out_path)
        expected_codes, statuses, word = expectations(fault)
        if first.proc.returncode not in expected_codes:
            verdict.problems.append(f"exit {first.proc.returncode}, expected {sorted(expected_codes)}")
        if word and not re.search(word, verdict.last_line):
            verdict.problems.append(f"last line does not name {fault.target or fault.kind}: {verdict.last_line[:160]!r}")
        if "Traceback" in first.out_path.read_text(errors="replace"):
            verdict.problems.append("a traceback was printed")
        check_files(first.run_dir(), statuses, verdict, announced)
        for second in runs[1:]:
            if second.proc.returncode != 0:
                verdict.problems.append(f"second run exit {second.proc.returncode}: {last_line(second.out_path)[:160]!r}")
            check_files(second.run_dir(), ("complete",), verdict, 0)
        run_ids = [run_id_of(r.run_dir()) for r in runs]
        tracker.stop()
        verdict.residue = residue([r for r in run_ids if r], tracker, marks, mounts)
        if any(state_dir.iterdir()) if state_dir.is_dir() else False:
            verdict.residue.append(f"state dir not empty: {sorted(p.name for p in state_dir.iterdir())}")
    finally:
        if generator_host is not None:
            verdict.residue += generator_host.stop()
        tracker.stop() if tracker._thread.is_alive() else None
        for started in runs:
            if started.proc.poll() is None:
                os.killpg(started.proc.pid, signal.SIGKILL)
                started.proc.wait()
        for mount in reversed(mounts):
            subprocess.run(["umount", str(mount)], check=False)
        verdict.duration_s = time.monotonic() - began
    return verdict


def expectations(fault: Fault) -> tuple[set[int], tuple[str, ...], str]:
    """(exit codes, results.json statuses, regex the last line must match)."""
    if fault.kind == "signal":
        return {128 + signal.Signals[fault.target].value}, ("interrupted",), EXPECT_WORDS[fault.target]
    if fault.kind == "second_run":
        return {0}, ("complete",), ""
    if fault.kind == "disk_full":
        return {1, 2}, ("failed",), EXPECT_WORDS["disk_full"]
    if fault.kind == "state_ro":
        return {1, 2}, ("failed",), EXPECT_WORDS["state_ro"]
    return {1}, ("failed",), EXPECT_WORDS[fault.target]


def fill(path: Path) -> None:
    """Fill the filesystem at ``path`` (ENOSPC ends the write)."""
    try:
        with open(path / ".vsbfaults-fill", "wb") as sink:
            while True:
                sink.write(b"\0" * 65536)
                sink.flush()
    except OSError:
        pass


def inject(fault: Fault, run: Started, tracker: Tracker, rng: random.Random, delay: float,
           verdict: Verdict, work: Path, runs: list[Started], generator_host=None) -> int:
    """Wait for the fault's moment, then inject it; returns the trials.jsonl lines there
    were just before (they must all be there, whole, at the end)."""
    proc = run.proc
    in_trial = lambda: bool(tracker.live(fault.trafficgen))  # noqa: E731
    if fault.moment == "trial":
        if not wait_until(in_trial, 120, proc):
            verdict.problems.append("the run ended before a trial started")
            return 0
    elif fault.moment == "configure":
        target = fault.target if fault.kind == "kill" else "ovs-vswitchd"
        if not wait_until(lambda: bool(tracker.live(target)), 120, proc):
            verdict.problems.append(f"the run ended before {target} started")
            return 0
    elif fault.moment == "random":
        # from the moment vsbench's main() handles SIGTERM (before it, the interpreter is
        # still importing: a signal takes its default action and nothing exists to undo)
        if not wait_until(lambda: catches(proc.pid, signal.SIGTERM), 60, proc):
            verdict.problems.append("vsbench never installed its SIGTERM handler")
            return 0
        time.sleep(rng.uniform(0.0, 8.0))
    elif fault.moment == "mid_run":
        if not wait_until(lambda: trial_lines(run.run_dir()) > 0, 120, proc):
            verdict.problems.append("the run ended before its first trial was recorded")
            return 0
    time.sleep(delay)
    announced = trial_lines(run.run_dir())
    if proc.poll() is not None:
        verdict.injected = "run already over"
        verdict.problems.append("the run ended before the fault")
        return announced
    if fault.kind == "kill":
        victims = tracker.live(fault.target)
        for _ in range(MISSED_MOMENT_RETRIES):
            if victims or proc.poll() is not None or fault.moment != "trial":
                break
            # the trial ended during the delay (a short trafgen run): aim at the next one,
            # or the round would count as a fault vsbench did not survive when none was made
            if wait_until(in_trial, 30, proc):
                time.sleep(delay / 4)
                announced = trial_lines(run.run_dir())
                victims = tracker.live(fault.target)
        if not victims:
            verdict.problems.append(f"no {fault.target} of the run alive at the moment")
            return announced
        for victim in victims:
            os.kill(victim.pid, signal.SIGKILL)
        verdict.injected = f"kill -9 {fault.target} pid {','.join(str(v.pid) for v in victims)}" \
                           f" (trafgen running: {in_trial()})"
    elif fault.kind == "signal":
        signum = signal.Signals[fault.target]
        send = (lambda: os.killpg(proc.pid, signum)) if fault.target in ("SIGINT", "SIGHUP") \
            else (lambda: os.kill(proc.pid, signum))
        send()
        if fault.twice:
            time.sleep(rng.uniform(0.05, 0.5))
            if proc.poll() is None:
                send()
        verdict.injected = f"{fault.target}{' twice' if fault.twice else ''}"
    elif fault.kind == "disk_full":
        if fault.moment == "mid_run":
            fill(run.results_dir)
        verdict.injected = "results filesystem full"
    elif fault.kind == "generator_host":
        verdict.injected = f"{generator_host.kill()} after {announced} trial line(s)"
    elif fault.kind == "second_run":
        second = start_run(fault, run.results_dir / "second", work / "state", work / "out2.txt")
        tracker.add_root(second.proc.pid)
        runs.append(second)
        verdict.injected = f"second run pid {second.proc.pid}"
    else:
        verdict.injected = fault.kind
    return announced


# -- the campaign ---------------------------------------------------------------------------

def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each fault (default 3)")
    parser.add_argument("--seed", type=int, default=None, help="seed of the random moments (printed)")
    parser.add_argument("--only", metavar="KIND", help="only faults whose label contains KIND "
                        "(kill, signal, disk_full, state_ro, second_run, ovs-vswitchd, SIGHUP...)")
    parser.add_argument("--quick", action="store_true", help="one fault of each family on linux_bridge, 1 round")
    parser.add_argument("--list", action="store_true", help="list the faults and exit")
    parser.add_argument("--keep", action="store_true", help="keep the work directory of every round")
    return parser.parse_args(argv)


def soak(rest: list[str]) -> int:
    """``--soak ARGS``: the soak test of issue 28 item 2 lives in soak.py beside this file."""
    if not (HERE / "soak.py").exists():
        print(f"faults: --soak needs {HERE / 'soak.py'}, which is not there", file=sys.stderr)
        return 2
    sys.path.insert(0, str(HERE))
    import soak as soak_module  # noqa: PLC0415 - optional, beside this file

    # the campaign is run under flock(1) on the testbed lock (docs/reliability.rst): soak
    # taking that lock again from this process tree would wait for ever
    if not any(a == "--lock" or a.startswith("--lock=") for a in rest):
        rest = ["--lock", "", *rest]
    return int(soak_module.main(rest))


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--soak" in argv:
        index = argv.index("--soak")
        return soak(argv[index + 1:])
    args = parse_args(argv)
    faults = catalogue(args.quick)
    if args.only:
        faults = [f for f in faults if args.only in f.label]
        if not faults:
            print(f"faults: no fault matches {args.only!r} (see --list)", file=sys.stderr)
            return 2
    if args.list:
        for fault in faults:
            print(fault.label)
        return 0
    if os.geteuid() != 0:
        print("faults: needs root (namespaces, mounts, killing the run's processes)", file=sys.stderr)
        return 2
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 31)
    rounds = 1 if args.quick and args.rounds == 3 else args.rounds
    print(f"faults: seed={seed} rounds={rounds} faults={len(faults) * rounds}", flush=True)
    rng = random.Random(seed)
    base = Path(tempfile.mkdtemp(prefix="vsbfaults-"))
    verdicts: list[Verdict] = []
    began = time.monotonic()
    try:
        for round_no in range(rounds):
            for index, fault in enumerate(faults):
                v = one_round(fault, rng, base / f"r{round_no}-{index}")
                verdicts.append(v)
                word = "survived" if v.survived else "FAILED"
                print(f"{word} {fault.label} round={round_no + 1} delay={v.seed_delay_s}s exit={v.exit_code} "
                      f"{v.duration_s:.1f}s [{v.injected}] last: {v.last_line[:140]}", flush=True)
                for problem in v.problems + [f"residue: {r}" for r in v.residue]:
                    print(f"    {problem}", flush=True)
                if not args.keep and v.survived:
                    shutil.rmtree(base / f"r{round_no}-{index}", ignore_errors=True)
    except KeyboardInterrupt:
        print("faults: interrupted", file=sys.stderr)
    finally:
        if not args.keep and not any(base.iterdir()):
            base.rmdir()
    survived = sum(v.survived for v in verdicts)
    print(f"faults: {time.monotonic() - began:.0f} s; seed={seed}; work dir of failed rounds: {base}", flush=True)
    print(f"faults={len(verdicts)} survived={survived} trials_lost={sum(v.trials_lost for v in verdicts)} "
          f"residue={sum(len(v.residue) for v in verdicts)}", flush=True)
    return 0 if verdicts and survived == len(verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
