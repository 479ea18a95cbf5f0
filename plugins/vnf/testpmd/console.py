"""testpmd's interactive console, driven over a pty with pexpect.

testpmd in interactive mode (``-i``) prints ``testpmd> `` and reads one command per line;
started without a terminal it would exit as soon as stdin closes, so it gets a pty. Every
exchange has a deadline: a testpmd that stops answering is a :class:`ConsoleError` (one
line naming the command), never a hang. Everything it prints goes to a log file.

The process is the leader of its own session (pexpect forks it onto a new pty), so
:meth:`TestpmdConsole.terminate` ends it -- and an ``ip netns exec`` wrapper around it -- by
process group id, never by name.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import IO, Sequence

import pexpect

from vsbench.interfaces.commands import in_netns

PROMPT = "testpmd> "


class ConsoleError(Exception):
    """testpmd did not answer as expected; the message is one line for the user."""


def _last_lines(text: str, count: int = 3) -> str:
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    return " | ".join(lines[-count:])


class TestpmdConsole:
    """One running testpmd and its console."""

    __test__ = False  # not a pytest test class

    def __init__(self, child: pexpect.spawn, log: IO[str], startup_output: str) -> None:
        self.child = child
        self._log = log
        self.startup_output = startup_output

    @property
    def pid(self) -> int:
        return int(self.child.pid)

    @classmethod
    def start(cls, argv: Sequence[str], *, netns: str | None, log_path: Path,
              start_timeout_s: float) -> "TestpmdConsole":
        """Start testpmd and wait for its first prompt (ports configured, links checked).

        On a timeout or an early exit the process is ended and :class:`ConsoleError`
        carries testpmd's last lines (e.g. a vdev that failed to attach)."""
        full = in_netns(netns, argv)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(log_path, "a", encoding="utf-8")  # noqa: SIM115 - closed by terminate()
        log.write(f"$ {' '.join(full)}\n")
        log.flush()
        try:
            child = pexpect.spawn(full[0], list(full[1:]), encoding="utf-8", codec_errors="replace",
                                  timeout=start_timeout_s, echo=False, dimensions=(50, 200))
        except pexpect.ExceptionPexpect as exc:
            log.close()
            raise ConsoleError(f"cannot start {full[0]}: {exc}") from None
        child.logfile_read = log
        console = cls(child, log, "")
        try:
            which = child.expect_exact([PROMPT, pexpect.EOF, pexpect.TIMEOUT])
        except BaseException:  # a signal (the run's Ctrl-C) while waiting: nobody else knows the pid yet
            console.terminate()
            raise
        console.startup_output = child.before or ""
        if which != 0:
            why = "exited" if which == 1 else f"gave no prompt within {start_timeout_s:g} s"
            console.terminate()
            raise ConsoleError(f"testpmd {why}: {_last_lines(console.startup_output) or 'no output'} "
                               f"(log: {log_path})")
        return console

    def command(self, line: str, timeout_s: float = 10.0) -> str:
        """Send one command; return what it printed before the next prompt."""
        if not self.child.isalive():
            raise ConsoleError(f"testpmd is not running (command {line!r})")
        self.child.sendline(line)
        which = self.child.expect_exact([PROMPT, pexpect.EOF, pexpect.TIMEOUT], timeout=timeout_s)
        out = self.child.before or ""
        if which == 1:
            raise ConsoleError(f"testpmd exited during {line!r}: {_last_lines(out) or 'no output'}")
        if which == 2:
            raise ConsoleError(f"testpmd did not answer {line!r} within {timeout_s:g} s")
        return out

    def quit(self, timeout_s: float = 10.0) -> bool:
        """``quit`` (testpmd stops and closes its ports, so the switch sees the vhost-user
        connection go); True when it exited by itself within ``timeout_s``."""
        if not self.child.isalive():
            return True
        try:
            self.child.sendline("quit")
            self.child.expect_exact([pexpect.EOF], timeout=timeout_s)
        except (pexpect.TIMEOUT, pexpect.ExceptionPexpect, OSError):
            return False
        deadline = time.monotonic() + timeout_s
        while self.child.isalive() and time.monotonic() < deadline:
            time.sleep(0.05)
        return not self.child.isalive()

    def terminate(self, grace_s: float = 5.0) -> int | None:
        """End the process group by pid: TERM, then KILL after ``grace_s``. Idempotent."""
        child = self.child
        if child.isalive():
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(child.pid, sig)
                except ProcessLookupError:
                    break
                deadline = time.monotonic() + grace_s
                while child.isalive() and time.monotonic() < deadline:
                    time.sleep(0.05)
                if not child.isalive():
                    break
        try:
            child.close(force=True)
        except pexpect.ExceptionPexpect:
            pass
        if not self._log.closed:
            self._log.close()
        return child.exitstatus if child.exitstatus is not None else child.signalstatus
