"""Integration testcase files: ``testcases/integration/<name>.yaml``, checked against
``integration_testcase.schema.json`` and then by :func:`.steps.parse_steps` (references,
bridges, allowed tools), and turned into test plans like any testcase.

They live in a directory of their own so ``vsbench --list`` (performance testcases) and
``vsbench --integration`` (these) each list their own kind.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import jsonschema

from vsbench.runner import config as cfg
from vsbench.runner import testcases
from vsbench.runner.integration.steps import Step, StepError, parse_steps
from vsbench.runner.plan import TestPlan

SCHEMA_FILE = "integration_testcase.schema.json"


@dataclass(frozen=True)
class IntegrationTestcase:
    __test__ = False

    name: str
    description: str
    path: Path
    testbed_ports: int
    raw_steps: list[dict[str, Any]]
    steps: list[Step]


def default_dir() -> Path:
    return testcases.default_testcase_dir() / "integration"


def parse(data: Any, where: str) -> tuple[int, list[Step]]:
    """Validate an integration testcase document; (testbed ports, parsed steps). Raises
    :class:`testcases.TestcaseError` with one line naming ``where`` and the field."""
    errors = list(jsonschema.Draft202012Validator(cfg.load_schema(SCHEMA_FILE)).iter_errors(data))
    if errors:
        err = jsonschema.exceptions.best_match(errors)
        raise testcases.TestcaseError(f"{where}: {cfg._format_path(err)}: {cfg._one_line(err)}")
    ports = int(data.get("testbed_ports", 2))
    try:
        return ports, parse_steps(data["steps"], ports)
    except StepError as exc:
        raise testcases.TestcaseError(f"{where}: {exc}") from None


def load(path: Path) -> IntegrationTestcase:
    data = cfg.read_yaml_mapping(path)
    ports, steps = parse(data, str(path))
    if data["name"] != path.stem:
        raise testcases.TestcaseError(f"{path}: name: {data['name']!r} must match the file name {path.stem!r}")
    return IntegrationTestcase(data["name"], data["description"].strip(), path, ports, list(data["steps"]), steps)


def discover(directory: Path) -> dict[str, Path]:
    if not directory.is_dir():
        raise testcases.TestcaseError(f"{directory}: integration testcase directory not found")
    return {p.stem: p for p in sorted(directory.glob("*.yaml"))}


def load_all(directory: Path) -> list[IntegrationTestcase]:
    return [load(p) for p in discover(directory).values()]


def find(name: str, directory: Path) -> IntegrationTestcase:
    known = discover(directory)
    if name not in known:
        raise testcases.TestcaseError(f"unknown integration test {name!r}; available: {', '.join(known) or 'none'}")
    return load(known[name])


def build_plans(case: IntegrationTestcase, base: Mapping[str, Any], test_params: Mapping[str, Any],
                flags: Mapping[str, str | None]) -> list[TestPlan]:
    """The plan(s) of ``case``: the configuration as for any testcase (``--test-params``
    and plugin flags apply), with ``test.deployment: clean`` and the steps in
    ``test.steps`` so config.yaml records what ran."""
    shell = testcases.Testcase(name=case.name, description=case.description, deployment="clean", path=case.path,
                               layer={}, matrix={}, links={})
    plans = testcases.build_plans(shell, base, test_params, flags)
    for plan in plans:
        plan.config["test"]["steps"] = [dict(s) for s in case.raw_steps]
        plan.config["test"]["testbed_ports"] = case.testbed_ports
        cfg.validate_config(plan.config, f"integration test {case.name}")
    return plans
