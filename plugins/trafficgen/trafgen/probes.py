"""The plugin's side of the latency probe stream: start the helper, start it sending, read
its records back as :class:`ProbeRecords`.

The helper (:mod:`vsbench_plugins.trafficgen.trafgen_probe`) runs inside the generator
namespace; see its docstring for the wire format and the timestamps.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vsbench.interfaces.plugin import PluginError
from vsbench.interfaces.traffic import ProbeRecords
from vsbench.interfaces.commands import ManagedProcess, spawn, wait_for

HELPER_MODULE = "vsbench_plugins.trafficgen.trafgen_probe"


@dataclass(frozen=True)
class ProbeOutcome:
    """Records of one probe stream and how many probe frames each port saw."""

    records: ProbeRecords
    tx_iface: str
    rx_iface: str
    sent: int  # probes the helper handed to the tx port (in its tx_packets)
    send_failed: int  # refused by the veth (in the tx port's tx_dropped)
    rx_frames: int  # probes that reached the rx port's socket (in its rx_packets)
    stats: dict


class ProbeStream:
    """One run of the probe helper; :meth:`stop` is safe at any time."""

    def __init__(
        self,
        *,
        netns: str | None,
        tx_iface: str,
        rx_iface: str,
        frame: bytes,
        ip_offset: int,
        rate_fps: float,
        duration_s: float,
        drain_s: float,
        out_prefix: Path,
        log_path: Path,
        python: str | None = None,
        rx_payload_offset: int | None = None,
    ) -> None:
        self.netns = netns
        self.tx_iface = tx_iface
        self.rx_iface = rx_iface
        self.out_prefix = out_prefix
        self.duration_s = duration_s
        self.drain_s = drain_s
        self.argv = [
            python or sys.executable, "-m", HELPER_MODULE,
            "--tx-iface", tx_iface,
            "--rx-iface", rx_iface,
            "--frame", frame.hex(),
            "--ip-offset", str(ip_offset),
            "--rate-fps", repr(float(rate_fps)),
            "--duration-s", repr(float(duration_s)),
            "--drain-s", repr(float(drain_s)),
            "--out", str(out_prefix),
        ]
        if rx_payload_offset is not None:
            self.argv += ["--rx-payload-offset", str(int(rx_payload_offset))]
        self.log_path = log_path
        self.process: ManagedProcess | None = None
        self._went_at: float | None = None

    def _path(self, suffix: str) -> Path:
        return Path(str(self.out_prefix) + suffix)

    def start(self, timeout_s: float = 15.0) -> None:
        """Launch the helper and wait until its sockets are ready."""
        for suffix in (".ready", ".json", ".bin"):
            self._path(suffix).unlink(missing_ok=True)
        self.process = spawn(self.argv, netns=self.netns, log_path=self.log_path, stdin=subprocess.PIPE)
        try:
            wait_for(lambda: self._path(".ready").exists() or not self.process.alive(),
                     timeout_s, interval_s=0.01, what="the latency probe helper")
        except TimeoutError as exc:
            self.stop()
            raise PluginError(f"trafgen: {exc}") from None
        if not self.process.alive():
            code = self.process.wait()
            raise PluginError(f"trafgen: the latency probe helper exited with {code} before it was ready "
                              f"(see {self.log_path})")

    def go(self) -> None:
        """Start sending (now)."""
        assert self.process is not None
        try:
            self.process.popen.stdin.write(b"go\n")
            self.process.popen.stdin.flush()
            self.process.popen.stdin.close()
        except (BrokenPipeError, OSError) as exc:
            raise PluginError(f"trafgen: the latency probe helper went away: {exc}") from None
        self._went_at = time.monotonic()

    def finish(self, grace_s: float = 10.0) -> ProbeOutcome:
        """Wait for the helper to finish and read its records."""
        assert self.process is not None and self._went_at is not None
        deadline = self._went_at + self.duration_s + self.drain_s + grace_s
        try:
            code = self.process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.stop()
            raise PluginError(f"trafgen: the latency probe helper did not finish (see {self.log_path})") from None
        self.stop()
        if code != 0:
            raise PluginError(f"trafgen: the latency probe helper failed with exit {code} (see {self.log_path})")
        outcome = read_outcome(self.out_prefix)
        for suffix in (".ready", ".json", ".bin"):
            self._path(suffix).unlink(missing_ok=True)
        return outcome

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop(grace_s=2.0)


def read_outcome(out_prefix: Path) -> ProbeOutcome:
    """Parse ``<prefix>.json`` and ``<prefix>.bin`` written by the helper."""
    try:
        summary = json.loads(Path(str(out_prefix) + ".json").read_text(encoding="utf-8"))
        raw = np.fromfile(str(out_prefix) + ".bin", dtype=np.int64)
    except (OSError, ValueError) as exc:
        raise PluginError(f"trafgen: cannot read the latency probe records: {exc}") from None
    if raw.size % 2:
        raise PluginError("trafgen: the latency probe record file is truncated")
    pairs = raw.reshape(-1, 2)
    records = ProbeRecords(
        sequence=pairs[:, 0].copy(),
        latency_ns=pairs[:, 1].copy(),
        sent=int(summary["sent"]),
    )
    return ProbeOutcome(
        records=records,
        tx_iface=summary["tx_iface"],
        rx_iface=summary["rx_iface"],
        sent=int(summary["sent"]),
        send_failed=int(summary.get("send_failed_nobufs", 0)),
        rx_frames=int(summary["rx_socket_frames"]),
        stats=summary,
    )
