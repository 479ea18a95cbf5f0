"""Run tags: ``key=value`` labels a lab puts on a run (``--tag nic=e810 --tag
kernel=6.1``) so that, weeks later, the store can say which runs were which and list or
trend only those (``vsbench db list --tag nic=e810``). A tag is what the user says about
the run, not something vsbench measured, so it is kept verbatim in results.json and the
store and never interpreted.

The syntax is strict because a tag is a filter key later: a typo caught when the run
starts costs nothing, one found after a night of runs costs the night.
"""

from __future__ import annotations

import re
from typing import Iterable

#: A key: a letter or digit, then letters, digits, ``_ . -`` (what fits a CSV header or a
#: shell word without quoting). The store keeps at most this many characters of either part.
KEY_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
MAX_KEY_CHARS = 64
MAX_VALUE_CHARS = 200


class TagError(ValueError):
    """A tag the user gave that cannot be used; one line naming the option and the tag."""


def parse(specs: Iterable[str], option: str = "--tag") -> dict[str, str]:
    """``KEY=VALUE`` strings as a dict, in the order given; :class:`TagError` for a tag
    without ``=``, a bad or too long key, an empty or too long value, a control character,
    or a key given twice (with different values: which one would the run mean?)."""
    tags: dict[str, str] = {}
    for spec in specs:
        key, sep, value = spec.partition("=")
        key, value = key.strip(), value.strip()
        if not sep:
            raise TagError(f"{option} {spec!r}: expected KEY=VALUE, e.g. {option} nic=e810")
        if not KEY_PATTERN.match(key) or len(key) > MAX_KEY_CHARS:
            raise TagError(f"{option} {spec!r}: the key must be 1..{MAX_KEY_CHARS} letters, digits, '_', '.' or '-', "
                           "starting with a letter or digit")
        if not value or len(value) > MAX_VALUE_CHARS or any(ord(c) < 32 or ord(c) == 127 for c in value):
            raise TagError(f"{option} {spec!r}: the value must be 1..{MAX_VALUE_CHARS} printable characters")
        if key in tags and tags[key] != value:
            raise TagError(f"{option} {spec!r}: tag {key!r} is already {tags[key]!r}")
        tags[key] = value
    return tags


def format_tags(tags: dict[str, str]) -> str:
    """``k=v, k2=v2`` for tables; ``-`` for none."""
    return ", ".join(f"{k}={v}" for k, v in tags.items()) or "-"
