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
import shlex
import time
from pathlib import Path
from typing import Any, ClassVar, Mapping, Sequence

from vsbench.interfaces import API_VERSION, PluginError, Prerequisite, SwitchPort
from vsbench.interfaces import commands
from vsbench.interfaces.host import cpu as host_cpu
from vsbench.interfaces.host import dpdk_app as dpdk

from vsbench_plugins.vnf.dpdk_process import DpdkProcessVnf, Names, last_error, read_log
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


#: What PROX says when it fails (its panics, and the EAL's errors).
ERROR_WORDS = ("PANIC", "Error", "error", "Cannot", "Failed", "failed", "Invalid")


class ProxVnf(DpdkProcessVnf):
    """The real PROX forwarding between two vhost-user ports or two veth ends."""

    description: ClassVar[str] = "PROX (samplevnf DPPD-PROX) swap/nop/l2fwd between vhost-user ports or veth ends"
    api_version: ClassVar[str] = API_VERSION
    settings_schema: ClassVar[dict] = SETTINGS_SCHEMA
    port_kinds: ClassVar[tuple[str, ...]] = ("vhostuser", "physical")
    #: one worker core forwards one pair
    max_port_pairs: ClassVar[int | None] = 1
    names: ClassVar[Names] = Names(label="prox (vnf)", vnf="prox", resource="prox vnf", dir_tag="proxvnf",
                                   prefix_tag="prv", cleanup_line="prox vnf: released {pages} hugepages of {run_dir}")
    logger: ClassVar[logging.Logger] = log

    def __init__(self, context) -> None:
        super().__init__(context)
        self.cfg = with_defaults(context.settings)

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

    # ------------------------------------------------------------------ lifecycle

    def _start(self) -> None:
        run_dir = self._make_run_dir()
        try:
            memory = dpdk.prepare_memory(self.stack, run_dir, self.file_prefix, int(self.cfg["memory_mb"]))
            vdevs = self._vdevs()
            text = config.render(self.cfg, [*memory.eal_args(), *vdevs], self._peer_macs())
        except (dpdk.DpdkAppError, config.ConfigError) as exc:
            raise PluginError(f"prox (vnf): {exc}") from None
        cfg_path = run_dir / "prox-vnf.cfg"
        cfg_path.write_text(text, encoding="utf-8")
        self.argv = [self.cfg["binary"], "-o", "none", "-f", str(cfg_path), "-l", self._own_log(),
                     *self.cfg["extra_args"]]
        self._launch()

    def _check_vhost_ports(self, ports: Sequence[SwitchPort]) -> None:
        if any(port.spec.socket_path is None for port in ports):
            raise PluginError("prox (vnf): a vhost-user port without a socket")
        if any(port.spec.options.get("vhost_server") == "vnf" for port in ports):
            raise PluginError("prox (vnf) connects to the switch's vhost-user sockets as a client only")

    def _virtio_user_vdevs(self, sockets: list) -> list[str]:
        # vhost-user shares PROX's memory with the switch in at most 8 regions: one file
        # per segment list, or virtio_user's SET_MEM_TABLE fails (seen: the handshake
        # stops short of DRIVER_OK and nothing is forwarded)
        return ["--single-file-segments", *dpdk.virtio_user_vdevs(sockets)]

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
        """Ready means: telemetry answers and both ports' links are up; PROX exiting before
        then is its last error line."""
        log_path = Path(self.context.log_dir) / f"proxvnf{self.instance}.log"
        try:
            proc = self._spawn(log_path)
        except OSError as exc:
            raise PluginError(f"prox (vnf): cannot start {self.argv[0]}: {exc.strerror}") from None

        def still_running() -> None:
            if not proc.alive():
                raise PluginError(f"prox (vnf) exited at start (exit {proc.popen.returncode}): "
                                  f"{last_error(read_log(log_path), ERROR_WORDS)}; see {log_path}")

        self._wait_links_up(time.monotonic() + float(self.cfg["start_timeout_s"]),
                            lambda pending: f"prox (vnf): port(s) {pending} not up within "
                                            f"{self.cfg['start_timeout_s']} s; see {log_path}",
                            each=still_running)
        log.info("PROX (%s) forwarding, pid %d", self.cfg["forward_mode"], proc.pid)

    # ------------------------------------------------------------------ the contract

    def _facts(self) -> dict[str, Any]:
        return {"forward_mode": self.cfg["forward_mode"]}

    _trial_facts = _facts

    def version(self) -> dict[str, str]:
        """What ran: PROX has no version option (its version is a control-socket command,
        and this VNF runs without the socket), so the binary's path names the build."""
        facts = {"vnf": "prox", "forward_mode": self.cfg["forward_mode"], "binary": str(self.cfg["binary"]),
                 "command_line": shlex.join(self.argv)}
        return facts

    def busy_poll_cpus(self) -> dict[str, set[int]]:
        return {f"prox{self.instance} worker": {int(self.cfg["worker_cpu"])}}
