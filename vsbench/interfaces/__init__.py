"""Abstract plugin contracts. Plugins import from here; this package imports only system."""

from vsbench.interfaces.collector import Collector
from vsbench.interfaces.plugin import Plugin, PluginContext, PluginError, Prerequisite
from vsbench.interfaces.traffic import (
    DirectionCounters,
    FlowFields,
    GeneratorCapabilities,
    GeneratorPort,
    LatencyHistogram,
    ProbeRecords,
    TrafficProfile,
    TrialResult,
)
from vsbench.interfaces.trafficgen import TrafficGenerator
from vsbench.interfaces.vnf import Vnf
from vsbench.interfaces.vswitch import PortSpec, SwitchPort, SwitchThread, VSwitch

__all__ = [
    "Collector", "DirectionCounters", "FlowFields", "GeneratorCapabilities", "GeneratorPort",
    "LatencyHistogram", "Plugin", "PluginContext", "PluginError", "PortSpec", "Prerequisite",
    "ProbeRecords", "SwitchPort", "SwitchThread", "TrafficGenerator", "TrafficProfile",
    "TrialResult", "Vnf", "VSwitch",
]
