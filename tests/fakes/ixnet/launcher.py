"""Start and stop the fake IxNetwork API server as a separate process, for tests.

Tests import it as ``tests.fakes.ixnet.launcher`` (run pytest from the repository root)::

    fake = FakeIxNetwork.start(tmp_path, "--capacity-fps", "100000")
    ...                    # fake.host, fake.port, fake.state()
    fake.stop()

The server binds port 0 on 127.0.0.1 and reports the port it got through a file, so
parallel test runs never race for a port. It is ended by its pid, never by name.
"""

from __future__ import annotations

import json
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vsbench.system.commands import ManagedProcess, spawn

SERVER = Path(__file__).resolve().parent / "fake_ixnetwork.py"


@dataclass
class FakeIxNetwork:
    process: ManagedProcess
    host: str
    port: int
    log_path: Path

    @classmethod
    def start(cls, work_dir: Path, *args: str, env: dict[str, str] | None = None,
              timeout_s: float = 10.0) -> "FakeIxNetwork":
        work_dir.mkdir(parents=True, exist_ok=True)
        port_file = work_dir / "fake-ixnetwork.port"
        port_file.unlink(missing_ok=True)
        log_path = work_dir / "fake-ixnetwork.log"
        proc = spawn([sys.executable, "-u", str(SERVER), "--port", "0", "--port-file", str(port_file), *args],
                     log_path=log_path, env=env)
        deadline = time.monotonic() + timeout_s
        while not port_file.exists():
            if not proc.alive():
                proc.stop()
                raise RuntimeError(f"fake IxNetwork exited early: {log_path.read_text()[-2000:]}")
            if time.monotonic() > deadline:
                proc.stop()
                raise RuntimeError("fake IxNetwork did not start listening in time")
            time.sleep(0.02)
        return cls(proc, "127.0.0.1", int(port_file.read_text()), log_path)

    def state(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"http://{self.host}:{self.port}/fake/state", timeout=5) as resp:
            return json.loads(resp.read())

    def stop(self) -> None:
        self.process.stop(grace_s=3.0)
