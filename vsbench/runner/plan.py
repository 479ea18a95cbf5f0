"""A test plan: one testcase with one assignment of its parameter matrix, fully resolved.

The CLI turns ``--test`` names, the testcase files, the config layers and the matrix into a
list of plans; the runner executes them in order inside one run directory.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any


@dataclass(frozen=True)
class TestPlan:
    """``name`` is the testcase name; ``variant`` the matrix values of this plan (empty
    when the testcase has no matrix), e.g. ``{"dut.rules": 1000, "traffic.flows": 1000}``;
    ``config`` the fully resolved, schema-valid configuration (plain dicts/lists/scalars)."""

    __test__ = False  # not a pytest test class

    name: str
    config: dict[str, Any]
    variant: dict[str, Any] = field(default_factory=dict)
    #: (i, K): the i-th of K repeats of this plan (``--repeat K``), None when not repeated.
    repeat: tuple[int, int] | None = None

    @property
    def label(self) -> str:
        """``name`` plus the variant, e.g. ``rule_complexity[dut.rules=1000]``."""
        if not self.variant:
            return self.name
        inner = ",".join(f"{k}={v}" for k, v in self.variant.items())
        return f"{self.name}[{inner}]"


def repeated(plans: list[TestPlan], count: int) -> list[TestPlan]:
    """``plans`` ``count`` times, in rounds (every plan once, then again ...), so that a
    slow drift of the machine spreads over every plan instead of biasing the last one."""
    if count <= 1:
        return list(plans)
    return [replace(p, repeat=(round_ + 1, count)) for round_ in range(count) for p in plans]
