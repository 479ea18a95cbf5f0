"""The conformance report: every check as PASS/FAIL/SKIP, what it checks in words (the
first paragraph of its docstring), and why it failed or was skipped, then a verdict.

A pytest plugin with hooks only: ``-p vsbench.conformance.report`` next to your own target
fixtures, or loaded with :mod:`vsbench.conformance.plugin` (``vsbench conformance``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pytest

from vsbench.conformance import SUITE_MODULES

KINDS = tuple(SUITE_MODULES)


@dataclass
class _Line:
    status: str
    what: str
    why: str = ""


@dataclass
class _Report:
    lines: list[_Line] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)


_REPORT_KEY = pytest.StashKey[_Report]()


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_REPORT_KEY] = _Report()


def _what(item: pytest.Item) -> str:
    doc = getattr(getattr(item, "function", None), "__doc__", None) or ""
    first = " ".join(doc.strip().split("\n\n")[0].split())
    return first or item.name.removeprefix("test_").replace("_", " ")


def _why(report: pytest.TestReport) -> str:
    if report.skipped and isinstance(report.longrepr, tuple):
        return str(report.longrepr[2]).removeprefix("Skipped: ")
    crash = getattr(report.longrepr, "reprcrash", None)
    text = crash.message if crash is not None else str(report.longrepr or "")
    lines = [line for line in text.splitlines() if line.strip()]
    first = lines[0] if lines else ""
    first = first.removeprefix("AssertionError: ").removeprefix("Failed: ")
    # "vsbench.runner.guard.PluginFault: vswitch x: start: ..." -> "vswitch x: start: ..."
    first = re.sub(r"^(?:[A-Za-z_]\w*\.)*(?:PluginFault|PluginDeadlineError): ", "", first)
    return first[:400]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    state = item.config.stash[_REPORT_KEY]
    if item.nodeid in state.seen:
        if report.failed and report.when == "teardown":
            state.lines.append(_Line("FAIL", _what(item), "teardown: " + _why(report)))
        return
    if report.when == "call" or (report.when == "setup" and (report.skipped or report.failed)):
        state.seen.add(item.nodeid)
        status = "PASS" if report.passed else "SKIP" if report.skipped else "FAIL"
        state.lines.append(_Line(status, _what(item), "" if report.passed else _why(report)))


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    state = config.stash[_REPORT_KEY]
    if not state.lines:
        return
    names = [config.getoption(f"vsbench_{k}", None) and f"{k} {config.getoption(f'vsbench_{k}')}" for k in KINDS]
    title = ", ".join(n for n in names if n) or "vsbench plugin"
    write = terminalreporter.write_line
    write("")
    write(f"vsbench conformance report: {title}")
    previous = None
    for line in state.lines:
        write(f"  {line.status}  {line.what}")
        if line.why:
            write("        (the same reason)" if line.why == previous else f"        {line.why}")
        previous = line.why or previous
    counts = {s: sum(1 for line in state.lines if line.status == s) for s in ("PASS", "FAIL", "SKIP")}
    if counts["FAIL"] or not counts["PASS"]:
        verdict = "NOT conformant (fix the FAIL lines)" if counts["FAIL"] else "nothing could be checked"
    elif counts["SKIP"]:
        verdict = f"conformant in all that could be checked here ({counts['SKIP']} checks skipped: see why)"
    else:
        verdict = "conformant"
    write(f"{counts['PASS']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped: {verdict}")
