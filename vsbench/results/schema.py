"""Load the JSON schemas of the files a run writes and check documents against them."""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any

import jsonschema

#: The schema of each file a run writes, by file name.
SCHEMA_OF = {
    "results.json": "results.schema.json",
    "trials.jsonl": "trial.schema.json",
    "sysinfo.json": "sysinfo.schema.json",
    "config.yaml": "run_config.schema.json",
    "suite.json": "suite_result.schema.json",
}


class SchemaViolation(ValueError):
    """A document does not match its schema; one line naming the path and the problem."""


@lru_cache(maxsize=None)
def load(name: str) -> dict[str, Any]:
    """The schema ``vsbench/schemas/<name>`` (installed as package data)."""
    text = resources.files("vsbench").joinpath("schemas", name).read_text(encoding="utf-8")
    return json.loads(text)


@lru_cache(maxsize=None)
def _validator(name: str) -> jsonschema.protocols.Validator:
    """A validator of schema ``name``. The schema itself is not checked against its
    metaschema here (0.2-0.3 s a schema, in every process that writes or reads a run):
    vsbench ships its schemas, and tests/unit/test_shipped_schemas.py checks each once."""
    schema = load(name)
    return jsonschema.validators.validator_for(schema)(schema)


def validate(document: Any, name: str) -> None:
    """Raise :class:`SchemaViolation` unless ``document`` matches schema ``name``."""
    error = jsonschema.exceptions.best_match(_validator(name).iter_errors(document))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(top)"
        raise SchemaViolation(f"{name}: {where}: {error.message[:300]}")
