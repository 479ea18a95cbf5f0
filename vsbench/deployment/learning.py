"""p2p_learning: three physical ports on one MAC-learning bridge (RFC 2889 sections 5.7, 5.8).

RFC 2889's address caching and learning tests need a switch that *learns* and a port
where its flooding shows: generator port 0 is the **test port** (it sends the test
frames), port 1 the **learning port** (it sends the learning frames, one per address,
and is where every test frame must arrive), port 2 the **monitor port** (it sends
nothing; a test frame seen there was flooded: its destination had not been learned).
All three are ports of one bridge forwarding by MAC learning
(:meth:`~vsbench.interfaces.vswitch.VSwitch.connect_learning`: the Linux bridge as it
is, OvS with one ``NORMAL`` flow), with the address ageing time above the test's length
(``traffic.rfc2889.aging_time_s``) and, where the switch has one, its address table size
(``traffic.rfc2889.mac_table_size``). A switch that cannot learn is refused at preflight.

The profile the runner configures is the test phase's (:meth:`profile`); the traffic
types reconfigure the generator for each phase (:mod:`vsbench.measurement.rfc2889_profiles`).
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar, Mapping

from vsbench.deployment.base import Deployment, DeploymentError
from vsbench.deployment.ports import generator_ports_of
from vsbench.interfaces.traffic import GeneratorPort, TrafficProfile
from vsbench.interfaces.vswitch import PortSpec
from vsbench.measurement import rfc2889_profiles
from vsbench.system import naming
from vsbench.system.testbed import Testbed, create_testbed

log = logging.getLogger(__name__)

#: RFC 2889 asks for an ageing time longer than the test; 300 s is OvS's and Linux's default.
DEFAULT_AGING_TIME_S = 300


def learning_settings(config: Mapping[str, Any]) -> tuple[int, int | None]:
    """(ageing time in s, address table size or None) from ``traffic.rfc2889``, checked."""
    section = ((config.get("traffic") or {}).get("rfc2889") or {})
    aging = section.get("aging_time_s")
    aging = DEFAULT_AGING_TIME_S if aging is None else aging
    size = section.get("mac_table_size")
    if isinstance(aging, bool) or not isinstance(aging, int) or aging < 10:
        raise DeploymentError(f"traffic.rfc2889.aging_time_s must be an integer >= 10, got {aging!r}")
    if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 1):
        raise DeploymentError(f"traffic.rfc2889.mac_table_size must be a positive integer, got {size!r}")
    return aging, size


class P2pLearning(Deployment):
    name: ClassVar[str] = "p2p_learning"
    description: ClassVar[str] = ("RFC 2889: test, learning and monitor port on one MAC-learning bridge "
                                  "(address caching capacity, address learning rate)")
    switching_operations = 1
    generator_port_count = 3
    topology: ClassVar[str] = "PHY-PHY (learning, 3 ports)"

    testbed: Testbed | None = None
    bridge: str | None = None

    @classmethod
    def check_config(cls, config: Mapping[str, Any], vnf: Any = None) -> None:
        learning_settings(config)
        kind = (config.get("traffic") or {}).get("type")
        if kind not in ("rfc2889_learning", "rfc2889_caching"):
            raise DeploymentError(f"deployment {cls.name} runs the RFC 2889 address tests (traffic type "
                                  f"rfc2889_learning or rfc2889_caching), not {kind}")

    def check_generator_ports(self, caps) -> None:
        super().check_generator_ports(caps)
        who = self.generator.name or "the generator"
        if not (caps.port_streams and caps.monitor_ports):
            raise DeploymentError(f"{self.name} counts flooded frames on a monitor port; trafficgen {who} does not "
                                  "(capabilities().monitor_ports)")

    def build(self) -> list[GeneratorPort]:
        caps = self.generator.capabilities()
        self.check_generator_ports(caps)
        if not caps.needs_testbed:
            raise DeploymentError(f"{self.name} runs on the embedded testbed (a generator that needs its "
                                  "netns/veth ports, e.g. trafgen)")
        aging, size = learning_settings(self.config)
        link_bps = float((self.config.get("testbed") or {}).get("link_gbps") or 0) * 1e9 or None
        self.testbed = create_testbed(self.run_id, self.generator_port_count, self.resources)
        gen_ports = generator_ports_of(self.testbed, link_bps)
        vswitch = self.make_vswitch(self.testbed.dut_netns)
        self.vswitch = vswitch
        self.resources.register(f"vswitch {vswitch.name}", vswitch.stop)
        if not getattr(vswitch, "supports_learning", False):
            raise DeploymentError(f"vswitch {vswitch.name} does not forward by MAC learning")
        vswitch.start()
        bridge = naming.iface_name(self.run_id, "br", 0)
        vswitch.add_bridge(bridge)
        ports = [vswitch.add_port(bridge, PortSpec(kind="physical", name=link.dut_iface, iface=link.dut_iface))
                 for link in self.testbed.links]
        vswitch.connect_learning(bridge, ports, aging_time_s=aging, table_size=size)
        self.bridge = bridge
        log.info("p2p_learning: %s bridge %s learns between %s (test, learning, monitor); ageing %d s%s",
                 vswitch.name, bridge, ", ".join(p.name for p in ports), aging,
                 f", table {size}" if size else "")
        self.ports = gen_ports
        return gen_ports

    def describe(self) -> dict[str, Any]:
        aging, size = learning_settings(self.config)
        return {**super().describe(), "port_pairs": 1, "roles": ["test", "learning", "monitor"],
                "aging_time_s": aging, "mac_table_size": size}

    def flush_learned(self) -> None:
        """Empty the bridge's address table (before each iteration)."""
        if self.vswitch is None or self.bridge is None:
            raise DeploymentError("p2p_learning is not built")
        self.vswitch.flush_learned(self.bridge)

    def profile(self, profile: TrafficProfile) -> TrafficProfile:
        """The test phase's profile (test port to the learning port, the monitor counted)."""
        return rfc2889_profiles.test_profile(profile, profile.flows, self.test_mac)

    @property
    def test_mac(self) -> str | None:
        """The test port's own MAC (the learning frames' destination, the test frames' source)."""
        ports = getattr(self, "ports", None) or ()
        return ports[0].mac if ports else None
