"""Keysight/Ixia IxNetwork generator plugin (REST API through ixnetwork-restpy)."""

from vsbench_plugins.trafficgen.ixnet.plugin import IxNet

__all__ = ["IxNet"]
