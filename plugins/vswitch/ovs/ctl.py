"""ovs-vsctl, ovs-ofctl and ovs-appctl, always pointed at one private instance.

The tools talk to the daemons over unix sockets in the instance's run dir, so they run in
the root namespace even when the daemons run in the DUT namespace. Every command and its
output is appended to ``ovs-ctl.log`` in the log dir; a failure is a one-line
:class:`PluginError` naming the command and the tool's last error line.
"""

from __future__ import annotations

from pathlib import Path
from typing import IO, TYPE_CHECKING

from vsbench.interfaces.plugin import PluginError
from vsbench.interfaces import commands

if TYPE_CHECKING:
    from vsbench_plugins.vswitch.ovs.instance import OvsPaths

#: OpenFlow versions the bridges accept and ovs-ofctl speaks: 1.3 for meters, 1.4 for
#: bundles (ovs-ofctl falls back to the ONF bundle extension on 1.3).
OPENFLOW_PROTOCOLS = "OpenFlow10,OpenFlow13,OpenFlow14"
OFCTL_PROTOCOL = "OpenFlow13"


class OvsCtl:
    """The three control tools bound to one instance's sockets."""

    def __init__(self, paths: "OvsPaths", *, log_path: Path | None = None, timeout_s: float = 60.0) -> None:
        self.paths = paths
        self.timeout_s = timeout_s
        self._log: IO[str] | None = None
        if log_path is not None:
            log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log = open(log_path, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()

    def close(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    def _run(self, argv: list[str], timeout_s: float | None) -> str:
        try:
            proc = commands.run(
                argv, env=self.paths.env(), timeout_s=timeout_s or self.timeout_s, log_file=self._log
            )
        except commands.CommandError as exc:
            raise PluginError(f"{argv[0]} {_verb(argv)}: {_reason(exc)}") from exc
        return proc.stdout

    # ------------------------------------------------------------------ ovs-vsctl

    def vsctl(self, *args: str, wait: bool = True, timeout_s: float | None = None) -> str:
        """``ovs-vsctl --db=unix:<ours> ARGS``. ``wait=False`` (``--no-wait``) before
        vswitchd runs; otherwise ovs-vsctl waits until vswitchd applied the change."""
        argv = ["ovs-vsctl", f"--db={self.paths.db_remote}"]
        tmo = int(timeout_s or self.timeout_s)
        argv += ["--no-wait"] if not wait else [f"--timeout={tmo}"]
        return self._run(argv + list(args), (timeout_s or self.timeout_s) + 5)

    def get(self, table: str, record: str, column: str) -> str:
        """One column value, unquoted (``ovs-vsctl get``)."""
        return self.vsctl("get", table, record, column, wait=False).strip().strip('"')

    # ------------------------------------------------------------------ ovs-ofctl

    def ofctl(self, command: str, bridge: str, *args: str, bundle: bool = False, timeout_s: float | None = None) -> str:
        """``ovs-ofctl -O OpenFlow13 [--bundle] COMMAND unix:<run>/<bridge>.mgmt ARGS``."""
        argv = ["ovs-ofctl", "-O", OFCTL_PROTOCOL]
        if bundle:
            argv.append("--bundle")
        argv += [command, f"unix:{self.paths.mgmt_socket(bridge)}", *args]
        return self._run(argv, timeout_s)

    def add_flows_bundle(self, bridge: str, flow_file: Path, timeout_s: float | None = None) -> None:
        """Install every flow of ``flow_file`` in one OpenFlow bundle (all or nothing);
        one ovs-ofctl process however many rules."""
        self.ofctl("add-flows", bridge, str(flow_file), bundle=True, timeout_s=timeout_s)

    # ------------------------------------------------------------------ ovs-appctl

    def appctl(self, *args: str, target: str = "vswitchd", timeout_s: float | None = None) -> str:
        """``ovs-appctl -t <run>/ovs-vswitchd.ctl ARGS`` (``target="ovsdb"`` for the DB)."""
        ctl = self.paths.vswitchd_ctl if target == "vswitchd" else self.paths.ovsdb_ctl
        tmo = int(timeout_s or self.timeout_s)
        return self._run(["ovs-appctl", "-t", str(ctl), f"--timeout={tmo}", *args], tmo + 5)


def _verb(argv: list[str]) -> str:
    """The tool's command word (``add-flows``), skipping options and their values."""
    skip = False
    for arg in argv[1:]:
        if skip:
            skip = False
        elif arg in ("-O", "-t"):
            skip = True
        elif not arg.startswith("-"):
            return arg
    return ""


def _reason(exc: commands.CommandError) -> str:
    """The most telling line of a tool's stderr: the switch's own reply -- an ``Error ...``
    line (e.g. why a bundle was refused), or what ovs-vswitchd answered an ``ovs-appctl``
    command with before the tool's generic "server returned an error" -- else the last line."""
    lines = [l.strip() for l in (exc.stderr or "").splitlines() if l.strip()]
    errors = [l for l in lines if l.startswith("Error ")]
    if errors:
        return errors[0][:300]
    if len(lines) > 1 and lines[-1].endswith("server returned an error"):
        return " ".join(lines[:-1])[:300]
    return lines[-1][:300] if lines else str(exc)
