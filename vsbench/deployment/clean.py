"""clean (VSPERF's ``Deployment: clean``): the testbed's ports exist and the switch runs,
nothing else -- an integration testcase's steps build (and tear down) the topology.

``build()`` makes ``testbed_ports`` veth links (generator end, DUT end), starts the switch
in the DUT namespace and adds no bridge; the steps' runner
(:mod:`vsbench.runner.integration.execute`) reaches the switch as :attr:`vswitch`, the DUT
ends as :attr:`dut_ports` and the generator's ends as the returned ports.
"""

from __future__ import annotations

from typing import Any, ClassVar, Mapping

from vsbench.deployment.base import Deployment, DeploymentError, Shape
from vsbench.deployment.ports import generator_ports_of
from vsbench.interfaces.traffic import GeneratorPort
from vsbench.interfaces.vswitch import PortSpec
from vsbench.system.testbed import Testbed, create_testbed


def testbed_ports_of(config: Mapping[str, Any]) -> int:
    """The links an integration testcase asks for (``test.testbed_ports``, default 2)."""
    return int((config.get("test") or {}).get("testbed_ports") or 2)


class Clean(Deployment):
    name: ClassVar[str] = "clean"
    description: ClassVar[str] = "the switch and the testbed's ports only; integration steps build the rest"
    switching_operations = 1
    topology: ClassVar[str] = "clean"

    testbed: Testbed | None = None

    @classmethod
    def shape(cls, config: Mapping[str, Any]) -> Shape:
        cls.topology_settings(config)
        return Shape(testbed_ports_of(config), 1)

    def build(self) -> list[GeneratorPort]:
        caps = self.generator.capabilities()
        if not caps.needs_testbed:
            raise DeploymentError(f"deployment clean runs on the embedded testbed; trafficgen "
                                  f"{self.generator.name} brings its own ports")
        self.testbed = create_testbed(self.run_id, self.generator_port_count, self.resources)
        #: The DUT end of each testbed link, as a physical port spec (port i <-> generator port i).
        self.dut_ports = [PortSpec(kind="physical", name=link.dut_iface, iface=link.dut_iface)
                          for link in self.testbed.links]
        vswitch = self.make_vswitch(self.testbed.dut_netns)
        self.vswitch = vswitch
        self.resources.register(f"vswitch {vswitch.name}", vswitch.stop)
        vswitch.start()
        return generator_ports_of(self.testbed, None)
