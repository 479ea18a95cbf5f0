"""ovs_kernel: Open vSwitch on the Linux kernel datapath, in a private instance.

The forwarding happens in the ``openvswitch`` kernel module (softirq context, on whatever
CPU receives the frame); ovs-vswitchd only handles misses (upcalls) and revalidates the
datapath's flow cache. So the switch's cost is softirq time plus its handler and
revalidator threads, and its efficiency figures are the datapath's own counters
(``dpctl/show``: lookups hit / missed / lost, megaflow masks) and the upcall layer's
(``upcall/show``: datapath flows, offloaded flows).

Prerequisites are checked before anything is touched: the OvS binaries and the kernel
modules. A kernel without ``openvswitch`` (like the 6.18 development kernel, which has no
loadable modules at all) is a one-line error pointing at Debian's ``linux-image-amd64`` and
``tools/kernel-lab/run``, which boots that kernel in QEMU around the same command.

Rule sets: with ``dut.rules`` (or ``dut.rule_template: in_out``) in the run's
configuration, :meth:`connect` (of the OvS base, as for every OvS flavour) installs the generated rule set (:mod:`vsbench.measurement.rules`)
as the bridge's whole forwarding path, in one ``ovs-ofctl --bundle`` transaction, instead of
the two port-to-port flows; a frame no rule matches is dropped and counted as loss.

A ``tunnel`` port (VXLAN) uses the kernel's own tunnelling, as OvS does on a kernel
datapath: the OvS port is a flow-based vxlan vport (the kernel's ``vxlan_sys_<udp port>``
device, created by ovs-vswitchd in the DUT namespace), and the encapsulated frames go in
and out through the kernel's IP stack. So the underlay interface (``PortSpec.iface``) stays
out of every bridge and takes the VTEP address, the far VTEP is a permanent neighbour on it
(nothing is ARPed), and the kernel's routing (the underlay's connected subnet) sends each
encapsulated frame out of it -- what the Linux bridge does with its vxlan device. A frame
for the VTEP is decapsulated by the kernel and enters the datapath on the vport with its
tunnel metadata; one sent to the vport is encapsulated there.
"""

from __future__ import annotations

import gzip
import logging
import os
import re
from pathlib import Path
from typing import Any, ClassVar, Mapping, Sequence

from vsbench.interfaces.plugin import PluginError, Prerequisite
from vsbench.interfaces import commands
from vsbench.interfaces.host import cpu

from vsbench.interfaces.vswitch import PortSpec, SwitchPort

from vsbench_plugins.vswitch.ovs.parse import parse_upcall_show  # noqa: F401 - re-exported (ovs_tc, tests)
from vsbench_plugins.vswitch.ovs.settings import ovs_schema
from vsbench_plugins.vswitch.ovs.switch import OVS_TUNNEL_OPTIONS, OvsSwitchBase, tunnel_columns

log = logging.getLogger(__name__)

#: Kernel config symbol of each module we may need, for kernels that say what is built in
#: only through /proc/config.gz (no /lib/modules, as on the development machines).
MODULE_CONFIG = {
    "openvswitch": "CONFIG_OPENVSWITCH",
    "cls_flower": "CONFIG_NET_CLS_FLOWER",
    "act_mirred": "CONFIG_NET_ACT_MIRRED",
    "act_gact": "CONFIG_NET_ACT_GACT",
    "sch_ingress": "CONFIG_NET_SCH_INGRESS",
    "veth": "CONFIG_VETH",
}

KERNEL_REMEDY = (
    "boot a kernel with them, e.g. Debian's linux-image-amd64, "
    "or run vsbench inside tools/kernel-lab/run"
)

SETTINGS_SCHEMA = ovs_schema("vswitch.ovs_kernel settings", {
    "vswitchd": {"type": "string", "default": "/usr/sbin/ovs-vswitchd",
                 "description": "ovs-vswitchd without DPDK (openvswitch-switch)"},
    "handler_wait_s": {"type": "number", "exclusiveMinimum": 0, "default": 30,
                       "description": "how long to wait for the upcall handler threads after add_bridge"},
})


# --------------------------------------------------------------------------- kernel modules

def _normalize(module: str) -> str:
    return module.replace("-", "_")


def module_status(
    module: str,
    *,
    release: str | None = None,
    sys_module: Path = Path("/sys/module"),
    lib_modules: Path = Path("/lib/modules"),
    config_gz: Path = Path("/proc/config.gz"),
) -> str:
    """``"loaded"``, ``"builtin"``, ``"loadable"`` or ``"missing"`` for the running kernel.

    Looks, in order, at /sys/module (loaded, or built in with parameters), the release's
    modules.builtin and modules.dep, then /proc/config.gz for kernels without /lib/modules.
    Reads files only; loads nothing.
    """
    name = _normalize(module)
    release = release or os.uname().release
    if (sys_module / name).exists():
        return "loaded"
    base = lib_modules / release
    for index, status in (("modules.builtin", "builtin"), ("modules.dep", "loadable")):
        try:
            with open(base / index, encoding="utf-8", errors="replace") as handle:
                for line in handle:
                    path = line.split(":", 1)[0].strip()
                    stem = _normalize(path.rsplit("/", 1)[-1].split(".ko", 1)[0])
                    if stem == name:
                        return status
        except FileNotFoundError:
            continue
    symbol = MODULE_CONFIG.get(name)
    if symbol:
        try:
            with gzip.open(config_gz, "rt", encoding="utf-8", errors="replace") as handle:
                for line in handle:
                    if line.startswith(f"{symbol}="):
                        return "builtin" if line.strip().endswith("=y") else "missing"
        except (FileNotFoundError, OSError):
            pass
    return "missing"


def missing_modules_prerequisite(modules: Sequence[str], **where: Any) -> Prerequisite | None:
    """One :class:`Prerequisite` naming every module the running kernel lacks (or None)."""
    missing = [m for m in modules if module_status(m, **where) == "missing"]
    if not missing:
        return None
    release = where.get("release") or os.uname().release
    noun = "kernel module" if len(missing) == 1 else "kernel modules"
    return Prerequisite(f"{noun} {', '.join(missing)} (kernel {release})", KERNEL_REMEDY)


def load_modules(modules: Sequence[str], netns_note: str = "") -> None:
    """``modprobe`` the modules that are not loaded or built in yet (one process).

    A loaded module is not a resource of the run: it stays loaded, as it would after the
    kernel auto-loaded it for ovs-vswitchd or tc.
    """
    needed = [m for m in modules if module_status(m) == "loadable"]
    if not needed:
        return
    try:
        commands.run(["modprobe", "-a", *needed], timeout_s=60)
    except commands.CommandError as exc:
        raise PluginError(f"cannot load kernel modules {', '.join(needed)}: {exc}{netns_note}") from exc


# --------------------------------------------------------------------------- parsers

_LOOKUPS = re.compile(r"lookups:\s*hit:(\d+)\s+missed:(\d+)\s+lost:(\d+)")
_FLOWS = re.compile(r"^\s*flows:\s*(\d+)\s*$")
_MASKS = re.compile(r"masks:\s*hit:(\d+)\s+total:(\d+)\s+hit/pkt:([\d.]+)")
_CACHE = re.compile(r"^\s*cache:\s*hit:(\d+)\s+hit-rate:([\d.]+)%")
_PORT = re.compile(r"^\s*port (\d+): (\S+)(?: \((\w+)\))?")
_COUNTERS = re.compile(r"^\s*(RX|TX) (packets|bytes):")
_PAIR = re.compile(r"([a-z]+):(\d+)")


def parse_dpctl_show(text: str) -> dict[str, dict[str, Any]]:
    """``ovs-appctl dpctl/show -s`` (same text as ``ovs-dpctl show -s``) -> per datapath
    ``{"lookups_hit", "lookups_missed", "lookups_lost", "flows", "masks_hit",
    "masks_total", "masks_hit_per_pkt", "cache_hit", "cache_hit_rate_pct", "ports": {name: {"port_no", "type",
    "rx_packets", "tx_packets", "rx_dropped", ...}}}``."""
    datapaths: dict[str, dict[str, Any]] = {}
    current: dict[str, Any] | None = None
    port: dict[str, Any] | None = None
    for raw in text.splitlines():
        line = raw.rstrip()
        if line and not line[0].isspace() and line.endswith(":"):
            current = {"ports": {}}
            datapaths[line[:-1]] = current
            port = None
            continue
        if current is None:
            continue
        if m := _LOOKUPS.search(line):
            current.update(lookups_hit=int(m[1]), lookups_missed=int(m[2]), lookups_lost=int(m[3]))
        elif m := _FLOWS.match(line):
            current["flows"] = int(m[1])
        elif m := _MASKS.search(line):
            current.update(masks_hit=int(m[1]), masks_total=int(m[2]), masks_hit_per_pkt=float(m[3]))
        elif m := _CACHE.match(line):
            current.update(cache_hit=int(m[1]), cache_hit_rate_pct=float(m[2]))
        elif m := _PORT.match(line):
            port = {"port_no": int(m[1]), "type": m[3] or "system"}
            current["ports"][m[2]] = port
        elif port is not None and (m := _COUNTERS.match(line)):
            if m[2] == "bytes":  # "RX bytes:60516 (59.1 KiB)  TX bytes:516"
                for direction, value in re.findall(r"(RX|TX) bytes:(\d+)", line):
                    port[f"{direction.lower()}_bytes"] = int(value)
            else:  # "RX packets:8 errors:0 dropped:0 overruns:0 frame:0"
                for key, value in _PAIR.findall(line):
                    port[f"{m[1].lower()}_{key}"] = int(value)
    return datapaths


def softirq_s() -> float:
    """Softirq CPU time of all CPUs since boot (s): where a kernel datapath forwards."""
    with open("/proc/stat", encoding="utf-8") as handle:
        return cpu.parse_proc_stat(handle.read())["cpu"].softirq_s


def datapath_efficiency(before: Mapping[str, Any], after: Mapping[str, Any],
                        forwarded_frames: int | None = None) -> dict[str, Any]:
    """What one trial cost the kernel datapath: the difference of two ``datapath_stats()``.

    ``lookups_*`` are the frames the datapath looked up (hit a datapath flow, missed and went
    to ovs-vswitchd, or were lost because the upcall queue was full), summed over the
    datapaths; ``softirq_s`` the softirq CPU time of all CPUs in between (a kernel datapath
    forwards there, as does the rest of the kernel's networking, generator included). With
    ``forwarded_frames`` (frames the generator received) the per-frame figures are added.
    Pure: no I/O.
    """
    out: dict[str, Any] = {}
    for key in ("lookups_hit", "lookups_missed", "lookups_lost"):
        out[key] = sum(dp.get(key, 0) for dp in (after.get("dpctl") or {}).values()) - sum(
            dp.get(key, 0) for dp in (before.get("dpctl") or {}).values())
    lookups = out["lookups_hit"] + out["lookups_missed"] + out["lookups_lost"]
    out["hit_ratio"] = out["lookups_hit"] / lookups if lookups else None
    out["softirq_s"] = float(after.get("softirq_s", 0.0)) - float(before.get("softirq_s", 0.0))
    offload_after, offload_before = after.get("offload") or {}, before.get("offload") or {}
    if "tc_packets" in offload_after:
        out["tc_packets"] = offload_after["tc_packets"] - offload_before.get("tc_packets", 0)
    if forwarded_frames:
        out["softirq_ns_per_frame"] = out["softirq_s"] * 1e9 / forwarded_frames
        out["upcalls_per_frame"] = (out["lookups_missed"] + out["lookups_lost"]) / forwarded_frames
    return out


# --------------------------------------------------------------------------- the plugin

class OvsKernel(OvsSwitchBase):
    """Open vSwitch on the kernel datapath (openvswitch module), private instance."""

    description: ClassVar[str] = "Open vSwitch on the Linux kernel datapath (openvswitch module)"
    api_version: ClassVar[str] = "1.0"
    datapath_type: ClassVar[str] = "system"
    package_remedy: ClassVar[str] = "apt-get install openvswitch-switch"
    settings_schema: ClassVar[dict] = SETTINGS_SCHEMA
    #: Kernel modules the datapath needs; subclasses add theirs.
    required_modules: ClassVar[tuple[str, ...]] = ("openvswitch",)
    #: The kernel's flow-based vxlan vport (module docstring); the kernel loads
    #: ``vport-vxlan`` and ``vxlan`` when ovs-vswitchd creates the first one.
    tunnel_types: ClassVar[tuple[str, ...]] = ("vxlan",)

    @classmethod
    def check_prerequisites(cls, settings: Mapping[str, Any]) -> list[Prerequisite]:
        missing = super().check_prerequisites(settings)
        modules = missing_modules_prerequisite(cls.required_modules)
        if modules is not None:
            missing.append(modules)
        return missing

    def prepare_vswitchd(self) -> None:
        load_modules(self.required_modules)

    # ------------------------------------------------------------------ ports

    def interface_config(self, spec: PortSpec, index: int) -> tuple[str, list[str]]:
        if spec.kind == "tunnel":  # only OvS's own options: the rest describe the underlay
            return spec.name, tunnel_columns(spec, OVS_TUNNEL_OPTIONS)
        return super().interface_config(spec, index)

    def add_port(self, bridge: str, spec: PortSpec) -> SwitchPort:
        if spec.kind == "tunnel" and spec.iface:
            self.add_underlay(spec)
        return super().add_port(bridge, spec)

    def add_underlay(self, spec: PortSpec) -> None:
        """The tunnel's underlay in the kernel's IP stack (module docstring): the VTEP
        address on the underlay interface, the far VTEP a permanent neighbour there; each
        undone at teardown."""
        options = dict(spec.options)
        kind = str(options.get("type", "vxlan"))
        if kind not in self.tunnel_types:
            raise PluginError(f"{self.name or 'ovs_kernel'}: no {kind} tunnels here (it has {', '.join(self.tunnel_types)})")
        missing = [k for k in ("local_ip", "remote_ip", "remote_mac") if options.get(k) in (None, "")]
        if missing or spec.pci:
            raise PluginError(f"tunnel port {spec.name!r} needs an underlay interface and options "
                              f"{', '.join(missing) or 'local_ip, remote_ip, remote_mac'}")
        iface, netns = str(spec.iface), self.context.dut_netns
        address = f"{options['local_ip']}/{int(options.get('prefixlen') or 32)}"

        def ip(*args: str, check: bool = True) -> None:
            try:
                commands.run(["ip", *args], netns=netns, timeout_s=10, check=check)
            except commands.CommandError as exc:
                raise PluginError(f"ip {' '.join(args[:4])}: {exc}") from exc

        if options.get("local_mac"):
            ip("link", "set", "dev", iface, "address", str(options["local_mac"]))
        ip("addr", "add", address, "dev", iface)
        self.stack.register(f"{address} on {iface}", ip, "addr", "del", address, "dev", iface, check=False)
        ip("neigh", "replace", str(options["remote_ip"]), "lladdr", str(options["remote_mac"]),
           "dev", iface, "nud", "permanent")
        self.stack.register(f"neighbour {options['remote_ip']}", ip, "neigh", "del", str(options["remote_ip"]),
                            "dev", iface, check=False)
        ip("link", "set", "dev", iface, "up")

    # ------------------------------------------------------------------ bridges

    def add_bridge(self, name: str) -> None:
        super().add_bridge(name)
        self._wait_for_handlers()

    def _wait_for_handlers(self) -> None:
        """Block until ovs-vswitchd runs its upcall handler threads.

        They start only once the first kernel datapath exists; frames that miss before
        then are ``lost`` upcalls, which would make the first trial measure the switch's
        start-up instead of its forwarding.
        """
        pid = self.instance.vswitchd_pid() if self.instance else None
        if pid is None:
            raise PluginError("ovs-vswitchd is not running")

        def handlers_running() -> bool:
            return any(name.startswith("handler") for name in cpu.task_names(pid).values())

        try:
            commands.wait_for(handlers_running, float(self.cfg["handler_wait_s"]), 0.1,
                              "the ovs-vswitchd upcall handler threads")
        except TimeoutError as exc:
            raise PluginError(str(exc)) from exc

    # ------------------------------------------------------------------ reporting

    def cpu_cost(self, usage: cpu.CpuUsage) -> tuple[float, str]:
        """Softirq time of every CPU (where the kernel datapath forwards; it includes the
        rest of the kernel's networking in that time, the generator's receive path too)
        plus ovs-vswitchd's threads (upcall handlers, revalidators)."""
        return usage.softirq_s.get("cpu", 0.0) + usage.threads_busy_s, "softirq+threads"

    def datapath_delta(self, before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
        """The trial's lookups hit / missed / lost (``dpctl/show``), datapath flows after it,
        and the rule count."""
        out = {"kind": after.get("kind", "kernel"), **datapath_efficiency(before, after),
               "rules_installed": self.rules_installed}
        out["datapath_flows"] = sum(d.get("flows", 0) for d in (after.get("dpctl") or {}).values())
        return out

    def datapath_stats(self) -> dict[str, Any]:
        """Kernel datapath counters and softirq time (cumulative; subtract two samples).

        ``lookups_hit`` frames matched a datapath flow in the kernel, ``lookups_missed``
        went up to ovs-vswitchd, ``lookups_lost`` were dropped because the upcall queue
        was full: the efficiency figures of a kernel datapath.
        """
        dpctl = parse_dpctl_show(self.ctl.appctl("dpctl/show", "-s"))
        upcall = parse_upcall_show(self.ctl.appctl("upcall/show"))
        return {
            "kind": "kernel",
            "dpctl": dpctl,
            "upcall": upcall,
            "softirq_s": softirq_s(),
            "rules_installed": self.rules_installed,
        }
