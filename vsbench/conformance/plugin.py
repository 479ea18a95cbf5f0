"""The conformance kit as a pytest plugin: targets from installed plugins by name, and a
report in words.

``vsbench conformance --vswitch NAME`` runs this; so can a vendor's own pytest::

    pytest -p vsbench.conformance.plugin --pyargs vsbench.conformance.test_vswitch_conformance \\
        --vsbench-vswitch mybrand_switch [--vsbench-conf my.yaml]

The fixtures ``conformance_vswitch``, ``conformance_vnf`` and ``conformance_generator`` build
a target from the plugin registered under that name, with its settings from vsbench's
configuration (the defaults in ``conf/`` plus each ``--vsbench-conf`` file), exactly as a
run would. A vendor wanting more control (their own fake, a VNF needing routes) defines the
fixture themselves instead (see docs/conformance.rst).

At the end, every check is listed as PASS/FAIL/SKIP with what it checks, in words, and
why it failed or was skipped (:mod:`.report`, which a vendor's own fixtures module can use
alone: ``-p vsbench.conformance.report``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from vsbench.conformance import SUITE_MODULES

KINDS = tuple(SUITE_MODULES)
#: The report in words comes with this plugin.
pytest_plugins = ["vsbench.conformance.report"]
#: The reference DUT a testbed generator (trafgen) is checked against, per port.
REFERENCE_DUT_FPS = 20_000


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("vsbench conformance")
    for kind in KINDS:
        group.addoption(f"--vsbench-{kind}", metavar="NAME", default=None,
                        help=f"check the installed {kind} plugin NAME")
    group.addoption("--vsbench-conf", metavar="FILE", action="append", default=[],
                    help="YAML configuration layered over vsbench's defaults (the plugin's settings)")
    group.addoption("--vsbench-dut-capacity-fps", metavar="FPS", type=float, default=None,
                    help="trafficgen with its own ports: the aggregate capacity of the DUT it is cabled to")


def _config(request: pytest.FixtureRequest) -> dict[str, Any]:
    from vsbench.runner import config as cfg

    return cfg.load_layers(cfg.default_conf_dir(), [Path(p) for p in request.config.getoption("vsbench_conf")])


def _load(request: pytest.FixtureRequest, kind: str):
    name = request.config.getoption(f"vsbench_{kind}")
    if not name:
        pytest.skip(f"no --vsbench-{kind} NAME given")
    from vsbench.runner import config as cfg
    from vsbench.runner import plugins

    try:
        cls = plugins.load(kind, name)
    except plugins.UnknownPluginError as exc:
        pytest.fail(str(exc), pytrace=False)
    config = _config(request)
    try:
        cfg.validate_plugin_settings(kind, name, cls, config)
    except cfg.ConfigError as exc:
        pytest.fail(str(exc), pytrace=False)
    settings = ((config.get(kind) or {}).get(name)) or {}
    return name, cls, settings, config


@pytest.fixture
def conformance_vswitch(request: pytest.FixtureRequest):
    from vsbench.conformance.target import VSwitchTarget
    from vsbench.runner.plugin_context import run_parameters

    name, cls, settings, config = _load(request, "vswitch")
    run = run_parameters({k: v for k, v in config.items() if k != "dut"})  # no rule set or meter
    return VSwitchTarget(name=name, plugin=cls, settings=settings, run=run)


@pytest.fixture
def conformance_vnf(request: pytest.FixtureRequest):
    from vsbench.conformance.target import VnfTarget
    from vsbench.runner.plugin_context import run_parameters

    name, cls, settings, config = _load(request, "vnf")
    if getattr(cls, "routing", False):  # routes to the kit, as phy_router_phy gives them
        from vsbench.conformance.routers import ROUTED_FIELDS, route_to_the_kit

        return VnfTarget(name=name, plugin=cls, settings=settings, run=run_parameters(config),
                         fields=ROUTED_FIELDS, prepare=route_to_the_kit)
    return VnfTarget(name=name, plugin=cls, settings=settings, run=run_parameters(config),
                     forwards=name != "none")


@pytest.fixture
def conformance_generator(request: pytest.FixtureRequest):
    from vsbench.conformance.bench import KitTestbed, KitUnavailable, reference_dut
    from vsbench.conformance.target import ConformanceTarget
    from vsbench.deployment.p2p import generator_ports_from_settings
    from vsbench.deployment.ports import generator_ports_of
    from vsbench.interfaces.plugin import PluginContext
    from vsbench.interfaces.traffic import TrafficProfile
    from vsbench.runner.plugin_context import run_parameters
    from vsbench.system.resources import ResourceStack

    name, cls, settings, config = _load(request, "trafficgen")
    run = run_parameters(config)
    probe = cls(PluginContext(run_id="c0f000", settings=settings, log_dir=Path("/nonexistent"),
                              resources=ResourceStack(), run=run))
    if probe.capabilities().needs_testbed:
        try:
            kit = KitTestbed.create()
        except KitUnavailable as exc:
            pytest.skip(f"the kit's testbed: {exc}")
        try:
            reference_dut(kit, REFERENCE_DUT_FPS)
            yield ConformanceTarget(name=name, plugin=cls, settings=settings,
                                    dut_capacity_fps=2 * REFERENCE_DUT_FPS,
                                    ports=generator_ports_of(kit.testbed),
                                    profile=TrafficProfile(frame_size_bytes=64), trial_duration_s=1.0,
                                    rate_tolerance=0.1, loss_tolerance=0.001, run=run)
        finally:
            kit.close()
        return
    capacity = request.config.getoption("vsbench_dut_capacity_fps")
    if not capacity:
        pytest.skip(f"{name} brings its own ports: give --dut-capacity-fps, the aggregate capacity "
                    "of the device under test it is connected to")
    yield ConformanceTarget(name=name, plugin=cls, settings=settings, dut_capacity_fps=capacity,
                            ports=generator_ports_from_settings(settings, 2, None), run=run)
