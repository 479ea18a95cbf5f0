"""PROX as the VNF: the real PROX (samplevnf DPPD-PROX) forwarding between the switch's ports.

The same binary the ``prox`` traffic generator launches (tools/build_prox.sh builds it from
a samplevnf tarball; nothing is fetched at run time), run as a host process in the DUT's
namespace with a configuration vsbench renders (:mod:`.config`): ``net_virtio_user`` ports
on OvS-DPDK's vhost-user sockets, or ``net_af_packet`` ports on the VNF's veth ends for a
switch without vhost-user (Linux bridge); one worker core with two tasks, port 0 -> 1 and
1 -> 0, in PROX's ``swap`` mode (default), ``nop`` or ``l2fwd``.

PROX runs without its control socket: forwarding needs no command, and its port counters
come from DPDK's telemetry socket (PROX's EAL opens one like any DPDK program), read per
trial as l3fwd's are. Ready means: telemetry answers and both ports' links are up (frames
sent before the vhost-user handshake ends are lost). Hugepages, page files, the DPDK
runtime directory and the process are each registered for teardown when acquired; PROX
ends on SIGINT (its handler quits the main loop and closes its ports).
"""

from __future__ import annotations

import logging
import re
import shlex
import shutil
import signal
import time
from pathlib import Path
from typing import Any, ClassVar, Mapping, Sequence

from vsbench.interfaces import API_VERSION, PluginError, Prerequisite, ResourceStack, SwitchPort, Vnf
from vsbench.interfaces import commands
from vsbench.interfaces.host import cpu as host_cpu
from vsbench.interfaces.host import dpdk_app as dpdk
from vsbench.interfaces.host.netlink import NetlinkError, list_links

from vsbench_plugins.vnf.prox import config

log = logging.getLogger(__name__)

#: PROX's -l file name buffer (MAX_NAME_SIZE in prox_globals.h), terminating NUL included.
PROX_MAX_NAME = 64

SETTINGS_SCHEMA: dict[str, Any] = {
    "type": ["object", "null"],
    "additionalProperties": False,
    "properties": {
        "binary": {"type": "string", "minLength": 1, "default": "prox",
                   "description": "the PROX executable (tools/build_prox.sh SAMPLEVNF.tar.gz prints its path)"},
        "forward_mode": {"enum": list(config.FORWARD_MODES), "default": "swap",
                         "description": "swap: PROX's reflector (MACs, IPs and L4 ports swapped); nop: unchanged; "
                                        "l2fwd: destination MAC the peer's, source MAC the port's"},
        "master_cpu": {"type": "integer", "minimum": 0, "default": 0,
                       "description": "CPU of PROX's master core (it sleeps between commands)"},
        "worker_cpu": {"type": "integer", "minimum": 0, "default": 1,
                       "description": "CPU of the worker core that busy-polls both ports"},
        "memory_mb": {"type": "integer", "minimum": 64, "default": 256},
        "mempool_k": {"type": "integer", "minimum": 1, "default": 8,
                      "description": "mbufs per port's pool, in thousands (PROX's mempool size=NK)"},
        "rx_desc": {"type": "integer", "minimum": 64, "default": 512},
        "tx_desc": {"type": "integer", "minimum": 64, "default": 512},
        "eth_dest": {"type": "array", "items": {"type": "string", "pattern": config.MAC_PATTERN}, "default": [],
                     "description": "l2fwd: destination MAC per exit port (default: the deployment's peer_mac)"},
        "extra_args": {"type": "array", "items": {"type": "string"}, "default": []},
        "start_timeout_s": {"type": "number", "minimum": 1, "default": 60},
    },
}


def with_defaults(settings: Mapping[str, Any] | None) -> dict[str, Any]:
    cfg = {k: v.get("default") for k, v in SETTINGS_SCHEMA["properties"].items()}
    cfg.update(dict(settings or {}))
    return cfg


class ProxVnf(Vnf):
    """The real PROX forwarding between two vhost-user ports or two veth ends."""

    description: ClassVar[str] = "PROX (samplevnf DPPD-PROX) swap/nop/l2fwd between vhost-user ports or veth ends"
    api_version: ClassVar[str] = API_VERSION
    settings_schema: ClassVar[dict] = SETTINGS_SCHEMA
    port_kinds: ClassVar[tuple[str, ...]] = ("vhostuser", "physical")
    #: one worker core forwards one pair
    max_port_pairs: ClassVar[int | None] = 1

    def __init__(self, context) -> None:
        super().__init__(context)
        self.cfg = with_defaults(context.settings)
        self.stack = ResourceStack()
        self.ports: list[SwitchPort] = []
        self.argv: list[str] = []
        self.proc: commands.ManagedProcess | None = None
        self.instance = 0
        self.file_prefix = f"vsb{context.run_id}prv0"
        self.run_dir: Path | None = None
        self._started = False
        self._trial_before: list[dict[str, int]] | None = None

    # ------------------------------------------------------------------ checks

    @classmethod
    def check_prerequisites(cls, settings: Mapping[str, Any]) -> list[Prerequisite]:
        cfg = with_defaults(settings)
        missing = []
        if not commands.which(cfg["binary"]):
            missing.append(Prerequisite(f"PROX executable {cfg['binary']!r}",
                                        "build PROX (tools/build_prox.sh SAMPLEVNF.tar.gz prints its path) "
                                        "and set vnf.prox.binary"))
        online = host_cpu.online_cpus()
        bad = sorted({int(cfg["master_cpu"]), int(cfg["worker_cpu"])} - set(online))
        if bad:
            missing.append(Prerequisite(f"CPU(s) {bad} for PROX's cores (online: {sorted(online)})",
                                        "set vnf.prox.master_cpu and worker_cpu to online CPUs"))
        return missing

    @classmethod
    def cleanup_dead_run(cls, run_id: str, work_dirs: list[Path]) -> list[str]:
        """A killed run's PROX is ended by the generic cleanup (its command line names the
        run); here: the hugepages it recorded, and its directory."""
        if not re.fullmatch(r"[0-9a-f]{6}", run_id):
            return []
        done = []
        for work_dir in work_dirs:
            for run_dir in sorted(Path(work_dir).glob(f"vsb-{run_id}-proxvnf*")):
                if run_dir.is_dir() and not run_dir.is_symlink():
                    done.append(f"prox vnf: released {dpdk.release_recorded(run_dir)} hugepages of {run_dir}")
                    _remove_dir(run_dir)
        return done

    # ------------------------------------------------------------------ lifecycle

    def start(self, ports: Sequence[SwitchPort]) -> None:
        if self._started:
            return
        self._started = True
        self.context.resources.register("vnf prox", self.stop)
        if len(ports) != 2:
            raise PluginError(f"prox (vnf) forwards between one pair of ports; got {len(ports)}")
        self._check_ports(ports)
        self.ports = list(ports)
        work = Path(self.context.work_dir) if self.context.work_dir else Path("/run/vsbench")
        work.mkdir(parents=True, exist_ok=True)
        while True:  # the first free instance number: a run may hold several VNFs
            self.run_dir = work / f"vsb-{self.context.run_id}-proxvnf{self.instance}"
            try:
                self.run_dir.mkdir()
                break
            except FileExistsError:
                self.instance += 1
        self.file_prefix = f"vsb{self.context.run_id}prv{self.instance}"
        self.stack.register(f"prox vnf dir {self.run_dir}", _remove_dir, self.run_dir)
        try:
            memory = dpdk.prepare_memory(self.stack, self.run_dir, self.file_prefix, int(self.cfg["memory_mb"]))
            vdevs = self._vdevs()
            text = config.render(self.cfg, [*memory.eal_args(), *vdevs], self._peer_macs())
        except (dpdk.DpdkAppError, config.ConfigError) as exc:
            raise PluginError(f"prox (vnf): {exc}") from None
        cfg_path = self.run_dir / "prox-vnf.cfg"
        cfg_path.write_text(text, encoding="utf-8")
        self.argv = [self.cfg["binary"], "-o", "none", "-f", str(cfg_path), "-l", self._own_log(),
                     *self.cfg["extra_args"]]
        self._launch()

    def stop(self) -> None:
        self.stack.close()

    def _check_ports(self, ports: Sequence[SwitchPort]) -> None:
        kinds = {port.spec.kind for port in ports}
        if kinds == {"vhostuser"}:
            if any(port.spec.socket_path is None for port in ports):
                raise PluginError("prox (vnf): a vhost-user port without a socket")
            if any(port.spec.options.get("vhost_server") == "vnf" for port in ports):
                raise PluginError("prox (vnf) connects to the switch's vhost-user sockets as a client only")
            return
        if kinds != {"physical"} or any(not port.spec.iface or port.spec.pci for port in ports):
            raise PluginError("prox (vnf) attaches to two vhost-user ports or to two kernel interfaces; got "
                              + ", ".join(f"{p.name} ({p.spec.kind})" for p in ports))
        try:
            present = set(list_links(self.context.dut_netns))
        except NetlinkError as exc:
            raise PluginError(f"prox (vnf): cannot list the interfaces of the DUT namespace: {exc}") from None
        missing = [str(port.spec.iface) for port in ports if port.spec.iface not in present]
        if missing:
            raise PluginError(f"prox (vnf): no interface {', '.join(missing)} to attach net_af_packet to")

    def _vdevs(self) -> list[str]:
        if self.ports[0].spec.kind == "vhostuser":
            # vhost-user shares PROX's memory with the switch in at most 8 regions: one file
            # per segment list, or virtio_user's SET_MEM_TABLE fails (seen: the handshake
            # stops short of DRIVER_OK and nothing is forwarded)
            return ["--single-file-segments",
                    *dpdk.virtio_user_vdevs([p.spec.socket_path for p in self.ports])]
        return [dpdk.af_packet_vdev(i, str(p.spec.iface)) for i, p in enumerate(self.ports)]

    def _peer_macs(self) -> list[str | None]:
        if self.cfg["eth_dest"]:
            return list(self.cfg["eth_dest"])
        return [p.spec.options.get("peer_mac") for p in self.ports]

    def _own_log(self) -> str:
        """PROX's own log (``-l``; without it PROX writes ./prox.log wherever vsbench runs),
        shorter than PROX's 64-byte name buffer (a longer one panics at start)."""
        assert self.run_dir is not None
        for candidate in (Path(self.context.log_dir) / f"proxvnf{self.instance}-own.log",
                          self.run_dir / "own.log",
                          Path("/tmp") / f"vsb-{self.context.run_id}-proxvnf{self.instance}.log"):
            if len(str(candidate)) < PROX_MAX_NAME:
                return str(candidate)
        raise PluginError(f"prox (vnf): no log path shorter than {PROX_MAX_NAME} bytes for PROX's -l")

    def _launch(self) -> None:
        log_path = Path(self.context.log_dir) / f"proxvnf{self.instance}.log"
        try:
            self.proc = commands.spawn(self.argv, netns=self.context.dut_netns, log_path=log_path)
        except OSError as exc:
            raise PluginError(f"prox (vnf): cannot start {self.argv[0]}: {exc.strerror}") from None
        self.stack.register(f"prox vnf pid {self.proc.pid}", self._stop_process)
        deadline = time.monotonic() + float(self.cfg["start_timeout_s"])
        pending = {0, 1}
        while pending:
            if not self.proc.alive():
                raise PluginError(f"prox (vnf) exited at start (exit {self.proc.popen.returncode}): "
                                  f"{_last_error(_read(log_path))}; see {log_path}")
            for index in sorted(pending):
                try:
                    status = (self._telemetry(f"/ethdev/link_status,{index}") or {}).get("status")
                except (dpdk.DpdkAppError, ValueError):
                    status = None
                if status == "UP":
                    pending.discard(index)
            if not pending:
                break
            if time.monotonic() > deadline:
                raise PluginError(f"prox (vnf): port(s) {sorted(pending)} not up within "
                                  f"{self.cfg['start_timeout_s']} s; see {log_path}")
            time.sleep(0.1)
        log.info("PROX (%s) forwarding, pid %d", self.cfg["forward_mode"], self.proc.pid)

    def _stop_process(self) -> None:
        if self.proc is not None:
            self.proc.stop(grace_s=10.0, sig=signal.SIGINT)  # PROX quits its main loop on SIGINT
            self.proc = None

    # ------------------------------------------------------------------ the contract

    def _telemetry(self, query: str) -> Any:
        return dpdk.telemetry_query(dpdk.telemetry_socket(self.file_prefix), query)

    def port_counters(self) -> list[dict[str, int]]:
        """PROX's ports' counters (cumulative), from DPDK telemetry; [] when unreadable."""
        if self.proc is None:
            return []
        ports = []
        for index in range(len(self.ports)):
            try:
                ports.append({"port": index, **dpdk.ethdev_counters(self._telemetry(f"/ethdev/stats,{index}"))})
            except (dpdk.DpdkAppError, ValueError) as exc:
                log.warning("prox (vnf): cannot read port %d counters: %s", index, exc)
                return []
        return ports

    def stats(self) -> dict[str, Any]:
        ports = self.port_counters()
        return {"ports": ports, "forward_mode": self.cfg["forward_mode"]} if ports else {}

    def trial_begin(self) -> None:
        self._trial_before = self.port_counters()

    def trial_end(self) -> dict[str, Any]:
        before, self._trial_before = self._trial_before, None
        after = self.port_counters()
        if not before or not after:
            return {}
        return {"ports": dpdk.counter_deltas(before, after), "forward_mode": self.cfg["forward_mode"]}

    def version(self) -> dict[str, str]:
        """What ran: PROX has no version option (its version is a control-socket command,
        and this VNF runs without the socket), so the binary's path names the build."""
        facts = {"vnf": "prox", "forward_mode": self.cfg["forward_mode"], "binary": str(self.cfg["binary"]),
                 "command_line": shlex.join(self.argv)}
        return facts

    def busy_poll_cpus(self) -> dict[str, set[int]]:
        return {f"prox{self.instance} worker": {int(self.cfg["worker_cpu"])}}


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def _last_error(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in reversed(lines):
        if any(word in line for word in ("PANIC", "Error", "error", "Cannot", "Failed", "failed", "Invalid")):
            return line[:200]
    return lines[-1][:200] if lines else "no output"


def _remove_dir(path: Path) -> None:
    mounts = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines() if len(line.split()) > 1]
    if any(m == str(path) or m.startswith(str(path) + "/") for m in mounts):
        log.warning("prox (vnf): %s still has a mount below it; not removed", path)
        return
    shutil.rmtree(path, ignore_errors=True)
