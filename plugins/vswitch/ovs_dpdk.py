"""ovs_dpdk: Open vSwitch with the userspace datapath and DPDK, in a private instance.

On the embedded testbed each DUT veth end becomes a DPDK ``net_af_packet`` vdev port (a
packet-mmap socket bound to that interface, polled by the PMD thread); on a real host the
NICs listed in ``ports: [{pci: ...}]`` are the only PCI devices DPDK may probe (``-a``
allow-list). Without PCI ports DPDK runs with ``--no-pci``: the host's devices are never
touched either way. Hugepages are reserved for exactly ``socket_mem_mb`` (plus headroom)
and given back at teardown; their files carry ``--file-prefix=vsb<run>ovs``.

A ``tunnel`` port (VXLAN) uses OvS's native userspace tunnelling: the underlay interface
goes into a bridge of its own (``vsb<run>br<N>``, the ``br-phy`` of OvS's userspace
tunnelling guide) whose internal port takes the VTEP's MAC (``other_config:hwaddr``) and
address (in the DUT namespace, where ovs-vswitchd runs), with two flows between that port
(``LOCAL``) and the underlay port; the far VTEP is an OvS route and a static tunnel
neighbour (``ovs/route/add``, ``tnl/neigh/set``: nothing is ARPed). The VXLAN port itself
is on the caller's bridge. A frame arriving for the VTEP is popped (``tnl_pop``) and
recirculated; one sent to the tunnel port is pushed (``tnl_push``) and leaves by the
underlay bridge's flow, in the same datapath pass.

A ``tap`` port (the ``v2v`` deployment's stand-in for a guest's vhost-user port) is an OvS
``type=tap`` interface: OvS creates the kernel tap device (in the DUT namespace) and serves
its other side from ovs-vswitchd's main thread -- netdev-linux ports are not PMD ports --
through one file descriptor, so it has one queue (``n_rxq`` > 1 is refused). With
``userspace_tso`` (on by default when the topology has tap ports) OvS opens the tap with
a virtio-net header and offers TSO and checksum offload to the kernel side: an endpoint's
64 KB TSO segment crosses the switch whole to another tap port, as a guest's does across
vhost-user ports. OvS 3.1 has no software segmentation or checksum fallback: a frame that
carries such work towards a port without the offload (DPDK's af_packet PMD offers none)
is dropped, so TSO plans need every endpoint on a tap port.

Default placement for a 2-core machine: the PMD busy-polls on CPU 1 (``pmd_cpu_mask
0x2``); DPDK's main lcore, the handler/revalidator threads, the generator and the kernel's
softirq work share CPU 0 (``dpdk_lcore_mask 0x1``).
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar, Mapping

from vsbench.interfaces.plugin import PluginError, Prerequisite
from vsbench.interfaces.vswitch import PortSpec, SwitchPort
from vsbench.interfaces import commands
from vsbench.interfaces.host import cpu, dpdk_probe, hugepages, pci_bind
from vsbench.interfaces.settings import with_defaults

from vsbench_plugins.vswitch.ovs import flows
from vsbench_plugins.vswitch.ovs.implementations import (active_labels, implementation_problem,
                                                       summarize_implementations, usable_text)
from vsbench_plugins.vswitch.ovs.parse import (parse_implementation_listing, parse_ovsdb_map, parse_pmd_stats,
                                              pmd_stats_delta, vhost_status)
from vsbench_plugins.vswitch.ovs.rxq import parse_pmd_rxq, rxq_label
from vsbench_plugins.vswitch.ovs.settings import ovs_schema
from vsbench_plugins.vswitch.ovs.switch import OVS_TUNNEL_OPTIONS, OvsSwitchBase, tunnel_columns

log = logging.getLogger(__name__)

#: Bytes a packet-mmap frame needs beyond the L3 MTU: tpacket header and sockaddr
#: (~66, aligned), Ethernet header 14, one VLAN tag 4.
AF_PACKET_OVERHEAD = 96

#: DPDK 22.11's net_af_packet reports max_rx_pktlen 1518 (L3 MTU 1500); measured here.
AF_PACKET_MAX_FRAME_BYTES = 1518

#: In the run dir while our hugepages are reserved (hugepages.release_recorded reads it).
HUGEPAGE_RECORD = "hugepages.json"

PCI_PATTERN = r"^([0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$"
MASK_PATTERN = r"^0x[0-9a-fA-F]+$"
IMPL_PATTERN = r"^[A-Za-z0-9_]+$"


def mask_text(value: Any) -> str:
    """A CPU mask as OvS takes it: ``"0x6"`` (``6`` from --test-params, which YAML reads
    ``0x6`` as, becomes ``"0x6"``)."""
    if isinstance(value, bool):
        raise ValueError(f"not a CPU mask: {value!r}")
    if isinstance(value, int):
        return hex(value)
    return str(value)

#: EAL arguments vsbench manages itself; in ``dpdk_extra`` they are an error naming the
#: setting to use instead (PCI probing is never left to a free-form string).
MANAGED_EAL_ARGS = {
    "--no-pci": "ports", "-a": "ports", "--allow": "ports", "-b": "ports", "--block": "ports",
    "-w": "ports", "--pci-whitelist": "ports", "--pci-blacklist": "ports",
    "--file-prefix": "(set by vsbench from the run id)", "--huge-dir": "huge_dir",
    "-c": "dpdk_lcore_mask", "-l": "dpdk_lcore_mask", "--lcores": "dpdk_lcore_mask",
    "--socket-mem": "socket_mem_mb", "--socket-limit": "socket_mem_mb",
}

SETTINGS_SCHEMA = ovs_schema("vswitch.ovs_dpdk settings", {
    "vswitchd": {"type": "string", "default": "/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk",
                 "description": "the DPDK build of ovs-vswitchd"},
    "dpdk_lcore_mask": {"type": ["string", "integer"], "pattern": MASK_PATTERN, "minimum": 1, "default": "0x1",
                        "description": "CPUs of DPDK's main lcore (non-PMD threads)"},
    "pmd_cpu_mask": {"type": ["string", "integer"], "pattern": MASK_PATTERN, "minimum": 1, "default": "0x2",
                     "description": "CPUs the PMD threads busy-poll on, one PMD per CPU "
                                    "(\"0x6\", or 6: --test-params reads 0x6 as a number)"},
    "socket_mem_mb": {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 1,
                      "default": [512], "description": "hugepage memory per NUMA node (MB); also the limit"},
    "hugepage_size_kb": {"type": "integer", "enum": [2048, 1048576], "default": 2048},
    "hugepage_extra_mb": {"type": "integer", "minimum": 0, "default": 0,
                          "description": "pages reserved beyond socket_mem_mb"},
    "huge_dir": {"type": ["string", "null"], "default": None,
                 "description": "hugetlbfs mount to use; null mounts a private one under the run dir"},
    "ports": {"type": "array", "default": [],
              "items": {"type": "object", "additionalProperties": False, "required": ["pci"],
                        "properties": {"pci": {"type": "string", "pattern": PCI_PATTERN}}},
              "description": "PCI NICs DPDK may probe (real host); empty: --no-pci"},
    "bind_driver": {"enum": [None, "vfio-pci", "uio_pci_generic"], "default": None,
                    "description": "bind every device of ports to this DPDK driver for the run and give it "
                                   "back to its own driver after; null: the lab bound them (dpdk-devbind)"},
    "dpdk_extra": {"type": "array", "items": {"type": "string"}, "default": [],
                   "description": "additional EAL arguments (not PCI, prefix, memory or core ones)"},
    "af_packet": {
        "type": "object", "additionalProperties": False,
        "properties": {
            "qpairs": {"type": "integer", "minimum": 1, "default": 1},
            "framecnt": {"type": "integer", "minimum": 64, "default": 2048,
                         "description": "frames in each packet-mmap ring"},
            "blocksz": {"type": "integer", "minimum": 4096, "default": 4096},
            "framesz": {"type": "integer", "minimum": 2048, "default": 2048},
            "qdisc_bypass": {"type": "boolean", "default": True},
        },
    },
    "mtu_request": {"type": ["integer", "null"], "minimum": 68, "maximum": 9702, "default": None,
                    "description": "L3 MTU of every DPDK port (null: OvS's 1500). PCI NICs only: "
                                   "DPDK 22.11's af_packet PMD caps frames at 1518 B"},
    "n_rxq_desc": {"type": ["integer", "null"], "minimum": 64, "default": None},
    "n_txq_desc": {"type": ["integer", "null"], "minimum": 64, "default": None},
    # -- datapath features (report 2's configuration deltas); null leaves OvS's default --
    "emc_insert_inv_prob": {"type": ["integer", "null"], "minimum": 0, "maximum": 4294967295, "default": None,
                            "description": "other_config:emc-insert-inv-prob: insert into the EMC on 1 in N "
                                           "misses (OvS: 100); 0 disables the EMC"},
    "smc_enable": {"type": ["boolean", "null"], "default": None,
                   "description": "other_config:smc-enable: the signature match cache (OvS: off)"},
    "n_rxq": {"type": ["integer", "null"], "minimum": 1, "maximum": 64, "default": None,
              "description": "options:n_rxq of every DPDK port (af_packet ports get as many qpairs)"},
    "dpcls_lookup": {"type": ["string", "null"], "pattern": IMPL_PATTERN, "default": None,
                     "description": "dpcls subtable lookup implementation made the preferred one "
                                    "(dpif-netdev/subtable-lookup-prio-set): generic, avx512_gather... "
                                    "as this OvS build lists them"},
    "dpif_impl": {"type": ["string", "null"], "pattern": IMPL_PATTERN, "default": None,
                  "description": "DPIF implementation (dpif-netdev/dpif-impl-set): dpif_scalar, dpif_avx512"},
    "mfex_impl": {"type": ["string", "null"], "pattern": IMPL_PATTERN, "default": None,
                  "description": "miniflow extract implementation (dpif-netdev/miniflow-parser-set): "
                                 "scalar, study, avx512_*"},
    "userspace_tso": {"type": ["boolean", "null"], "default": None,
                      "description": "other_config:userspace-tso-enable (OvS 3.1, experimental): TSO segments "
                                     "and unfinished checksums cross tap ports (and vhost-user) through a "
                                     "virtio-net header; null: on when the topology has tap ports, else off"},
})

#: The appctl commands of the implementation settings: (set command, listing command).
IMPLEMENTATIONS = {
    "dpcls_lookup": ("dpif-netdev/subtable-lookup-prio-set", "dpif-netdev/subtable-lookup-info-get"),
    "dpif_impl": ("dpif-netdev/dpif-impl-set", "dpif-netdev/dpif-impl-get"),
    "mfex_impl": ("dpif-netdev/miniflow-parser-set", "dpif-netdev/miniflow-parser-get"),
}
#: The priority that makes a subtable lookup implementation the preferred one: the highest
#: ``subtable-lookup-prio-set`` accepts (OvS 3.1: "use integer in range 0-255"; the
#: built-in ones have 0 and 1).
PREFERRED_LOOKUP_PRIORITY = 255


class OvsDpdk(OvsSwitchBase):
    """Open vSwitch userspace datapath with DPDK (af_packet ports on veth, or PCI NICs)."""

    description: ClassVar[str] = "Open vSwitch with DPDK (userspace datapath, PMD threads)"
    api_version: ClassVar[str] = "1.0"
    datapath_type: ClassVar[str] = "netdev"
    package_remedy: ClassVar[str] = "apt-get install openvswitch-switch-dpdk"
    settings_schema: ClassVar[dict] = SETTINGS_SCHEMA
    supports_vhost_user: ClassVar[bool] = True
    supports_tap_ports: ClassVar[bool] = True
    tunnel_types: ClassVar[tuple[str, ...]] = ("vxlan",)
    vport_kinds: ClassVar[tuple[str, ...]] = ("vhostuser", "tap")

    def __init__(self, context) -> None:
        super().__init__(context)
        self.file_prefix = f"vsb{context.run_id}ovs"
        self.huge_dir: Path | None = None
        self.reservation: hugepages.HugepageReservation | None = None
        self._pci_allowed = [p["pci"] for p in self.cfg["ports"]]
        for name in ("pmd_cpu_mask", "dpdk_lcore_mask"):
            self.cfg[name] = mask_text(self.cfg[name])
        #: The implementations switched to (``dpcls_lookup``, ``dpif_impl``, ``mfex_impl``).
        self.implementations: dict[str, str] = {}
        #: Whether :meth:`verify_implementations` has seen them on the PMD threads.
        self._verified = True
        #: Tunnel port name -> its underlay bridge, port and VTEP address.
        self.underlays: dict[str, dict[str, str]] = {}
        #: The port kinds the topology said it will add (:meth:`plan_ports`).
        self.planned_kinds: set[str] = set()

    # ------------------------------------------------------------------ checks

    @classmethod
    def check_prerequisites(cls, settings: Mapping[str, Any]) -> list[Prerequisite]:
        missing = super().check_prerequisites(settings)
        cfg = with_defaults(cls.settings_schema, settings)
        why = hugepages.hugetlb_available(int(cfg["hugepage_size_kb"]))
        if why:
            missing.append(Prerequisite(f"hugepages: {why}",
                                        "run as root on a kernel with CONFIG_HUGETLBFS"))
        missing += [Prerequisite(f"vswitch.ovs_dpdk: {error}", "change the setting")
                    for error in cls.settings_errors(cfg)]
        vswitchd = commands.which(cfg["vswitchd"]) or cfg["vswitchd"]
        if not missing and dpdk_probe.links_shared_dpdk(vswitchd):
            # ~0.3 s: the EAL starts for real and attaches a net_af_packet vdev and an mbuf
            # pool, so a driver package that is missing stops the run here, not at add_port.
            missing += [Prerequisite(what, remedy) for what, remedy in dpdk_probe.cached_findings()]
        return missing

    @staticmethod
    def settings_errors(cfg: Mapping[str, Any], online: set[int] | None = None) -> list[str]:
        """Problems JSON schema cannot express, one line each (empty when fine)."""
        cfg = {**cfg, **{k: mask_text(cfg[k]) for k in ("pmd_cpu_mask", "dpdk_lcore_mask") if k in cfg}}
        errors = []
        for arg in cfg.get("dpdk_extra", []):
            key = arg.split("=", 1)[0]
            if key in MANAGED_EAL_ARGS:
                errors.append(f"dpdk_extra may not contain {key}; use {MANAGED_EAL_ARGS[key]}")
        for key, setting in (("dpdk-extra", "dpdk_extra"), ("pmd-cpu-mask", "pmd_cpu_mask"),
                             ("dpdk-lcore-mask", "dpdk_lcore_mask"), ("dpdk-socket-mem", "socket_mem_mb"),
                             ("dpdk-socket-limit", "socket_mem_mb")):
            if key in cfg.get("other_config", {}):
                errors.append(f"other_config may not set {key}; use {setting}")
        mtu = cfg.get("mtu_request")
        af = cfg.get("af_packet", {})
        if mtu and af.get("framesz", 2048) < mtu + AF_PACKET_OVERHEAD:
            errors.append(f"mtu_request {mtu} needs af_packet.framesz >= {mtu + AF_PACKET_OVERHEAD} "
                          f"(is {af.get('framesz', 2048)})")
        online = online if online is not None else cpu.online_cpus()
        for name in ("pmd_cpu_mask", "dpdk_lcore_mask"):
            cpus = cpu.mask_to_cpus(cfg[name])
            if not cpus:
                errors.append(f"{name} {cfg[name]} selects no CPU")
            elif not cpus <= online:
                errors.append(f"{name} {cfg[name]} names CPUs {sorted(cpus - online)} that are not online "
                              f"(online: {sorted(online)})")
        return errors

    # ------------------------------------------------------------------ hooks

    def eal_extra_args(self) -> list[str]:
        """``dpdk-extra``: PCI allow-list or --no-pci, our file prefix and huge dir."""
        args: list[str] = []
        if self._pci_allowed:
            for pci in self._pci_allowed:
                args += ["-a", pci]
        else:
            args.append("--no-pci")
        args.append(f"--file-prefix={self.file_prefix}")
        if self.huge_dir is not None:
            args.append(f"--huge-dir={self.huge_dir}")
        return args + list(self.cfg["dpdk_extra"])

    def plan_ports(self, kinds) -> None:
        """Remembers the port kinds to come: tap ports turn ``userspace_tso`` (when null)
        on, which OvS reads once at start-up."""
        self.planned_kinds |= set(kinds)

    @property
    def userspace_tso(self) -> bool:
        """Whether this instance runs with ``userspace-tso-enable`` (the setting, or when
        null: tap ports planned)."""
        if self.cfg["userspace_tso"] is not None:
            return bool(self.cfg["userspace_tso"])
        return "tap" in self.planned_kinds

    def other_config(self) -> dict[str, str]:
        socket_mem = ",".join(str(m) for m in self.cfg["socket_mem_mb"])
        features = {}
        if self.userspace_tso or self.cfg["userspace_tso"] is not None:
            features["userspace-tso-enable"] = "true" if self.userspace_tso else "false"
        if self.cfg["emc_insert_inv_prob"] is not None:
            features["emc-insert-inv-prob"] = str(int(self.cfg["emc_insert_inv_prob"]))
        if self.cfg["smc_enable"] is not None:
            features["smc-enable"] = "true" if self.cfg["smc_enable"] else "false"
        return {
            **super().other_config(),
            "dpdk-init": "true",
            "dpdk-lcore-mask": self.cfg["dpdk_lcore_mask"],
            "pmd-cpu-mask": self.cfg["pmd_cpu_mask"],
            "dpdk-socket-mem": socket_mem,
            "dpdk-socket-limit": socket_mem,
            **features,
        }

    def start(self) -> None:
        errors = self.settings_errors(self.cfg)
        if errors:
            raise PluginError(f"vswitch.ovs_dpdk: {errors[0]}")
        super().start()

    def prepare_vswitchd(self) -> None:
        """Reserve hugepages, mount a private hugetlbfs, register removal of our files,
        then write dpdk-extra (it needs the huge dir)."""
        size_kb = int(self.cfg["hugepage_size_kb"])
        pages = hugepages.pages_for_mb(sum(self.cfg["socket_mem_mb"]) + self.cfg["hugepage_extra_mb"], size_kb)
        record = self.instance.paths.run_dir / HUGEPAGE_RECORD  # type: ignore[union-attr]
        try:
            self.reservation = hugepages.reserve(pages, self.stack, page_size_kb=size_kb, record=record)
            if self.cfg["huge_dir"]:
                self.huge_dir = Path(self.cfg["huge_dir"])
                if self.huge_dir not in hugepages.hugetlbfs_mounts(size_kb):
                    raise PluginError(f"huge_dir {self.huge_dir} is not a hugetlbfs mount of {size_kb} kB pages")
            else:
                self.huge_dir = hugepages.mount_private(
                    self.instance.paths.run_dir / "hugepages", self.stack,  # type: ignore[union-attr]
                    page_size_kb=size_kb, record=record)
        except hugepages.HugepageError as exc:
            raise PluginError(str(exc)) from exc
        hugepages.register_dpdk_file_cleanup(self.stack, self.huge_dir, self.file_prefix, record)
        if self.cfg["bind_driver"]:
            for address in self._pci_allowed:  # before the EAL probes them; undone at teardown
                try:
                    pci_bind.bind(address, self.cfg["bind_driver"], self.stack)
                except pci_bind.PciBindError as exc:
                    raise PluginError(f"vswitch.ovs_dpdk.ports: {exc}") from None
        self.ctl.vsctl("set", "Open_vSwitch", ".",
                       f'other_config:dpdk-extra="{" ".join(self.eal_extra_args())}"', wait=False)

    def vswitchd_ready(self) -> None:
        def initialized() -> bool:
            if not self.instance.vswitchd_proc.alive():  # type: ignore[union-attr]
                raise PluginError("ovs-vswitchd-dpdk exited during DPDK initialization; see "
                                  f"{self.instance.paths.log_dir / 'ovs-vswitchd.log'}")  # type: ignore[union-attr]
            return self.ctl.get("Open_vSwitch", ".", "dpdk_initialized") == "true"

        try:
            commands.wait_for(initialized, float(self.cfg["start_timeout_s"]), 0.1, "DPDK initialization")
        except TimeoutError as exc:
            raise PluginError(str(exc)) from exc

    def add_bridge(self, name: str) -> None:
        super().add_bridge(name)
        if len(self._bridges) == 1:  # the first netdev bridge creates the userspace datapath
            self.apply_implementations()

    def apply_implementations(self) -> None:
        """``dpcls_lookup``, ``dpif_impl``, ``mfex_impl``: switch the datapath's
        implementation, then read back what OvS made of it (:func:`implementation_problem`).
        One the build does not have, or refuses, or that the listing does not show in
        effect, is a one-line error with OvS's reason and what this build can use here
        (:func:`usable_text`). Called once the userspace datapath exists: OvS 3.1 refuses
        ``miniflow-parser-set`` before that (misleadingly, "not available due to CPU ISA
        requirements"). The PMD threads running each one are checked again before the first
        trial (:meth:`verify_implementations`)."""
        for key, (set_cmd, get_cmd) in IMPLEMENTATIONS.items():
            name = self.cfg[key]
            if not name:
                continue
            args = [name, str(PREFERRED_LOOKUP_PRIORITY)] if key == "dpcls_lookup" else [name]
            try:
                self.ctl.appctl(set_cmd, *args)
            except PluginError as exc:
                listing = self._listing(get_cmd)
                raise PluginError(f"vswitch.ovs_dpdk.{key} {name}: {str(exc).splitlines()[0][:200]} "
                                  f"({usable_text(key, listing)})") from None
            listing = self._listing(get_cmd)
            problem = implementation_problem(key, name, listing, require_pmds=False)
            if problem:
                raise PluginError(f"vswitch.ovs_dpdk.{key} {name}: {problem} ({usable_text(key, listing)})")
            self.implementations[key] = name
        self._verified = False

    def _listing(self, get_cmd: str) -> dict[str, dict[str, Any]]:
        try:
            return parse_implementation_listing(self.ctl.appctl(get_cmd))
        except PluginError:
            return {}

    def verify_implementations(self) -> None:
        """Every PMD thread runs the DPIF and miniflow parser asked for (they exist by the
        first trial; at :meth:`apply_implementations` they may not yet)."""
        for key, name in self.implementations.items():
            if key == "dpcls_lookup":
                continue
            listing = self._listing(IMPLEMENTATIONS[key][1])
            problem = implementation_problem(key, name, listing, require_pmds=True)
            if problem:
                raise PluginError(f"vswitch.ovs_dpdk.{key} {name}: {problem} ({usable_text(key, listing)})")
        self._verified = True

    def active_implementations(self) -> dict[str, Any]:
        """What the datapath runs now, read from the three ``-get`` listings: the preferred
        dpcls lookup and how many subtables use each one, the DPIF and the miniflow parser
        of the PMD threads, and what this build has (:func:`summarize_implementations`)."""
        return summarize_implementations({key: self._listing(get_cmd) for key, (_, get_cmd) in IMPLEMENTATIONS.items()})

    def vhost_ports_status(self) -> dict[str, dict[str, Any]]:
        """Each vhost-user port's negotiated device (``Interface`` ``status``): connected,
        feature bits, packed ring, queue pairs (:func:`parse.vhost_status`)."""
        out = {}
        for ports in self._ports.values():
            for port in ports:
                if port.spec.kind != "vhostuser":
                    continue
                try:
                    raw = self.ctl.vsctl("get", "Interface", port.name, "status", wait=False)
                except PluginError:
                    continue
                out[port.name] = vhost_status(parse_ovsdb_map(raw))
        return out

    def interface_config(self, spec: PortSpec, index: int) -> tuple[str, list[str]]:
        queue_opts = [f"options:{k}={self.cfg[k]}" for k in ("n_rxq_desc", "n_txq_desc", "n_rxq") if self.cfg[k]]
        if self.cfg["mtu_request"]:
            queue_opts.append(f"mtu_request={self.cfg['mtu_request']}")
        if spec.kind == "physical" and spec.pci:
            if spec.pci not in self._pci_allowed:
                raise PluginError(f"PCI device {spec.pci} is not in vswitch.ovs_dpdk.ports; "
                                  "DPDK may only probe the devices listed there")
            return spec.name, ["type=dpdk", f'options:dpdk-devargs="{spec.pci}"', *queue_opts]
        if spec.kind == "physical" and spec.iface:
            return spec.name, ["type=dpdk", f'options:dpdk-devargs="{self.af_packet_devargs(spec.iface, index)}"',
                               *queue_opts]
        if spec.kind == "vhostuser":
            if spec.options.get("vhost_server") == "vnf":  # the VNF listens; OvS connects (and reconnects)
                return spec.name, ["type=dpdkvhostuserclient",
                                   f'options:vhost-server-path="{self.vhost_socket_path(spec)}"']
            return spec.name, ["type=dpdkvhostuser"]
        if spec.kind == "tunnel":
            return spec.name, tunnel_columns(spec, OVS_TUNNEL_OPTIONS)
        if spec.kind == "tap":
            if (self.cfg["n_rxq"] or 1) > 1:
                raise PluginError(f"vswitch.ovs_dpdk.n_rxq {self.cfg['n_rxq']} cannot apply to tap port {spec.name}: "
                                  "OvS serves a tap device through one file descriptor (one queue) from its main "
                                  "thread, not a PMD (vhost-user multiqueue needs a guest)")
            return spec.name, ["type=tap"]
        raise PluginError(f"ovs_dpdk cannot add port {spec.name!r}: physical ports need iface or pci")

    def af_packet_devargs(self, iface: str, index: int) -> str:
        """``net_af_packet<index>,iface=<iface>,...``: a DPDK vdev on a kernel interface."""
        if not re.fullmatch(r"[A-Za-z0-9_.@-]{1,15}", iface):
            raise PluginError(f"not an interface name: {iface!r}")
        af = with_defaults(SETTINGS_SCHEMA["properties"]["af_packet"], self.cfg["af_packet"])
        qpairs = max(int(af["qpairs"]), int(self.cfg["n_rxq"] or 1))  # n_rxq queues need as many sockets
        return (f"net_af_packet{index},iface={iface},qpairs={qpairs},blocksz={af['blocksz']},"
                f"framesz={af['framesz']},framecnt={af['framecnt']},qdisc_bypass={int(af['qdisc_bypass'])}")

    def vhost_socket_path(self, spec: PortSpec) -> Path:
        """Where a vhost-user port's socket is: in our run dir, named after the port (OvS
        creates it there as server; as client it connects to the VNF's socket there)."""
        return self.instance.paths.run_dir / spec.name  # type: ignore[union-attr]

    def add_port(self, bridge: str, spec: PortSpec) -> SwitchPort:
        if spec.kind == "tunnel" and (spec.iface or spec.pci):
            self.add_underlay(bridge, spec)
        if spec.kind == "vhostuser":
            where = self.vhost_socket_path(spec)
            if spec.socket_path is not None and Path(spec.socket_path) != where:
                raise PluginError(f"ovs_dpdk creates vhost-user sockets in its run dir ({where}); "
                                  "leave socket_path unset and read it from the returned port")
            port = super().add_port(bridge, spec)
            return replace(port, spec=replace(spec, socket_path=where))
        if spec.kind == "tap":
            if not re.fullmatch(r"[A-Za-z0-9_.-]{1,15}", spec.name):
                raise PluginError(f"not a tap device name: {spec.name!r}")
            port = super().add_port(bridge, spec)  # OvS created the kernel device of that name
            return replace(port, spec=replace(spec, iface=spec.name))
        return super().add_port(bridge, spec)

    def delete_port(self, bridge: str, port: SwitchPort) -> None:
        """As every OvS flavour; a tunnel port's underlay bridge (:meth:`add_underlay`)
        goes with it, so its testbed interface is free again."""
        super().delete_port(bridge, port)
        underlay = self.underlays.pop(port.name, None)
        if underlay is not None:
            remote = port.spec.options.get("remote_ip")
            if remote:
                try:
                    self.ctl.appctl("ovs/route/del", f"{remote}/32")
                except PluginError as exc:  # the bridge's removal drops it anyway
                    log.debug("ovs/route/del %s: %s", remote, exc)
            self.delete_bridge(f"{bridge}-underlay")

    def add_underlay(self, bridge: str, spec: PortSpec) -> None:
        """The tunnel's underlay (module docstring): a bridge with the underlay port and
        the VTEP on its internal port, a route and a static neighbour for the far VTEP."""
        options = dict(spec.options)
        kind = str(options.get("type", "vxlan"))
        if kind not in self.tunnel_types:
            raise PluginError(f"ovs_dpdk: no {kind} tunnels here (it has {', '.join(self.tunnel_types)})")
        missing = [k for k in ("local_ip", "local_mac", "remote_ip", "remote_mac") if options.get(k) in (None, "")]
        if missing:
            raise PluginError(f"tunnel port {spec.name!r} needs options {', '.join(missing)} for its underlay")
        logical = f"{bridge}-underlay"
        self.add_bridge(logical)
        real = self.bridge_name(logical)
        self.ctl.vsctl("set", "Bridge", real, f'other_config:hwaddr="{options["local_mac"]}"')
        phy = self.add_port(logical, PortSpec(kind="physical", name=spec.iface or f"{spec.name}u",
                                              iface=spec.iface, pci=spec.pci))
        lines = [f"table=0,priority=100,in_port=LOCAL,actions=output:{phy.number}",
                 f"table=0,priority=100,in_port={phy.number},actions=LOCAL"]
        flow_file = self.instance.paths.run_dir / f"underlay-{real}.flows"  # type: ignore[union-attr]
        flows.write_flow_file(flow_file, lines)
        self.ctl.add_flows_bundle(real, flow_file)
        address = f"{options['local_ip']}/{int(options.get('prefixlen') or 32)}"
        try:
            for argv in (["ip", "addr", "add", address, "dev", real], ["ip", "link", "set", "dev", real, "up"]):
                commands.run(argv, netns=self.context.dut_netns, timeout_s=10)
        except commands.CommandError as exc:
            raise PluginError(f"ovs_dpdk: cannot give the VTEP address {address} to {real}: {exc}") from exc
        self._add_tunnel_route(f"{options['remote_ip']}/32", real)
        self.ctl.appctl("tnl/neigh/set", real, str(options["remote_ip"]), str(options["remote_mac"]))
        self.underlays[spec.name] = {"bridge": real, "port": phy.name, "vtep": address}

    def _add_tunnel_route(self, prefix: str, bridge: str, wait_s: float = 10.0) -> None:
        """``ovs/route/add PREFIX BRIDGE``, retried while ovs-vswitchd does not yet know the
        address just given to ``bridge``: it takes the route's source address from its own
        copy of the port's addresses, which it refreshes when it processes the kernel's
        netlink notice in its main loop. On a loaded 2-CPU host the add can come first and
        fail with "Error while inserting route." (seen in a suite run); the notice arrives
        within milliseconds to a few seconds."""
        deadline = time.monotonic() + wait_s
        while True:
            try:
                self.ctl.appctl("ovs/route/add", prefix, bridge)
                return
            except PluginError as exc:
                if "Error while inserting route" not in str(exc) or time.monotonic() >= deadline:
                    raise
            time.sleep(0.2)

    def max_frame_bytes(self) -> int:
        """Largest Ethernet frame (FCS included) every port forwards: the L3 MTU plus 18,
        and at most 1518 while an af_packet port exists (DPDK 22.11's af_packet PMD refuses
        a larger frame size). The runner skips larger frame sizes with a note."""
        frame = int(self.cfg["mtu_request"] or 1500) + 18
        if self._has_af_packet_port():
            frame = min(frame, AF_PACKET_MAX_FRAME_BYTES)
        return frame

    def carries_offloaded_frames(self) -> bool:
        """Not while an af_packet port exists: the PMD reads each frame's bytes from the
        packet ring, so a kernel endpoint's unfinished TCP checksum arrives unfinished at
        the other endpoint (measured: every SYN counted in the server's TcpInCsumErrors)
        and a TSO segment larger than the ring's frame is cut. Nor on tap ports without
        ``userspace_tso``: the tap then offers its endpoint no offloads at all."""
        return not self._has_af_packet_port() and (self.userspace_tso or not self._has_tap_port())

    def offloaded_frames_note(self) -> str:
        if self._has_af_packet_port():
            return "ovs_dpdk reads frames as bytes from packet sockets (DPDK's af_packet PMD)"
        if self._has_tap_port() and not self.userspace_tso:
            return ("ovs_dpdk's tap ports offer their endpoints no offloads without "
                    "vswitch.ovs_dpdk.userspace_tso: true")
        return ""

    def setting_not_in_effect(self) -> str | None:
        """``userspace_tso: true`` with af_packet ports: OvS enables TSO on a port only when
        its DPDK driver offers it, and net_af_packet offers none (OvS logs "Tx TSO offload
        is not supported"; the port's ``status`` says ``tx_tso_offload``, read back here
        where this build reports it). A TSO segment from the VNF could not leave through the
        generator's ports (OvS 3.1 drops it: "No TSO support"), so a figure would be the
        switch without the feature."""
        if self.cfg["userspace_tso"] is not True or not self._has_af_packet_port():
            return None
        ports = [p for ports in self._ports.values() for p in ports
                 if p.spec.kind == "physical" and p.spec.iface and not p.spec.pci]
        said = {p.name: self._tso_status(p.name) for p in ports}
        if said and all(value == "true" for value in said.values()):
            return None
        logged = tso_refused_ports(self._vswitchd_log(), [p.name for p in ports])
        read = ", ".join(f"{name} tx_tso_offload={value}" for name, value in said.items() if value is not None)
        evidence = (f"OvS reports {read}" if read else
                    f"OvS logs \"Tx TSO offload is not supported\" for {', '.join(logged)}" if logged else
                    "OvS leaves TSO off on them")
        return ("vswitch.ovs_dpdk.userspace_tso=true cannot take effect here: the generator's ports are DPDK "
                f"af_packet vdevs, whose driver offers no TSO or checksum offload ({evidence}), so a TSO segment "
                "could not leave the switch; it needs ports that offload on every side (NICs, or vhost-user "
                "between guests)")

    def _vswitchd_log(self) -> str:
        paths = getattr(self.instance, "paths", None)
        try:
            return (paths.log_dir / "ovs-vswitchd.log").read_text(errors="replace") if paths is not None else ""
        except OSError:
            return ""

    def _tso_status(self, port: str) -> str | None:
        """The port's ``tx_tso_offload`` as its Interface ``status`` says (None: unsaid)."""
        try:
            raw = self.ctl.vsctl("get", "Interface", port, "status", wait=False)
        except PluginError:
            return None
        return parse_ovsdb_map(raw).get("tx_tso_offload")

    def _has_af_packet_port(self) -> bool:
        return any(p.spec.kind == "physical" and p.spec.iface and not p.spec.pci
                   for ports in self._ports.values() for p in ports)

    def _has_tap_port(self) -> bool:
        return any(p.spec.kind == "tap" for ports in self._ports.values() for p in ports)

    # ------------------------------------------------------------------ reporting

    def version(self) -> dict[str, str]:
        """OvS and DPDK versions and, once the datapath runs, the implementations this build
        offers on this CPU (``dpcls_lookup_available``...) and those in effect (sysinfo.json)."""
        versions = super().version()
        if self.instance is None or self.instance.ctl is None or not self._bridges:
            return versions
        summary = self.active_implementations()
        for key, names in (summary.get("available") or {}).items():
            versions[f"{key}_available"] = ", ".join(names)
        for key in IMPLEMENTATIONS:
            if key in summary:
                versions[key] = str(summary[key] or "none")
        return versions

    def datapath_stats(self) -> dict[str, Any]:
        return {"pmd": parse_pmd_stats(self.ctl.appctl("dpif-netdev/pmd-stats-show")),
                "flow_limit": self.flow_limit_sample()}

    def datapath_delta(self, before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
        """The trial's PMD figures (EMC/SMC/megaflow hits, upcalls, cycles per packet); what was
        in effect at its end: the implementations the datapath ran (``implementations``), each
        vhost-user port's negotiated device (``vhost``: packed ring, queue pairs) and both in
        short (``active``, a feature matrix's column); and the upcalls the datapath flow limit
        turned away (``flow_limit_hits``: their frames took the slow path) with the limit and
        the datapath flows at the trial's end."""
        implementations = {k: v for k, v in self.active_implementations().items() if k != "available"}  # sysinfo has it
        vhost = self.vhost_ports_status()
        rxqs = self._pmd_rxqs() if vhost else {}
        out = {"kind": "userspace", "pmd": pmd_stats_delta(dict(before.get("pmd") or {}), dict(after.get("pmd") or {})),
               "rules_installed": self.rules_installed, "implementations": implementations,
               **({"vhost": vhost} if vhost else {}), **({"pmd_rxqs": rxqs} if rxqs else {}),
               "active": {**active_labels(implementations), **vhost_labels(vhost), **rxq_label(rxqs, vhost)}}
        limit_before, limit_after = dict(before.get("flow_limit") or {}), dict(after.get("flow_limit") or {})
        if limit_after.get("flow_limit_hits") is not None and limit_before.get("flow_limit_hits") is not None:
            out["flow_limit_hits"] = int(limit_after["flow_limit_hits"]) - int(limit_before["flow_limit_hits"])
        for key in ("flows_limit", "flows_current"):
            if limit_after.get(key) is not None:
                out[key] = limit_after[key]
        return out

    def _pmd_rxqs(self) -> dict[str, list[dict[str, Any]]]:
        """Each port's receive queues and the PMD core polling each (:mod:`.ovs.rxq`); {}
        when OvS does not answer (the trial's figures stand without it)."""
        try:
            return parse_pmd_rxq(self.ctl.appctl("dpif-netdev/pmd-rxq-show"))
        except PluginError:
            return {}

    def trial_begin(self) -> None:
        if not self._verified:
            self.verify_implementations()
        super().trial_begin()

    def clear_pmd_stats(self) -> None:
        """Zero the PMD counters (call just before a trial for per-trial cache figures)."""
        self.ctl.appctl("dpif-netdev/pmd-stats-clear")

    def busy_poll_cpus(self) -> dict[str, set[int]]:
        """CPUs the PMD threads are pinned to, read from the running threads' affinity
        (the configured mask when none runs yet): input of cpu.check_oversubscription.
        None when every port is a tap or tunnel port: OvS starts PMD threads only for
        PMD ports (DPDK ports, vhost-user), and the main thread serves the rest."""
        ports = [p for ports in self._ports.values() for p in ports]
        if ports and not any(p.spec.kind in ("physical", "vhostuser") for p in ports):
            return {}
        cpus: set[int] = set()
        for thread in self.threads():
            if thread.name.startswith("pmd"):
                cpus |= cpu.thread_affinity(thread.tid)
        return {"ovs_dpdk pmd": cpus or cpu.mask_to_cpus(self.cfg["pmd_cpu_mask"])}


def tso_refused_ports(log_text: str, ports: list[str]) -> list[str]:
    """The ``ports`` for which ovs-vswitchd logged that their driver has no TSO (it then
    leaves userspace TSO off on them): ``|netdev_dpdk|WARN|dpdk0: Tx TSO offload is not
    supported.``"""
    return [p for p in ports if f"{p}: Tx TSO offload is not supported" in log_text]


def vhost_labels(vhost: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """``{"packed_ring": "on", "vhost_queues": "1"}`` over every vhost-user port that has
    negotiated (``mixed`` when they differ); {} without one."""
    connected = [v for v in vhost.values() if v.get("connected") and "packed_ring" in v]
    if not connected:
        return {}
    packed = {bool(v["packed_ring"]) for v in connected}
    queues = sorted({int(v.get("queue_pairs") or 0) for v in connected})
    return {"packed_ring": "mixed" if len(packed) > 1 else ("on" if packed.pop() else "off"),
            "vhost_queues": ",".join(str(q) for q in queues)}
