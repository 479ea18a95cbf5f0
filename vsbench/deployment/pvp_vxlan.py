"""pvp_vxlan (PHY-VTEP-VNF-VTEP-PHY): the PVP chain with the switch as the VXLAN tunnel
endpoint on every generator-facing side -- a VNF behind the switch's VTEP.

The VXLAN scenario of the ONP 2.1 report (section 7.6, PHY-OVS-VM-OVS-PHY: "VTEP running
inside the host de-encapsulates the packet received and send IPv4 packet to the VM and
packets received from VM are encapsulated in VXLAN header by VTEP and sent them back"),
Intel's optimized-deployment report (VXLAN decap to vhost-user ports with testpmd as the
guest, and encap on the way back) and the Netronome report's PHY-VM-PHY with VXLAN. It is
:class:`~vsbench.deployment.pvp.Pvp` with each generator port an overlay's underlay
instead of a plain port: the generator sends VXLAN into the switch, which decapsulates and
forwards the inner frame to the VNF (vhost-user on OvS-DPDK, a veth pair on the Linux
bridge), takes it back from the VNF's other port, encapsulates it and sends it out of the
other generator port as VXLAN; bidirectional by default, the reverse direction the same
way round. The generator checks every frame it receives, outer headers (its own VTEP's
addresses, UDP port, VXLAN flags, the VNI of that port's tunnel) and inner (addresses,
ports, payload), as on op2p; a frame delivered wrong is counted apart, never as received.

Why two ports and not ONP's one (VXLAN in and out of the same port): the generator counts
a direction by the port it arrives on, and a trial's two directions must be told apart;
so each generator port has its own VTEP pair, as each lane of the PVP chain has its own
pair of ports. Each generator port ``i`` is its own virtual network: VNI ``overlay.vni +
i`` (the VNF joins two segments, as a VM with two interfaces does; the Linux kernel also
refuses two VXLAN devices with one VNI and UDP port), generator VTEP ``198.18.<i>.1`` (its
port's own address and MAC), DUT VTEP ``198.18.<i>.254`` with the DUT port's MAC, each a
static neighbour of the other. ``overlay.operation`` is op2p's: here every frame is
decapsulated into the VNF and encapsulated back (``both``; the others are refused).

Built on the PVP chain without copying it: :meth:`_generator_ports` turns each physical
port spec of :class:`~vsbench.deployment.pvp.VnfChain` into a tunnel port spec over that
physical port, so every lane (``self.lanes``, ``self.vnfs_per_lane``: several lanes of
testpmd behind the VTEPs, as Intel's 32 vhost-user ports) gets a VXLAN port at each end,
and the switch builds each tunnel's underlay (OvS-DPDK: a bridge of its own holding the
port and the VTEP address; the Linux bridge: a vxlan device over the port). The paths and
the VNFs' port counters are the chain's, so loss is attributed per stage as on pvp.

Switching operations: 2 per VNF lane, as pvp -- the encapsulation and decapsulation are
part of the switch pass they happen in (op2p counts its one pass the same way); on
OvS-DPDK a decapsulated frame is looked up twice (a recirculation), as the PMD counters
show. Rule sets (``dut.rules``, ``dut.rule_template: in_out``) are installed by the
switch's ``connect`` on the overlay bridges -- each switch pass classifies the *inner*
frames against them, as on pvp -- never on the underlay bridges, whose two flows only
carry the tunnel's frames between the port and the VTEP. A routing VNF is refused: it
rewrites the inner MACs the generator verifies.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any, ClassVar, Mapping

from vsbench.deployment.base import DeploymentError
from vsbench.deployment.op2p import TUNNEL_ROLE, dut_vtep_ip, overlay_settings, tunnel_port_spec
from vsbench.deployment.pvp import Pvp
from vsbench.interfaces.traffic import GeneratorPort, TrafficProfile, TunnelFields
from vsbench.interfaces.vswitch import PortSpec, VSwitch
from vsbench.system import naming

log = logging.getLogger(__name__)

#: The VNI is 24 bits.
MAX_VNI = (1 << 24) - 1


class PvpVxlan(Pvp):
    name: ClassVar[str] = "pvp_vxlan"
    description: ClassVar[str] = ("PHY-VM-PHY over VXLAN: the switch decapsulates into the VNF and encapsulates "
                                  "what it returns, a VTEP on each generator port")
    topology: ClassVar[str] = "PHY-VTEP-VNF-VTEP-PHY"
    switching_operations: ClassVar[int] = 2
    encapsulation: ClassVar[str | None] = "vxlan"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.overlay = overlay_settings(self.config)
        #: The overlay link of every generator port, in port order (set by the build).
        self.tunnels: list[TunnelFields] = []
        make_vswitch = self.make_vswitch

        def make_vtep(dut_netns: str | None) -> VSwitch:
            vswitch = make_vswitch(dut_netns)
            if "vxlan" not in tuple(getattr(vswitch, "tunnel_types", ()) or ()):
                raise DeploymentError(f"vswitch {vswitch.name} has no VXLAN tunnel ports")
            return vswitch

        self.make_vswitch = make_vtep

    @classmethod
    def check_traffic(cls, config: Mapping[str, Any]) -> str | None:
        try:
            overlay = overlay_settings(config)
        except DeploymentError as exc:
            return str(exc)
        encapsulation = (config.get("traffic") or {}).get("encapsulation")
        if encapsulation != "vxlan":
            return f"{cls.name} is a VXLAN overlay: set traffic.encapsulation: vxlan (got {encapsulation!r})"
        if overlay["operation"] != "both":
            return (f"overlay.operation {overlay['operation']} is op2p's: {cls.name} decapsulates every frame into "
                    "the VNF and encapsulates it back (overlay.operation: both)")
        return None

    def describe(self) -> dict[str, Any]:
        out = {**super().describe(), "encapsulation": "vxlan", "operation": "both",
               "vni": self.overlay["vni"]}
        if self.tunnels:
            out["vteps"] = [{"port": t.port, "vni": t.vni, "dut_ip": t.dut_ip, "dut_mac": t.dut_mac,
                             "generator_ip": t.generator_ip, "generator_mac": t.generator_mac}
                            for t in self.tunnels]
        return out

    def _generator_ports(self) -> tuple[list[GeneratorPort], list[PortSpec], str | None]:
        """The chain's generator ports, each switch-side port spec turned into a VXLAN port
        over it (module docstring: addresses and VNIs)."""
        gen_ports, phy_specs, dut_netns = super()._generator_ports()
        if self.testbed is None:
            raise DeploymentError(f"{self.name} runs on the embedded testbed (each DUT VTEP's MAC is its DUT port's)")
        last_vni = self.overlay["vni"] + len(gen_ports) - 1
        if last_vni > MAX_VNI:
            raise DeploymentError(f"overlay.vni {self.overlay['vni']}: {self.name} gives generator port i VNI "
                                  f"vni + i, up to {last_vni}, beyond {MAX_VNI}")
        dut_macs = [link.dut_mac for link in self.testbed.links]
        self.tunnels, specs = [], []
        for gen, underlay, dut_mac in zip(gen_ports, phy_specs, dut_macs):
            if not gen.ip or not gen.mac:
                raise DeploymentError(f"{self.name}: generator port {gen.index} needs its ip and mac (the far VTEP)")
            link = TunnelFields(port=gen.index, vni=self.overlay["vni"] + gen.index, generator_mac=gen.mac,
                                generator_ip=gen.ip, dut_mac=dut_mac, dut_ip=dut_vtep_ip(gen.ip),
                                udp_port=self.overlay["udp_port"])
            self.tunnels.append(link)
            specs.append(tunnel_port_spec(naming.iface_name(self.run_id, TUNNEL_ROLE, gen.index), underlay, link))
        log.info("%s: VTEPs %s", self.name, ", ".join(f"port {t.port} VNI {t.vni} {t.dut_ip}" for t in self.tunnels))
        return gen_ports, specs, dut_netns

    def _vnf_namespaces(self, dut_netns: str | None, routing: bool) -> list[str]:
        """The chain's VNF namespaces; a routing VNF is refused before any is made."""
        if routing:
            raise DeploymentError(f"{self.name}: a routing VNF rewrites the inner frames' MACs the generator "
                                  "verifies; behind a VTEP use a forwarding VNF (testpmd)")
        return super()._vnf_namespaces(dut_netns, routing)

    def profile(self, profile: TrafficProfile) -> TrafficProfile:
        """The chain's profile (every VNF told about the inner flows) with the tunnel link of
        every generator port: the generator sends and expects VXLAN on each."""
        profile = super().profile(profile)
        if not self.tunnels:
            return profile
        return dataclasses.replace(profile, encapsulation="vxlan", tunnel=self.tunnels[0], tunnels=tuple(self.tunnels))
