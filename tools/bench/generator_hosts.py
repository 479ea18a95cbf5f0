"""The remote generator hosts the fault campaign makes unreachable mid-run (issue 28).

A lab's hardware generator runs on its own server, reached either over the generator's own
control protocol (TRex's JSON-RPC) or with ssh (MoonGen, PROX ``launch: ssh``). Losing that
server mid-run must end the run with one line naming the host, like any other death under
vsbench. Each class here is one such host, started for one round:

* :class:`FakeTrexHost` -- the TRex fake (tests/fakes/trex: TRex's JSON-RPC over ZMQ, a
  separate process modelling a 200 kfps DUT); the fault is ``kill -9`` of the server.
* :class:`LabMoonGenHost` -- a one-host lab (tools/lab: a clean Debian 12 rootfs in its own
  network, mount and UTS namespace, Debian's sshd, host keys checked) running the MoonGen
  fake (tests/fakes/moongen, modelling a 200 kfps DUT), which vsbench reaches over real ssh
  and scp. The fault is the host going down: ``kill -9`` of every process of the host (its
  sshd, the session, MoonGen), so the trial's ssh connection closes and the next one is
  refused.

Each has ``conf()`` (the ``--conf-file`` contents naming it), ``kill()`` (inject; returns
what was done, for the round's line) and ``stop()`` (teardown; returns what is left).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LAB_PY = ROOT / "tools" / "lab" / "lab.py"
FAKE_MOONGEN = ROOT / "tests" / "fakes" / "moongen" / "MoonGen"
#: The DUT the remote generators model (frames/s the "device" forwards).
MODEL_CAPACITY_FPS = 200_000


class FakeTrexHost:
    """The TRex fake as the remote generator host."""

    def __init__(self, work: Path) -> None:
        if str(ROOT) not in sys.path:
            sys.path.insert(0, str(ROOT))
        from tests.fakes.trex.launcher import FakeTrex  # noqa: PLC0415 - a test fixture, only here

        self._trex = FakeTrex(work / "trex", capacity_fps=MODEL_CAPACITY_FPS, speed_gbps=1).start()

    def conf(self) -> dict:
        return {"trafficgen": {"trex": self._trex.settings()}}

    def kill(self) -> str:
        pid = self._trex.process.pid
        os.kill(pid, signal.SIGKILL)
        return f"kill -9 the TRex server (fake) pid {pid}"

    def stop(self) -> list[str]:
        self._trex.stop()
        return []


class LabMoonGenHost:
    """One lab host over real ssh, with the MoonGen fake installed on it."""

    BINARY = "/usr/local/bin/MoonGen"
    MODEL = "/usr/local/etc/vsbench-dut-model.json"

    def __init__(self, work: Path) -> None:
        self.lab_dir = work / "lab"
        up = subprocess.run([sys.executable, str(LAB_PY), "up", "--hosts", "1", "--dir", str(self.lab_dir)],
                            capture_output=True, text=True, timeout=900)
        if up.returncode != 0:
            self.stop()
            raise RuntimeError(f"lab host did not come up: {(up.stderr or up.stdout).strip()[-300:]}")
        self.host = json.loads((self.lab_dir / "lab.json").read_text())["hosts"][0]
        model = work / "dut-model.json"
        model.write_text(json.dumps({"capacity_fps": MODEL_CAPACITY_FPS, "latency_ns": 10_000}))
        ssh_config = str(self.lab_dir / "ssh_config")
        self._ssh = ["ssh", "-F", ssh_config]
        self._scp = ["scp", "-q", "-F", ssh_config]
        try:
            for local, remote in ((FAKE_MOONGEN, self.BINARY), (model, self.MODEL)):
                subprocess.run([*self._scp, str(local), f"{self.host['name']}:{remote}"], check=True, timeout=60)
        except subprocess.SubprocessError:
            self.stop()  # the lab is up: never leave it behind a failed set-up
            raise

    def conf(self) -> dict:
        return {"trafficgen": {"moongen": {
            "binary": self.BINARY,
            "moongen_args": [f"--dut-model={self.MODEL}"],
            "link_gbps": 1,
            "ssh": {"host": self.host["name"], "ssh_command": self._ssh, "scp_command": self._scp},
        }}}

    def kill(self) -> str:
        sys.path.insert(0, str(LAB_PY.parent))
        import lab  # noqa: PLC0415 - tools/lab is not a package

        pids = lab.crash(self.host)
        return f"generator host {self.host['name']} down: kill -9 of its {len(pids)} processes (sshd, session, MoonGen)"

    def stop(self) -> list[str]:
        down = subprocess.run([sys.executable, str(LAB_PY), "down", "--dir", str(self.lab_dir)],
                              capture_output=True, text=True, timeout=120)
        return [] if down.returncode == 0 else [f"lab host: {(down.stderr or down.stdout).strip()[-300:]}"]


#: ``Fault.target`` of a ``generator_host`` fault -> the host it starts.
HOSTS = {"trex": FakeTrexHost, "ssh": LabMoonGenHost}
