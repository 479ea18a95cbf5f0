"""Generator ports of the embedded testbed, as the traffic generator contract names them.

The testbed lives in the system layer and knows only interfaces and namespaces; turning its
links into :class:`GeneratorPort` values is the deployment's job (imports point down).
"""

from __future__ import annotations

from vsbench.interfaces.traffic import GeneratorPort
from vsbench.system.testbed import Testbed


def generator_ports_of(testbed: Testbed, link_bps: float | None = None) -> list[GeneratorPort]:
    """One generator port per testbed link, in link order (port i sends on link i)."""
    return [
        GeneratorPort(index=link.index, iface=link.tg_iface, netns=testbed.tg_netns,
                      mac=link.tg_mac, ip=link.tg_ip, link_bps=link_bps)
        for link in testbed.links
    ]
