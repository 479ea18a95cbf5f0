"""Conformance kit: does a traffic generator plugin honour the trial contract?

A vendor (or a built-in plugin's author) describes a configured generator and the device
under test it reaches -- usually a protocol-faithful fake of their generator that models a
DUT -- as a :class:`ConformanceTarget`, returns it from a pytest fixture named
``conformance_generator``, and runs the suite::

    pytest -p my_fixtures --pyargs vsbench.conformance      # my_fixtures defines the fixture

or, in their own test tree::

    from vsbench.conformance.suite import TrafficGeneratorConformance

    class TestMyGenerator(TrafficGeneratorConformance):
        pass                                   # conformance_generator from conftest.py

See ``docs/conformance.md``. This module has no pytest dependency; :mod:`.suite` has.
"""

from __future__ import annotations

from vsbench.conformance.target import ConformanceTarget
from vsbench.conformance.leaks import ResourceSnapshot

__all__ = ["ConformanceTarget", "ResourceSnapshot"]
