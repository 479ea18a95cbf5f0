"""Run commands as argv lists, locally or inside a network namespace; never a shell string.

Processes vsbench starts are tracked by pid and ended by pid (TERM, then KILL after a grace
period): never by name, so nothing vsbench did not start is ever touched.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Mapping, Sequence

from vsbench.system import private_files

log = logging.getLogger(__name__)


class CommandError(Exception):
    """A command failed; ``str()`` is one line naming the command and its error."""

    def __init__(self, argv: Sequence[str], returncode: int | None, stderr: str) -> None:
        self.argv = list(argv)
        self.returncode = returncode
        self.stderr = stderr
        last = (stderr.strip().splitlines() or [""])[-1][:300]
        code = "timed out" if returncode is None else f"exit {returncode}"
        super().__init__(f"{argv[0]} failed ({code}): {last}")


def in_netns(netns: str | None, argv: Sequence[str]) -> list[str]:
    """``argv`` prefixed to run inside ``netns`` (unchanged when ``netns`` is None)."""
    if netns is None:
        return list(argv)
    return ["ip", "netns", "exec", netns, *argv]


def which(binary: str) -> str | None:
    """Full path of ``binary`` on PATH or in the sbin directories, else None."""
    path = os.environ.get("PATH", "") + ":/usr/local/sbin:/usr/sbin:/sbin"
    return shutil.which(binary, path=path)


def run(
    argv: Sequence[str],
    *,
    netns: str | None = None,
    check: bool = True,
    timeout_s: float | None = 60.0,
    env: Mapping[str, str] | None = None,
    input_text: str | None = None,
    log_file: IO[str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` to completion and return its output (text)."""
    full = in_netns(netns, argv)
    log.debug("run: %s", full)
    merged_env = {**os.environ, **env} if env else None
    try:
        proc = subprocess.run(
            full,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env=merged_env,
            input=input_text,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise CommandError(full, None, str(exc.stderr or "")) from exc
    except FileNotFoundError as exc:
        raise CommandError(full, 127, f"{full[0]}: not found") from exc
    if log_file is not None:
        log_file.write(f"$ {' '.join(full)}\n{proc.stdout}{proc.stderr}")
        log_file.flush()
    if check and proc.returncode != 0:
        raise CommandError(full, proc.returncode, proc.stderr or proc.stdout)
    return proc


@dataclass
class ManagedProcess:
    """A background process vsbench started; ended by its pid, never by its name."""

    argv: list[str]
    popen: subprocess.Popen
    log_path: Path | None = None
    _log_handle: IO | None = field(default=None, repr=False)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def wait(self, timeout_s: float | None = None) -> int:
        return self.popen.wait(timeout=timeout_s)

    def stop(self, grace_s: float = 5.0, sig: int = signal.SIGTERM) -> int | None:
        """Send ``sig`` to the process group we created, then KILL after ``grace_s``."""
        if self.popen.poll() is None:
            try:
                os.killpg(self.popen.pid, sig)
            except ProcessLookupError:
                pass
            try:
                self.popen.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(self.popen.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.popen.wait(timeout=grace_s)
        if self._log_handle is not None:
            self._log_handle.close()
            self._log_handle = None
        return self.popen.returncode


def spawn(
    argv: Sequence[str],
    *,
    netns: str | None = None,
    log_path: Path | None = None,
    env: Mapping[str, str] | None = None,
    stdin: int | IO | None = subprocess.DEVNULL,
    stdout: int | IO | None = None,
) -> ManagedProcess:
    """Start ``argv`` in the background in its own session (so it and its children can be
    signalled as a group by pid). Output goes to ``log_path`` unless ``stdout`` is given."""
    full = in_netns(netns, argv)
    handle = None
    if stdout is None and log_path is not None:
        private_files.make_dirs(log_path.parent)
        handle = private_files.open_append(log_path)  # closed in stop()
        handle.write(f"$ {' '.join(full)}\n")
        handle.flush()
        stdout = handle
    merged_env = {**os.environ, **env} if env else None
    log.debug("spawn: %s", full)
    popen = subprocess.Popen(
        full,
        stdin=stdin,
        stdout=stdout if stdout is not None else subprocess.DEVNULL,
        stderr=subprocess.STDOUT if stdout is not None else subprocess.DEVNULL,
        env=merged_env,
        start_new_session=True,
    )
    return ManagedProcess(list(full), popen, log_path, handle)


def wait_for(predicate, timeout_s: float, interval_s: float = 0.05, what: str = "condition") -> None:
    """Poll ``predicate()`` until true; raise TimeoutError naming ``what`` otherwise."""
    deadline = time.monotonic() + timeout_s
    while True:
        if predicate():
            return
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out after {timeout_s:g} s waiting for {what}")
        time.sleep(interval_s)
