"""The TCP endpoints: each port the deployment gave in a network namespace of its own.

The embedded testbed keeps both generator ports in one namespace, whose stack would
deliver a connection between them locally, never across the switch. For a TCP workload
each port moves into its own namespace (``vsb-<run>-ep0``, ``-ep1``, ...) with an address
on one subnet (``198.19.255.1``, ``.2``, ..., RFC 2544's benchmarking range, apart from the
testbed's ``198.18.x``), every other endpoint as a permanent neighbour (nothing is ARPed
across the switch), IPv6 off, and no ingress drop. The ports may come from different
namespaces: the generator's (the testbed's ports, p2p) or the switch's (the tap ports or
veth ends a ``v2v`` deployment made where guests would attach). The endpoint options of a
run (MTU, TSO, GSO, GRO) are set on every interface before it. At teardown each port goes
back where it came from (with the testbed's ingress drop again if it had one) and the
namespace is removed.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Sequence

from vsbench.interfaces import ResourceStack
from vsbench.interfaces.commands import CommandError, run
from vsbench.interfaces.host import naming
from vsbench.interfaces.host.testbed import sink_ingress
from vsbench.interfaces.plugin import PluginError
from vsbench.interfaces.tcp import TcpSpec
from vsbench.interfaces.traffic import GeneratorPort

log = logging.getLogger(__name__)

SUBNET_PREFIX = "198.19.255."
PREFIXLEN = 24
#: Endpoints one generator can have: addresses .1 .. .250 of the subnet.
MAX_ENDPOINTS = 250
QUIET = ("net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")


def endpoint_ip(index: int) -> str:
    if not 0 <= index < MAX_ENDPOINTS:
        raise ValueError(f"endpoint index out of range: {index}")
    return f"{SUBNET_PREFIX}{index + 1}"


def offload_argv(ethtool: str, iface: str, spec: TcpSpec) -> list[str] | None:
    """``ethtool -K IFACE tx off tso on gso off ...`` for the offloads ``spec`` sets, or
    None (``tx`` first: turning it off turns TSO off with it)."""
    wanted = [("tx", spec.tx_checksum)] + [(name, getattr(spec, name)) for name in ("tso", "gso", "gro")]
    args = [part for name, value in wanted if value is not None for part in (name, "on" if value else "off")]
    return [ethtool, "-K", iface, *args] if args else None


class Endpoints:
    """The endpoint namespaces of one generator's ports (see the module doc)."""

    def __init__(self, run_id: str, ports: Sequence[GeneratorPort], resources: ResourceStack,
                 ethtool: str = "ethtool") -> None:
        if len(ports) < 2 or any(p.netns is None for p in ports):
            raise PluginError("iperf3 needs at least two ports, each an interface in a namespace of the embedded testbed")
        if len(ports) > MAX_ENDPOINTS:
            raise PluginError(f"iperf3 has addresses for {MAX_ENDPOINTS} endpoints, not {len(ports)}")
        self.ports = list(ports)
        self.homes: list[str] = [str(p.netns) for p in ports]
        self.names = [naming.netns_name(run_id, f"ep{i}") for i in range(len(ports))]
        #: Whether each port had an ingress filter at home (the testbed's drop), put back at teardown.
        self.sunk = [False] * len(ports)
        self.resources = resources
        self.ethtool = ethtool
        self.ready = False

    def ip(self, index: int) -> str:
        return endpoint_ip(index)

    def setup(self) -> None:
        if self.ready:
            return
        for port in self.ports:
            if not port.mac:
                raise PluginError(f"iperf3: port {port.index} ({port.iface}) has no MAC to use as a neighbour")
        for i, (port, ns, home) in enumerate(zip(self.ports, self.names, self.homes)):
            self.sunk[i] = self._has_ingress_filter(home, port.iface)
            self._run(["ip", "netns", "add", ns])
            self.resources.register(f"tcp endpoint {ns}", self._teardown, i)
            self._run(["sysctl", "-q", "-w", *QUIET], ns)
            self._run(["ip", "link", "set", "dev", port.iface, "netns", ns], home)
            self._run(["ip", "link", "set", "dev", "lo", "up"], ns)
            self._run(["ip", "addr", "add", f"{endpoint_ip(i)}/{PREFIXLEN}", "dev", port.iface], ns)
            self._run(["ip", "link", "set", "dev", port.iface, "up"], ns)
        for i, ns in enumerate(self.names):
            for j, peer in enumerate(self.ports):
                if j != i:
                    self._run(["ip", "neigh", "replace", endpoint_ip(j), "lladdr", str(peer.mac),
                               "dev", self.ports[i].iface, "nud", "permanent"], ns)
        self.ready = True
        log.info("tcp endpoints: %s", ", ".join(f"{endpoint_ip(i)} in {ns}" for i, ns in enumerate(self.names)))

    def apply(self, spec: TcpSpec) -> None:
        """The endpoint options of one run, on both interfaces."""
        for port, ns in zip(self.ports, self.names):
            if spec.mtu_bytes:
                self._run(["ip", "link", "set", "dev", port.iface, "mtu", str(int(spec.mtu_bytes))], ns)
            argv = offload_argv(self.ethtool, port.iface, spec)
            if argv:
                self._run(argv, ns)

    def counters(self) -> list[dict[str, int]]:
        """Each endpoint interface's packet and drop counters (``tx_packets``,
        ``tx_dropped``, ``rx_packets``, ``rx_dropped``), in port order; a port whose
        counters cannot be read gives an empty dict."""
        out = []
        for port, ns in zip(self.ports, self.names):
            try:
                shown = run(["ip", "-j", "-s", "link", "show", "dev", port.iface], netns=ns, check=False, timeout_s=10)
                stats = json.loads(shown.stdout)[0].get("stats64") or {}
                out.append({f"{d}_{k}": int(stats[d][k]) for d in ("tx", "rx") for k in ("packets", "dropped")})
            except (CommandError, ValueError, LookupError, TypeError):
                out.append({})
        return out

    @staticmethod
    def _has_ingress_filter(netns: str, iface: str) -> bool:
        try:
            shown = run(["tc", "filter", "show", "dev", iface, "ingress"], netns=netns, check=False, timeout_s=10)
        except CommandError:
            return False
        return shown.returncode == 0 and bool(shown.stdout.strip())

    def _teardown(self, index: int) -> None:
        ns, port, home = self.names[index], self.ports[index], self.homes[index]
        if not Path(f"/run/netns/{ns}").exists():
            return
        moved = run(["ip", "link", "set", "dev", port.iface, "netns", home], netns=ns, check=False, timeout_s=10)
        if moved.returncode == 0 and self.sunk[index]:
            try:
                sink_ingress(home, port.iface)  # as the testbed left it
            except Exception:  # noqa: BLE001 - the testbed deletes the port next
                pass
        run(["ip", "netns", "del", ns], check=False, timeout_s=10)
        self.ready = False

    def _run(self, argv: list[str], netns: str | None = None) -> None:
        try:
            run(argv, netns=netns, timeout_s=15)
        except CommandError as exc:
            raise PluginError(f"iperf3 endpoints: {exc}") from None
