"""JUnit XML of a run's CI gates (``vsbench --junit FILE``). Pure: cases in, text out.

One ``<testsuite>`` per test (testcase plus matrix variant) and one ``<testcase>`` per frame
size, named ``<frame size>B`` with the test as its class name, so a CI server lists
``phy2phy_tput.64B`` (an integration testcase: one per step, named by the step). A failed gate is a ``<failure>`` whose message is the first reason and
whose text holds all of them; a frame size that did not complete is an ``<error>``; one
that was not run is ``<skipped>``. The structure is the one CI servers read (the Jenkins
JUnit/xUnit schema, checked by tests/unit/test_junit.py against tests/data/junit).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Mapping, Sequence

from vsbench.results.thresholds import Case


def _time(seconds: float) -> str:
    return f"{max(0.0, seconds):.3f}"


def _clean(text: str) -> str:
    """XML 1.0 cannot carry control characters; a reason must not break the file."""
    return "".join(ch for ch in str(text) if ch in "\t\n\r" or ord(ch) >= 0x20)


def render(cases: Sequence[Case], *, run_id: str, timestamp: str | None = None,
           properties: Mapping[str, str] | None = None, hostname: str | None = None) -> str:
    """The JUnit document of ``cases`` (grouped into one suite per test, in order)."""
    suites: dict[str, list[Case]] = {}
    for case in cases:
        suites.setdefault(case.test, []).append(case)
    root = ET.Element("testsuites", name=f"vsbench run {run_id}")
    totals = {"tests": 0, "failures": 0, "errors": 0, "time": 0.0}
    for index, (test, members) in enumerate(suites.items()):
        failures = sum(1 for c in members if c.status == "failed")
        errors = sum(1 for c in members if c.status == "error")
        skipped = sum(1 for c in members if c.status == "skipped")
        seconds = sum(c.time_s for c in members)
        attrs = {"name": _clean(test), "tests": str(len(members)), "failures": str(failures),
                 "errors": str(errors), "skipped": str(skipped), "time": _time(seconds), "id": str(index),
                 "package": "vsbench", "hostname": _clean(hostname or "unknown")}
        if timestamp:
            attrs["timestamp"] = timestamp
        suite = ET.SubElement(root, "testsuite", attrs)
        props = {"run_id": run_id, **(properties or {}), **(members[0].properties if members else {})}
        props_el = ET.SubElement(suite, "properties")
        for name, value in props.items():
            ET.SubElement(props_el, "property", name=_clean(name), value=_clean(value))
        for case in members:
            el = ET.SubElement(suite, "testcase", name=_clean(case.name or f"{case.frame_size_bytes}B"), classname=_clean(test),
                               time=_time(case.time_s))
            if case.status == "failed":
                failure = ET.SubElement(el, "failure", message=_clean(case.failures[0]), type="threshold")
                failure.text = _clean("\n".join(case.failures))
            elif case.status == "error":
                error = ET.SubElement(el, "error", message=_clean(case.error or "did not complete"), type="run")
                error.text = _clean(case.error or "")
            elif case.status == "skipped":
                ET.SubElement(el, "skipped", message=_clean(case.error or "not run"))
            if case.passed_checks:
                out = ET.SubElement(el, "system-out")
                out.text = _clean("\n".join(f"ok: {text}" for text in case.passed_checks))
        totals["tests"] += len(members)
        totals["failures"] += failures
        totals["errors"] += errors
        totals["time"] += seconds
    root.set("tests", str(totals["tests"]))
    root.set("failures", str(totals["failures"]))
    root.set("errors", str(totals["errors"]))
    root.set("time", _time(totals["time"]))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
