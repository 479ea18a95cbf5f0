"""l3fwd: DPDK's L3 forwarding example as a VNF, on the switch's vhost-user ports or veth ends.

As a host process (``mode: process``, the default) l3fwd attaches to each vhost-user
socket with ``net_virtio_user``, or to each kernel interface (the VNF's end of a veth
pair, for a switch without vhost-user) with ``net_af_packet``; in a VM (``mode: vm``) the VM's virtio NICs sit on those
sockets and l3fwd runs in the guest, driven over its serial console. Either way:

* the binary is built once from Debian's DPDK example sources (:mod:`.build`), cached;
* its routes (``lookup: lpm``) or 5-tuple rules (``lookup: em``) are generated from the
  traffic profile's flows (:mod:`.routes`) when the deployment calls :meth:`configure`,
  and l3fwd is (re)started only when they change -- so it starts at the first
  ``configure``, not at ``start``;
* its port counters come from DPDK's telemetry socket (``/ethdev/stats``) and are in
  :meth:`stats`; its version and command line in :meth:`version` (sysinfo.json).

Settings (``vnf.l3fwd``): see :data:`SETTINGS_SCHEMA` and docs/vnfs.rst.
"""

from __future__ import annotations

import json
import logging
import shlex
import time
from pathlib import Path
from typing import Any, ClassVar, Mapping, Sequence

from vsbench.interfaces import API_VERSION, PluginError, Prerequisite, SwitchPort, TrafficProfile
from vsbench.interfaces.plugin import DutGoneError
from vsbench.interfaces.host import cpu as host_cpu
from vsbench.interfaces.host import dpdk_app as dpdk
from vsbench.interfaces.host import vm

from vsbench_plugins.vnf.dpdk_process import DpdkProcessVnf, Names, last_error, read_log
from vsbench_plugins.vnf.l3fwd import build, command, routes

log = logging.getLogger(__name__)

MAC_PATTERN = r"^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$"
#: l3fwd forwards one pair of ports, each port wholly one lcore's: one lcore per port at most.
MAX_LCORES = 2
READY_TEXT = "entering main loop"
#: What l3fwd's start failing says (the EAL's errors, the example's own).
ERROR_WORDS = ("EAL: Error", "Cannot", "error", "Invalid", "Failed", "failed")

SETTINGS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "mode": {"enum": list(vm.VNF_MODES), "default": "process",
                 "description": "process: l3fwd on the host; vm: l3fwd in a libvirt VM (TCG here)"},
        "lookup": {"enum": ["lpm", "em"], "default": "lpm",
                   "description": "longest-prefix match on destinations, or exact match on 5-tuples"},
        "binary": {"type": ["string", "null"], "default": None,
                   "description": "a prebuilt l3fwd; null builds it from dpdk-doc's sources (cached)"},
        "lcore_cpu": {"type": "integer", "minimum": 0, "default": 1,
                      "description": "process mode: host CPU of l3fwd's forwarding lcore (cores: 1, lcore_cpus null)"},
        "cores": {"type": "integer", "minimum": 1, "default": 1,
                  "description": "process mode: forwarding lcores of each l3fwd, at most one per port (2; "
                                 "more than one on veth ends only), on the highest online CPUs unless "
                                 "lcore_cpus says"},
        "lcore_cpus": {"type": ["array", "null"], "items": {"type": "integer", "minimum": 0}, "minItems": 1,
                       "uniqueItems": True, "default": None,
                       "description": "process mode: host CPUs of the lcores, `cores` per l3fwd: the n-th l3fwd "
                                      "of a run takes the n-th group when the list has one, else the first"},
        "memory_mb": {"type": ["integer", "null"], "minimum": 32, "default": None,
                      "description": "hugepage memory for l3fwd; null: 256 (lpm) or 768 (em)"},
        "rx_desc": {"type": ["integer", "null"], "minimum": 64, "default": None},
        "tx_desc": {"type": ["integer", "null"], "minimum": 64, "default": None},
        "eth_dest": {"type": "array", "items": {"type": "string", "pattern": MAC_PATTERN}, "default": [],
                     "description": "destination MAC l3fwd writes per exit port (default: its own)"},
        "extra_args": {"type": "array", "items": {"type": "string"}, "default": [],
                       "description": "more l3fwd application arguments (after --)"},
        "start_timeout_s": {"type": "number", "minimum": 1, "default": 60},
        "packed_ring": {"type": "boolean", "default": False,
                        "description": "offer the virtio 1.1 packed virtqueue on vhost-user ports (process: "
                                       "net_virtio_user packed_vq=1; vm: QEMU packed=on); the switch's side says "
                                       "whether it was negotiated (OvS-DPDK: each trial's datapath.vhost). One "
                                       "queue pair per port: with more, DPDK 22.11's l3fwd asks virtio for RSS"},
        "vm": vm.VM_SETTINGS_SCHEMA,
    },
}

#: Hugepage memory by lookup when ``memory_mb`` is null: l3fwd's LPM tables and mbufs fit
#: in 256 MB; its exact-match hashes (4M entries, IPv4 and IPv6) need ~600 MB.
DEFAULT_MEMORY_MB = {"lpm": 256, "em": 768}
#: Rule lines sent to a guest over its serial console at most (EM rules are one per flow).
VM_MAX_RULE_LINES = 20000


def with_defaults(settings: Mapping[str, Any] | None) -> dict[str, Any]:
    cfg = {k: v.get("default") for k, v in SETTINGS_SCHEMA["properties"].items() if k != "vm"}
    cfg.update({k: v for k, v in (settings or {}).items() if k != "vm"})
    cfg["vm"] = vm.vm_defaults((settings or {}).get("vm"))
    return cfg


def lcore_errors(cfg: Mapping[str, Any], online: set[int]) -> list[str]:
    """What the schema cannot say about the lcores' settings, one line each (pure)."""
    cores, listed = int(cfg["cores"]), cfg.get("lcore_cpus")
    if cfg["mode"] == "vm":
        return [f"vnf.l3fwd.cores={cores}: l3fwd in a VM runs one lcore (use mode: process)"] if cores > 1 else []
    if listed is not None and len(listed) < cores:
        return [f"vnf.l3fwd.lcore_cpus lists {len(listed)} CPU(s) for cores={cores}"]
    if listed is None and cores > len(online):
        return [f"vnf.l3fwd.cores={cores} needs {cores} CPUs for its lcores; this host has {len(online)} online"]
    if cores > MAX_LCORES:
        return [f"vnf.l3fwd.cores={cores}: l3fwd hands each of its {MAX_LCORES} ports to one lcore, "
                f"so at most {MAX_LCORES} lcores per l3fwd (4 ports: topology.port_pairs=2, one l3fwd per pair)"]
    wanted = list(listed) if listed is not None else ([int(cfg["lcore_cpu"])] if cores == 1 else [])
    bad = sorted(c for c in wanted if c not in online)
    return [f"vnf.l3fwd CPUs {bad} are not online (online: {sorted(online)})"] if bad else []


def lcore_cpus(cfg: Mapping[str, Any], online: set[int], instance: int = 0) -> list[int]:
    """The host CPUs of the ``instance``-th l3fwd's lcores (first: the main lcore):
    ``lcore_cpus``' group ``instance`` (or its first group), else ``lcore_cpu`` for one
    lcore, else the ``cores`` highest online CPUs (CPU 0, where the generator and the
    kernel's work run by default, last)."""
    cores, listed = int(cfg["cores"]), cfg.get("lcore_cpus")
    if listed:
        group = instance if len(listed) >= (instance + 1) * cores else 0
        return [int(c) for c in listed[group * cores:(group + 1) * cores]]
    if cores == 1:
        return [int(cfg["lcore_cpu"])]
    return sorted(online, reverse=True)[:cores]


class L3fwd(DpdkProcessVnf):
    """DPDK l3fwd on vhost-user ports or veth ends, as a process or in a VM."""

    description: ClassVar[str] = "DPDK l3fwd (LPM or exact match) on vhost-user ports or veth ends, process or VM"
    api_version: ClassVar[str] = API_VERSION
    settings_schema: ClassVar[dict] = SETTINGS_SCHEMA
    #: a VM boots under TCG in start() (~10-60 s on a loaded 2-core host) and l3fwd starts
    #: in it at configure(); both get more than the run's default deadlines
    deadlines_s: ClassVar[dict[str, float]] = {"start": 900.0, "configure": 900.0}
    #: the deployments' question: which switch ports l3fwd attaches to (kernel interfaces
    #: through net_af_packet, as a host process only)
    port_kinds: ClassVar[tuple[str, ...]] = ("vhostuser", "physical")
    #: l3fwd routes by destination only and every pair carries the same flows: one pair each
    max_port_pairs: ClassVar[int | None] = 1
    names: ClassVar[Names] = Names(label="l3fwd", vnf="l3fwd", resource="l3fwd", dir_tag="l3fwd", prefix_tag="l3f",
                                   cleanup_line="l3fwd: released {pages} hugepages, removed {run_dir}")
    telemetry_errors: ClassVar[tuple[type[Exception], ...]] = (dpdk.DpdkAppError, vm.ConsoleError, ValueError)
    logger: ClassVar[logging.Logger] = log

    def __init__(self, context) -> None:
        super().__init__(context)
        self.cfg = with_defaults(context.settings)
        self.built: build.L3fwdBuild | None = None
        self.tables: routes.Tables | None = None
        self.memory: dpdk.DpdkMemory | None = None
        self.vm: vm.VirtualMachine | None = None
        self.starts = 0

    # ------------------------------------------------------------------ checks

    @classmethod
    def check_prerequisites(cls, settings: Mapping[str, Any]) -> list[Prerequisite]:
        cfg = with_defaults(settings)
        missing = []
        if cfg["binary"]:
            if not Path(cfg["binary"]).is_file():
                missing.append(Prerequisite(f"l3fwd binary {cfg['binary']}", "build it or set vnf.l3fwd.binary: null"))
        else:
            missing += [Prerequisite(what, remedy) for what, remedy in build.missing_toolchain()]
        missing += [Prerequisite(line, "fix vnf.l3fwd settings") for line in lcore_errors(cfg, host_cpu.online_cpus())]
        if cfg["mode"] == "vm":
            missing += [Prerequisite(what, remedy) for what, remedy in vm.missing_prerequisites()]
        else:
            for driver in ("librte_net_virtio.so.23", "librte_net_af_packet.so.23", "librte_bus_vdev.so.23"):
                if not (Path("/usr/lib/x86_64-linux-gnu/dpdk/pmds-23.0") / driver).exists():
                    package = driver.split(".so")[0].replace("_", "-") + "23"
                    missing.append(Prerequisite(f"DPDK driver {driver}", f"apt-get install {package}"))
        return missing

    @classmethod
    def _cleanup_dead_others(cls, run_id: str, work_dirs: list[Path]) -> list[str]:
        """A killed run's VM, before l3fwd's hugepages, mount and directory."""
        return vm.cleanup_dead_run(run_id, work_dirs)

    # ------------------------------------------------------------------ lifecycle

    def _start(self) -> None:
        if self.cfg["binary"]:
            self.built = None
            binary = Path(self.cfg["binary"])
        else:
            try:
                self.built = build.ensure_built()
            except build.BuildError as exc:
                raise PluginError(str(exc)) from None
            binary = self.built.binary
        self._make_run_dir()  # the first free instance number: several l3fwd may run in one run
        if self.cfg["mode"] == "vm":
            self._start_vm(binary)
        else:
            self._prepare_process(binary)

    def _check_vhost_ports(self, ports: Sequence[SwitchPort]) -> None:
        for port in ports:
            if port.spec.socket_path is None:
                raise PluginError(f"l3fwd: vhost-user port {port.name} has no socket")
        if int(self.cfg["cores"]) > 1:
            raise PluginError(f"vnf.l3fwd.cores={self.cfg['cores']}: l3fwd runs one lcore on vhost-user ports "
                              "(with a queue per lcore DPDK 22.11's l3fwd asks virtio for RSS, which it refuses); "
                              "several lcores run on veth ends (phy_vnf_phy, a switch without vhost-user)")

    def _check_kernel_ports(self, ports: Sequence[SwitchPort]) -> None:
        """Kernel interfaces only in process mode, and without a virtio ring layout: refused
        here, before hugepages are reserved, rather than at configure(), where l3fwd first
        starts and its EAL fails."""
        if self.cfg["packed_ring"]:
            raise PluginError("vnf.l3fwd.packed_ring is a virtio ring layout, for vhost-user ports; this switch "
                              "offers kernel interfaces (net_af_packet has no virtqueue)")
        if self.cfg["mode"] == "vm":
            raise PluginError("l3fwd in a VM attaches to vhost-user ports only; this switch offers kernel "
                              "interfaces (use vnf.l3fwd.mode: process, or a switch with vhost-user)")

    # ------------------------------------------------------------------ process mode

    def _memory_mb(self) -> int:
        return int(self.cfg["memory_mb"] or DEFAULT_MEMORY_MB[self.cfg["lookup"]])

    def _app_args(self, rules_dir: str, lcore: int | list[int]) -> list[str]:
        return command.app_args(
            ports=len(self.ports), lcore=lcore, lookup=self.cfg["lookup"],
            rules_v4=Path(rules_dir) / "routes.v4", rules_v6=Path(rules_dir) / "routes.v6",
            eth_dest=self._eth_dest(), rx_desc=self.cfg["rx_desc"], tx_desc=self.cfg["tx_desc"],
            extra=self.cfg["extra_args"])

    def _eth_dest(self) -> list[str]:
        """The destination MAC per exit port: ``eth_dest`` if set, else the ``peer_mac`` the
        deployment put on the port (the generator port or next hop it faces)."""
        if self.cfg["eth_dest"]:
            return list(self.cfg["eth_dest"])
        return [str(p.spec.options.get("peer_mac") or "") for p in self.ports]

    def _prepare_process(self, binary: Path) -> None:
        assert self.run_dir is not None
        try:
            self.memory = dpdk.prepare_memory(self.stack, self.run_dir, self.file_prefix, self._memory_mb())
        except dpdk.DpdkAppError as exc:
            raise PluginError(f"l3fwd: {exc}") from None
        errors = lcore_errors(self.cfg, host_cpu.online_cpus())
        if errors:
            raise PluginError(errors[0])
        lcores = self._lcores()
        self.argv = command.process_argv(
            binary, lcore=lcores, memory_args=self.memory.eal_args(),
            vdevs=self._vdevs(), app=self._app_args(str(self.run_dir), lcores))

    def _lcores(self) -> list[int]:
        """This l3fwd's lcores' host CPUs (process mode)."""
        return lcore_cpus(self.cfg, host_cpu.online_cpus(), self.instance)

    def _virtio_user_vdevs(self, sockets: list) -> list[str]:
        return dpdk.virtio_user_vdevs(sockets, packed_ring=bool(self.cfg["packed_ring"]))

    def _af_packet_qpairs(self) -> int:
        """One queue pair per lcore: l3fwd gives each lcore a transmit queue on every port."""
        return len(self._lcores())

    def _launch_process(self) -> None:
        assert self.run_dir is not None and self.tables is not None
        self._stop_process()
        (self.run_dir / "routes.v4").write_text(self.tables.ipv4_text())
        (self.run_dir / "routes.v6").write_text(self.tables.ipv6_text())
        log_path = Path(self.context.log_dir) / f"l3fwd{self.instance}.{self.starts}.log"
        proc = self._spawn(log_path)
        self.starts += 1
        deadline = time.monotonic() + float(self.cfg["start_timeout_s"])
        while READY_TEXT not in read_log(log_path):
            if not proc.alive():
                raise PluginError(f"l3fwd exited at start (exit {proc.popen.returncode}): "
                                  f"{last_error(read_log(log_path), ERROR_WORDS)}; see {log_path}")
            if time.monotonic() > deadline:
                raise PluginError(f"l3fwd did not start forwarding within {self.cfg['start_timeout_s']} s; see {log_path}")
            time.sleep(0.1)
        self._links_up(deadline)
        log.info("l3fwd (%s, %d rules) forwarding, pid %d", self.tables.lookup, self.tables.rules, proc.pid)

    def _links_up(self, deadline: float) -> None:
        """l3fwd enters its loop before the switch has finished the vhost-user handshake
        (frames sent then are lost, seen: a whole first trial): wait until telemetry
        answers and every port's link is up."""
        self._wait_links_up(deadline, lambda pending: (
            f"l3fwd: the link of port(s) {pending} did not come up "
            f"within {self.cfg['start_timeout_s']} s (vhost-user handshake with the switch)"))

    # ------------------------------------------------------------------ VM mode

    def _start_vm(self, binary: Path) -> None:
        assert self.run_dir is not None
        programs = [binary] + ([self.built.telemetry_client] if self.built else [])
        if not self.built:
            raise PluginError("l3fwd in a VM needs the built l3fwd and its telemetry client (binary: null)")
        try:
            image = vm.ensure_image(programs, kernel_version=self.cfg["vm"]["kernel_version"])
        except vm.GuestImageError as exc:
            raise PluginError(f"l3fwd VM image: {exc}") from None
        self.vm = vm.VirtualMachine(run_id=self.context.run_id, name=f"l3fwd{self.instance}",
                                    work_dir=self.work_dir, log_dir=Path(self.context.log_dir),
                                    resources=self.stack, settings=self.cfg["vm"], vm_index=self.instance)
        try:
            self.vm.boot(image, [p.spec.socket_path for p in self.ports], packed_ring=bool(self.cfg["packed_ring"]))
        except (vm.VmError, vm.ConsoleError) as exc:
            raise PluginError(f"l3fwd: {exc}") from None
        lcore = 1 if int(self.cfg["vm"]["vcpus"]) > 1 else 0
        guest_mb = min(self._memory_mb(), int(self.cfg["vm"]["guest_hugepages_mb"]))
        self.argv = command.guest_argv(str(binary), lcore=lcore,
                                       pci=[vm.nic_pci_address(i) for i in range(len(self.ports))],
                                       memory_mb=guest_mb, app=self._app_args("/tmp", lcore))

    def _launch_guest(self) -> None:
        assert self.vm is not None and self.vm.console is not None and self.tables is not None
        console = self.vm.console
        if len(self.tables.ipv4) > VM_MAX_RULE_LINES:
            raise PluginError(f"{len(self.tables.ipv4)} l3fwd rules are too many to send to a VM over its "
                              f"console (at most {VM_MAX_RULE_LINES}); use lookup lpm or fewer flows")
        self._stop_guest()
        for name, lines in (("routes.v4", self.tables.ipv4), ("routes.v6", self.tables.ipv6)):
            console.command(f": > /tmp/{name}")
            for i in range(0, len(lines), 50):
                chunk = "\\n".join(lines[i:i + 50])
                console.command(f"printf '{chunk}\\n' >> /tmp/{name}", timeout_s=60)
        console.command(f"{shlex.join(self.argv)} > /tmp/l3fwd.log 2>&1 &")
        self.starts += 1
        deadline = time.monotonic() + float(self.cfg["start_timeout_s"]) * 4  # TCG
        while True:
            out = console.command("cat /tmp/l3fwd.log; pidof l3fwd >/dev/null || echo L3FWD-GONE", timeout_s=60)
            if READY_TEXT in out:
                break
            if "L3FWD-GONE" in out:
                raise PluginError(f"l3fwd in the VM exited at start: {last_error(out, ERROR_WORDS)}")
            if time.monotonic() > deadline:
                raise PluginError("l3fwd in the VM did not start forwarding in time")
            time.sleep(1.0)
        self._links_up(deadline)
        log.info("l3fwd in VM %s (%s, %d rules) forwarding", self.vm.domain_name, self.tables.lookup, self.tables.rules)

    def _stop_guest(self) -> None:
        if self.vm is not None and self.vm.console is not None and self.starts:
            self.vm.console.command("kill -INT $(pidof l3fwd) 2>/dev/null; "
                                    "while pidof l3fwd >/dev/null; do sleep 0.2; done", timeout_s=60)

    # ------------------------------------------------------------------ the contract

    def configure(self, profile: TrafficProfile) -> None:
        """Routes (or rules) for ``profile``'s flows; l3fwd (re)starts when they changed."""
        if not self.ports:
            raise PluginError("l3fwd: configure() before start()")
        try:
            tables = routes.tables_for(profile, self.cfg["lookup"])
        except routes.RouteError as exc:
            raise PluginError(f"l3fwd: {exc}") from None
        running = self.vm is not None or (self.proc is not None and self.proc.alive())
        if tables == self.tables and running and self.starts:
            return
        self.tables = tables
        if self.vm is not None:
            self._launch_guest()
        else:
            self._launch_process()

    def _counting(self) -> bool:
        """Counters once l3fwd started (as a process or in the VM)."""
        return bool(self.starts)

    def _facts(self) -> dict[str, Any]:
        return {"lookup": self.cfg["lookup"], "rules": self.tables.rules if self.tables else 0,
                "mode": self.cfg["mode"], "starts": self.starts}

    def _trial_facts(self) -> dict[str, Any]:
        return {"mode": self.cfg["mode"]}

    def check_alive(self) -> None:
        """:class:`DutGoneError` when l3fwd (a process VNF) or the VM it runs in died: a dead
        l3fwd must end the run naming it, not be measured as 100 % loss."""
        super().check_alive()
        reason = self.vm.gone() if self.vm is not None else None
        if reason is not None:
            raise DutGoneError(reason)

    def _telemetry(self, query: str) -> Any:
        if self.vm is not None:
            assert self.vm.console is not None and self.built is not None
            out = self.vm.console.command(f"{self.built.telemetry_client} /var/run/dpdk/rte/dpdk_telemetry.v2 "
                                          f"{query}", timeout_s=30)
            reply = json.loads(out[out.index("{"):])
            return reply.get(query.split(",", 1)[0])
        return super()._telemetry(query)

    def version(self) -> dict[str, str]:
        facts = {"vnf": "l3fwd", "mode": self.cfg["mode"], "lookup": self.cfg["lookup"],
                 "command_line": shlex.join(self.argv),
                 "packed_ring_offered": str(bool(self.cfg["packed_ring"])).lower()}
        if self.built is not None:
            facts.update({"dpdk": self.built.dpdk_version, "l3fwd_build": self.built.key})
        if self.vm is not None:
            facts.update(self.vm.describe())
        return facts

    def busy_poll_cpus(self) -> dict[str, set[int]]:
        """The host CPUs l3fwd's lcore (process) or the VM's vCPUs (TCG threads) poll on."""
        if self.cfg["mode"] == "vm":
            # the vCPU running the lcore busy-polls; unpinned, it may land on any CPU
            pins = self.cfg["vm"]["vcpu_cpus"]
            return {f"l3fwd{self.instance} VM vCPUs": set(pins) if pins else host_cpu.online_cpus()}
        return {f"l3fwd{self.instance} lcores": set(self._lcores())}
