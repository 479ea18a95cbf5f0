"""pyfwd: the vsbench side of a VNF that is a process between port pairs.

The life cycle a deployment drives (see ``vsbench.interfaces.Vnf``)::

    vnf = PyFwd(context)          # settings only
    vnf.start(ports)              # launch the forwarder between ports 0<->1 (2<->3, ...)
    vnf.stats()                   # its counters, any time
    vnf.stop()                    # end it (by pid), read the final counters

The same shape fits a vendor's binary: build an argv from the settings and ports, start it
with ``vsbench.interfaces.commands.spawn`` inside ``context.dut_netns``, register its stop
on ``context.resources`` in the same breath, wait until it says it is ready (or has died:
then a one-line :class:`PluginError` with the last line of its log), read its statistics
from wherever it publishes them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, ClassVar, Sequence

from vsbench.interfaces import PluginError, SwitchPort, Vnf
from vsbench.interfaces.commands import ManagedProcess, spawn, wait_for
from vsbench.interfaces.settings import with_defaults

SETTINGS_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "pyfwd settings (vnf.pyfwd)",
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "macswap": {"description": "swap source and destination MAC of every frame (testpmd's macswap)",
                    "type": "boolean", "default": False},
        "python": {"description": "interpreter of the forwarder; null: vsbench's own",
                   "type": ["string", "null"], "default": None},
        "start_timeout_s": {"type": "number", "exclusiveMinimum": 0, "default": 10},
    },
}


class PyFwd(Vnf):
    """A forwarding process between port pairs, in the DUT namespace."""

    description: ClassVar[str] = "Example vendor VNF: a forwarding process between port pairs (Python)"
    api_version: ClassVar[str] = "1.0"
    settings_schema: ClassVar[dict] = SETTINGS_SCHEMA

    def __init__(self, context) -> None:
        super().__init__(context)
        self.cfg = with_defaults(SETTINGS_SCHEMA, self.settings)
        self._proc: ManagedProcess | None = None
        self._stats_path: Path | None = None
        self._last: dict[str, Any] = {}

    def version(self) -> dict[str, str]:
        return {"pyfwd": "0.1.0", "python": sys.version.split()[0]}

    def start(self, ports: Sequence[SwitchPort]) -> None:
        if self._proc is not None:
            raise PluginError("pyfwd: already started")
        if len(ports) < 2 or len(ports) % 2:
            raise PluginError(f"pyfwd: needs port pairs, got {len(ports)} port(s)")
        ifaces = [p.spec.iface or p.name for p in ports]
        work = Path(self.context.work_dir or self.context.log_dir)
        work.mkdir(parents=True, exist_ok=True)
        self._stats_path = work / f"pyfwd-{self.context.run_id}.json"
        self._stats_path.unlink(missing_ok=True)
        argv = [self.cfg["python"] or sys.executable, "-m", "vsbench_example_vnf.forwarder",
                "--stats", str(self._stats_path)]
        for a, b in zip(ifaces[0::2], ifaces[1::2]):
            argv += ["--pair", a, b]
        if self.cfg["macswap"]:
            argv.append("--macswap")
        log_path = Path(self.context.log_dir) / "pyfwd.log"
        self._proc = spawn(argv, netns=self.context.dut_netns, log_path=log_path)
        self.context.resources.register("pyfwd forwarder", self.stop)  # in the same breath
        proc, stats = self._proc, self._stats_path
        try:
            wait_for(lambda: stats.exists() or not proc.alive(), float(self.cfg["start_timeout_s"]),
                     what="the pyfwd forwarder to open its ports")
        except TimeoutError as exc:
            self.stop()
            raise PluginError(f"pyfwd: {exc}") from None
        if not proc.alive():
            last = _last_line(log_path)
            self.stop()
            raise PluginError(f"pyfwd: the forwarder exited at start: {last}")

    def stats(self) -> dict[str, Any]:
        """The forwarder's counters per port: rx_frames, tx_frames, tx_errors."""
        if self._stats_path is not None and self._stats_path.exists():
            try:
                self._last = json.loads(self._stats_path.read_text()).get("ports", {})
            except (OSError, ValueError):
                pass  # caught mid-replace: the previous figures stand
        return dict(self._last)

    def stop(self) -> None:
        """End the forwarder (TERM, then KILL) and keep its final counters. Idempotent."""
        proc, self._proc = self._proc, None
        if proc is not None:
            proc.stop(grace_s=3)
            self.stats()
        if self._stats_path is not None:
            self._stats_path.unlink(missing_ok=True)
            self._stats_path = None


def _last_line(path: Path) -> str:
    try:
        lines = [line for line in path.read_text().splitlines() if line.strip()]
    except OSError:
        return "no log"
    return lines[-1][:200] if lines else "no output"
