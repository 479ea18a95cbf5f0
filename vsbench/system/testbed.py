"""The embedded testbed: generator ports in one network namespace, DUT ports in another,
joined by veth pairs. Built with pyroute2; every piece registers its teardown.

STUB: interface fixed by the lead; implementation owned by the testbed/trafgen helper.
"""

from __future__ import annotations

from dataclasses import dataclass

from vsbench.interfaces.traffic import GeneratorPort
from vsbench.system.resources import ResourceStack


@dataclass(frozen=True)
class TestbedLink:
    """One veth pair: ``tg_iface`` in the generator netns, ``dut_iface`` in the DUT netns."""

    index: int
    tg_iface: str
    tg_mac: str
    tg_ip: str
    dut_iface: str
    dut_mac: str


@dataclass(frozen=True)
class Testbed:
    run_id: str
    tg_netns: str
    dut_netns: str
    links: tuple[TestbedLink, ...]

    def generator_ports(self) -> list[GeneratorPort]:
        return [
            GeneratorPort(index=l.index, iface=l.tg_iface, netns=self.tg_netns, mac=l.tg_mac, ip=l.tg_ip)
            for l in self.links
        ]


def create_testbed(run_id: str, n_links: int, resources: ResourceStack) -> Testbed:
    """Create the namespaces and ``n_links`` veth pairs; register their removal."""
    raise NotImplementedError
