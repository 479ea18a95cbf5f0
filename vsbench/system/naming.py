"""Names of everything vsbench creates carry the run id, so leftovers can be found.

Linux interface names are at most 15 characters, so the run id is 6 hex digits and every
name starts with the prefix ``vsb``. ``vsbench cleanup`` removes anything matching
:data:`NAME_PREFIX` that belongs to a run which is no longer alive (see
:mod:`vsbench.system.cleanup`).
"""

from __future__ import annotations

import re
import secrets

NAME_PREFIX = "vsb"
RUN_ID_RE = re.compile(r"^[0-9a-f]{6}$")


def new_run_id() -> str:
    return secrets.token_hex(3)


def netns_name(run_id: str, role: str) -> str:
    """Namespace for ``role`` (``tg`` generator, ``dut`` device under test)."""
    return f"{NAME_PREFIX}-{run_id}-{role}"


def iface_name(run_id: str, role: str, index: int) -> str:
    """A <=15-character interface name, e.g. ``vsb1a2b3cd0`` for DUT port 0."""
    name = f"{NAME_PREFIX}{run_id}{role}{index}"
    if len(name) > 15:
        raise ValueError(f"interface name too long: {name}")
    return name


def run_id_of(name: str) -> str | None:
    """The run id embedded in a vsbench resource name, or None if it is not ours."""
    m = re.match(rf"^{NAME_PREFIX}-?([0-9a-f]{{6}})", name)
    return m.group(1) if m else None
