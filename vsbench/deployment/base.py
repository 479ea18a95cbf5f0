"""What every deployment (topology) provides to the runner.

A deployment wires generator ports, switch ports and VNFs into one topology and says how
many times a frame is switched on its way through (seed report ONP 2.1 section 5.2:
throughput x switching operations is the figure comparable across topologies). Every
resource it acquires registers its undo on the run's :class:`ResourceStack` as it goes.
"""

from __future__ import annotations

import abc
from typing import Any, Callable, ClassVar, Mapping

from vsbench.interfaces.traffic import GeneratorPort
from vsbench.interfaces.traffic import TrafficProfile
from vsbench.interfaces.trafficgen import TrafficGenerator
from vsbench.interfaces.vnf import Vnf
from vsbench.interfaces.vswitch import VSwitch
from vsbench.system.resources import ResourceStack

#: Builds the switch plugin once the deployment knows the DUT's network namespace
#: (``None`` on a real host): ``make_vswitch(dut_netns) -> VSwitch``.
VSwitchFactory = Callable[[str | None], VSwitch]
#: Builds the VNF plugin (``vnf.name``) for the DUT's network namespace, likewise.
VnfFactory = Callable[[str | None], Vnf]


class DeploymentError(Exception):
    """The topology cannot be built as configured; the message is one line."""


class Deployment(abc.ABC):
    """A topology. ``build()`` creates it and returns the generator ports to send on."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    #: How many times each frame is switched between generator TX and RX.
    switching_operations: ClassVar[int] = 1
    #: Generator ports the topology uses.
    generator_port_count: ClassVar[int] = 2
    #: The shape in the seed reports' words (``PHY-PHY``, ``PHY-VNF-PHY``...).
    topology: ClassVar[str] = ""
    #: Frames cross a VNF: the preflight refuses a plan without one (``vnf.name: none``).
    requires_vnf: ClassVar[bool] = False
    #: The topology has a switch: ``vswitch`` is loaded and checked. False (a router
    #: between the generator's ports) skips it, and results say ``vswitch: none``.
    uses_vswitch: ClassVar[bool] = True

    def __init__(
        self,
        *,
        run_id: str,
        config: Mapping[str, Any],
        resources: ResourceStack,
        generator: TrafficGenerator,
        make_vswitch: VSwitchFactory,
        make_vnf: VnfFactory | None = None,
    ) -> None:
        self.run_id = run_id
        self.config = config
        self.resources = resources
        self.generator = generator
        self.make_vswitch = make_vswitch
        self.make_vnf = make_vnf
        self.vswitch: VSwitch | None = None

    def describe(self) -> dict[str, Any]:
        """What results.json records about the topology (``TestResult.topology``): its
        shape, how many VNFs and switching operations. VNF topologies add more."""
        return {"topology": self.topology or self.name, "vnf_count": 0,
                "switching_operations": self.switching_operations}

    @classmethod
    def check_config(cls, config: Mapping[str, Any], vnf: Any = None) -> None:
        """Refuse settings this topology cannot build (a :class:`DeploymentError`, one line)
        before anything is created -- the preflight's exit 2 instead of a failed test;
        ``vnf`` is the VNF plugin's class or instance (None: no VNF). Nothing by default."""

    def notes(self) -> list[str]:
        """What a reader of this test's results must know about the topology as built
        (the runner adds each line to the test's notes); none by default."""
        return []

    @abc.abstractmethod
    def build(self) -> list[GeneratorPort]:
        """Create the topology (registering every undo) and return the generator ports."""

    def profile(self, profile: TrafficProfile) -> TrafficProfile:
        """The profile as this topology needs it sent (a routed topology addresses frames
        to the router and to destinations its routes cover); unchanged by default."""
        return profile
