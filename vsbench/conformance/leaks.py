"""What this process holds and which processes descend from it, read from ``/proc``.

The conformance suite takes a snapshot before a generator starts, more while it runs (so a
child that later orphans its own children is still known), and checks after teardown that
no new socket, pipe or file under the run's directories is open and that no process seen
meanwhile is still alive.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


def _fd_targets() -> dict[int, str]:
    out = {}
    for entry in os.listdir("/proc/self/fd"):
        try:
            out[int(entry)] = os.readlink(f"/proc/self/fd/{entry}")
        except OSError:
            continue  # closed meanwhile (e.g. the fd listdir itself used)
    return out


def _proc_table() -> dict[int, tuple[int, str]]:
    """pid -> (ppid, start time) for every process we can read."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        # comm may contain spaces and parentheses: split after the last ')'
        fields = stat[stat.rfind(")") + 2 :].split()
        if fields[0] == "Z":  # zombie: already dead, only not reaped
            continue
        table[int(entry)] = (int(fields[1]), fields[19])
    return table


def _cmdline(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "?"
    return raw.replace(b"\0", b" ").decode(errors="replace").strip()[:200] or "?"


@dataclass(frozen=True)
class ResourceSnapshot:
    fds: dict[int, str]
    descendants: dict[int, str]  # pid -> start time (guards against pid reuse)

    @classmethod
    def take(cls) -> "ResourceSnapshot":
        table = _proc_table()
        me = os.getpid()
        children: dict[int, list[int]] = {}
        for pid, (ppid, _) in table.items():
            children.setdefault(ppid, []).append(pid)
        found, stack = {}, list(children.get(me, []))
        while stack:
            pid = stack.pop()
            found[pid] = table[pid][1]
            stack.extend(children.get(pid, []))
        return cls(_fd_targets(), found)

    def new_open_fds(self, earlier: "ResourceSnapshot", dirs: list[Path]) -> list[str]:
        """Sockets, pipes and files under ``dirs`` open now but not in ``earlier``."""
        roots = [str(d.resolve()) for d in dirs]
        out = []
        for fd, target in sorted(self.fds.items()):
            if earlier.fds.get(fd) == target:
                continue
            if target.startswith(("socket:", "pipe:")) or any(target.startswith(r) for r in roots):
                out.append(f"fd {fd} -> {target}")
        return out


def still_alive(seen: dict[int, str]) -> list[str]:
    """Processes of ``seen`` (pid -> start time) that still run."""
    table = _proc_table()
    return [f"pid {pid} ({_cmdline(pid)})" for pid, start in sorted(seen.items())
            if pid in table and table[pid][1] == start]
