"""Conformance kit: does a plugin honour its contract? One suite per kind.

* :class:`~vsbench.conformance.switch_suite.VSwitchConformance` -- a vSwitch, checked on the
  kit's own embedded testbed (starts/stops, forwards, statistics, bulk rules, teardown);
* :class:`~vsbench.conformance.vnf_suite.VnfConformance` -- a VNF, likewise;
* :class:`~vsbench.conformance.suite.TrafficGeneratorConformance` -- a traffic generator
  against a DUT of known capacity (a fake of the vendor's generator that models one, or the
  kit's reference DUT on the testbed).

Every suite also checks the class itself (plugin API, description, settings schema,
prerequisites). Three ways to run them:

* ``vsbench conformance --vswitch NAME`` (``--vnf``, ``--trafficgen``): the installed plugin
  with its configured settings, and a report in words;
* ``pytest -p vsbench.conformance.plugin --pyargs vsbench.conformance.test_vswitch_conformance
  --vsbench-vswitch NAME`` -- the same, inside pytest;
* in your own tests: a fixture ``conformance_vswitch`` (``conformance_vnf``,
  ``conformance_generator``) returning a :class:`VSwitchTarget` (:class:`VnfTarget`,
  :class:`ConformanceTarget`) and ``class TestMine(VSwitchConformance): pass``.

See ``docs/conformance.rst``. This module has no pytest dependency; the suites have.
"""

from __future__ import annotations

from vsbench.conformance.leaks import ResourceSnapshot
from vsbench.conformance.target import ConformanceTarget, VnfTarget, VSwitchTarget

__all__ = ["ConformanceTarget", "ResourceSnapshot", "SUITE_MODULES", "VSwitchTarget", "VnfTarget"]

#: The suite module of each plugin kind (collected with ``--pyargs``).
SUITE_MODULES = {
    "vswitch": "vsbench.conformance.test_vswitch_conformance",
    "vnf": "vsbench.conformance.test_vnf_conformance",
    "trafficgen": "vsbench.conformance.test_trafficgen_conformance",
}
