"""The plugin contract: everything a plugin may import from vsbench, and nothing else.

A plugin -- built-in or a vendor's own package -- imports only from this package::

    from vsbench.interfaces import API_VERSION, PluginContext, PluginError, VSwitch
    from vsbench.interfaces.commands import run, spawn

Here: the plugin kinds (:class:`VSwitch`, :class:`Vnf`, :class:`TrafficGenerator`,
:class:`Collector`) and their base :class:`Plugin`; what a plugin is given
(:class:`PluginContext`, :class:`RunParameters`, the teardown stack
:class:`ResourceStack`); the data types of the contracts (ports, traffic profile, trial
result, rule sets); the settings helpers (:mod:`.settings`); the command runner
(:mod:`.commands`); and, for plugins that drive local software, host services
(:mod:`.host`). A test fails when a module under ``plugins/`` or ``examples/`` imports any
other vsbench module.

:data:`API_VERSION` versions all of it; a plugin declares the version it was written for
(``api_version = "1.0"``) and is refused, in one line, when it does not fit.

This package imports only ``vsbench.system`` (the layer below it).
"""

from vsbench.interfaces.collector import Collector
from vsbench.interfaces.plugin import (
    API_VERSION,
    Plugin,
    PluginContext,
    PluginError,
    Prerequisite,
    RunParameters,
    api_incompatibility,
    tcp_unreachable,
)
from vsbench.interfaces.rules import Direction, RuleSetError, RuleSetSpec, default_directions, write_rule_file
from vsbench.interfaces.settings import schema_defaults, validate_settings, with_defaults
from vsbench.interfaces.traffic import (
    FCS_BYTES,
    L1_OVERHEAD_BYTES,
    MAX_FRAME_SIZE_BYTES,
    MIN_FRAME_SIZE_BYTES,
    DirectionCounters,
    FlowFields,
    GeneratorCapabilities,
    GeneratorPort,
    LatencyHistogram,
    PacingStats,
    PortStream,
    ProbeRecords,
    TrafficProfile,
    TrialResult,
    TunnelFields,
    VXLAN_OVERHEAD_BYTES,
    VXLAN_UDP_PORT,
    l1_bps,
    l2_bps,
    line_rate_fps,
)
from vsbench.interfaces.tcp import TcpResult, TcpSpec
from vsbench.interfaces.trafficgen import TrafficGenerator
from vsbench.interfaces.vnf import Vnf
from vsbench.interfaces.vswitch import PortKind, PortSpec, SwitchPort, SwitchThread, VSwitch
from vsbench.system.link_speed import LinkSpeed
from vsbench.system.resources import ResourceStack

__all__ = [
    "API_VERSION", "Collector", "Direction", "DirectionCounters", "FCS_BYTES", "FlowFields",
    "GeneratorCapabilities", "GeneratorPort", "L1_OVERHEAD_BYTES", "LatencyHistogram", "LinkSpeed", "PacingStats",
    "MAX_FRAME_SIZE_BYTES", "MIN_FRAME_SIZE_BYTES", "Plugin", "PluginContext", "PluginError",
    "PortKind", "PortSpec", "PortStream", "Prerequisite", "ProbeRecords", "ResourceStack", "RuleSetError",
    "RuleSetSpec", "RunParameters", "SwitchPort", "SwitchThread", "TcpResult", "TcpSpec", "TrafficGenerator",
    "TrafficProfile", "TrialResult", "TunnelFields", "VXLAN_OVERHEAD_BYTES", "VXLAN_UDP_PORT", "Vnf", "VSwitch", "api_incompatibility",
    "default_directions", "l1_bps", "l2_bps", "line_rate_fps", "schema_defaults", "tcp_unreachable",
    "validate_settings", "with_defaults", "write_rule_file",
]
