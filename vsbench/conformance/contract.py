"""Checks every plugin kind shares: the class itself, before anything is started.

Mixed into each kind's suite (:class:`~vsbench.conformance.suite.TrafficGeneratorConformance`,
:class:`~vsbench.conformance.switch_suite.VSwitchConformance`,
:class:`~vsbench.conformance.vnf_suite.VnfConformance`); the suite provides a ``target``
fixture with ``name``, ``plugin`` (the class) and ``settings``.
"""

from __future__ import annotations

import json
import time
from typing import Any

import jsonschema
import pytest

from vsbench.interfaces.plugin import Plugin, Prerequisite, api_incompatibility
from vsbench.interfaces.settings import settings_problem

#: A key no plugin has: the settings schema must refuse it (a user's typo).
MISSPELT_KEY = "no_such_setting_vsbench_kit"
#: check_prerequisites runs before every run: it must answer quickly.
MAX_PREREQUISITES_S = 30.0


def one_line(text: str) -> bool:
    return bool(text.strip()) and "\n" not in text.strip()


def assert_jsonable(value: Any, what: str) -> None:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        pytest.fail(f"{what} is not JSON-able (it goes into trials.jsonl / sysinfo.json): {exc}",
                    pytrace=False)


class PluginContractChecks:
    """What the loader and the runner rely on, read from the class alone."""

    #: The plugin kind the suite checks ("vswitch", "vnf", "trafficgen").
    kind: str = ""

    def test_is_a_plugin_of_its_kind(self, target) -> None:
        """The entry point names a vsbench plugin class of the right kind."""
        cls = target.plugin
        assert isinstance(cls, type) and issubclass(cls, Plugin), f"{cls!r} is not a vsbench Plugin class"
        assert cls.kind == self.kind, f"{cls.__name__} is a {cls.kind} plugin, not a {self.kind} plugin"

    def test_declares_the_plugin_api_it_was_written_for(self, target) -> None:
        """It declares api_version, and this vsbench provides that plugin API."""
        reason = api_incompatibility(getattr(target.plugin, "api_version", None))
        assert reason is None, reason

    def test_describes_itself_in_one_line(self, target) -> None:
        """--list-plugins can show a one-line description."""
        description = getattr(target.plugin, "description", "") or ""
        assert one_line(description), f"description {description!r}: set a one-line `description`"

    def test_settings_schema_is_present_and_valid(self, target) -> None:
        """It publishes its settings as a JSON schema the runner can check them against."""
        schema = getattr(target.plugin, "settings_schema", None)
        assert schema, "no settings_schema: a user's settings cannot be checked before a run"
        try:
            jsonschema.Draft202012Validator.check_schema(schema)
        except jsonschema.exceptions.SchemaError as exc:
            pytest.fail(f"settings_schema is not a valid JSON schema: {exc.message}", pytrace=False)

    def test_settings_schema_accepts_the_target_settings(self, target) -> None:
        """The settings under test are valid by its own schema."""
        schema = getattr(target.plugin, "settings_schema", None) or {}
        problem = settings_problem(schema, target.settings)
        assert problem is None, f"its own schema refuses the settings under test: {problem}"

    def test_settings_schema_refuses_a_misspelt_setting(self, target) -> None:
        """A typo in a user's settings is a one-line error before the run, not silently ignored."""
        schema = getattr(target.plugin, "settings_schema", None) or {}
        settings = {**dict(target.settings or {}), MISSPELT_KEY: 1}
        problem = settings_problem(schema, settings)
        assert problem is not None, (
            f"settings with an unknown key {MISSPELT_KEY!r} are accepted: set "
            "\"additionalProperties\": false in settings_schema")
        assert one_line(problem)

    def test_prerequisites_are_answered_in_words(self, target) -> None:
        """check_prerequisites answers quickly, with what is missing and how to get it."""
        t0 = time.monotonic()
        missing = target.plugin.check_prerequisites(dict(target.settings or {}))
        took = time.monotonic() - t0
        assert took <= MAX_PREREQUISITES_S, f"check_prerequisites took {took:.1f} s (it runs before every run)"
        assert isinstance(missing, list), f"check_prerequisites returned {type(missing).__name__}, not a list"
        for item in missing:
            assert isinstance(item, Prerequisite), f"{item!r} is not a Prerequisite(what, remedy)"
            assert one_line(item.what) and one_line(item.remedy), f"{item!r}: what and remedy in one line each"


#: The fixture each kind's suite takes its target from.
TARGET_FIXTURES = ("conformance_generator", "conformance_vswitch", "conformance_vnf")


def missing_fixture(request: pytest.FixtureRequest, fixture: str, target_type: str) -> None:
    """No target fixture for this suite. When another kind's fixture is there (a vendor's
    ``pytest -p my_fixtures --pyargs vsbench.conformance`` collects every kind's suite) this
    suite is simply not the one being run: skip. Otherwise it is a clear failure, so a
    forgotten fixture never passes as green."""
    message = (f"no fixture {fixture!r}: define one returning a vsbench.conformance.{target_type} "
               "(see docs/conformance.rst)")
    if any(_defined(request, other) for other in TARGET_FIXTURES if other != fixture):
        pytest.skip(f"{message} -- this run checks another kind of plugin")
    pytest.fail(message, pytrace=False)


def _defined(request: pytest.FixtureRequest, name: str) -> bool:
    try:
        return bool(request._fixturemanager.getfixturedefs(name, request.node))  # noqa: SLF001
    except Exception:  # noqa: BLE001 - pytest internals: without them, be strict
        return False


def skip_unless_ready(target) -> None:
    """Skip the checks that start the plugin when this machine lacks what it needs."""
    missing = target.plugin.check_prerequisites(dict(target.settings or {}))
    if missing:
        pytest.skip(f"{target.name} cannot run here: missing " + "; ".join(str(m) for m in missing))
