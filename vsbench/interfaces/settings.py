"""Settings helpers for plugins: defaults from the schema, and validation in one line.

A plugin declares its settings as a JSON schema (``settings_schema``, draft 2020-12) with
a ``default`` on each property. The runner validates the plugin's section against it before
the plugin is constructed; :func:`with_defaults` fills in what the section leaves out, so a
plugin constructed outside a run (a test, the conformance kit, another program) behaves the
same. :func:`validate_settings` is the check the runner applies, for a plugin that accepts
settings some other way (a file it reads, a remote profile).
"""

from __future__ import annotations

import copy
from typing import Any, Mapping

import jsonschema

from vsbench.interfaces.plugin import PluginError


def schema_defaults(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The ``default`` of every property (recursing into object properties)."""
    out: dict[str, Any] = {}
    for name, prop in (schema.get("properties") or {}).items():
        if not isinstance(prop, Mapping):
            continue
        if "default" in prop:
            out[name] = copy.deepcopy(prop["default"])
        elif prop.get("type") == "object" and "properties" in prop:
            out[name] = schema_defaults(prop)
    return out


def with_defaults(schema: Mapping[str, Any], settings: Mapping[str, Any] | None) -> dict[str, Any]:
    """``settings`` over the schema's defaults (nested objects merged key by key)."""
    return _merge(schema_defaults(schema), dict(settings or {}))


def _merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict) and out[key]:
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def settings_problem(schema: Mapping[str, Any], settings: Mapping[str, Any] | None) -> str | None:
    """The first thing ``settings`` gets wrong against ``schema``, as ``path: message`` on
    one line, or None when they are valid."""
    validator = jsonschema.Draft202012Validator(schema)
    errors = list(validator.iter_errors(dict(settings or {})))
    if not errors:
        return None
    err = jsonschema.exceptions.best_match(errors)
    path = ".".join(str(p) for p in err.absolute_path) or "(top level)"
    message = err.message.strip().splitlines()[0] if err.message.strip() else "invalid"
    return f"{path}: {message[:300]}"


def validate_settings(schema: Mapping[str, Any], settings: Mapping[str, Any] | None, where: str) -> None:
    """Raise :class:`PluginError` naming ``where`` and the offending field, in one line."""
    problem = settings_problem(schema, settings)
    if problem is not None:
        raise PluginError(f"{where}: {problem}")
