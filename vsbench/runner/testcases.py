"""Declarative testcases: find them, validate them, expand them into resolved test plans.

A testcase file (``testcases/<name>.yaml``) is checked against
``vsbench/schemas/testcase.schema.json``. Its ``traffic``/``search``/``latency``/``dut``/``overlay``/``vnf``
sections are a configuration layer between the conf files and ``--test-params``. Its
``matrix`` maps dotted config paths to lists of values; each combination is one plan. A
``--test-params`` key naming a matrix dimension replaces that dimension (a list gives the
new values, a scalar a single one). ``links`` then copy one path's value to another.

A testcase's ``variants`` lists settings to run one plan each -- "baseline, packed ring, two
queues, userspace TSO" -- where a matrix would run every combination: a feature compared
one knob at a time against a baseline costs one plan per knob, not 2^n. The first variant
is the baseline: a key another variant does not name takes the baseline's value (else the
configured one), and every plan records every such key, so the feature-matrix table shows
each row's full setting. With a matrix (or a
``--test-params`` sweep) too, every combination runs every variant. ``--test-params``
may not set a key the variants set: the variants would overwrite it.

A ``--test-params`` list for a key whose value is not itself a list -- a scalar setting,
``vswitch.ovs_dpdk.smc_enable=[true,false]`` -- adds a matrix dimension too: that is how a
switch's feature matrix is swept (every combination is its own plan, so its own switch
instance). A key whose value is a list (``frame_sizes``) takes the list as its value; a
list of lists sweeps it. Dimensions in a plugin section that is not the selected plugin's
(``vswitch.ovs_dpdk.*`` with ``--vswitch linux_bridge``) are refused: every plan would be
the same.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import jsonschema
from referencing import Registry, Resource

from vsbench.runner import config as cfg
from vsbench.runner.plan import TestPlan

#: ``vswitch.name`` asking for no switch (``--vswitch none``; vsbench.deployment.phy_vnf.NO_VSWITCH,
#: not imported here: the CLI loads this module on every call, the deployments only to run).
NO_VSWITCH = "none"
LAYER_SECTIONS = ("traffic", "search", "latency", "dut", "overlay", "tcp", "trafficgen", "vnf", "thresholds",
                  "topology", "load")


class TestcaseError(cfg.ConfigError):
    """A testcase is unknown or malformed; one line naming the file and field path."""

    __test__ = False


@dataclass(frozen=True)
class Testcase:
    __test__ = False

    name: str
    description: str
    deployment: str
    path: Path
    layer: dict[str, Any]  # the sections that override the configuration
    matrix: dict[str, list[Any]]
    links: dict[str, str]
    #: One plan per entry (dotted path -> value), see the module docstring; () without.
    variants: tuple[dict[str, Any], ...] = ()


def default_testcase_dir() -> Path:
    return cfg.project_root() / "testcases"


def _validator() -> jsonschema.Draft202012Validator:
    config_schema = cfg.load_schema("config.schema.json")
    testcase_schema = cfg.load_schema("testcase.schema.json")
    registry = Registry().with_resources(
        [
            ("config.schema.json", Resource.from_contents(config_schema)),
            (config_schema["$id"], Resource.from_contents(config_schema)),
        ]
    )
    return jsonschema.Draft202012Validator(testcase_schema, registry=registry)


def load_testcase(path: Path) -> Testcase:
    data = cfg.read_yaml_mapping(path)
    errors = list(_validator().iter_errors(data))
    if errors:
        err = jsonschema.exceptions.best_match(errors)
        raise TestcaseError(f"{path}: {cfg._format_path(err)}: {cfg._one_line(err)}")
    if data["name"] != path.stem:
        raise TestcaseError(f"{path}: name: {data['name']!r} must match the file name {path.stem!r}")
    layer = {k: data[k] for k in LAYER_SECTIONS if k in data}
    return Testcase(
        name=data["name"],
        description=data["description"].strip(),
        deployment=data["deployment"],
        path=path,
        layer=layer,
        matrix=dict(data.get("matrix", {})),
        links=dict(data.get("links", {})),
        variants=tuple(dict(v) for v in data.get("variants", ())),
    )


def discover(testcase_dir: Path) -> dict[str, Path]:
    """Testcase name → file, for every ``*.yaml`` in ``testcase_dir``."""
    if not testcase_dir.is_dir():
        raise TestcaseError(f"{testcase_dir}: testcase directory not found")
    return {p.stem: p for p in sorted(testcase_dir.glob("*.yaml"))}


def load_all(testcase_dir: Path) -> list[Testcase]:
    return [load_testcase(p) for p in discover(testcase_dir).values()]


def find(name: str, testcase_dir: Path) -> Testcase:
    known = discover(testcase_dir)
    if name not in known:
        listed = ", ".join(known) or "none"
        raise TestcaseError(f"unknown test {name!r}; available: {listed}")
    return load_testcase(known[name])


def _schema_node(path: str) -> Mapping[str, Any] | None:
    """The config schema's node for dotted ``path``, None where the schema does not say
    (a plugin's own section: its settings_schema is the plugin's)."""
    node: Mapping[str, Any] | None = cfg.load_schema("config.schema.json")
    for part in path.split("."):
        props = (node or {}).get("properties") if isinstance(node, Mapping) else None
        if not isinstance(props, Mapping) or part not in props:
            return None
        node = props[part]
    return node


def _list_typed(path: str, current: Any) -> bool:
    """True when the key at ``path`` holds a list (by the config schema, else by its
    current value)."""
    node = _schema_node(path)
    if node is not None and ("type" in node or "enum" in node):
        kinds = node.get("type", [])
        return "array" in (kinds if isinstance(kinds, list) else [kinds])
    return isinstance(current, list)


def is_sweep(path: str, value: Any, current: Any) -> bool:
    """Whether a --test-params ``value`` for ``path`` (now ``current``) lists values to
    sweep rather than being the value itself (see the module docstring)."""
    if not isinstance(value, list) or not value:
        return False
    if _list_typed(path, current):
        return all(isinstance(v, list) for v in value)
    return True


def _matrix_dimensions(
    testcase: Testcase, overrides: Mapping[str, Any], merged: Mapping[str, Any] | None = None
) -> tuple[dict[str, list[Any]], dict[str, Any]]:
    """Split resolved --test-params into matrix dimensions and plain overrides."""
    dims = {k: list(v) for k, v in testcase.matrix.items()}
    plain: dict[str, Any] = {}
    for path, value in overrides.items():
        if path in dims:
            dims[path] = list(value) if isinstance(value, list) else [value]
        elif merged is not None and is_sweep(path, value, cfg.get_path(merged, path)):
            dims[path] = list(value)
        else:
            plain[path] = value
    return dims, plain


PLUGIN_SECTIONS = ("vswitch", "trafficgen", "vnf")

#: The RFC 2544 trial duration (``--test-params "trial_duration=2"``) and the search's own
#: trial lengths it stands for when the user asks for it (:func:`_search_follows_trial_duration`).
TRIAL_DURATION = "traffic.trial_duration_s"
SEARCH_TRIAL_DURATIONS = ("search.trial_duration_s", "search.final_trial_duration_s")


def _search_follows_trial_duration(config: dict[str, Any], asked: Mapping[str, Any]) -> None:
    """A trial duration the user asked for (``--test-params``, a suite's params) is the
    length of every search trial: ``search.trial_duration_s`` and
    ``search.final_trial_duration_s`` become ``traffic.trial_duration_s`` unless the same
    params set them too (``search.trial_duration_s`` asked for: the search's lengths are
    left to it), written into the plan so config.yaml says what ran.

    Why only an asked one: the default search (``multi``) searches with 1 s trials, and
    ``traffic.trial_duration_s`` is 60 s in conf/ and in nearly every testcase (VSPERF's
    RFC 2544 length, used by the ``rfc2544``/``tst009`` modes and the confirmation trial).
    Following that default would make every plain run sixty times slower; ignoring the
    user's value left config.yaml and the report saying "2 s" over 1 s search trials. A
    value from the configuration layers (conf/, ``--conf-file``, the testcase) leaves the
    search's own defaults alone."""
    if TRIAL_DURATION not in asked or SEARCH_TRIAL_DURATIONS[0] in asked:
        return  # asked for the search's own length: the final stage follows it as ever
    value = cfg.get_path(config, TRIAL_DURATION)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        return  # refused by the schema, under its own name
    for path in SEARCH_TRIAL_DURATIONS:
        if path not in asked:
            cfg.set_path(config, path, value)


def variant_keys(testcase: Testcase) -> list[str]:
    """Every key any of the testcase's ``variants`` sets, in first-named order."""
    return list(dict.fromkeys(k for variant in testcase.variants for k in variant))


def _variant_settings(testcase: Testcase, merged: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each variant's settings over every variant key (a key it does not name: the first
    variant's value, else the configured one; left out where neither says: a plugin's
    default then holds); ``[{}]`` for a testcase without variants. Two variants with the
    same settings are refused: their plans would fold into one row."""
    keys = variant_keys(testcase)
    if not testcase.variants:
        return [{}]
    first = testcase.variants[0]
    out: list[dict[str, Any]] = []
    for n, variant in enumerate(testcase.variants, 1):
        settings = {}
        for key in keys:
            value = variant[key] if key in variant else first[key] if key in first else cfg.get_path(merged, key)
            if value is not None or key in variant:
                settings[key] = value
        if settings in out:
            raise TestcaseError(f"test {testcase.name}: variants {out.index(settings) + 1} and {n} have the same "
                                f"settings {settings}")
        out.append(settings)
    return out


def _check_dimensions_apply(testcase: Testcase, dims: Mapping[str, list[Any]], config: Mapping[str, Any]) -> None:
    """A dimension in another plugin's section than the selected one's changes nothing."""
    for path in dims:
        parts = path.split(".")
        if len(parts) >= 3 and parts[0] in PLUGIN_SECTIONS:
            selected = cfg.get_path(config, f"{parts[0]}.name")
            if parts[1] != selected:
                raise TestcaseError(f"test {testcase.name}: {path} sweeps a setting of {parts[0]} {parts[1]}, "
                                    f"but the test runs {parts[0]} {selected}: every plan would be the same")


def _without_vswitch(testcase: Testcase, config: dict[str, Any]) -> None:
    """``vswitch.name: none`` (``--vswitch none``): the deployment and VNF that run without a
    switch (:func:`vsbench.deployment.phy_vnf.without_vswitch`), written into the plan's
    configuration so config.yaml says what ran."""
    if cfg.get_path(config, "vswitch.name") != NO_VSWITCH:
        return
    from vsbench import deployment as deployments
    from vsbench.deployment import phy_vnf

    try:
        name, vnf = phy_vnf.without_vswitch(deployments.get(str(config["test"]["deployment"])),
                                            cfg.get_path(config, "vnf.name"))
    except deployments.DeploymentError as exc:
        raise TestcaseError(f"test {testcase.name}: {exc}") from None
    config["test"]["deployment"] = name
    if vnf is not None:
        cfg.set_path(config, "vnf.name", vnf)


def build_plans(
    testcase: Testcase,
    base: Mapping[str, Any],
    test_params: Mapping[str, Any],
    flags: Mapping[str, str | None],
) -> list[TestPlan]:
    """Resolve ``testcase`` over the configuration ``base`` into validated plans.

    ``test_params`` are the raw ``--test-params`` (keys as the user typed them);
    ``flags`` maps ``vswitch``/``trafficgen``/``vnf`` to a plugin name or None.
    """
    merged = cfg.deep_merge(base, testcase.layer)
    merged["test"] = {
        "name": testcase.name,
        "description": testcase.description,
        "deployment": testcase.deployment,
        "file": str(testcase.path),
    }
    resolved_params = {}
    for key, value in test_params.items():
        path = key if key in testcase.matrix else cfg.resolve_key(key, merged)
        resolved_params[path] = value
    dims, plain = _matrix_dimensions(testcase, resolved_params, merged)
    overlap = [k for k in variant_keys(testcase) if k in resolved_params]
    if overlap:
        raise TestcaseError(f"test {testcase.name}: --test-params sets {', '.join(overlap)}, which the testcase's "
                            f"variants set (each variant would overwrite it)")
    for path, value in plain.items():
        cfg.set_path(merged, path, value)
    for kind, name in flags.items():
        if name:
            cfg.set_path(merged, f"{kind}.name", name)
    _without_vswitch(testcase, merged)
    _check_dimensions_apply(testcase, {**dims, **{k: [] for k in variant_keys(testcase)}}, merged)

    plans = []
    keys = list(dims)
    listed = _variant_settings(testcase, merged)
    for combo, settings in itertools.product(itertools.product(*(dims[k] for k in keys)) if keys else [()], listed):
        variant = {**settings, **dict(zip(keys, combo))}
        config = cfg.deep_merge(merged, {})
        for path, value in variant.items():
            cfg.set_path(config, path, value)
        for target, source in testcase.links.items():
            cfg.set_path(config, target, cfg.get_path(config, source))
        _search_follows_trial_duration(config, resolved_params)
        where = f"test {testcase.name}" + (f" {variant}" if variant else "")
        cfg.validate_config(config, where)
        plans.append(TestPlan(name=testcase.name, config=config, variant=variant))
    return plans
