"""The guest's serial console, driven with pexpect over the UNIX socket QEMU binds.

Everything the guest prints is appended to a log file in the run's ``logs/`` directory.
Commands are sent as lines; :meth:`SerialConsole.command` waits for the shell prompt that
the guest's ``/init`` sets (:data:`vsbench.system.vm.image.PROMPT`) and returns what the
command printed.
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path
from typing import IO, Sequence

import pexpect
import pexpect.fdpexpect

from vsbench.system import private_files
from vsbench.system.vm.image import PROMPT


#: The output marker of :meth:`SerialConsole.command`, in two quoted halves.
MARK_HEAD, MARK_TAIL = "'__VSB_OUT'", "'PUT__'"


class ConsoleError(Exception):
    """The guest did not answer as expected in time; one line with the console's last words."""


class SerialConsole:
    """A pexpect session on the guest's serial port."""

    def __init__(self, socket_path: Path, log_path: Path, connect_timeout_s: float = 30.0) -> None:
        self.socket_path = socket_path
        self.log_path = log_path
        self.sock = _connect(socket_path, connect_timeout_s)
        private_files.make_dirs(log_path.parent)
        self._log: IO[str] = private_files.open_append(log_path, errors="replace")  # closed in close()
        # pexpect closes the descriptor it is given: give it its own, never the socket's
        self.child = pexpect.fdpexpect.fdspawn(os.dup(self.sock.fileno()), encoding="utf-8",
                                               codec_errors="replace", timeout=30)
        self.child.logfile_read = self._log

    def expect(self, patterns: str | Sequence[str], timeout_s: float) -> int:
        """Wait for one of ``patterns`` (regular expressions); its index."""
        try:
            return self.child.expect(patterns, timeout=timeout_s)
        except pexpect.TIMEOUT:
            raise ConsoleError(f"guest console: no {patterns!r} within {timeout_s:g} s; last output: "
                               f"{self.tail()!r}") from None
        except pexpect.EOF:
            raise ConsoleError(f"guest console closed (VM gone?); last output: {self.tail()!r}") from None

    def sendline(self, line: str) -> None:
        self.child.sendline(line)

    def command(self, line: str, timeout_s: float = 30.0) -> str:
        """Run one shell command in the guest and return what it printed.

        The console echoes the command (wrapped at the terminal's width, with escape
        sequences of busybox's line editor), so the output is taken after a marker the
        command prints first: written split in two, the echo never contains it whole."""
        self.child.sendline(f"printf '%s\\n' {MARK_HEAD}{MARK_TAIL}; {line}")
        self.expect(PROMPT, timeout_s)
        text = self.child.before.replace("\r", "")
        marker = MARK_HEAD.strip("'") + MARK_TAIL.strip("'") + "\n"
        return text.rsplit(marker, 1)[-1].strip() if marker in text else text.strip()

    def tail(self, chars: int = 300) -> str:
        before = self.child.before if isinstance(self.child.before, str) else ""
        return " ".join(before[-chars:].split())

    def close(self) -> None:
        try:
            self.child.close()
        except OSError:
            pass
        try:
            self.sock.close()
        except OSError:
            pass
        if not self._log.closed:
            self._log.close()


def _connect(path: Path, timeout_s: float) -> socket.socket:
    deadline = time.monotonic() + timeout_s
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(str(path))
            return sock
        except OSError as exc:
            sock.close()
            if time.monotonic() > deadline:
                raise ConsoleError(f"cannot connect to the guest console {path}: {exc.strerror}") from None
            time.sleep(0.1)
