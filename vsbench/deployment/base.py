"""What every deployment (topology) provides to the runner.

A deployment wires generator ports, switch ports and VNFs into one topology and says how
many times a frame is switched on its way through (seed report ONP 2.1 section 5.2:
throughput x switching operations is the figure comparable across topologies). Every
resource it acquires registers its undo on the run's :class:`ResourceStack` as it goes.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Mapping

from vsbench.interfaces.traffic import GeneratorCapabilities, GeneratorPort
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


#: The ``topology`` settings (conf/00_common.yaml) and the value each has when it leaves
#: the shape to the deployment. A deployment reads those in its :attr:`Deployment.topology_keys`;
#: one set to anything else on a deployment that does not read it is refused (it would
#: change nothing, and the figure would be published under its name).
TOPOLOGY_DEFAULTS: dict[str, Any] = {"port_pairs": 1, "lanes": None, "vnfs_per_lane": None, "lane_vnfs": None}
TOPOLOGY_KEYS = ("port_pairs", "lanes", "vnfs_per_lane", "lane_vnfs")


@dataclass(frozen=True)
class Shape:
    """A deployment's shape as configured: known before anything is built (the preflight
    checks it, results.json records it for plans that never ran)."""

    generator_port_count: int
    #: Bridges each frame crosses; with lanes of different lengths the mean over the
    #: lanes (each lane is offered the same load, so throughput x this is what was switched).
    switching_operations: int | float


class Deployment(abc.ABC):
    """A topology. ``build()`` creates it and returns the generator ports to send on."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    #: How many times each frame is switched between generator TX and RX (the class's
    #: default; an instance holds the configured shape's, :meth:`shape`).
    switching_operations: int | float = 1
    #: Generator ports the topology uses (likewise).
    generator_port_count: int = 2
    #: The shape in the seed reports' words (``PHY-PHY``, ``PHY-VNF-PHY``...).
    topology: ClassVar[str] = ""
    #: Frames cross a VNF: the preflight refuses a plan without one (``vnf.name: none``).
    requires_vnf: ClassVar[bool] = False
    #: The topology has a switch: ``vswitch`` is loaded and checked. False (a router
    #: between the generator's ports) skips it, and results say ``vswitch: none``.
    uses_vswitch: ClassVar[bool] = True
    #: The ``topology`` settings this deployment reads (:data:`TOPOLOGY_KEYS`).
    topology_keys: ClassVar[tuple[str, ...]] = ()
    #: An overlay topology (the switch is a tunnel endpoint): the encapsulation its traffic
    #: must carry (``traffic.encapsulation``), checked with :meth:`check_traffic`. None: the
    #: topology forwards plain frames and the preflight refuses an encapsulated profile.
    encapsulation: ClassVar[str | None] = None

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
        shape = self.shape(config)
        self.generator_port_count = shape.generator_port_count
        self.switching_operations = shape.switching_operations

    @classmethod
    def topology_settings(cls, config: Mapping[str, Any]) -> dict[str, Any]:
        """The ``topology`` settings this deployment reads, by key (None: as the deployment
        is). A setting it does not read, set away from its default, is a
        :class:`DeploymentError` naming the key."""
        topology = dict(config.get("topology") or {})
        for key in TOPOLOGY_KEYS:
            value = topology.get(key)
            if key not in cls.topology_keys and value is not None and value != TOPOLOGY_DEFAULTS[key]:
                reads = ", ".join(f"topology.{k}" for k in cls.topology_keys) or "no topology setting"
                raise DeploymentError(f"topology.{key}={value} does not apply to deployment {cls.name} "
                                      f"(it reads {reads})")
        return {key: topology.get(key) for key in cls.topology_keys}

    @classmethod
    def shape(cls, config: Mapping[str, Any]) -> Shape:
        """The shape ``config`` asks for (its ``topology`` section checked); raises
        :class:`DeploymentError` with one line when it is not one this deployment builds."""
        cls.topology_settings(config)
        return Shape(cls.generator_port_count, cls.switching_operations)

    @classmethod
    def check_traffic(cls, config: Mapping[str, Any]) -> str | None:
        """Why the configuration's traffic does not fit this topology (one line), or None;
        checked at preflight, before anything is built. Overlay topologies check their
        encapsulation and ``overlay`` section here."""
        return None

    def describe(self) -> dict[str, Any]:
        """What results.json records about the topology (``TestResult.topology``): its
        shape, how many VNFs, switching operations and generator port pairs (the line
        rate is every pair's). VNF topologies add more."""
        return {"topology": self.topology or self.name, "vnf_count": 0,
                "switching_operations": self.switching_operations, "port_pairs": self.generator_port_count // 2}

    def check_generator_ports(self, caps: GeneratorCapabilities) -> None:
        """The generator has the topology's ports and, on more than one pair, takes
        port-to-port streams: the runner sends every pair's directions as streams
        (``vsbench.measurement.profiles.on_port_pairs``), which a generator that does not
        count them per port would send on one pair only. One-line :class:`DeploymentError`."""
        who = self.generator.name or "the generator"
        if caps.ports < self.generator_port_count:
            raise DeploymentError(f"{self.name} needs {self.generator_port_count} generator ports; {who} has {caps.ports}")
        pairs = self.generator_port_count // 2
        if pairs > 1 and not caps.port_streams:
            raise DeploymentError(f"{self.name} on {pairs} port pairs sends each pair's directions as port-to-port "
                                  f"streams; trafficgen {who} does not take them (capabilities().port_streams)")

    @classmethod
    def check_config(cls, config: Mapping[str, Any], vnf: Any = None) -> None:
        """Refuse settings this topology cannot build (a :class:`DeploymentError`, one line)
        before anything is created -- the preflight's exit 2 instead of a failed test;
        ``vnf`` is the VNF plugin's class or instance (None: no VNF). Nothing by default."""

    def notes(self) -> list[str]:
        """What a reader of this test's results must know about the topology as built: how
        it differs from the one it stands for (after :meth:`build`; the runner adds each
        line to the test's notes); none by default."""
        return []

    @abc.abstractmethod
    def build(self) -> list[GeneratorPort]:
        """Create the topology (registering every undo) and return the generator ports."""

    def profile(self, profile: TrafficProfile) -> TrafficProfile:
        """The profile as this topology needs it sent (a routed topology addresses frames
        to the router and to destinations its routes cover); unchanged by default."""
        return profile
