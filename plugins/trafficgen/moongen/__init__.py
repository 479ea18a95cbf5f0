"""MoonGen traffic generator plugin (entry point ``moongen``)."""

from vsbench_plugins.trafficgen.moongen.plugin import MoonGen

__all__ = ["MoonGen"]
