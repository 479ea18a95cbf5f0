"""Start and stop the fake TRex server process from tests (loopback, free ports).

The fake binds ports chosen by ZMQ (no race between picking a free port and binding it)
and writes them to a ready file; :class:`FakeTrex` waits for that file, and stops the
process by its pid (``ManagedProcess.stop``), never by name.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any

from vsbench.system.commands import ManagedProcess, spawn

REPO_ROOT = Path(__file__).resolve().parents[3]


class FakeTrex:
    """``with FakeTrex(tmp_path, capacity_fps=1e6) as trex: trex.settings()``."""

    def __init__(self, work_dir: Path, **options: Any) -> None:
        self.work_dir = Path(work_dir)
        self.options = options
        self.process: ManagedProcess | None = None
        self.sync_port: int | None = None
        self.async_port: int | None = None
        self.log_path = self.work_dir / "fake-trex.log"

    def argv(self) -> list[str]:
        argv = [sys.executable, "-m", "tests.fakes.trex", "--ready-file", str(self._ready_file)]
        for key, value in self.options.items():
            flag = "--" + key.replace("_", "-")
            if value is None or value is False:
                continue
            if value is True:
                argv.append(flag)
            elif isinstance(value, (list, tuple)):
                for item in value:
                    argv += [flag, str(item)]
            else:
                argv += [flag, str(value)]
        return argv

    @property
    def _ready_file(self) -> Path:
        return self.work_dir / "fake-trex.ready"

    def start(self, timeout_s: float = 15.0) -> "FakeTrex":
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self._ready_file.unlink(missing_ok=True)
        env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
        self.process = spawn(self.argv(), log_path=self.log_path, env=env)
        deadline = time.monotonic() + timeout_s
        while not self._ready_file.exists():
            if not self.process.alive():
                raise RuntimeError(f"fake TRex exited early: {self.log_path.read_text()[-2000:]}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"fake TRex not ready after {timeout_s} s")
            time.sleep(0.02)
        info = json.loads(self._ready_file.read_text())
        self.sync_port, self.async_port = info["sync_port"], info["async_port"]
        return self

    def stop(self) -> int | None:
        if self.process is None:
            return None
        code = self.process.stop(grace_s=5.0)
        self.process = None
        return code

    def alive(self) -> bool:
        return self.process is not None and self.process.alive()

    def settings(self, **overrides: Any) -> dict[str, Any]:
        """A ``trafficgen.trex`` section pointing at this fake."""
        base = {"host": "127.0.0.1", "sync_port": self.sync_port, "async_port": self.async_port,
                "timeout_s": 2.0, "connect_timeout_s": 3.0, "event_timeout_s": 3.0}
        base.update(overrides)
        return base

    def __enter__(self) -> "FakeTrex":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def unused_tcp_port() -> int:
    """A port nothing listens on (for the refused-connection test)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
