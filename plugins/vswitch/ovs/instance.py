"""A private Open vSwitch instance: its own database, run dir, sockets and logs.

Never the system's: every file lives under a per-run directory (``vsb-<run>-ovs-*`` in the
run's work dir ``PluginContext.work_dir`` when there is one, else in /tmp; short enough for
unix socket paths), every tool is pointed at it explicitly (``--db``,
``-t``, ``unix:<run>/<br>.mgmt``), and ``OVS_RUNDIR``/``OVS_DBDIR``/``OVS_LOGDIR``/
``OVS_SYSCONFDIR`` are set for the daemons so nothing falls back to /var/run/openvswitch.
Both daemons run in the foreground as our children (no ``--detach``), inside the DUT
namespace when there is one, and are ended by pid.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from vsbench.interfaces.plugin import PluginError
from vsbench.interfaces import ResourceStack, commands

from vsbench_plugins.vswitch.ovs.ctl import OvsCtl

log = logging.getLogger(__name__)

#: sun_path is 108 bytes including the terminating NUL.
MAX_SOCKET_PATH = 107


@dataclass(frozen=True)
class OvsPaths:
    """Every path of one private instance."""

    run_dir: Path
    log_dir: Path

    @property
    def db(self) -> Path:
        return self.run_dir / "conf.db"

    @property
    def db_socket(self) -> Path:
        return self.run_dir / "db.sock"

    @property
    def db_remote(self) -> str:
        return f"unix:{self.db_socket}"

    @property
    def ovsdb_ctl(self) -> Path:
        return self.run_dir / "ovsdb-server.ctl"

    @property
    def vswitchd_ctl(self) -> Path:
        return self.run_dir / "ovs-vswitchd.ctl"

    @property
    def vswitchd_pidfile(self) -> Path:
        return self.run_dir / "ovs-vswitchd.pid"

    def mgmt_socket(self, bridge: str) -> Path:
        """The OpenFlow management socket vswitchd opens for ``bridge`` in its run dir."""
        return self.run_dir / f"{bridge}.mgmt"

    def env(self) -> dict[str, str]:
        """Environment for the daemons and tools: nothing under /var/run/openvswitch."""
        return {
            "OVS_RUNDIR": str(self.run_dir),
            "OVS_DBDIR": str(self.run_dir),
            "OVS_LOGDIR": str(self.log_dir),
            "OVS_SYSCONFDIR": str(self.run_dir),
        }


def _last_lines(path: Path, n: int = 3) -> str:
    try:
        lines = [l for l in path.read_text(errors="replace").splitlines() if l.strip()]
    except FileNotFoundError:
        return ""
    return " | ".join(lines[-n:])[-400:]


class OvsInstance:
    """ovsdb-server + ovs-vswitchd of one run. Every piece registers its undo on
    ``resources`` the moment it exists (run dir, ovsdb-server, vswitchd).

    Typical use (what :class:`OvsSwitchBase.start` does)::

        inst = OvsInstance(run_id, resources, log_dir, netns=ns, schema=...)
        ctl = inst.start_db()
        ctl.vsctl("set", "Open_vSwitch", ".", "other_config:pmd-cpu-mask=0x2", wait=False)
        inst.start_vswitchd("/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk")
    """

    def __init__(
        self,
        run_id: str,
        resources: ResourceStack,
        log_dir: Path,
        *,
        netns: str | None = None,
        schema: Path = Path("/usr/share/openvswitch/vswitch.ovsschema"),
        ovsdb_server: str = "ovsdb-server",
        ovsdb_tool: str = "ovsdb-tool",
        start_timeout_s: float = 30.0,
        run_dir_parent: Path | None = None,
    ) -> None:
        self.run_id = run_id
        self.resources = resources
        self.netns = netns
        self.schema = Path(schema)
        self.ovsdb_server = ovsdb_server
        self.ovsdb_tool = ovsdb_tool
        self.start_timeout_s = start_timeout_s
        self._log_dir = Path(log_dir)
        self._run_dir_parent = run_dir_parent
        self.paths: OvsPaths | None = None
        self.ctl: OvsCtl | None = None
        self.ovsdb_proc: commands.ManagedProcess | None = None
        self.vswitchd_proc: commands.ManagedProcess | None = None

    # ------------------------------------------------------------------ database

    def start_db(self) -> OvsCtl:
        """Create the run dir and a fresh database, start ovsdb-server, ``init`` the DB."""
        parent = self._run_dir_parent or Path(tempfile.gettempdir())
        # run dir name (~24) + longest socket name (~20) must stay under the 107-byte limit
        if len(str(parent)) > MAX_SOCKET_PATH - 48:
            log.warning("work dir %s is too long for unix socket paths; OvS run dir goes to %s",
                        parent, tempfile.gettempdir())
            parent = Path(tempfile.gettempdir())
        parent.mkdir(parents=True, exist_ok=True)
        run_dir = Path(tempfile.mkdtemp(prefix=f"vsb-{self.run_id}-ovs-", dir=parent))
        self.resources.register(f"OvS run dir {run_dir}", shutil.rmtree, run_dir, ignore_errors=True)
        self._log_dir.mkdir(parents=True, exist_ok=True)
        self.paths = paths = OvsPaths(run_dir, self._log_dir)

        try:
            commands.run([self.ovsdb_tool, "create", str(paths.db), str(self.schema)])
        except commands.CommandError as exc:
            raise PluginError(f"cannot create the OvS database: {exc}") from exc

        argv = [
            self.ovsdb_server, str(paths.db),
            f"--remote=punix:{paths.db_socket}",
            f"--unixctl={paths.ovsdb_ctl}",
            f"--pidfile={run_dir / 'ovsdb-server.pid'}",
            f"--log-file={paths.log_dir / 'ovsdb-server.log'}",
            "--no-chdir", "-vconsole:warn",
        ]
        self.ovsdb_proc = proc = commands.spawn(
            argv, netns=self.netns, env=paths.env(),
            log_path=paths.log_dir / "ovsdb-server.console.log",
        )
        self.resources.register(f"ovsdb-server pid {proc.pid}", proc.stop)
        self._wait_alive(proc, lambda: paths.db_socket.exists(), "ovsdb-server socket",
                         paths.log_dir / "ovsdb-server.log")

        self.ctl = OvsCtl(paths, log_path=paths.log_dir / "ovs-ctl.log")
        self.resources.register("OvS ctl log", self.ctl.close)
        self.ctl.vsctl("init", wait=False)
        return self.ctl

    # ------------------------------------------------------------------ vswitchd

    def start_vswitchd(self, binary: str, extra_args: Sequence[str] = ()) -> commands.ManagedProcess:
        """Start ovs-vswitchd against our DB; return once its control socket answers."""
        if self.paths is None or self.ctl is None:
            raise RuntimeError("start_db() first")
        paths = self.paths
        argv = [
            binary, paths.db_remote,
            f"--unixctl={paths.vswitchd_ctl}",
            f"--pidfile={paths.vswitchd_pidfile}",
            f"--log-file={paths.log_dir / 'ovs-vswitchd.log'}",
            "--no-chdir", "-vconsole:warn",
            *extra_args,
        ]
        self.vswitchd_proc = proc = commands.spawn(
            argv, netns=self.netns, env=paths.env(),
            log_path=paths.log_dir / "ovs-vswitchd.console.log",
        )
        self.resources.register(f"ovs-vswitchd pid {proc.pid}", self._stop_vswitchd, proc)
        self._wait_alive(proc, self._vswitchd_answers, "ovs-vswitchd control socket",
                         paths.log_dir / "ovs-vswitchd.log")
        return proc

    def _vswitchd_answers(self) -> bool:
        assert self.paths is not None and self.ctl is not None
        if not self.paths.vswitchd_ctl.exists():
            return False
        try:
            self.ctl.appctl("version", timeout_s=5)
        except PluginError:
            return False
        return True

    def _stop_vswitchd(self, proc: commands.ManagedProcess) -> None:
        """``exit --cleanup`` first so a kernel datapath and its ports are removed with it;
        then TERM/KILL by pid for whatever did not exit."""
        if proc.alive() and self.ctl is not None:
            try:
                self.ctl.appctl("exit", "--cleanup", timeout_s=10)
                proc.wait(timeout_s=10)
            except Exception as exc:  # noqa: BLE001 - fall back to signals
                log.debug("ovs-vswitchd exit --cleanup: %s", exc)
        proc.stop()

    def last_error_line(self) -> str:
        """The cause behind a generic failure (e.g. a port that could not be added): the
        first ``|ERR|`` line of the newest run of consecutive ERR lines in ovs-vswitchd's
        log, message part only ("" if none). Later lines of a run repeat the failure."""
        if self.paths is None:
            return ""
        try:
            lines = (self.paths.log_dir / "ovs-vswitchd.log").read_text(errors="replace").splitlines()
        except FileNotFoundError:
            return ""
        return first_of_last_error_run(lines)

    def vswitchd_pid(self) -> int | None:
        """Pid of the running ovs-vswitchd (``ip netns exec`` execs it, so it is ours)."""
        if self.vswitchd_proc is None or not self.vswitchd_proc.alive():
            return None
        try:
            return int(self.paths.vswitchd_pidfile.read_text().strip())  # type: ignore[union-attr]
        except (FileNotFoundError, ValueError):
            return self.vswitchd_proc.pid

    # ------------------------------------------------------------------ helpers

    def _wait_alive(self, proc: commands.ManagedProcess, ready, what: str, log_file: Path) -> None:
        """Poll ``ready()``; fail at once with the log's last lines if ``proc`` died."""
        name = what.split()[0]

        def check() -> bool:
            if not proc.alive():
                raise PluginError(f"{name} exited (code {proc.popen.returncode}): {_last_lines(log_file)}")
            return ready()

        try:
            commands.wait_for(check, self.start_timeout_s, 0.05, what)
        except TimeoutError as exc:
            raise PluginError(f"{exc}; see {log_file}") from exc


def first_of_last_error_run(lines: list[str]) -> str:
    """Message of the first line of the last run of consecutive ``|ERR|`` log lines."""
    start = None
    for i, line in enumerate(lines):
        if "|ERR|" in line and (i == 0 or "|ERR|" not in lines[i - 1]):
            start = i
    return lines[start].split("|", 4)[-1][:300] if start is not None else ""


def _pid_state(pid: int) -> str | None:
    """Process state letter from /proc (None when the pid is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return stat[stat.rindex(")") + 2 :].split()[0]


def _ours(pid: int, run_dir: Path) -> bool:
    """True when ``pid`` is a live process whose command line names ``run_dir`` (a pid
    file alone may point at a reused pid)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except (FileNotFoundError, ProcessLookupError):
        return False
    return str(run_dir) in cmdline and _pid_state(pid) not in (None, "Z")


def cleanup_dead_run_dir(run_dir: Path, grace_s: float = 5.0) -> list[str]:
    """Undo what a *killed* run's private OvS left in ``run_dir`` (``vsb-<run>-ovs-*``).

    For ``vsbench cleanup``, once the run is known dead: ends ovs-vswitchd then
    ovsdb-server by the pids in their pid files, only if that process's command line
    names ``run_dir``; then gives back the hugepages, DPDK files and private mount recorded
    in ``hugepages.json`` (:func:`vsbench.system.hugepages.release_recorded`); then removes
    the directory. Returns one line per thing undone.
    """
    from vsbench.interfaces.host import hugepages

    done: list[str] = []
    for name in ("ovs-vswitchd", "ovsdb-server"):
        try:
            pid = int((run_dir / f"{name}.pid").read_text().strip())
        except (FileNotFoundError, ValueError):
            continue
        if not _ours(pid, run_dir):
            continue
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while _pid_state(pid) not in (None, "Z") and time.monotonic() < deadline:
            time.sleep(0.05)
        if _pid_state(pid) not in (None, "Z"):
            os.kill(pid, signal.SIGKILL)
        done.append(f"ended {name} pid {pid}")
    pages = hugepages.release_recorded(run_dir / "hugepages.json")
    if pages:
        done.append(f"released {pages} hugepages")
    if run_dir.exists():
        shutil.rmtree(run_dir, ignore_errors=True)
        done.append(f"removed {run_dir}")
    return done
