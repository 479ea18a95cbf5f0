"""p2p (PHY-vSwitch-PHY): generator port 0 -> switch -> port 1, and back.

The two "physical" switch ports are, on the embedded testbed, the DUT ends of two veth
pairs whose other ends the generator owns (when the generator says ``needs_testbed``);
on a lab's cables (``testbed.generator_ifaces``) the embedded generator is lent the NICs
cabled to the PCI NICs of ``testbed.dut_ports``, which the switch drives; with a hardware
or remote generator they are the NICs given in ``testbed.dut_ports`` (or nothing vsbench touches, for an ``external`` DUT), and the generator's own ports come from
its settings (``ports``). One bridge, two ports, one ``connect``: one switching operation.

``topology.port_pairs: N`` (the 4-port PHY-OVS-PHY of ONP 2.1 section 7.2 is N = 2) uses
2N generator ports, pairs ``2k <-> 2k+1``, each pair its own bridge of two ports and its
own ``connect``: still one switching operation per frame, and a learning switch (the
Linux bridge) cannot short-cut one pair into another by a MAC it learned there.
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar, Mapping, Sequence

from vsbench.interfaces.traffic import GeneratorPort
from vsbench.interfaces.vswitch import PortSpec
from vsbench.deployment.base import Deployment, DeploymentError, Shape
from vsbench.system import naming
from vsbench.deployment.ports import generator_ports_of
from vsbench.system.cabled_testbed import create_cabled_testbed
from vsbench.system.testbed import Testbed, create_testbed

log = logging.getLogger(__name__)


def generator_ports_from_settings(
    settings: Mapping[str, Any], count: int, link_bps: float | None
) -> list[GeneratorPort]:
    """The generator's own ports (``settings["ports"]``: names, indices or mappings with
    ``iface``/``mac``/``ip``), for generators that bring their own hardware."""
    configured: Sequence[Any] = (settings or {}).get("ports") or list(range(count))
    if len(configured) < count:
        raise DeploymentError(f"the generator has {len(configured)} port(s) configured; p2p needs {count}")
    ports = []
    for index, entry in enumerate(configured[:count]):
        if isinstance(entry, Mapping):
            ports.append(GeneratorPort(index=index, iface=str(entry.get("iface", index)),
                                       mac=entry.get("mac"), ip=entry.get("ip"), link_bps=link_bps))
        else:
            ports.append(GeneratorPort(index=index, iface=str(entry), link_bps=link_bps))
    return ports


def dut_port_specs(config: Mapping[str, Any], run_id: str, count: int, required: bool = False) -> list[PortSpec]:
    """Physical switch ports on a real host: ``testbed.dut_ports`` entries (``iface`` or
    ``pci``), else placeholders named after the run for a DUT vsbench does not manage
    (``required``: a cabled testbed's other ends, which must all be given)."""
    configured = (config.get("testbed") or {}).get("dut_ports") or []
    if required and len(configured) < count:
        raise DeploymentError(f"testbed.generator_ifaces needs the switch ports at their other ends: "
                              f"testbed.dut_ports lists {len(configured)}, the topology needs {count}")
    specs = []
    for index in range(count):
        entry = configured[index] if index < len(configured) else {}
        if isinstance(entry, str):
            entry = {"iface": entry}
        name = entry.get("name") or naming.iface_name(run_id, "p", index)
        specs.append(PortSpec(kind="physical", name=name, iface=entry.get("iface"), pci=entry.get("pci")))
    return specs


def cabled_ifaces(config: Mapping[str, Any], count: int | None = None) -> list[str]:
    """``testbed.generator_ifaces``: kernel interfaces cabled to ``testbed.dut_ports`` that
    the embedded generator is lent (vsbench.system.cabled_testbed); ``count`` checks there
    are enough and returns that many."""
    ifaces = list((config.get("testbed") or {}).get("generator_ifaces") or [])
    if count is not None:
        if len(ifaces) < count:
            raise DeploymentError(f"testbed.generator_ifaces lists {len(ifaces)} interface(s); the topology needs {count}")
        ifaces = ifaces[:count]
    return ifaces


def port_pairs_of(config: Mapping[str, Any], deployment: str) -> int:
    """``topology.port_pairs`` (1 when unset), checked."""
    pairs = (config.get("topology") or {}).get("port_pairs")
    pairs = 1 if pairs is None else pairs
    if isinstance(pairs, bool) or not isinstance(pairs, int) or pairs < 1:
        raise DeploymentError(f"topology.port_pairs must be an integer >= 1 for {deployment}, got {pairs!r}")
    return pairs


class P2P(Deployment):
    name: ClassVar[str] = "p2p"
    description: ClassVar[str] = "PHY-vSwitch-PHY: pairs of physical ports, each pair forwarded by its own bridge"
    switching_operations = 1
    generator_port_count = 2
    topology: ClassVar[str] = "PHY-PHY"
    topology_keys: ClassVar[tuple[str, ...]] = ("port_pairs",)

    testbed: Testbed | None = None

    @classmethod
    def shape(cls, config: Mapping[str, Any]) -> Shape:
        cls.topology_settings(config)
        return Shape(2 * port_pairs_of(config, cls.name), 1)

    def build(self) -> list[GeneratorPort]:
        caps = self.generator.capabilities()
        self.check_generator_ports(caps)
        link_bps = float((self.config.get("testbed") or {}).get("link_gbps") or 0) * 1e9 or None
        if caps.needs_testbed and cabled_ifaces(self.config):
            # a lab's cables: the generator on lent NICs, the switch on the PCI NICs at their other ends
            specs = dut_port_specs(self.config, self.run_id, self.generator_port_count, required=True)
            self.testbed = create_cabled_testbed(self.run_id, cabled_ifaces(self.config, self.generator_port_count),
                                                 self.resources)
            gen_ports = generator_ports_of(self.testbed, link_bps)
            dut_netns = None
        elif caps.needs_testbed:
            self.testbed = create_testbed(self.run_id, self.generator_port_count, self.resources)
            gen_ports = generator_ports_of(self.testbed, link_bps)
            specs = [PortSpec(kind="physical", name=link.dut_iface, iface=link.dut_iface)
                     for link in self.testbed.links]
            dut_netns = self.testbed.dut_netns
        else:
            gen_ports = generator_ports_from_settings(self.generator.settings, self.generator_port_count, link_bps)
            specs = dut_port_specs(self.config, self.run_id, self.generator_port_count)
            dut_netns = None

        vswitch = self.make_vswitch(dut_netns)
        self.vswitch = vswitch
        # Registered before start(): stop() is idempotent and a half-started switch must go too.
        self.resources.register(f"vswitch {vswitch.name}", vswitch.stop)
        vswitch.start()
        for pair in range(self.generator_port_count // 2):
            bridge = naming.iface_name(self.run_id, "br", pair)
            vswitch.add_bridge(bridge)
            a = vswitch.add_port(bridge, specs[2 * pair])
            b = vswitch.add_port(bridge, specs[2 * pair + 1])
            vswitch.connect(bridge, a, b)
            log.info("p2p: %s bridge %s forwards %s <-> %s", vswitch.name, bridge, a.name, b.name)
        return gen_ports
