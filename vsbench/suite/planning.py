"""A suite's runs under one profile, expanded into the runner's plans and sorted into those
this host can run and those it cannot (with the host's reason).

Each run is resolved exactly as ``vsbench --test NAME --vswitch X ... --test-params ...``
would be (:func:`vsbench.runner.testcases.build_plans`), with the parameters of the profile,
the run, the run's profile and the user's ``--test-params``, in that order. Every plan is
validated -- also the ones this host cannot run, so a lab's full profile is known to be a
valid configuration before a lab tries it. Each plan's configuration carries a ``suite``
section (suite, profile, run) that config.yaml keeps: a suite's results can be traced to its
runs from the run directory alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from vsbench.runner import config as cfg
from vsbench.runner import plugins, preflight, testcases
from vsbench.runner.plan import TestPlan, repeated
from vsbench.suite import host as host_facts
from vsbench.suite.catalog import SuiteError
from vsbench.suite.model import Profile, Suite, SuiteRun

#: Row key names and the config paths they read (a table may declare more in ``keys``).
KEY_PATHS = {
    "flows": "traffic.flows",
    "rules": "dut.rules",
    "routes": "dut.routes",
    "nexthops": "dut.nexthops",
    "tso": "tcp.tso",
    "streams": "tcp.streams",
    "clients": "tcp.clients",
    "port_pairs": "topology.port_pairs",
    "lanes": "topology.lanes",
}
#: Row keys that come from the results themselves, not from a plan's configuration.
RESULT_KEYS = ("frame_size", "load_percent")

RUNNABLE, NOT_RUNNABLE, SKIPPED = "runnable", "not_runnable", "skipped"


@dataclass
class PlannedPlan:
    """One plan of a run: runnable here, or not (``reason``: the host's, or the profile's)."""

    run: str
    plan: TestPlan
    status: str
    reason: str | None = None
    #: Row key values this plan stands for (``rules: 1000``), read from its configuration.
    keys: dict[str, Any] = field(default_factory=dict)

    @property
    def frame_sizes(self) -> list[int]:
        traffic = self.plan.config.get("traffic") or {}
        sizes = traffic.get("frame_sizes") or []
        return [int(s) for s in sizes if isinstance(s, (int, float))]

    def to_json(self, plan_index: int | None) -> dict[str, Any]:
        return {"run": self.run, "label": self.plan.label, "status": self.status, "reason": self.reason,
                "plan_index": plan_index, "frame_sizes": self.frame_sizes, "keys": self.keys,
                "repeat": None if self.plan.repeat is None else list(self.plan.repeat)}


@dataclass
class SuitePlan:
    suite: Suite
    profile: Profile
    host: host_facts.HostFacts
    plans: list[PlannedPlan]

    @property
    def runnable(self) -> list[PlannedPlan]:
        return [p for p in self.plans if p.status == RUNNABLE]

    def runs_json(self) -> list[dict[str, Any]]:
        """Per run: what became of it (runnable plans, or why not)."""
        out = []
        for run in self.suite.runs:
            mine = [p for p in self.plans if p.run == run.name]
            statuses = {p.status for p in mine}
            status = RUNNABLE if RUNNABLE in statuses else (SKIPPED if statuses == {SKIPPED} else NOT_RUNNABLE)
            reasons = list(dict.fromkeys(p.reason for p in mine if p.reason))
            note = run.profile(self.profile.name).note or run.note
            out.append({"name": run.name, "test": run.test, "vswitch": run.vswitch, "vnf": run.vnf,
                        "trafficgen": run.trafficgen, "status": status, "reason": "; ".join(reasons) or None,
                        "note": note, "plans": len(mine)})
        return out


def key_paths(suite: Suite) -> dict[str, str]:
    """Every row key a table of ``suite`` names that is read from a plan's configuration."""
    paths = dict(KEY_PATHS)
    for table in suite.tables:
        paths.update(table.keys)
    return paths


def _keys_of(config: Mapping[str, Any], paths: Mapping[str, str]) -> dict[str, Any]:
    out = {}
    for name, path in paths.items():
        value = cfg.get_path(config, path)
        if value is not None and not isinstance(value, (dict, list)):
            out[name] = value
    return out


def _resolve(suite: Suite, run: SuiteRun, profile: Profile, base: Mapping[str, Any], testcase_dir: Path,
             user_params: Mapping[str, Any]) -> list[TestPlan]:
    where = f"suite {suite.name} run {run.name}"
    try:
        testcase = testcases.find(run.test, testcase_dir)
        params = {**run.params_for(profile), **user_params}
        built = testcases.build_plans(testcase, base, params, run.flags())
        for plan in built:
            plan.config["suite"] = {"name": suite.name, "profile": profile.name, "run": run.name}
            cfg.validate_config(plan.config, f"{where} {plan.label}")
            for kind in ("vswitch", "trafficgen", "vnf"):
                name = plan.config[kind]["name"]
                cfg.validate_plugin_settings(kind, name, plugins.load(kind, name), plan.config)
    except (cfg.ConfigError, plugins.UnknownPluginError) as exc:
        raise SuiteError(f"{where}: {exc}") from None
    return repeated(built, run.repeat_for(profile.name))


def _preflight(plan: TestPlan) -> str | None:
    try:
        preflight.check_plan(plan)
    except preflight.PreflightError as exc:
        return str(exc)
    return None


def runs_for_ids(suite: Suite, ids: Iterable[str]) -> set[str]:
    """The runs whose results fill the tables ``ids`` (SuiteError for an unknown id)."""
    wanted = list(ids)
    unknown = [i for i in wanted if i not in suite.ids]
    if unknown:
        raise SuiteError(f"suite {suite.name} has no id {unknown[0]!r}; its ids: {', '.join(suite.ids)}")
    return {name for table in suite.tables if table.id in wanted for name in table.run_names()}


def build(suite: Suite, profile_name: str, base: Mapping[str, Any], testcase_dir: Path,
          host: host_facts.HostFacts, user_params: Mapping[str, Any] | None = None,
          check_prerequisites: bool = True, only_ids: Iterable[str] | None = None) -> SuitePlan:
    """Every run of ``suite`` under ``profile_name`` as plans, each runnable or not here.

    A run the profile leaves out is ``skipped`` (its reason the profile's); one whose
    ``requires`` the host does not meet, or whose plugins' prerequisites are missing
    (``check_prerequisites``: the runner's own preflight), is ``not_runnable`` with that
    reason. A configuration error is a :class:`SuiteError` (exit 2), for every plan.
    ``only_ids`` runs only what those ids' tables need; every other run is ``skipped``.
    """
    if profile_name not in suite.profiles:
        raise SuiteError(f"suite {suite.name} has no profile {profile_name!r}; "
                         f"its profiles: {', '.join(suite.profiles)}")
    profile = suite.profiles[profile_name]
    paths = key_paths(suite)
    wanted = runs_for_ids(suite, only_ids) if only_ids else None
    planned: list[PlannedPlan] = []
    for run in suite.runs:
        plans = _resolve(suite, run, profile, base, testcase_dir, user_params or {})
        skip = run.profile(profile_name).skip
        skip = f"not in the {profile_name} profile: {skip}" if skip else None
        if wanted is not None and run.name not in wanted:
            skip = skip or f"not asked for (--only {','.join(only_ids or ())})"
        unmet = host_facts.unmet(run.requires, host)
        for plan in plans:
            keys = _keys_of(plan.config, paths)
            if skip:
                planned.append(PlannedPlan(run.name, plan, SKIPPED, skip, keys))
            elif unmet:
                planned.append(PlannedPlan(run.name, plan, NOT_RUNNABLE, unmet, keys))
            else:
                missing = _preflight(plan) if check_prerequisites else None
                planned.append(PlannedPlan(run.name, plan, NOT_RUNNABLE if missing else RUNNABLE, missing, keys))
    return SuitePlan(suite, profile, host, planned)


def runs_of(plans: Iterable[PlannedPlan], name: str) -> list[PlannedPlan]:
    return [p for p in plans if p.run == name]
