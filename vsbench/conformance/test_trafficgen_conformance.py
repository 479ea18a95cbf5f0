"""Collected by ``pytest -p vsbench.conformance.plugin --pyargs
vsbench.conformance.test_trafficgen_conformance --vsbench-trafficgen NAME`` (what ``vsbench
conformance --trafficgen NAME`` runs), or with a ``conformance_generator`` fixture of your
own given with ``-p`` or in a ``conftest.py``; see docs/conformance.rst.
"""

from vsbench.conformance.suite import TrafficGeneratorConformance


class TestTrafficGeneratorConformance(TrafficGeneratorConformance):
    """The whole suite against the generator of ``conformance_generator``."""
