"""The l3fwd VNF plugin (entry point ``vsbench.vnf`` = ``l3fwd``)."""

from vsbench_plugins.vnf.l3fwd.plugin import L3fwd

__all__ = ["L3fwd"]
