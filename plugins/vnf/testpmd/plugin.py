"""testpmd: DPDK's testpmd as the VNF, forwarding between the vswitch's ports.

One ``dpdk-testpmd`` process per VNF instance, in the DUT's network namespace, attached to
the ports a deployment hands it (:meth:`Testpmd.start`), pairs 0<->1, 2<->3:

* **vhost-user** ports (``spec.socket_path``; OvS-DPDK): ``net_virtio_user`` vdevs. By
  default the switch created the socket and testpmd connects as client; with
  ``vhost_server: true`` testpmd creates the sockets and the switch connects (OvS's
  ``dpdkvhostuserclient``, the mode OvS recommends) -- the deployment asks
  :meth:`Testpmd.vhost_user_server` before it adds the switch's ports.
* **kernel interface** ports (``spec.iface``; switches without vhost-user, e.g. the Linux
  bridge): ``net_af_packet`` vdevs on the VNF's ends of veth pairs.
* **PCI** ports (``spec.pci``; ``--vswitch none`` on a lab's NICs, ``testbed.dut_ports``):
  DPDK's own PMD, the EAL allowed exactly those devices (``-a``); ``bind_driver`` hands
  each to vfio-pci or uio_pci_generic for the run and back to its own driver after.

testpmd runs interactively on a pty (:mod:`.console`): ``start`` once up, ``show port stats
all`` before and after every trial (:meth:`trial_begin` / :meth:`trial_end`: the per-port
counter deltas, the CPU time of its threads and whether its forwarding lcores got their
CPU), ``stop`` and ``quit`` at the end. Its hugepages are reserved for exactly
``memory_mb``, in a private hugetlbfs mount, and everything -- process, page files, DPDK
runtime directory, mount, pages -- is registered for teardown when acquired and gone
after :meth:`stop`.
"""

from __future__ import annotations

import functools
import itertools
import logging
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any, ClassVar, Mapping, Sequence

from vsbench.interfaces.plugin import DutGoneError
from vsbench.interfaces import PluginError, Prerequisite, ResourceStack, SwitchPort, Vnf
from vsbench.interfaces.commands import which
from vsbench.interfaces.host import cpu, dpdk_probe, hugepages, pci_bind
from vsbench.interfaces.host.netlink import NetlinkError, list_links
from vsbench.interfaces.settings import with_defaults

from . import argv as argvs
from . import stats as statsmod
from .console import ConsoleError, TestpmdConsole
from .guest import GuestTestpmdConsole, boot_vm, guest_argv
from vsbench.interfaces.host.vm import VM_SETTINGS_SCHEMA, GuestImageError, VmError, vm_defaults
from vsbench.interfaces.host.vm import missing_prerequisites as vm_missing

log = logging.getLogger(__name__)

DEFAULT_BINARY = "dpdk-testpmd"
INSTALL = "apt-get install --no-install-recommends"
#: Debian packages: testpmd itself, and the drivers its ports need (only Recommended by dpdk).
BINARY_PACKAGE = "dpdk-dev"
VIRTIO_PACKAGE = "librte-net-virtio23"
AF_PACKET_PACKAGE = "librte-net-af-packet23"
#: Thread-name prefixes of testpmd's forwarding lcores (DPDK 22.11 names them rte-worker-N;
#: later releases dpdk-worker-N / lcore-worker-N).
WORKER_PREFIX = ("rte-worker", "dpdk-worker", "lcore-worker")

#: EAL/application options vsbench sets itself; in ``extra_eal``/``extra_app`` an error.
MANAGED_ARGS = ("--lcores", "-l", "-c", "--main-lcore", "--no-pci", "-a", "--allow", "-b", "--block",
                "--file-prefix", "--huge-dir", "-m", "--socket-mem", "--no-huge", "--vdev",
                "--forward-mode", "--nb-cores", "--port-topology", "-i", "--interactive", "--auto-start",
                "--total-num-mbufs", "--eth-peer", "--rxq", "--txq")

SETTINGS_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "vnf.testpmd settings",
    "type": ["object", "null"],
    "additionalProperties": False,
    "properties": {
        "binary": {"type": "string", "default": DEFAULT_BINARY,
                   "description": "dpdk-testpmd (Debian dpdk-dev)"},
        "forward_mode": {"enum": list(argvs.FORWARD_MODES), "default": "io",
                         "description": "io: as received; mac: source MAC set to the port's, destination to "
                                        "the peer's; macswap: source and destination swapped"},
        "vhost_server": {"type": "boolean", "default": False,
                         "description": "testpmd creates the vhost-user sockets (virtio-user server mode) and "
                                        "the switch connects as client; false: the switch is the server"},
        "main_cpu": {"type": "integer", "minimum": 0, "default": 0,
                     "description": "CPU of the main lcore (the console; nearly idle)"},
        "forward_cpus": {"type": ["array", "null"], "items": {"type": "integer", "minimum": 0},
                         "minItems": 1, "default": None,
                         "description": "CPUs of the forwarding lcores (busy-polling), one lcore each; "
                                        "null: the highest online CPU"},
        "cores": {"type": ["integer", "null"], "minimum": 1, "default": None,
                  "description": "forwarding lcores when forward_cpus is null: on the highest online CPUs "
                                 "(null: one); with forward_cpus, their number, checked"},
        "memory_mb": {"type": "integer", "minimum": 32, "default": 128,
                      "description": "memory the EAL may use (hugepages reserved for exactly this)"},
        "hugepages": {"type": "boolean", "default": True,
                      "description": "false: --no-huge (ordinary memory)"},
        "hugepage_size_kb": {"type": "integer", "enum": [2048, 1048576], "default": 2048},
        "rx_descriptors": {"type": "integer", "minimum": 64, "maximum": 32768, "default": 1024},
        "tx_descriptors": {"type": "integer", "minimum": 64, "maximum": 32768, "default": 1024},
        "burst": {"type": "integer", "minimum": 1, "maximum": 512, "default": 32},
        "queue_size": {"type": "integer", "minimum": 64, "maximum": 32768, "default": 1024,
                       "description": "virtio ring size of each vhost-user port"},
        "packed_ring": {"type": "boolean", "default": False,
                        "description": "offer the virtio 1.1 packed virtqueue layout on vhost-user ports "
                                       "(net_virtio_user packed_vq=1; mode vm: the VM's virtio NICs, QEMU packed=on); "
                                       "the switch's side says whether it was negotiated (OvS-DPDK: each "
                                       "trial's datapath.vhost)"},
        "queues": {"type": "integer", "minimum": 1, "maximum": 16, "default": 1,
                   "description": "queue pairs of every port (vhost-user: virtio multiqueue, which OvS-DPDK "
                                  "follows on its side; af_packet: qpairs); testpmd --rxq/--txq"},
        "mbufs": {"type": ["integer", "null"], "minimum": 1024, "default": None,
                  "description": "mbuf pool size; null: enough for every ring"},
        "start_timeout_s": {"type": "number", "exclusiveMinimum": 0, "default": 30},
        "command_timeout_s": {"type": "number", "exclusiveMinimum": 0, "default": 10},
        "extra_eal": {"type": "array", "items": {"type": "string"}, "default": [],
                      "description": "additional EAL arguments (not cores, PCI, memory, prefix or vdevs)"},
        "extra_app": {"type": "array", "items": {"type": "string"}, "default": [],
                      "description": "additional testpmd arguments (not mode, cores, topology or mbufs)"},
        "bind_driver": {"enum": [None, "vfio-pci", "uio_pci_generic"], "default": None,
                        "description": "PCI ports (testbed.dut_ports pci): bind each to this driver for the run "
                                       "and back to its own after (vsbench.system.pci_bind); null: a lab bound them"},
        "mode": {"enum": ["process", "vm"], "default": "process",
                 "description": "process: testpmd on the host; vm: in a libvirt VM on the vhost-user sockets "
                                "(vsbench/system/vm; TCG here, slow)"},
        "vm": VM_SETTINGS_SCHEMA,
        "af_packet": {
            "type": "object", "additionalProperties": False,
            "properties": {
                "framecnt": {"type": "integer", "minimum": 64, "default": 2048},
                "blocksz": {"type": "integer", "minimum": 4096, "default": 4096},
                "framesz": {"type": "integer", "minimum": 2048, "default": 2048},
                "qdisc_bypass": {"type": "boolean", "default": True},
            },
        },
    },
}

#: Instances started in this process per run: each gets its own file prefix.
_instance_counter: dict[str, itertools.count] = {}


def settings_errors(cfg: Mapping[str, Any], online: set[int]) -> list[str]:
    """What the schema cannot say about ``cfg``, one line each (pure given ``online``)."""
    errors = []
    for key in ("extra_eal", "extra_app"):
        for arg in cfg.get(key) or []:
            if arg.split("=", 1)[0] in MANAGED_ARGS:
                errors.append(f"vnf.testpmd.{key} may not contain {arg.split('=', 1)[0]} (vsbench sets it)")
    if cfg.get("mode") == "vm" and int(cfg.get("queues") or 1) > 1:
        errors.append("vnf.testpmd.queues > 1 applies to testpmd on the host (mode: process): in a VM each queue "
                      "pair needs a vCPU polling it, and this host runs its guests under TCG on 2 CPUs")
    cpus = [cfg["main_cpu"], *(cfg.get("forward_cpus") or [])]
    bad = sorted({c for c in cpus if c not in online})
    if bad:
        errors.append(f"vnf.testpmd CPUs {bad} are not online (online: {sorted(online)})")
    cores = cfg.get("cores")
    if cores is not None and cfg.get("forward_cpus") and len(cfg["forward_cpus"]) != cores:
        errors.append(f"vnf.testpmd.cores={cores} but forward_cpus lists {len(cfg['forward_cpus'])} CPUs")
    elif cores is not None and not cfg.get("forward_cpus") and cores > len(online):
        errors.append(f"vnf.testpmd.cores={cores} needs {cores} CPUs for its forwarding lcores; "
                      f"this host has {len(online)} online")
    return errors


def missing_ports(start_reply: str, expected: int, startup_output: str) -> str | None:
    """Why testpmd forwards on fewer ports than it was given (a vdev its EAL could not
    probe: it goes on with the others, and one lane would silently carry nothing), or None.
    ``start_reply`` is the console's answer to ``start`` (``io packet forwarding -
    ports=2 - ...``)."""
    found = re.search(r"forwarding - ports=(\d+)", start_reply)
    if found is None or int(found.group(1)) == expected:
        return None
    why = next((line.strip() for line in startup_output.splitlines()
                if "could not" in line or "failed to initialize" in line or "Cannot" in line), "see its log")
    return f"forwards on {found.group(1)} of its {expected} ports: {why}"


def forward_cpus(cfg: Mapping[str, Any], online: set[int]) -> tuple[int, ...]:
    """The forwarding lcores' CPUs: as configured, else ``cores`` (one by default) of the
    highest online CPUs (CPU 0 carries the console, the generator and the kernel's work by
    default, so it is taken last)."""
    if cfg.get("forward_cpus"):
        return tuple(int(c) for c in cfg["forward_cpus"])
    return tuple(sorted(online, reverse=True)[:int(cfg.get("cores") or 1)])


@functools.lru_cache(maxsize=4)
def probe_drivers(binary: str) -> tuple[tuple[str, str], ...]:
    """Whether testpmd's EAL has the net_virtio_user driver, for real: testpmd is started
    with a virtio-user vdev on a socket that does not exist. With the driver the vdev is
    parsed and fails to connect; without it the EAL cannot parse the device name at all.
    Also returns the version line. ~0.2 s, no hugepage, no PCI device touched."""
    with tempfile.TemporaryDirectory(prefix="vsb-testpmd-probe-") as tmp:
        prefix = f"vsbprobe{Path(tmp).name[-8:].replace('_', '')}"
        argv = [binary, "-v", "--no-pci", "--no-huge", "-m", "32", "--no-shconf", "--no-telemetry",
                "-l", str(min(cpu.online_cpus())), f"--file-prefix={prefix}",
                "--vdev", f"net_virtio_user0,path={tmp}/absent.sock", "--", "--total-num-mbufs=1024"]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL)
            output = done.stdout + done.stderr
        except (OSError, subprocess.TimeoutExpired) as exc:
            return (("error", f"{binary} did not run: {exc}"),)
        finally:
            runtime = Path("/var/run/dpdk") / prefix
            if runtime.is_dir() and not runtime.is_symlink():
                shutil.rmtree(runtime, ignore_errors=True)
    found: list[tuple[str, str]] = [("version", statsmod.parse_version(output) or "unknown")]
    if "failed to parse device" in output or "Unable to parse device" in output:
        found.append(("missing", "net_virtio_user"))
    return tuple(found)


class Testpmd(Vnf):
    """dpdk-testpmd forwarding between vhost-user (net_virtio_user) or veth (net_af_packet) ports."""

    description: ClassVar[str] = "DPDK testpmd (io/mac/macswap) on vhost-user or veth ports, driven over its console"
    #: The plugin contract this was written for (issue 11's versioning; unused before it lands).
    api_version: ClassVar[str] = "1.0"
    #: mode vm boots a TCG VM in start()
    deadlines_s: ClassVar[dict[str, float]] = {"start": 900.0}
    settings_schema: ClassVar[dict] = SETTINGS_SCHEMA
    port_kinds: ClassVar[tuple[str, ...]] = ("vhostuser", "physical")
    #: physical ports may be PCI NICs (``spec.pci``), driven by DPDK's own PMD
    pci_ports: ClassVar[bool] = True

    def __init__(self, context) -> None:
        super().__init__(context)
        self.cfg: dict[str, Any] = with_defaults(SETTINGS_SCHEMA, context.settings or {})
        counter = _instance_counter.setdefault(context.run_id, itertools.count())
        self.instance = next(counter)
        self.file_prefix = f"vsb{context.run_id}tp{self.instance}"
        self.console: TestpmdConsole | None = None
        self.launch: argvs.TestpmdLaunch | None = None
        self.argv: list[str] = []
        self.ports: list[SwitchPort] = []
        self.dpdk_version: str | None = None
        self._before: tuple[dict[int, dict[str, int]], Any] | None = None
        self._stack: Any = None
        self.vm: Any = None

    # ------------------------------------------------------------------ checks

    @classmethod
    def check_prerequisites(cls, settings: Mapping[str, Any]) -> list[Prerequisite]:
        cfg = with_defaults(SETTINGS_SCHEMA, settings or {})
        binary = which(cfg["binary"])
        if binary is None:
            return [Prerequisite(f"binary {cfg['binary']}", f"{INSTALL} {BINARY_PACKAGE}")]
        missing = [Prerequisite(line, "fix vnf.testpmd settings") for line in settings_errors(cfg, cpu.online_cpus())]
        if cfg["hugepages"]:
            why = hugepages.hugetlb_available(int(cfg["hugepage_size_kb"]))
            if why:
                missing.append(Prerequisite(f"hugepages: {why}", "run as root, or set vnf.testpmd.hugepages: false"))
        if cfg["mode"] == "vm":
            missing += [Prerequisite(what, remedy) for what, remedy in vm_missing()]
        if missing:
            return missing
        if dpdk_probe.links_shared_dpdk(binary):
            # the vdev bus, net_af_packet and the mempool ring, loaded for real by the shared probe
            missing += [Prerequisite(what, remedy) for what, remedy in dpdk_probe.cached_findings()]
            for kind, value in probe_drivers(binary):
                if kind == "missing":
                    missing.append(Prerequisite(f"DPDK driver {value} (testpmd's vhost-user ports)",
                                                f"{INSTALL} {VIRTIO_PACKAGE}"))
                elif kind == "error":
                    missing.append(Prerequisite(value, f"{INSTALL} {BINARY_PACKAGE}"))
        return missing

    def vhost_user_server(self) -> bool:
        return bool(self.cfg["vhost_server"])

    def version(self) -> dict[str, str]:
        binary = which(self.cfg["binary"]) or self.cfg["binary"]
        version = self.dpdk_version
        if version is None:
            version = dict(probe_drivers(binary)).get("version", "unknown")
        out = {"dpdk": version, "testpmd": binary, "forward_mode": self.cfg["forward_mode"],
               "packed_ring_offered": str(bool(self.cfg["packed_ring"])).lower(), "queues": str(self.cfg["queues"])}
        if self.argv:
            out["command_line"] = " ".join(self.argv)
        if self.vm is not None:
            out.update(self.vm.describe())
        return out

    # ------------------------------------------------------------------ lifecycle

    def _vnf_ports(self, ports: Sequence[SwitchPort]) -> list[argvs.VnfPort]:
        af = self.cfg["af_packet"]
        out: list[argvs.VnfPort] = []
        for port in ports:
            spec = port.spec
            if spec.kind == "vhostuser":
                if spec.socket_path is None:
                    raise PluginError(f"testpmd: vhost-user port {port.name} has no socket_path")
                server = spec.options.get("vhost_server") == "vnf"
                out.append(argvs.VirtioUserPort(Path(spec.socket_path), server=server,
                                                queue_size=int(self.cfg["queue_size"]),
                                                mac=spec.options.get("vnf_mac"),
                                                packed_ring=bool(self.cfg["packed_ring"]),
                                                queues=int(self.cfg["queues"])))
            elif spec.kind == "physical" and spec.pci:
                out.append(argvs.PciPort(spec.pci))
            elif spec.kind == "physical" and spec.iface:
                out.append(argvs.AfPacketPort(spec.iface, framecnt=af["framecnt"], blocksz=af["blocksz"],
                                              framesz=af["framesz"], qdisc_bypass=af["qdisc_bypass"],
                                              qpairs=int(self.cfg["queues"])))
            else:
                raise PluginError(f"testpmd cannot attach to {spec.kind} port {port.name} "
                                  "(vhost-user sockets, kernel interfaces or PCI devices only)")
        return out

    def _check_interfaces(self, vnf_ports: Sequence[argvs.VnfPort]) -> None:
        """Every kernel interface testpmd is to open exists in the DUT's namespace: DPDK's
        af_packet PMD would otherwise fail inside the EAL with a message about port ids (the
        conformance kit's missing-port check caught testpmd starting without complaint)."""
        wanted = [p.iface for p in vnf_ports if isinstance(p, argvs.AfPacketPort)]
        if not wanted:
            return
        try:
            present = set(list_links(self.context.dut_netns))
        except NetlinkError as exc:
            raise PluginError(f"testpmd: cannot list the interfaces of the DUT namespace: {exc}") from None
        missing = [iface for iface in wanted if iface not in present]
        if missing:
            raise PluginError(f"testpmd: no interface {', '.join(missing)} to attach net_af_packet to")

    def _memory(self) -> Path | None:
        """Reserve hugepages for ``memory_mb`` and mount a private hugetlbfs; register the
        undo of each and the removal of our page files. Returns the mount (None: --no-huge)."""
        if not self.cfg["hugepages"]:
            return None
        size_kb = int(self.cfg["hugepage_size_kb"])
        base = Path(self.context.work_dir or self.context.log_dir)
        run_dir = base / f"testpmd{self.instance}"
        run_dir.mkdir(parents=True, exist_ok=True)
        record = run_dir / "hugepages.json"
        try:
            hugepages.reserve(hugepages.pages_for_mb(int(self.cfg["memory_mb"]), size_kb), self._stack,
                              page_size_kb=size_kb, record=record)
            huge_dir = hugepages.mount_private(run_dir / "hugepages", self._stack, page_size_kb=size_kb,
                                               record=record)
        except hugepages.HugepageError as exc:
            raise PluginError(f"testpmd: {exc}") from None
        hugepages.register_dpdk_file_cleanup(self._stack, huge_dir, self.file_prefix, record)
        return huge_dir

    def start(self, ports: Sequence[SwitchPort]) -> None:
        if self.console is not None:
            raise PluginError("testpmd: already started")
        online = cpu.online_cpus()
        errors = settings_errors(self.cfg, online)
        if errors:
            raise PluginError(errors[0])
        ports = self._dpdk_order(ports)
        self.ports = list(ports)
        vnf_ports = self._vnf_ports(ports)
        self._check_interfaces(vnf_ports)
        self._stack = ResourceStack()
        # stop() closes the private stack; registered first so a half-started VNF goes too
        self.context.resources.register(f"testpmd {self.file_prefix}", self.stop)
        in_vm = self.cfg["mode"] == "vm"
        self._bind_pci(vnf_ports, in_vm)
        if not self.cfg["hugepages"]:
            self._stack.register(f"DPDK files of {self.file_prefix}", _remove_runtime_dir, self.file_prefix)
        huge_dir = None if in_vm else self._memory()  # a VM's guest has its own hugepages
        peer_macs = tuple(p.spec.options.get("peer_mac") for p in ports)
        try:
            self.launch = argvs.TestpmdLaunch(
                binary=which(self.cfg["binary"]) or self.cfg["binary"], ports=tuple(vnf_ports),
                file_prefix=self.file_prefix, main_cpu=int(self.cfg["main_cpu"]),
                forward_cpus=forward_cpus(self.cfg, online), memory_mb=int(self.cfg["memory_mb"]),
                hugepages=bool(self.cfg["hugepages"]), huge_dir=huge_dir, forward_mode=self.cfg["forward_mode"],
                rx_descriptors=int(self.cfg["rx_descriptors"]), tx_descriptors=int(self.cfg["tx_descriptors"]),
                burst=int(self.cfg["burst"]), queues=int(self.cfg["queues"]), mbufs=self.cfg["mbufs"],
                peer_macs=peer_macs if any(peer_macs) else (),
                extra_eal=tuple(self.cfg["extra_eal"]), extra_app=tuple(self.cfg["extra_app"]))
            self.argv = (guest_argv(self.launch, len(ports)) if in_vm else argvs.testpmd_argv(self.launch))
        except argvs.ArgvError as exc:
            raise PluginError(f"testpmd: {exc}") from None
        for port in vnf_ports:
            if isinstance(port, argvs.VirtioUserPort) and port.server:
                # testpmd creates these; a killed testpmd leaves them behind
                self._stack.register(f"vhost-user socket {port.socket_path}", _unlink, port.socket_path)
        log_path = Path(self.context.log_dir) / f"testpmd{self.instance}.log"
        try:
            if in_vm:
                console = self._start_in_vm(ports)
            else:
                console = TestpmdConsole.start(self.argv, netns=self.context.dut_netns, log_path=log_path,
                                               start_timeout_s=float(self.cfg["start_timeout_s"]))
        except (ConsoleError, VmError, GuestImageError) as exc:
            raise PluginError(f"testpmd: {exc}") from None
        self.console = console
        self._stack.register(f"testpmd process {console.pid}", self._end_process, console)
        self.dpdk_version = statsmod.parse_version(console.startup_output)
        problem = missing_ports(self._command("start"), len(ports), console.startup_output)
        if problem:
            raise PluginError(f"testpmd: {problem}")
        log.info("testpmd %s: %s forwarding on %d ports (pid %d, lcores %s)", self.file_prefix,
                 self.cfg["forward_mode"], len(ports), console.pid,
                 argvs.lcores_arg(self.launch.main_cpu, self.launch.forward_cpus))

    @staticmethod
    def _dpdk_order(ports: Sequence[SwitchPort]) -> list[SwitchPort]:
        """``ports`` as DPDK numbers them (PCI ports in bus-address order, first), so that
        port i of the console's counters and of ``--eth-peer`` is ``self.ports[i]``;
        refused when that would pair other ports than the deployment's 0<->1, 2<->3."""
        order = argvs.dpdk_port_order([argvs.PciPort(p.spec.pci) if p.spec.kind == "physical" and p.spec.pci
                                       else argvs.AfPacketPort("x") for p in ports])
        pairs = {frozenset(order[i:i + 2]) for i in range(0, len(order) - 1, 2)}
        if pairs != {frozenset((i, i + 1)) for i in range(0, len(order) - 1, 2)}:
            raise PluginError("testpmd: DPDK numbers PCI ports by bus address, which would pair other ports than "
                              f"{[p.name for p in ports]}: list each pair's PCI ports next to each other in address order")
        return [ports[i] for i in order]

    def _bind_pci(self, vnf_ports: Sequence[argvs.VnfPort], in_vm: bool) -> None:
        """Bind the PCI ports to ``bind_driver`` before the EAL probes them; each goes back
        to its own driver when the private stack closes (after the process ended)."""
        pci = [p.address for p in vnf_ports if isinstance(p, argvs.PciPort)]
        if pci and in_vm:
            raise PluginError("testpmd in a VM takes vhost-user ports, not the host's PCI devices")
        if not self.cfg["bind_driver"]:
            return
        for address in pci:
            try:
                pci_bind.bind(address, self.cfg["bind_driver"], self._stack)
            except pci_bind.PciBindError as exc:
                raise PluginError(f"testpmd: {exc}") from None

    def _start_in_vm(self, ports: Sequence[SwitchPort]) -> TestpmdConsole:
        """Boot a VM on the vhost-user sockets and start testpmd on its console (TCG: every
        step several times slower than on the host, hence the longer deadline)."""
        if any(p.spec.kind != "vhostuser" for p in ports) or self.cfg["vhost_server"]:
            raise PluginError("testpmd in a VM needs vhost-user ports created by the switch (vhost_server: false)")
        vm_cfg = vm_defaults(self.cfg.get("vm"))
        work = Path(self.context.work_dir or self.context.log_dir)
        self.vm = boot_vm(run_id=self.context.run_id, instance=self.instance, work_dir=work,
                          log_dir=Path(self.context.log_dir), resources=self._stack, settings=vm_cfg,
                            sockets=[Path(p.spec.socket_path) for p in ports], binary=self.launch.binary,
                          packed_ring=bool(self.cfg["packed_ring"]))
        return GuestTestpmdConsole.start_in(self.vm, self.argv, float(self.cfg["start_timeout_s"]) * 6)

    def _end_process(self, console: TestpmdConsole) -> None:
        try:
            console.command("stop", timeout_s=float(self.cfg["command_timeout_s"]))  # forward stats into the log
        except ConsoleError:
            pass
        if not console.quit(timeout_s=float(self.cfg["command_timeout_s"])):
            log.warning("testpmd %s did not quit; ending it (pid %d)", self.file_prefix, console.pid)
        console.terminate()

    def _command(self, line: str) -> str:
        if self.console is None:
            raise PluginError("testpmd: not started")
        try:
            return self.console.command(line, timeout_s=float(self.cfg["command_timeout_s"]))
        except ConsoleError as exc:
            raise PluginError(f"testpmd: {exc}") from None

    def stop(self) -> None:
        stack, self._stack = self._stack, None
        self.console = None
        if stack is not None:
            stack.close()

    # ------------------------------------------------------------------ statistics

    def port_counters(self) -> dict[int, dict[str, int]]:
        try:
            return statsmod.parse_port_stats(self._command("show port stats all"))
        except statsmod.StatsParseError as exc:
            raise PluginError(f"testpmd: {exc}") from None

    def stats(self) -> dict[str, Any]:
        if self.console is None:
            return {}
        return {"ports": statsmod.ports_document(self.port_counters()), "forward_mode": self.cfg["forward_mode"]}

    def busy_poll_cpus(self) -> dict[str, set[int]]:
        if self.cfg["mode"] == "vm":  # the vCPU running the lcore; unpinned, it may land anywhere
            pins = vm_defaults(self.cfg.get("vm"))["vcpu_cpus"]
            return {f"testpmd{self.instance} VM vCPUs": set(pins) if pins else cpu.online_cpus()}
        cpus = set(self.launch.forward_cpus) if self.launch else set(forward_cpus(self.cfg, cpu.online_cpus()))
        return {f"testpmd{self.instance} lcores": cpus}

    def threads(self) -> list[tuple[int, int, str]]:
        """``(pid, tid, name)`` of every testpmd thread (forwarding lcores first)."""
        if self.console is None:
            return []
        pid = self.console.pid
        found = [(pid, tid, name) for tid, name in cpu.task_names(pid).items()]
        return sorted(found, key=lambda t: (not t[2].startswith(WORKER_PREFIX), t[1]))

    def check_alive(self) -> None:
        """:class:`DutGoneError` when testpmd (a process VNF) or the VM it runs in died:
        without it a dead testpmd is measured as 100 % loss and a search settles on a
        "throughput" of nothing."""
        console = self.console
        if self.vm is not None:  # the console is the VM's serial line: ask whether QEMU runs
            reason = self.vm.gone()
            if reason is not None:
                raise DutGoneError(reason)
            return
        if console is None:
            return
        if not console.child.isalive():
            raise DutGoneError(f"testpmd (pid {console.pid}) died")

    def trial_begin(self) -> None:
        if self.console is None:
            return
        self.check_alive()
        counters = self.port_counters()
        self._before = (counters, cpu.sample(pids=[self.console.pid]))

    def trial_end(self) -> dict[str, Any]:
        if self._before is None or self.console is None:
            return {}
        before_counters, before_cpu = self._before
        self._before = None
        self.check_alive()
        usage = cpu.delta(before_cpu, cpu.sample(pids=[self.console.pid]))
        try:
            ports = statsmod.delta(before_counters, self.port_counters())
        except statsmod.StatsParseError as exc:
            raise PluginError(f"testpmd: {exc}") from None
        return {
            "ports": statsmod.ports_document(ports),
            "cpu_s": usage.threads_busy_s,
            "elapsed_s": usage.elapsed_s,
            "threads": [{"tid": t.tid, "name": t.name, "busy_s": t.busy_s, "utilization": t.utilization,
                         "last_cpu": t.last_cpu}
                        for t in usage.threads if t.busy_s > 0 or t.name.startswith(WORKER_PREFIX)],
            "warnings": [w.to_dict() for w in cpu.starved_busy_pollers(usage, prefixes=WORKER_PREFIX)],
        }


def _unlink(path: Path) -> None:
    Path(path).unlink(missing_ok=True)


def _remove_runtime_dir(prefix: str) -> None:
    runtime = Path("/var/run/dpdk") / prefix
    if prefix and runtime.is_dir() and not runtime.is_symlink():
        shutil.rmtree(runtime, ignore_errors=True)
