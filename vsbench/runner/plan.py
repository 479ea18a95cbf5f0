"""A test plan: one testcase with one assignment of its parameter matrix, fully resolved.

The CLI turns ``--test`` names, the testcase files, the config layers and the matrix into a
list of plans; the runner executes them in order inside one run directory.
"""

from __future__ import annotations

from dataclasses import dataclass, field
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

    @property
    def label(self) -> str:
        """``name`` plus the variant, e.g. ``rule_complexity[dut.rules=1000]``."""
        if not self.variant:
            return self.name
        inner = ",".join(f"{k}={v}" for k, v in self.variant.items())
        return f"{self.name}[{inner}]"
