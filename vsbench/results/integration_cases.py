"""CI cases of integration testcases: one JUnit ``<testcase>`` per step, named by the step
(``5 check_counters rx_ok``), with the test as its class. Pure: results.json in, cases out.

A step that failed is a ``<failure>`` (its check and the values it saw), one that could
not be done an ``<error>``, a skipped or not-run one ``<skipped>`` (the reason: the switch
cannot, or an earlier step failed). A test that failed before its first step (the switch
did not start) is one ``setup`` error case.
"""

from __future__ import annotations

from typing import Any, Mapping

from vsbench.results.thresholds import Case

STATUS = {"passed": "passed", "failed": "failed", "error": "error", "skipped": "skipped", "not-run": "skipped"}


def step_cases(results: Mapping[str, Any]) -> list[Case]:
    cases: list[Case] = []
    for test in results.get("tests") or []:
        if test.get("traffic_type") != "integration" and not test.get("steps"):
            continue
        label = str(test.get("label"))
        props = {k: str(test.get(k)) for k in ("testcase", "vswitch", "deployment") if test.get(k)}
        steps = test.get("steps") or []
        if not steps:
            status = "skipped" if test.get("status") == "not-run" else "error"
            cases.append(Case(label, 0, status, error=test.get("error") or "no step ran", properties=props,
                              name="setup"))
            continue
        for step in steps:
            status = STATUS.get(str(step.get("status")), "error")
            detail = str(step.get("detail") or "")
            case = Case(label, 0, status, time_s=float(step.get("duration_s") or 0.0), properties=props,
                        name=str(step.get("label")))
            if status == "failed":
                case.failures.append(detail or "check failed")
            elif status == "error":
                case.error = detail or "step could not be done"
            elif status == "skipped":
                case.error = detail or (test.get("error") if step.get("status") == "skipped" else None) or \
                    f"not run: {test.get('error') or 'an earlier step ended the test'}"
            elif detail:
                case.passed_checks.append(detail)
            cases.append(case)
    return cases
