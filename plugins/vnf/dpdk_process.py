"""What l3fwd and PROX-as-VNF share: a DPDK application run as a host process between two
of the switch's ports (``net_virtio_user`` on vhost-user sockets, or ``net_af_packet`` on the
VNF's veth ends for a switch without vhost-user), with its own directory, its lifetime and
its port counters read from DPDK's telemetry socket.

A plugin subclasses :class:`DpdkProcessVnf`, names itself in the class attributes (the
words of its error lines, its directory and file prefix) and keeps what is its own: its
argv, its configuration, how it knows it is ready, a VM mode. Nothing here decides what a
plugin says: every line keeps the plugin's own words (:class:`Names`).
"""

from __future__ import annotations

import logging
import re
import shutil
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, ClassVar, Sequence

from vsbench.interfaces import PluginError, ResourceStack, SwitchPort, Vnf
from vsbench.interfaces import commands
from vsbench.interfaces.host import dpdk_app as dpdk
from vsbench.interfaces.host.netlink import NetlinkError, list_links
from vsbench.interfaces.plugin import DutGoneError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Names:
    """How one plugin names itself, so that every line keeps its own words."""

    #: how its lines begin: "l3fwd", "prox (vnf)"
    label: str
    #: the run's resource name (``vnf NAME``)
    vnf: str
    #: what its own resources are called in teardown lines ("l3fwd pid 7", "prox vnf dir ...")
    resource: str
    #: its directory under the work dir: ``vsb-RUN-{dir_tag}N``
    dir_tag: str
    #: its DPDK file prefix: ``vsbRUN{prefix_tag}N`` (short: it names the telemetry socket)
    prefix_tag: str
    #: what ``vsbench cleanup`` says for a killed run's directory ({pages}, {run_dir})
    cleanup_line: str


class DpdkProcessVnf(Vnf):
    """One DPDK application forwarding between one pair of the switch's ports."""

    #: how the plugin names itself in its lines, resources, directory and files
    names: ClassVar[Names]
    #: what reading its telemetry may raise besides a broken socket
    telemetry_errors: ClassVar[tuple[type[Exception], ...]] = (dpdk.DpdkAppError, ValueError)
    #: the plugin module's logger, so its lines keep their origin
    logger: ClassVar[logging.Logger] = log

    def __init__(self, context) -> None:
        super().__init__(context)
        self.stack = ResourceStack()
        self.ports: list[SwitchPort] = []
        self.argv: list[str] = []
        self.proc: commands.ManagedProcess | None = None
        #: set by start(): instance number within the run (pvvp has two)
        self.instance = 0
        self.file_prefix = f"vsb{context.run_id}{self.names.prefix_tag}0"
        self.run_dir: Path | None = None
        self._started = False
        self._trial_before: list[dict[str, int]] | None = None

    @classmethod
    def cleanup_dead_run(cls, run_id: str, work_dirs: list[Path]) -> list[str]:
        """A killed run's process is ended by the generic cleanup (its command line names the
        run); here: the hugepages it recorded (their mount too), and its directory."""
        if not re.fullmatch(r"[0-9a-f]{6}", run_id):
            return []
        done = cls._cleanup_dead_others(run_id, work_dirs)
        for work_dir in work_dirs:
            for run_dir in sorted(Path(work_dir).glob(f"vsb-{run_id}-{cls.names.dir_tag}*")):
                if run_dir.is_dir() and not run_dir.is_symlink():
                    done.append(cls.names.cleanup_line.format(pages=dpdk.release_recorded(run_dir), run_dir=run_dir))
                    remove_dir(run_dir, cls.names.label, cls.logger)
        return done

    @classmethod
    def _cleanup_dead_others(cls, run_id: str, work_dirs: list[Path]) -> list[str]:
        """What else of a killed run the plugin cleans up first (l3fwd: its VM)."""
        return []

    # ------------------------------------------------------------------ lifecycle

    def start(self, ports: Sequence[SwitchPort]) -> None:
        if self._started:
            return
        self._started = True
        self.context.resources.register(f"vnf {self.names.vnf}", self.stop)
        if len(ports) != 2:
            raise PluginError(f"{self.names.label} forwards between one pair of ports; got {len(ports)}")
        self._check_ports(ports)
        self.ports = list(ports)
        self._start()

    def _start(self) -> None:
        """The plugin's own start, once its ports were accepted."""
        raise NotImplementedError

    def stop(self) -> None:
        self.stack.close()

    def _make_run_dir(self) -> Path:
        """The first free ``vsb-RUN-{dir_tag}N`` under the work dir (a run may hold several
        VNFs), registered for removal; sets ``instance`` and ``file_prefix`` by it."""
        self.work_dir = Path(self.context.work_dir) if self.context.work_dir else Path("/run/vsbench")
        self.work_dir.mkdir(parents=True, exist_ok=True)
        while True:
            self.run_dir = self.work_dir / f"vsb-{self.context.run_id}-{self.names.dir_tag}{self.instance}"
            try:
                self.run_dir.mkdir()
                break
            except FileExistsError:
                self.instance += 1
        self.file_prefix = f"vsb{self.context.run_id}{self.names.prefix_tag}{self.instance}"
        self.stack.register(f"{self.names.resource} dir {self.run_dir}", remove_dir, self.run_dir, self.names.label,
                            self.logger)
        return self.run_dir

    def _check_ports(self, ports: Sequence[SwitchPort]) -> None:
        """Both ports vhost-user sockets, or both kernel interfaces present in the DUT's
        namespace: a missing one is refused here, before hugepages are reserved, rather than
        when the process starts and its EAL fails."""
        kinds = {port.spec.kind for port in ports}
        if kinds == {"vhostuser"}:
            self._check_vhost_ports(ports)
            return
        if kinds != {"physical"} or any(not port.spec.iface or port.spec.pci for port in ports):
            raise PluginError(f"{self.names.label} attaches to two vhost-user ports or to two kernel interfaces; got "
                              + ", ".join(f"{p.name} ({p.spec.kind})" for p in ports))
        self._check_kernel_ports(ports)
        try:
            present = set(list_links(self.context.dut_netns))
        except NetlinkError as exc:
            raise PluginError(f"{self.names.label}: cannot list the interfaces of the DUT namespace: {exc}") from None
        missing = [str(port.spec.iface) for port in ports if port.spec.iface not in present]
        if missing:
            raise PluginError(f"{self.names.label}: no interface {', '.join(missing)} to attach net_af_packet to")

    def _check_vhost_ports(self, ports: Sequence[SwitchPort]) -> None:
        """The plugin's own refusals of two vhost-user ports."""

    def _check_kernel_ports(self, ports: Sequence[SwitchPort]) -> None:
        """The plugin's own refusals of two kernel interfaces, before they are looked up."""

    def _vdevs(self) -> list[str]:
        """One vdev per port, in port order (DPDK numbers them as they are given)."""
        if self.ports[0].spec.kind == "vhostuser":
            return self._virtio_user_vdevs([p.spec.socket_path for p in self.ports])
        try:
            return [dpdk.af_packet_vdev(index, str(p.spec.iface), qpairs=self._af_packet_qpairs())
                    for index, p in enumerate(self.ports)]
        except dpdk.DpdkAppError as exc:
            raise PluginError(f"{self.names.label}: {exc}") from None

    def _virtio_user_vdevs(self, sockets: list) -> list[str]:
        return dpdk.virtio_user_vdevs(sockets)

    def _af_packet_qpairs(self) -> int:
        return 1

    def _spawn(self, log_path: Path) -> commands.ManagedProcess:
        """Start ``argv`` in the DUT's namespace, its stop registered at once."""
        self.proc = commands.spawn(self.argv, netns=self.context.dut_netns, log_path=log_path)
        self.stack.register(f"{self.names.resource} pid {self.proc.pid}", self._stop_process)
        return self.proc

    def _wait_links_up(self, deadline: float, timeout_error: Callable[[list[int]], str],
                       each: Callable[[], None] | None = None) -> None:
        """Wait until telemetry answers and every port's link is up: a DPDK program is
        polling before the switch has finished the vhost-user handshake, and frames sent
        then are lost (seen: a whole first trial). ``each`` runs before every look (a check
        that the process still runs); past ``deadline``, ``timeout_error(pending ports)``."""
        pending = set(range(len(self.ports)))
        while pending:
            if each is not None:
                each()
            for index in sorted(pending):
                try:
                    status = (self._telemetry(f"/ethdev/link_status,{index}") or {}).get("status")
                except self.telemetry_errors:
                    status = None
                if status == "UP":
                    pending.discard(index)
            if not pending:
                return
            if time.monotonic() > deadline:
                raise PluginError(timeout_error(sorted(pending)))
            time.sleep(0.1)

    def _stop_process(self) -> None:
        if self.proc is not None:
            # l3fwd closes its ports on SIGINT; PROX's handler quits its main loop and closes them
            self.proc.stop(grace_s=10.0, sig=signal.SIGINT)
            self.proc = None

    # ------------------------------------------------------------------ the contract

    def _telemetry(self, query: str) -> Any:
        return dpdk.telemetry_query(dpdk.telemetry_socket(self.file_prefix), query)

    def _counting(self) -> bool:
        """Whether there is a process whose counters to read."""
        return self.proc is not None

    def port_counters(self) -> list[dict[str, int]]:
        """The process's own counters per port (cumulative since it started), from DPDK
        telemetry; [] before it runs or when they cannot be read (logged)."""
        if not self._counting():
            return []
        ports = []
        for index in range(len(self.ports)):
            try:
                ports.append({"port": index, **dpdk.ethdev_counters(self._telemetry(f"/ethdev/stats,{index}"))})
            except self.telemetry_errors as exc:
                self.logger.warning("%s: cannot read port %d counters: %s", self.names.label, index, exc)
                return []
        return ports

    def _facts(self) -> dict[str, Any]:
        """What :meth:`stats` says beside the ports."""
        return {}

    def _trial_facts(self) -> dict[str, Any]:
        """What :meth:`trial_end` says beside the ports' deltas."""
        return {}

    def stats(self) -> dict[str, Any]:
        ports = self.port_counters()
        return {"ports": ports, **self._facts()} if ports else {}

    def check_alive(self) -> None:
        """Raise :class:`DutGoneError` when the VNF's process died; called at both trial
        boundaries, so a dead VNF ends the run naming it instead of being measured as 100 %
        loss. A plugin with another way to die (l3fwd's VM) adds its own check."""
        if self.proc is not None and not self.proc.alive():
            raise DutGoneError(f"{self.names.label} (pid {self.proc.pid}) died")

    def trial_begin(self) -> None:
        self.check_alive()
        self._trial_before = self.port_counters()

    def trial_end(self) -> dict[str, Any]:
        """The per-port counter deltas over the trial (the VNF contract's ``ports``)."""
        before, self._trial_before = self._trial_before, None
        self.check_alive()
        after = self.port_counters()
        if not before or not after:
            return {}
        return {"ports": dpdk.counter_deltas(before, after), **self._trial_facts()}


def read_log(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def last_error(text: str, words: Sequence[str]) -> str:
    """The last line of ``text`` with one of ``words`` in it (a program's own error words),
    else its last line, at most 200 characters."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in reversed(lines):
        if any(word in line for word in words):
            return line[:200]
    return lines[-1][:200] if lines else "no output"


def remove_dir(path: Path, label: str, logger: logging.Logger = log) -> None:
    """Remove ``path`` unless a mount is still at or below it (a hugetlbfs left mounted:
    removing under it would delete what the mount holds, not the directory)."""
    mounts = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines() if len(line.split()) > 1]
    if any(m == str(path) or m.startswith(str(path) + "/") for m in mounts):
        logger.warning("%s: %s still has a mount below it; not removed", label, path)
        return
    shutil.rmtree(path, ignore_errors=True)
