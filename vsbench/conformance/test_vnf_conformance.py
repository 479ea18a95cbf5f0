"""Collected by ``pytest -p vsbench.conformance.plugin --pyargs
vsbench.conformance.test_vnf_conformance --vsbench-vnf NAME`` (what ``vsbench conformance
--vnf NAME`` runs), or with a ``conformance_vnf`` fixture of your own."""

from vsbench.conformance.vnf_suite import VnfConformance


class TestVnfConformance(VnfConformance):
    """The whole suite against the VNF of ``conformance_vnf``."""
