"""The PROX VNF plugin (entry point ``vsbench.vnf`` = ``prox``)."""

from vsbench_plugins.vnf.prox.plugin import ProxVnf

__all__ = ["ProxVnf"]
