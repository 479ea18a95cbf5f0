"""PROX traffic generator plugin (entry point ``prox``)."""

from vsbench_plugins.trafficgen.prox.plugin import Prox

__all__ = ["Prox"]
