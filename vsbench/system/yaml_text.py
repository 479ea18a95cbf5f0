"""Parse YAML safely, and fast: PyYAML's safe loader, in C when PyYAML has libyaml.

``yaml.safe_load`` is the pure-Python SafeLoader: a run parses every conf/ layer and
testcase in each process that starts (vsbench, its CLI subcommands, every test that runs
one), and that was a tenth of a short run's time. ``CSafeLoader`` builds the same
documents with the same safe constructor (plain data only, never an object), from the
same errors (``yaml.YAMLError``); without libyaml it is the pure one.
"""

from __future__ import annotations

from typing import IO, Any

import yaml

SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def safe_load(stream: str | bytes | IO[str]) -> Any:
    """The one YAML document in ``stream``, as plain data (``yaml.safe_load``'s result)."""
    return yaml.load(stream, Loader=SafeLoader)  # noqa: S506 - a safe loader, in C
