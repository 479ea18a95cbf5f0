"""``vsbench cleanup``: remove what killed runs left behind, and nothing else.

Every resource vsbench creates carries its run id in its name (:mod:`vsbench.system.naming`),
and a live run holds a lock (:mod:`vsbench.system.runstate`). Cleanup therefore:

1. **looks** (:func:`snapshot`): network namespaces, root-namespace links, mounts,
   hugepage files, DPDK runtime dirs, temp and state directories, and the processes inside
   our namespaces (``ip netns pids``) or started with one of our directories on their
   command line (an ovsdb-server on a real host);
2. **decides** (:func:`plan`, pure): everything whose run id is not live, in a safe order
   -- processes, namespaces, links, mounts, hugepage files, directories, lock files;
3. **removes** (:func:`remove`): processes by pid (TERM, then KILL), only if the pid still
   names the process that was seen (start time unchanged), never by name.

Before the lock of a dead run goes, the run's own files are closed (a layer above passes
``mark_dead_run``: results.json and suite.json still say ``running`` after ``kill -9``;
they become ``interrupted``), found through the run directory its lock recorded.

Running it twice removes nothing the second time. ``dry_run`` reports without removing.
Hugepages a killed DPDK run added to ``nr_hugepages`` are given back when the run left its
reservation record (``hugepages.json``, written by :func:`vsbench.system.hugepages.reserve`)
in one of its directories; pages without a record cannot be told apart from anyone else's
and are left alone.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import signal
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Sequence

from vsbench.system import commands, runstate
from vsbench.system.naming import NAME_PREFIX, RUN_ID_RE, run_id_of

log = logging.getLogger(__name__)

NETNS_DIR = Path("/run/netns")
SYS_CLASS_NET = Path("/sys/class/net")
DPDK_RUNTIME_ROOT = Path("/var/run/dpdk")
PROC = Path("/proc")
TERM_GRACE_S = 5.0

#: Removal order: what holds a resource goes before the resource.
KIND_ORDER = ("plugin", "process", "netns", "link", "mount", "hugepage-file", "hugepage-reservation",
              "dpdk-runtime", "directory", "lock")
#: File name of a hugepage reservation record inside a run's directories.
HUGEPAGE_RECORD = "hugepages.json"


@dataclass(frozen=True)
class ProcessInfo:
    pid: int
    start_ticks: int  # /proc/<pid>/stat field 22: tells a reused pid from the one we saw
    argv: tuple[str, ...]


@dataclass
class Snapshot:
    """What exists now, as plain data (so the decision can be tested on synthetic names)."""

    netns: list[str] = field(default_factory=list)
    netns_pids: dict[str, list[int]] = field(default_factory=dict)
    links: list[str] = field(default_factory=list)
    mounts: list[str] = field(default_factory=list)
    hugepage_files: list[Path] = field(default_factory=list)
    dpdk_runtime: list[Path] = field(default_factory=list)
    temp_entries: list[Path] = field(default_factory=list)
    state_entries: list[Path] = field(default_factory=list)
    processes: dict[int, ProcessInfo] = field(default_factory=dict)
    #: hugepage reservation records found inside temp/state entries
    hugepage_records: list[Path] = field(default_factory=list)


@dataclass(frozen=True)
class Leftover:
    """One thing to remove. ``name`` is a path, a namespace/link name or a pid."""

    kind: str
    name: str
    run_id: str
    detail: str = ""
    pid: int | None = None
    start_ticks: int | None = None


@dataclass
class CleanupReport:
    removed: list[Leftover] = field(default_factory=list)
    failed: list[tuple[Leftover, str]] = field(default_factory=list)
    live_runs: list[str] = field(default_factory=list)
    dry_run: bool = False

    def summary(self) -> str:
        verb = "would remove" if self.dry_run else "removed"
        lines = []
        for item in self.removed:
            if item.kind == "plugin":  # the plugin's own line says what it did
                lines.append(f"{item.detail or 'plugin'}: {item.name} (run {item.run_id})")
                continue
            if item.kind == "results":  # the marker's own line ("marked .../results.json interrupted")
                lines.append(f"{item.name} (run {item.run_id})")
                continue
            extra = f" ({item.detail})" if item.detail else ""
            lines.append(f"{verb} {item.kind} {item.name} of run {item.run_id}{extra}")
        for item, error in self.failed:
            lines.append(f"could not remove {item.kind} {item.name} of run {item.run_id}: {error}")
        if self.live_runs:
            lines.append(f"left alone: live run(s) {', '.join(sorted(self.live_runs))}")
        if not self.removed and not self.failed:
            lines.append("nothing to clean up")
        return "\n".join(lines)


# --------------------------------------------------------------------------- deciding


def _dead(name: str, live: set[str]) -> str | None:
    run_id = run_id_of(name)
    return run_id if run_id is not None and run_id not in live else None


def _state_run_id(path: Path) -> str | None:
    stem = path.name.removesuffix(".lock")
    return stem if RUN_ID_RE.match(stem) else None


def plan(snap: Snapshot, live: Iterable[str], only: Iterable[str] | None = None,
         own_pids: Iterable[int] = ()) -> list[Leftover]:
    """Everything in ``snap`` that belongs to a dead run, in removal order. Pure.

    ``live`` run ids are never touched; with ``only``, just those run ids are considered.
    ``own_pids`` (this process and its parents) are never ended.
    """
    live = set(live)
    only_set = set(only) if only is not None else None
    skip_pids = set(own_pids)

    def wanted(run_id: str | None) -> str | None:
        if run_id is None or run_id in live:
            return None
        if only_set is not None and run_id not in only_set:
            return None
        return run_id

    items: list[Leftover] = []
    dirs: list[tuple[str, str]] = []  # (path, run id) of our dead directories

    for ns in snap.netns:
        run_id = wanted(_dead(ns, live))
        if run_id and ns.startswith(f"{NAME_PREFIX}-"):
            for pid in snap.netns_pids.get(ns, []):
                info = snap.processes.get(pid)
                if pid in skip_pids:
                    continue
                items.append(Leftover("process", str(pid), run_id, f"in netns {ns}" + (f": {_argv0(info)}" if info else ""),
                                      pid=pid, start_ticks=info.start_ticks if info else None))
            items.append(Leftover("netns", ns, run_id))
    for link in snap.links:
        run_id = wanted(_dead(link, live))
        if run_id:
            items.append(Leftover("link", link, run_id))
    for path in snap.temp_entries:
        run_id = wanted(_dead(path.name, live))
        if run_id:
            dirs.append((str(path), run_id))
    for path in snap.state_entries:
        run_id = wanted(_state_run_id(path))
        if run_id is None:
            continue
        if path.name.endswith(".lock"):
            items.append(Leftover("lock", str(path), run_id))
        else:
            dirs.append((str(path), run_id))
    for path in snap.dpdk_runtime:
        run_id = wanted(_dead(path.name, live))
        if run_id:
            items.append(Leftover("dpdk-runtime", str(path), run_id))
    for path in snap.hugepage_files:
        run_id = wanted(_dead(path.name, live))
        if run_id:
            items.append(Leftover("hugepage-file", str(path), run_id))
    for mount_point in snap.mounts:
        for d, run_id in dirs:
            if mount_point == d or mount_point.startswith(d.rstrip("/") + "/"):
                items.append(Leftover("mount", mount_point, run_id))
                break
    for record in snap.hugepage_records:
        for d, run_id in dirs:
            if str(record).startswith(d.rstrip("/") + "/"):
                items.append(Leftover("hugepage-reservation", str(record), run_id))
                break
    for d, run_id in dirs:
        items.append(Leftover("directory", d, run_id))

    # Processes outside our namespaces that were started with one of our dead directories
    # on their command line (e.g. ovsdb-server on a real host): provably ours.
    seen = {i.pid for i in items if i.kind == "process"}
    for pid, info in sorted(snap.processes.items()):
        if pid in seen or pid in skip_pids:
            continue
        for d, run_id in dirs:
            if any(d in arg for arg in info.argv):
                items.append(Leftover("process", str(pid), run_id, f"uses {d}: {_argv0(info)}",
                                      pid=pid, start_ticks=info.start_ticks))
                seen.add(pid)
                break
    return sorted(items, key=lambda i: KIND_ORDER.index(i.kind))


def _argv0(info: ProcessInfo | None) -> str:
    return os.path.basename(info.argv[0]) if info and info.argv else "?"


# --------------------------------------------------------------------------- looking


def _listdir(path: Path) -> list[Path]:
    try:
        return sorted(path.iterdir())
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return []


def read_process(pid: int, proc: Path = PROC) -> ProcessInfo | None:
    try:
        stat = (proc / str(pid) / "stat").read_text()
        raw = (proc / str(pid) / "cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    fields = stat[stat.rindex(")") + 2:].split()
    argv = tuple(a.decode(errors="replace") for a in raw.split(b"\0") if a)
    return ProcessInfo(pid, int(fields[19]), argv)


def netns_pids(ns: str) -> list[int]:
    proc = commands.run(["ip", "netns", "pids", ns], check=False, timeout_s=10)
    return [int(tok) for tok in proc.stdout.split() if tok.isdigit()]


def _mounts(mounts_text: str | None) -> list[tuple[str, str]]:
    """(mount point, fs type) of /proc/self/mounts, with octal escapes (``\\040``) undone."""
    text = mounts_text if mounts_text is not None else (PROC / "self" / "mounts").read_text()
    out = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) > 2:
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), parts[1])
            out.append((point, parts[2]))
    return out


def mount_points(mounts_text: str | None = None) -> list[str]:
    return [point for point, _fs in _mounts(mounts_text)]


def hugetlbfs_mounts(mounts_text: str | None = None) -> list[Path]:
    return [Path(point) for point, fs in _mounts(mounts_text) if fs == "hugetlbfs"]


def snapshot(state_dir: Path | None = None) -> Snapshot:
    """Read what exists now. Only names with our prefix are examined further."""
    snap = Snapshot()
    snap.netns = [p.name for p in _listdir(NETNS_DIR) if p.name.startswith(NAME_PREFIX)]
    for ns in snap.netns:
        snap.netns_pids[ns] = netns_pids(ns)
    snap.links = [p.name for p in _listdir(SYS_CLASS_NET) if p.name.startswith(NAME_PREFIX)]
    snap.mounts = mount_points()
    for mount in hugetlbfs_mounts():
        snap.hugepage_files += [p for p in _listdir(mount) if p.name.startswith(NAME_PREFIX)]
    snap.dpdk_runtime = [p for p in _listdir(DPDK_RUNTIME_ROOT) if p.name.startswith(NAME_PREFIX)]
    snap.temp_entries = [p for p in _listdir(Path(tempfile.gettempdir())) if p.name.startswith(NAME_PREFIX)]
    snap.state_entries = _listdir(state_dir or runstate.state_dir())
    for entry in snap.temp_entries + snap.state_entries:
        if entry.is_dir() and not entry.is_symlink():
            snap.hugepage_records += sorted(entry.rglob(HUGEPAGE_RECORD))
    for entry in _listdir(PROC):
        if entry.name.isdigit():
            info = read_process(int(entry.name))
            if info is not None:
                snap.processes[info.pid] = info
    return snap


def own_pids() -> set[int]:
    """This process and its ancestors: never ended, even if they sit in our namespace."""
    pids, pid = set(), os.getpid()
    while pid > 1:
        pids.add(pid)
        try:
            stat = (PROC / str(pid) / "stat").read_text()
            pid = int(stat[stat.rindex(")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return pids


# --------------------------------------------------------------------------- removing


def _end_process(item: Leftover) -> None:
    """TERM, then KILL after a grace period -- only while the pid is still the process seen."""
    def same() -> bool:
        info = read_process(item.pid)
        return info is not None and (item.start_ticks is None or info.start_ticks == item.start_ticks)

    if not same():
        return
    os.kill(item.pid, signal.SIGTERM)
    deadline = time.monotonic() + TERM_GRACE_S
    while time.monotonic() < deadline:
        if not same() or _is_zombie(item.pid):
            return
        time.sleep(0.05)
    if same():
        os.kill(item.pid, signal.SIGKILL)


def _is_zombie(pid: int) -> bool:
    try:
        stat = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return True
    return stat[stat.rindex(")") + 2:].split()[0] == "Z"


def _remove_one(item: Leftover) -> None:
    if item.kind == "process":
        _end_process(item)
    elif item.kind == "netns":
        commands.run(["ip", "netns", "delete", item.name], timeout_s=30)
    elif item.kind == "link":
        if (SYS_CLASS_NET / item.name).exists():  # gone already if its peer's netns went
            commands.run(["ip", "link", "delete", item.name], timeout_s=30)
    elif item.kind == "mount":
        commands.run(["umount", item.name], timeout_s=30)
    elif item.kind == "hugepage-reservation":
        from vsbench.system import hugepages

        released = hugepages.release_recorded(Path(item.name))
        log.info("cleanup: gave back %d hugepages of run %s", released, item.run_id)
    elif item.kind in ("hugepage-file", "lock"):
        Path(item.name).unlink(missing_ok=True)
    elif item.kind in ("dpdk-runtime", "directory"):
        path = Path(item.name)
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
    else:  # pragma: no cover - plan() only produces the kinds above
        raise ValueError(item.kind)


def remove(items: Sequence[Leftover], *, dry_run: bool = False, state_dir: Path | None = None) -> CleanupReport:
    """Remove ``items`` in order; a run that became live meanwhile is skipped."""
    report = CleanupReport(dry_run=dry_run)
    for item in items:
        if runstate.is_live(item.run_id, state_dir):
            if item.run_id not in report.live_runs:
                report.live_runs.append(item.run_id)
            continue
        if dry_run:
            report.removed.append(item)
            continue
        try:
            _remove_one(item)
        except (OSError, commands.CommandError) as exc:
            report.failed.append((item, str(exc)))
            log.warning("cleanup: %s %s: %s", item.kind, item.name, exc)
        else:
            report.removed.append(item)
            log.info("cleanup: removed %s %s of run %s", item.kind, item.name, item.run_id)
    return report


#: ``(label, cleaner)``: a plugin class's ``cleanup_dead_run(run_id, work_dirs) -> lines``,
#: gathered by the layer that loads plugins (this one never imports them).
PluginCleaner = tuple[str, Callable[[str, list[Path]], list[str]]]


def run_work_dirs(run_id: str, state_dir: Path) -> list[Path]:
    """Where a run's plugins may have created their files directly: each plan's work dir
    (``<state>/<run>/p<N>``), the run's own state dir, and the system temp dir."""
    base = Path(state_dir) / run_id
    plans = sorted(p for p in _listdir(base) if p.is_dir() and not p.is_symlink())
    return [*plans, base, Path(tempfile.gettempdir())]


def run_plugin_cleaners(run_ids: Iterable[str], cleaners: Sequence[PluginCleaner], *,
                        state_dir: Path, dry_run: bool = False) -> CleanupReport:
    """Ask every plugin cleaner to undo what it left in each dead run, before the generic
    removal: a plugin stops its daemons in order and gives back what only it knows about.
    A run that is live is skipped; a cleaner that fails is reported, the others go on."""
    report = CleanupReport(dry_run=dry_run)
    for run_id in sorted(set(run_ids)):
        if runstate.is_live(run_id, state_dir):
            continue
        work_dirs = run_work_dirs(run_id, state_dir)
        for label, cleaner in cleaners:
            if dry_run:
                continue
            try:
                lines = cleaner(run_id, work_dirs)
            except Exception as exc:  # noqa: BLE001 - one plugin's failure must not stop the cleanup
                report.failed.append((Leftover("plugin", label, run_id), str(exc)))
                log.warning("cleanup: %s for run %s: %s", label, run_id, exc)
                continue
            for line in lines or ():
                report.removed.append(Leftover("plugin", line, run_id, label))
                log.info("cleanup: %s: %s (run %s)", label, line, run_id)
    return report


#: ``mark_dead_run(run_id, run_dir, dry_run) -> lines``: closes a dead run's result files
#: (given by the layer that owns them; this one never imports it).
DeadRunMarker = Callable[[str, Path, bool], list[str]]


def mark_dead_runs(run_ids: Iterable[str], marker: DeadRunMarker, *, state_dir: Path,
                   dry_run: bool = False) -> CleanupReport:
    """Call ``marker`` with the run directory each dead run's lock recorded (read before
    the lock is removed: it is the only record of where the run wrote). A run that is live
    is skipped; a marker that fails is reported, the others go on."""
    report = CleanupReport(dry_run=dry_run)
    for run_id in sorted(set(run_ids)):
        if runstate.is_live(run_id, state_dir):
            continue
        run_dir = (runstate.read_claim(run_id, state_dir) or {}).get("run_dir")
        if not run_dir:
            continue
        try:
            lines = marker(run_id, Path(run_dir), dry_run)
        except Exception as exc:  # noqa: BLE001 - the leftovers must still be removed
            report.failed.append((Leftover("results", str(run_dir), run_id), str(exc)))
            log.warning("cleanup: marking the results of run %s: %s", run_id, exc)
            continue
        report.removed += [Leftover("results", line, run_id) for line in lines or ()]
    return report


def cleanup(dry_run: bool = False, *, state_dir: Path | None = None,
            run_ids: Iterable[str] | None = None,
            plugin_cleaners: Sequence[PluginCleaner] = (),
            mark_dead_run: DeadRunMarker | None = None) -> CleanupReport:
    """Find and remove the leftovers of dead runs (or only of ``run_ids``): first through
    the plugins' own cleaners (``plugin_cleaners``), then everything that is left. With
    ``mark_dead_run``, each dead run's result files are closed first (see
    :func:`mark_dead_runs`)."""
    state = state_dir or runstate.state_dir()
    live = runstate.live_run_ids(state)
    items = plan(snapshot(state), live, only=run_ids, own_pids=own_pids())
    marked = CleanupReport(dry_run=dry_run)
    if mark_dead_run is not None:
        marked = mark_dead_runs({i.run_id for i in items if i.kind == "lock"}, mark_dead_run,
                                state_dir=state, dry_run=dry_run)
    done_by_plugins = CleanupReport(dry_run=dry_run)
    if plugin_cleaners and items:
        done_by_plugins = run_plugin_cleaners({i.run_id for i in items}, plugin_cleaners,
                                              state_dir=state, dry_run=dry_run)
        if done_by_plugins.removed and not dry_run:  # look again: the plugins removed some
            items = plan(snapshot(state), runstate.live_run_ids(state), only=run_ids, own_pids=own_pids())
    report = remove(items, dry_run=dry_run, state_dir=state)
    report.removed[:0] = marked.removed + done_by_plugins.removed
    report.failed[:0] = marked.failed + done_by_plugins.failed
    for run_id in sorted(live):
        if run_id not in report.live_runs and (run_ids is None or run_id in set(run_ids)):
            report.live_runs.append(run_id)
    return report
