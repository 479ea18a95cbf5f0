"""op2p (overlay PHY-vSwitch-PHY): one physical port is an overlay's underlay, the switch
is the tunnel endpoint (VTEP) between it and a plain physical port.

VSPERF's ``op2p`` deployment (testcases ``overlay_p2p_tput``, ``overlay_p2p_decap_tput``)
and the VXLAN scenario of the ONP 2.1 report. The switch gets one bridge with the plain
port and a VXLAN tunnel port, joined by one :meth:`VSwitch.connect`; the tunnel's
encapsulated frames go in and out of the underlay port (``PortSpec.iface``), on which the
switch takes the VTEP address (:class:`vsbench.interfaces.PortSpec` says what a tunnel
port's options mean, the switch plugin how it builds its underlay).

``overlay.operation`` says which way the DUT works, and so which way traffic flows:

* ``decap`` -- the generator sends VXLAN into the underlay port (generator port 0), the
  switch decapsulates and forwards the inner frame out of the plain port (port 1);
* ``encap`` -- the generator sends plain frames into the plain port (port 0), the switch
  encapsulates them and sends VXLAN out of the underlay port (port 1);
* ``both`` -- both at once, bidirectional (tunnel on port 0).

Addresses on the embedded testbed: the generator's VTEP is its port's own address
(``198.18.<i>.1``, its MAC) and the DUT's is ``198.18.<i>.254/24`` with the DUT port's
MAC; each side knows the other as a static neighbour. The VNI and UDP port are
``overlay.vni`` / ``overlay.udp_port``. The generator builds the outer headers from the
profile's :class:`TunnelFields` (:meth:`profile`) and checks those of what comes back.

Switching operations: 1. The frame crosses one switch between two physical ports, as in
p2p; the encapsulation or decapsulation is part of that one forwarding (on OvS-DPDK a
decapsulated frame is looked up twice, a recirculation the PMD counters show).
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any, ClassVar, Mapping

from vsbench.deployment.base import Deployment, DeploymentError
from vsbench.deployment.p2p import dut_port_specs, generator_ports_from_settings
from vsbench.deployment.ports import generator_ports_of
from vsbench.interfaces.traffic import VXLAN_UDP_PORT, GeneratorPort, TrafficProfile, TunnelFields
from vsbench.interfaces.vswitch import PortSpec
from vsbench.system import naming
from vsbench.system.testbed import GENERATOR_PREFIXLEN, Testbed, create_testbed

log = logging.getLogger(__name__)

OPERATIONS = ("decap", "encap", "both")
DEFAULT_VNI = 99
#: The DUT's VTEP address is host 254 of the generator port's /24.
DUT_VTEP_HOST = 254
#: Role letters of the tunnel port's name (``vsb<run>vx0``).
TUNNEL_ROLE = "vx"


def overlay_settings(config: Mapping[str, Any]) -> dict[str, Any]:
    """``overlay`` with its defaults, checked (a DeploymentError names what is wrong)."""
    section = dict(config.get("overlay") or {})
    operation = str(section.get("operation") or "both")
    if operation not in OPERATIONS:
        raise DeploymentError(f"overlay.operation must be one of {', '.join(OPERATIONS)}, got {operation!r}")
    vni = int(section.get("vni", DEFAULT_VNI))
    if not 0 <= vni < 1 << 24:
        raise DeploymentError(f"overlay.vni must be 0..16777215, got {vni}")
    return {"operation": operation, "vni": vni, "udp_port": int(section.get("udp_port") or VXLAN_UDP_PORT)}


def check_traffic(config: Mapping[str, Any]) -> str | None:
    """Why the traffic section does not fit op2p (one line), or None. Checked at preflight."""
    traffic = config.get("traffic") or {}
    try:
        overlay = overlay_settings(config)
    except DeploymentError as exc:
        return str(exc)
    encapsulation = traffic.get("encapsulation")
    if encapsulation != "vxlan":
        return f"op2p is a VXLAN overlay: set traffic.encapsulation: vxlan (got {encapsulation!r})"
    bidirectional = bool(traffic.get("bidirectional", True))
    if bidirectional != (overlay["operation"] == "both"):
        want = "true" if overlay["operation"] == "both" else "false"
        return (f"overlay.operation {overlay['operation']} needs traffic.bidirectional: {want} "
                f"(encap and decap each go one way; both is bidirectional)")
    return None


def dut_vtep_ip(generator_ip: str) -> str:
    """``198.18.i.1`` -> ``198.18.i.254``: the DUT's VTEP on the generator port's subnet."""
    head, _, _ = generator_ip.rpartition(".")
    return f"{head}.{DUT_VTEP_HOST}"


def tunnel_port_spec(name: str, underlay: PortSpec, link: TunnelFields) -> PortSpec:
    """The switch's VXLAN port ``name`` for overlay ``link``, its encapsulated frames
    leaving and arriving through ``underlay`` (a physical port spec: testbed iface or NIC),
    on which the switch takes the DUT's VTEP address (:class:`PortSpec` says what each
    option means)."""
    return PortSpec(
        kind="tunnel", name=name, iface=underlay.iface, pci=underlay.pci,
        options={"type": "vxlan", "key": link.vni, "dst_port": link.udp_port,
                 "local_ip": link.dut_ip, "local_mac": link.dut_mac, "prefixlen": GENERATOR_PREFIXLEN,
                 "remote_ip": link.generator_ip, "remote_mac": link.generator_mac})


class Op2p(Deployment):
    name: ClassVar[str] = "op2p"
    description: ClassVar[str] = "overlay PHY-vSwitch-PHY: the switch is the VXLAN endpoint between an underlay and a plain port"
    switching_operations: ClassVar[int] = 1
    generator_port_count: ClassVar[int] = 2
    topology: ClassVar[str] = "PHY-VTEP-PHY"
    encapsulation: ClassVar[str | None] = "vxlan"

    testbed: Testbed | None = None

    @classmethod
    def check_traffic(cls, config: Mapping[str, Any]) -> str | None:
        return check_traffic(config)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.overlay = overlay_settings(self.config)
        self.tunnel: TunnelFields | None = None

    @property
    def tunnel_port(self) -> int:
        """The generator port on the underlay (the other one is plain)."""
        return 1 if self.overlay["operation"] == "encap" else 0

    def describe(self) -> dict[str, Any]:
        out = {**super().describe(), "encapsulation": "vxlan", "operation": self.overlay["operation"],
               "vni": self.overlay["vni"], "tunnel_port": self.tunnel_port}
        if self.tunnel is not None:
            out["dut_vtep"] = {"ip": self.tunnel.dut_ip, "mac": self.tunnel.dut_mac}
            out["generator_vtep"] = {"ip": self.tunnel.generator_ip, "mac": self.tunnel.generator_mac}
        return out

    def _ports(self) -> tuple[list[GeneratorPort], list[PortSpec], str | None, list[str | None]]:
        """Generator ports, the switch's physical port specs, the DUT netns and each DUT
        port's MAC (None when vsbench does not know it)."""
        caps = self.generator.capabilities()
        if caps.ports < self.generator_port_count:
            raise DeploymentError(f"op2p needs {self.generator_port_count} generator ports; "
                                  f"{self.generator.name or 'the generator'} has {caps.ports}")
        link_bps = float((self.config.get("testbed") or {}).get("link_gbps") or 0) * 1e9 or None
        if caps.needs_testbed:
            self.testbed = create_testbed(self.run_id, self.generator_port_count, self.resources)
            specs = [PortSpec(kind="physical", name=link.dut_iface, iface=link.dut_iface) for link in self.testbed.links]
            return (generator_ports_of(self.testbed, link_bps), specs, self.testbed.dut_netns,
                    [link.dut_mac for link in self.testbed.links])
        gen_ports = generator_ports_from_settings(self.generator.settings, self.generator_port_count, link_bps)
        return gen_ports, dut_port_specs(self.config, self.run_id, self.generator_port_count), None, [None, None]

    def build(self) -> list[GeneratorPort]:
        gen_ports, specs, dut_netns, dut_macs = self._ports()
        t = self.tunnel_port
        underlay_gen = gen_ports[t]
        if not underlay_gen.ip or not underlay_gen.mac:
            raise DeploymentError(f"op2p: generator port {t} needs its ip and mac (the far VTEP's address) "
                                  "in the generator's ports settings")
        dut_mac = dut_macs[t]
        if dut_mac is None:
            raise DeploymentError("op2p runs on the embedded testbed (the DUT's VTEP MAC is the DUT port's)")
        self.tunnel = TunnelFields(port=underlay_gen.index, vni=self.overlay["vni"],
                                   generator_mac=underlay_gen.mac, generator_ip=underlay_gen.ip,
                                   dut_mac=dut_mac, dut_ip=dut_vtep_ip(underlay_gen.ip),
                                   udp_port=self.overlay["udp_port"])
        vswitch = self.make_vswitch(dut_netns)
        self.vswitch = vswitch
        if "vxlan" not in tuple(getattr(vswitch, "tunnel_types", ()) or ()):
            raise DeploymentError(f"vswitch {vswitch.name} has no VXLAN tunnel ports")
        self.resources.register(f"vswitch {vswitch.name}", vswitch.stop)
        vswitch.start()
        bridge = naming.iface_name(self.run_id, "br", 0)
        vswitch.add_bridge(bridge)
        plain = vswitch.add_port(bridge, specs[1 - t])
        underlay = specs[t]
        tunnel_spec = tunnel_port_spec(naming.iface_name(self.run_id, TUNNEL_ROLE, 0), underlay, self.tunnel)
        tunnel = vswitch.add_port(bridge, tunnel_spec)
        vswitch.connect(bridge, tunnel, plain)
        log.info("op2p: %s bridge %s: VXLAN %s (VNI %d, VTEP %s over %s) <-> %s; %s", vswitch.name, bridge,
                 tunnel.name, self.tunnel.vni, self.tunnel.dut_ip, underlay.iface or underlay.pci, plain.name,
                 self.overlay["operation"])
        return gen_ports

    def profile(self, profile: TrafficProfile) -> TrafficProfile:
        """The profile with its tunnel link (which port, outer addresses, VNI)."""
        if self.tunnel is None:
            return profile
        return dataclasses.replace(profile, encapsulation="vxlan", tunnel=self.tunnel)
