"""Every JSON schema vsbench ships is a valid schema of the draft it names.

The runner validates documents against them without checking the schemas themselves
(vsbench.results.schema._validator): this is where they are checked, once.
"""

from __future__ import annotations

from importlib import resources

import jsonschema
import pytest

from vsbench.results import schema

SHIPPED = sorted(p.name for p in resources.files("vsbench").joinpath("schemas").iterdir()
                 if p.name.endswith(".schema.json"))


def test_every_file_a_run_writes_has_a_shipped_schema():
    assert set(schema.SCHEMA_OF.values()) <= set(SHIPPED)


@pytest.mark.parametrize("name", SHIPPED)
def test_the_schema_is_valid_against_its_metaschema(name):
    document = schema.load(name)
    assert "$schema" in document, f"{name} names no draft"
    jsonschema.validators.validator_for(document).check_schema(document)


def test_a_broken_schema_is_caught_by_the_same_check():
    """The check above can fail: a type that is not a JSON type is a SchemaError."""
    with pytest.raises(jsonschema.exceptions.SchemaError):
        jsonschema.validators.validator_for({}).check_schema({"type": "frame"})
