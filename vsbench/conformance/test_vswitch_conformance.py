"""Collected by ``pytest -p vsbench.conformance.plugin --pyargs
vsbench.conformance.test_vswitch_conformance --vsbench-vswitch NAME`` (what ``vsbench
conformance --vswitch NAME`` runs), or with a ``conformance_vswitch`` fixture of your own."""

from vsbench.conformance.switch_suite import VSwitchConformance


class TestVSwitchConformance(VSwitchConformance):
    """The whole suite against the switch of ``conformance_vswitch``."""
