"""linux_bridge: the kernel's bridge as the device under test, in the DUT namespace.

A bridge device (name carrying the run id) with STP off, multicast snooping off, IPv6
address generation off (so it sends nothing of its own) and a fixed locally administered
MAC (so it never adopts a port's MAC and swallows frames addressed to it). Ports are the
testbed's veth ends, enslaved and brought up; they are released, not deleted, at teardown
(the testbed owns them).

Forwarding is by MAC learning: :meth:`connect` installs nothing. Until the bridge has seen
a frame *from* a MAC it floods frames *to* that MAC to every other port, which on a 2-port
bridge is still the right port; a warm-up frame from each side (the runner's low-rate
warm-up trial) teaches the FDB so measured traffic is switched, not flooded. A frame
whose destination MAC was learned on its own ingress port is dropped — a unidirectional
profile must not use the reverse side's source MAC as destination from the same port.

Frame modification (``dut.frame_modification``): VLAN push and pop by the bridge's VLAN
filtering (:meth:`LinuxBridge._vlan_modification`); every other kind needs tc actions,
which the plugin refuses with that reason before anything is created.

With ``br_netfilter`` present the kernel by default passes bridged IPv4/IPv6/ARP frames
through iptables, which also *drops IPv4 frames with a bad header checksum* and costs
CPU. Unless ``bridge_netfilter: true``, the plugin turns the ``net.bridge.bridge-nf-call-*``
sysctls off in the DUT namespace (they are per namespace) and restores them at teardown.
On a real host (no DUT namespace) those sysctls are host-wide: the plugin leaves them
alone and logs a warning when they are on.

A ``tunnel`` port is a VXLAN device (``ip link add ... type vxlan``) enslaved to the bridge:
its underlay interface (``PortSpec.iface``, a testbed port that is in no bridge) takes the
VTEP address and MAC, the far VTEP is its remote and a permanent neighbour (nothing is
ARPed), and it learns nothing from what it decapsulates (``nolearning``). The kernel
encapsulates and decapsulates in the same softirq work that bridges.

Integration steps (``deployment: clean``): a ``tap`` port is a kernel tap device the plugin
creates and enslaves (nothing serves its other side: a vport that exists, not a guest);
a *flow* is a static FDB entry (``bridge fdb replace MAC dev PORT master static``): the
bridge's only per-destination forwarding entry, so a flow here matches ``eth_dst`` and
outputs to one port, nothing else (no ``in_port``, ``eth_type``, drop). Frames to a
MAC whose entry names their own ingress port are dropped, as for a learned one.

The forwarding cost is kernel softirq time (see vsbench.system.cpu), not a thread:
:meth:`threads` is empty.
"""

from __future__ import annotations

import functools
import json
import logging
import platform
import re
from dataclasses import replace
from typing import Any, ClassVar, Mapping

from vsbench.interfaces.plugin import PluginError, Prerequisite
from vsbench.interfaces.vswitch import FlowSpec, PortSpec, SwitchCannot, SwitchPort, VSwitch
from vsbench.interfaces import ResourceStack, commands
from vsbench.interfaces.host import cpu, host_check, naming

log = logging.getLogger(__name__)

SETTINGS_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "vswitch.linux_bridge settings",
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "ageing_time_s": {"type": "number", "minimum": 10, "maximum": 1000000, "default": 300,
                          "description": "how long a learned MAC stays in the FDB"},
        "multicast_snooping": {"type": "boolean", "default": False},
        "bridge_netfilter": {"type": "boolean", "default": False,
                             "description": "let bridged IP frames traverse iptables (br_netfilter)"},
        "bridge_mac": {"type": "string", "pattern": "^([0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}$",
                       "default": "02:76:73:62:00:00",
                       "description": "the bridge's own (locally administered) MAC"},
    },
}


BRIDGE_NF_SYSCTLS = (
    "net.bridge.bridge-nf-call-iptables",
    "net.bridge.bridge-nf-call-ip6tables",
    "net.bridge.bridge-nf-call-arptables",
)


@functools.lru_cache(maxsize=1)
def vlan_filtering_missing() -> str | None:
    """Why the running kernel's bridge cannot filter VLANs (one clause), or None when it
    can: a bridge with ``vlan_filtering 1`` tried in a throwaway namespace, once per
    process. A kernel built without CONFIG_BRIDGE_VLAN_FILTERING refuses it."""
    found = host_check.check_link_types(("bridge",), options=("vlan_filtering", "1"))
    if not found:
        return None
    what = found[0].what
    detail = what[what.find("(") + 1:-1] if what.endswith(")") and "(" in what else what
    return f"'ip link add type bridge vlan_filtering 1': {detail}; it needs CONFIG_BRIDGE_VLAN_FILTERING"


def _defaults(settings: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: v["default"] for k, v in SETTINGS_SCHEMA["properties"].items()}
    out.update(settings or {})
    return out


class LinuxBridge(VSwitch):
    """Linux kernel bridge (MAC learning, STP off) in the DUT namespace."""

    description: ClassVar[str] = "Linux kernel bridge (learning, STP off)"
    api_version: ClassVar[str] = "1.0"
    settings_schema: ClassVar[dict] = SETTINGS_SCHEMA
    tunnel_types: ClassVar[tuple[str, ...]] = ("vxlan",)
    supports_learning: ClassVar[bool] = True
    vport_kinds: ClassVar[tuple[str, ...]] = ("tap",)
    #: What VLAN filtering can do (module docstring); every other kind would need tc
    #: actions (act_vlan, act_pedit) on the ports.
    frame_modifications: ClassVar[tuple[str, ...]] = ("vlan_push", "vlan_pop")

    @classmethod
    def modification_refusal(cls, modification: Any) -> str | None:
        """VLAN push (PCP 0) and pop through VLAN filtering; nothing else (no tc here)."""
        kind = modification.kind
        if kind not in cls.frame_modifications:
            return (f"a bridge rewrites no headers; {kind} would need tc actions (act_pedit/act_vlan), "
                    "which it does not use (and this testbed's kernel lacks); it does vlan_push and vlan_pop")
        if kind == "vlan_push" and modification.vlan_pcp:
            return "a bridge port tags frames with the VLAN ID only (PCP 0); leave vlan_pcp unset"
        if kind == "vlan_push" and not 1 <= int(modification.vlan_id) <= 4094:
            return f"a bridge VLAN is 1..4094, not {modification.vlan_id}"
        missing = vlan_filtering_missing()
        if missing:
            return (f"this kernel's bridge has no VLAN filtering, the only way it tags or untags frames "
                    f"without tc actions ({missing})")
        return None

    def __init__(self, context) -> None:
        super().__init__(context)
        self.cfg = _defaults(context.settings)
        self.stack = ResourceStack()
        self.netns = context.dut_netns
        self._bridges: dict[str, str] = {}
        self._ports: dict[str, list[SwitchPort]] = {}
        self._started = False
        self._bridges_created = 0  # bridge names stay unique after a delete_bridge
        self._trial_before: tuple[cpu.CpuSample, dict[str, dict[str, int]]] | None = None

    @classmethod
    def check_prerequisites(cls, settings: Mapping[str, Any]) -> list[Prerequisite]:
        missing = []
        for binary in ("ip", "bridge"):
            if commands.which(binary) is None:
                missing.append(Prerequisite(f"binary {binary}", "apt-get install iproute2"))
        if not missing:  # a bridge created (and deleted) in a throwaway netns, ~50 ms
            missing += [Prerequisite(f.what, f.remedy) for f in host_check.check_link_types(("bridge",))]
        return missing

    # ------------------------------------------------------------------ helpers

    def _ip(self, *args: str, check: bool = True) -> str:
        try:
            return commands.run(["ip", *args], netns=self.netns, check=check).stdout
        except commands.CommandError as exc:
            raise PluginError(f"ip {' '.join(args[:4])}: {exc.stderr.strip() or exc}") from exc

    def _link(self, iface: str) -> dict[str, Any]:
        out = self._ip("-s", "-d", "-j", "link", "show", "dev", iface)
        return json.loads(out)[0]

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        if self._started:
            return
        self._started = True
        self.context.resources.register(f"{self.name or 'linux_bridge'} instance", self.stop)
        if not self.cfg["bridge_netfilter"]:
            self._bridge_netfilter_off()

    def _sysctl(self, key: str, value: str | None = None) -> str | None:
        """Read (or set) a sysctl in the DUT namespace; None if the key does not exist."""
        argv = ["sysctl", "-n", key] if value is None else ["sysctl", "-qw", f"{key}={value}"]
        proc = commands.run(argv, netns=self.netns, check=False)
        return proc.stdout.strip() if proc.returncode == 0 else None

    def _bridge_netfilter_off(self) -> None:
        for key in BRIDGE_NF_SYSCTLS:
            before = self._sysctl(key)
            if before is None or before == "0":
                continue
            if self.netns is None:
                log.warning("%s=%s on this host: bridged frames traverse iptables "
                            "(left unchanged outside a DUT namespace)", key, before)
                continue
            if self._sysctl(key, "0") is None:
                raise PluginError(f"cannot set {key}=0 in {self.netns}")
            self.stack.register(f"{key} in {self.netns}", self._sysctl, key, before)

    def stop(self) -> None:
        self.stack.close()

    def bridge_name(self, bridge: str) -> str:
        try:
            return self._bridges[bridge]
        except KeyError:
            raise PluginError(f"no bridge {bridge!r}; add_bridge() it first") from None

    def add_bridge(self, name: str) -> None:
        if name in self._bridges:
            raise PluginError(f"bridge {name!r} already exists")
        real = naming.iface_name(self.context.run_id, "br", self._bridges_created)
        self._bridges_created += 1
        self._ip("link", "add", "name", real, "address", self.cfg["bridge_mac"], "type", "bridge",
                 "stp_state", "0", "ageing_time", str(int(float(self.cfg["ageing_time_s"]) * 100)),
                 "mcast_snooping", "1" if self.cfg["multicast_snooping"] else "0")
        self.stack.register(f"bridge {real}", self._ip, "link", "del", "dev", real, check=False)
        self._ip("link", "set", "dev", real, "addrgenmode", "none")
        self._ip("link", "set", "dev", real, "up")
        self._bridges[name] = real
        self._ports[name] = []

    def add_port(self, bridge: str, spec: PortSpec) -> SwitchPort:
        real = self.bridge_name(bridge)
        if spec.kind == "tunnel":
            return self._add_tunnel(bridge, real, spec)
        if spec.kind == "tap":
            return self._add_tap(bridge, real, spec)
        if spec.kind != "physical" or not spec.iface or spec.pci:
            raise PluginError(f"linux_bridge only enslaves kernel interfaces; cannot add {spec.kind} port {spec.name!r}")
        self._ip("link", "set", "dev", spec.iface, "master", real)
        self.stack.register(f"{spec.iface} in {real}", self._ip, "link", "set", "dev", spec.iface,
                            "nomaster", check=False)
        self._ip("link", "set", "dev", spec.iface, "up")
        link = self._link(spec.iface)
        port = SwitchPort(spec.iface, int(link["ifindex"]), spec)
        self._ports[bridge].append(port)
        return port

    def _add_tap(self, bridge: str, real: str, spec: PortSpec) -> SwitchPort:
        """A kernel tap device of ``spec.name``, enslaved (see the module docstring)."""
        if not re.fullmatch(r"[A-Za-z0-9_.-]{1,15}", spec.name):
            raise PluginError(f"not a tap device name: {spec.name!r}")
        self._ip("tuntap", "add", "dev", spec.name, "mode", "tap")
        self.stack.register(f"tap {spec.name}", self._ip, "link", "del", "dev", spec.name, check=False)
        self._ip("link", "set", "dev", spec.name, "master", real)
        self._ip("link", "set", "dev", spec.name, "up")
        port = SwitchPort(spec.name, int(self._link(spec.name)["ifindex"]), replace(spec, iface=spec.name))
        self._ports[bridge].append(port)
        return port

    def _add_tunnel(self, bridge: str, real: str, spec: PortSpec) -> SwitchPort:
        """A VXLAN device over the underlay interface, in the bridge (module docstring)."""
        options = dict(spec.options)
        kind = str(options.get("type", "vxlan"))
        if kind not in self.tunnel_types:
            raise PluginError(f"linux_bridge has no {kind} tunnels (it has {', '.join(self.tunnel_types)})")
        missing = [k for k in ("key", "local_ip", "remote_ip", "remote_mac") if options.get(k) in (None, "")]
        if not spec.iface or spec.pci or missing:
            raise PluginError(f"tunnel port {spec.name!r} needs an underlay interface and options "
                              f"{', '.join(missing) or 'key, local_ip, remote_ip, remote_mac'}")
        underlay = spec.iface
        if options.get("local_mac"):
            self._ip("link", "set", "dev", underlay, "address", str(options["local_mac"]))
        address = f"{options['local_ip']}/{int(options.get('prefixlen') or 32)}"
        self._ip("addr", "add", address, "dev", underlay)
        self.stack.register(f"{address} on {underlay}", self._ip, "addr", "del", address, "dev", underlay, check=False)
        self._ip("neigh", "replace", str(options["remote_ip"]), "lladdr", str(options["remote_mac"]),
                 "dev", underlay, "nud", "permanent")
        self.stack.register(f"neighbour {options['remote_ip']}", self._ip, "neigh", "del", str(options["remote_ip"]),
                            "dev", underlay, check=False)
        self._ip("link", "set", "dev", underlay, "up")
        self._ip("link", "add", spec.name, "type", "vxlan", "id", str(int(options["key"])),
                 "local", str(options["local_ip"]), "remote", str(options["remote_ip"]),
                 "dstport", str(int(options.get("dst_port") or 4789)), "dev", underlay, "nolearning")
        self.stack.register(f"vxlan {spec.name}", self._ip, "link", "del", "dev", spec.name, check=False)
        self._ip("link", "set", "dev", spec.name, "master", real)
        self._ip("link", "set", "dev", spec.name, "up")
        port = SwitchPort(spec.name, int(self._link(spec.name)["ifindex"]), spec)
        self._ports[bridge].append(port)
        return port

    def connect(self, bridge: str, a: SwitchPort, b: SwitchPort) -> None:
        """Nothing to install: the bridge forwards by learning (see the module docstring).
        Checks both ports are in ``bridge`` so a wiring mistake fails here, not as loss."""
        real = self.bridge_name(bridge)
        for port in (a, b):
            master = self._link(port.name).get("master")
            if master != real:
                raise PluginError(f"port {port.name} is not in bridge {real} (master: {master})")
        self._vlan_modification(real, (a, b))

    def _bridge(self, *args: str) -> None:
        try:
            commands.run(["bridge", *args], netns=self.netns)
        except commands.CommandError as exc:
            raise PluginError(f"bridge {' '.join(args[:5])}: {exc.stderr.strip() or exc}") from exc

    def _vlan_modification(self, real: str, ports: tuple[SwitchPort, ...]) -> None:
        """``dut.frame_modification`` vlan_push / vlan_pop by VLAN filtering: every port
        of the pair a member of one VLAN only, as the PVID with tagged egress (push: an
        untagged frame entering takes the VID, and leaves the other port tagged) or as an
        untagged member (pop: a frame tagged with the VID enters, and leaves untagged).
        Both directions alike. The ports leave the bridge at teardown, and their VLAN
        membership with it."""
        mod = self.context.run.frame_modification
        if mod is None:
            return
        refusal = self.modification_refusal(mod)
        if refusal:
            raise PluginError(f"linux_bridge cannot {mod.kind}: {refusal}")
        if mod.kind == "vlan_push":
            vid, flags = int(mod.vlan_id), ("pvid",)
        else:
            sent = self.context.run.flow_fields.vlan_id
            if sent is None or not 1 <= int(sent) <= 4094:
                raise PluginError(f"linux_bridge vlan_pop: frames must be sent tagged with a VLAN 1..4094 "
                                  f"(traffic.fields.vlan_id), not {sent}")
            vid, flags = int(sent), ("untagged",)
        self._ip("link", "set", "dev", real, "type", "bridge", "vlan_filtering", "1")
        for port in ports:
            self._bridge("vlan", "del", "dev", port.name, "vid", "1")
            self._bridge("vlan", "add", "dev", port.name, "vid", str(vid), *flags)
        log.info("linux_bridge: %s by VLAN filtering (VID %d, %s) on %s", mod.kind, vid, flags[0],
                 ", ".join(p.name for p in ports))

    def connect_many(self, bridge: str, hub: SwitchPort, spokes) -> None:
        """Nothing to install either: N spokes and a hub on one learning bridge forward by
        the endpoints' MACs (a frame to a MAC not yet learned is flooded to the other
        spokes too, whose endpoints drop it). Checks every port is in ``bridge``."""
        for port, _mac in spokes:
            self.connect(bridge, port, hub)

    def connect_learning(self, bridge: str, ports, *, aging_time_s: int, table_size: int | None = None) -> None:
        """The bridge learns already; this sets its ageing time (``ageing_time`` in
        centiseconds) so no address ages out during an RFC 2889 test, and checks the ports
        are in it. The kernel bridge of Debian 12 (Linux 6.1) has no limit on learned
        addresses to set: ``table_size`` is refused rather than ignored."""
        if table_size is not None:
            raise PluginError("linux_bridge has no address table size to set (Linux 6.1 bridges learn without "
                              "a limit); leave traffic.rfc2889.mac_table_size unset")
        real = self.bridge_name(bridge)
        for port in ports:
            master = self._link(port.name).get("master")
            if master != real:
                raise PluginError(f"port {port.name} is not in bridge {real} (master: {master})")
        self._ip("link", "set", "dev", real, "type", "bridge", "ageing_time", str(int(aging_time_s) * 100))

    def flush_learned(self, bridge: str) -> None:
        """Drop the bridge's learned (dynamic) FDB entries; its own permanent ones stay."""
        self._ip("link", "set", "dev", self.bridge_name(bridge), "type", "bridge", "fdb_flush")
    # ------------------------------------------------------------------ integration steps

    def delete_bridge(self, name: str) -> None:
        """Release the bridge's ports, delete what the plugin created in it, then the bridge."""
        real = self.bridge_name(name)
        for port in list(self._ports[name]):
            self.delete_port(name, port)
        self._ip("link", "del", "dev", real)
        del self._bridges[name]
        del self._ports[name]

    def delete_port(self, bridge: str, port: SwitchPort) -> None:
        """A testbed interface is released (``nomaster``); a tap or VXLAN device the
        plugin made is deleted (a VXLAN port's underlay address stays until teardown)."""
        self.bridge_name(bridge)
        if all(p.name != port.name for p in self._ports[bridge]):
            raise PluginError(f"port {port.name} is not in bridge {bridge!r}")
        if port.spec.kind in ("tap", "tunnel"):
            self._ip("link", "del", "dev", port.name)
        else:
            self._ip("link", "set", "dev", port.name, "nomaster")
        self._ports[bridge] = [p for p in self._ports[bridge] if p.name != port.name]

    def _fdb_entry(self, bridge: str, flow: FlowSpec) -> tuple[str, str]:
        """(MAC, port) of the static FDB entry standing for ``flow``, or a PluginError
        saying what the bridge's table cannot express."""
        self.bridge_name(bridge)
        other = sorted(set(flow.match) - {"eth_dst"})
        if other or "eth_dst" not in flow.match or flow.output is None:
            what = (f"match on {', '.join(other)}" if other
                    else "drop" if flow.output is None else "add a flow without eth_dst")
            raise SwitchCannot(f"linux_bridge cannot {what}: its flows are static FDB entries "
                              "(eth_dst -> output port)")
        return str(flow.match["eth_dst"]).lower(), flow.output.name

    def add_flow(self, bridge: str, flow: FlowSpec) -> None:
        mac, port = self._fdb_entry(bridge, flow)
        self._bridge_cmd("fdb", "replace", mac, "dev", port, "master", "static")
        self.stack.register(f"fdb {mac}", self._bridge_cmd, "fdb", "del", mac, "dev", port, "master", check=False)

    def delete_flow(self, bridge: str, flow: FlowSpec) -> None:
        mac, port = self._fdb_entry(bridge, flow)
        self._bridge_cmd("fdb", "del", mac, "dev", port, "master")

    def _bridge_cmd(self, *args: str, check: bool = True) -> str:
        try:
            return commands.run(["bridge", *args], netns=self.netns, check=check).stdout
        except commands.CommandError as exc:
            raise PluginError(f"bridge {' '.join(args[:3])}: {exc.stderr.strip() or exc}") from exc

    def dump_flows(self, bridge: str) -> str:
        """``bridge fdb show br BRIDGE``: the static and learned entries (the kernel's own
        per-port entries, ``permanent``, included)."""
        return self._bridge_cmd("fdb", "show", "br", self.bridge_name(bridge))

    def dump_state(self) -> str:
        """``ip -d link show`` of every bridge and of every port in one."""
        out = []
        for real in self._bridges.values():
            out.append(self._ip("-d", "link", "show", "dev", real))
            out.append(self._ip("-d", "link", "show", "master", real))
        return "".join(out)

    def port_counters(self, bridge: str, port: SwitchPort) -> dict[str, int]:
        """The kernel's link counters of the port's device."""
        self.bridge_name(bridge)
        stats = self._link(port.name).get("stats64", {})
        return {f"{d}_{k}": int(stats.get(d, {}).get(k, 0)) for d in ("rx", "tx") for k in ("packets", "dropped")}

    # ------------------------------------------------------------------ per-trial cost

    def _port_counters(self) -> dict[str, dict[str, int]]:
        out = {}
        for ports in self._ports.values():
            for port in ports:
                stats = self._link(port.name).get("stats64", {})
                out[port.name] = {f"{d}_{k}": int(stats.get(d, {}).get(k, 0))
                                  for d in ("rx", "tx") for k in ("packets", "dropped")}
        return out

    def trial_begin(self) -> None:
        counters = self._port_counters()
        self._trial_before = (cpu.sample(), counters)

    def trial_end(self) -> dict[str, Any]:
        """Softirq time of every CPU (the bridge forwards there, beside the rest of the
        kernel's networking) and the ports' packet and drop counts during the trial."""
        before = getattr(self, "_trial_before", None)
        if before is None:
            return {}
        self._trial_before = None
        usage = cpu.delta(before[0], cpu.sample())
        after = self._port_counters()
        ports = {name: {k: v - before[1].get(name, {}).get(k, 0) for k, v in counts.items()}
                 for name, counts in after.items()}
        return {
            "cpu_s": usage.softirq_s.get("cpu", 0.0),
            "cpu_source": "softirq",
            "elapsed_s": usage.elapsed_s,
            "softirq_s": dict(usage.softirq_s),
            "datapath": {"kind": "kernel-bridge", "ports": ports},
            "warnings": [],
        }

    # ------------------------------------------------------------------ reporting

    def version(self) -> dict[str, str]:
        return {"kernel": platform.release()}

    def stats(self) -> dict[str, Any]:
        """Kernel link counters per port and the number of learned FDB entries."""
        bridges = {}
        for logical, real in self._bridges.items():
            ports = {}
            for port in self._ports[logical]:
                stats = self._link(port.name).get("stats64", {})
                ports[port.name] = {
                    f"{direction}_{key}": value
                    for direction in ("rx", "tx")
                    for key, value in stats.get(direction, {}).items()
                }
            fdb = json.loads(commands.run(["bridge", "-j", "fdb", "show", "br", real], netns=self.netns).stdout or "[]")
            learned = [e for e in fdb if "permanent" not in e.get("state", "") and not e.get("vlan")]
            bridges[logical] = {"name": real, "ports": ports, "fdb_learned": len(learned)}
        return {"bridges": bridges}
