"""Collected by ``pytest -p <your fixtures module> --pyargs vsbench.conformance``.

The fixture ``conformance_generator`` must come from a plugin module given with ``-p`` (or a
``conftest.py`` that pytest loads for this run); see docs/conformance.md.
"""

from vsbench.conformance.suite import TrafficGeneratorConformance


class TestTrafficGeneratorConformance(TrafficGeneratorConformance):
    """The whole suite against the generator of ``conformance_generator``."""
