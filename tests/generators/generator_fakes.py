"""Paths of the generator fakes and small helpers shared by the prox/moongen tests."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from vsbench.system import commands

FAKES = Path(__file__).resolve().parents[1] / "fakes"
FAKE_PROX = FAKES / "prox" / "fake_prox.py"
FAKE_MOONGEN = FAKES / "moongen" / "MoonGen"
FAKE_SSH = FAKES / "ssh" / "fake_ssh"
FAKE_SCP = FAKES / "ssh" / "fake_scp"

#: Fast stats publishing so trials stay short; the plugin must cope with any cadence.
STATS_INTERVAL_S = 0.05


@dataclass
class FakeProx:
    proc: commands.ManagedProcess
    port: int | None
    unix_path: str | None
    log_path: Path

    def settings(self, **extra) -> dict:
        base = {"stats_poll_s": 0.02, "drain_s": 0.05, "reply_timeout_s": 1.0}
        if self.unix_path:
            base["unix_socket"] = self.unix_path
        else:
            base.update(host="127.0.0.1", port=self.port)
        return {**base, **extra}

    def commands_received(self) -> list[str]:
        return [l.split("cmd: ", 1)[1] for l in self.log_path.read_text().splitlines() if "cmd: " in l]


def fake_prox_argv(model: list[str], unix_path: str | None = None,
                   port_file: Path | None = None) -> list[str]:
    argv = [sys.executable, str(FAKE_PROX), "-e", "--stats-interval", str(STATS_INTERVAL_S), *model]
    if unix_path:
        argv += ["-u", "--unix-path", unix_path]
    else:
        argv += ["-t", "--tcp-port", "0", "--port-file", str(port_file)]
    return argv


def ssh_settings(host: str = "gen1.example", user: str = "bench") -> dict:
    return {"host": host, "user": user, "ssh_command": [str(FAKE_SSH)],
            "scp_command": [str(FAKE_SCP)]}
