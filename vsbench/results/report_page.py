"""Page helpers of the HTML report: number formatting (units in cell or header) and the
shorthands that make its blocks (:mod:`vsbench.results.page_model`: tables, key/value
tables, badges, figures). Nothing here writes markup: the templates do, with autoescape.

Their own module so the report's section modules (:mod:`report_scaling`,
:mod:`report_traffic`) and :mod:`report_html`, which assembles the page model from them, all
import downwards from here instead of importing each other (an import cycle before).
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

import yaml

from vsbench.results.page_model import Badge, KeyValues, Table, figure  # noqa: F401 -- figure re-exported
from vsbench.results.report_data import RunFiles, finite

# -- formatting: every number with its unit in the cell or the column header -------------

DASH = "–"


def fmt_fixed(value: Any, digits: int = 0) -> str:
    """A number with thousands separators and ``digits`` decimals; a dash when unknown."""
    number = finite(value)
    return DASH if number is None else f"{number:,.{digits}f}"


def fmt_fps(value: Any) -> str:
    """Frames/s as a whole number: ``996,421``."""
    return fmt_fixed(value, 0)


def fmt_mpps(value_fps: Any) -> str:
    """Frames/s in millions, three decimals: ``0.996``."""
    number = finite(value_fps)
    return DASH if number is None else f"{number / 1e6:,.3f}"


def fmt_ratio_percent(ratio: Any) -> str:
    """A ratio (0..1) in percent, three significant digits; exact zero as ``0``."""
    number = finite(ratio)
    if number is None:
        return DASH
    if number == 0:
        return "0"
    return f"{number * 100:.3g}"


def fmt_seconds(value: Any) -> str:
    number = finite(value)
    if number is None:
        return DASH
    return f"{number:,.3f}" if number < 10 else f"{number:,.1f}"


def fmt_bytes(value: Any) -> str:
    number = finite(value)
    if number is None:
        return DASH
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if number >= size:
            return f"{number / size:,.1f} {unit}"
    return f"{number:,.0f} B"


def fmt_value(value: Any) -> str:
    """A config value as the user would write it in YAML."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return yaml.safe_dump(value, default_flow_style=True, sort_keys=False, width=10_000).strip()
    return str(value)


def table(headers: Sequence[tuple[str, ...]], rows: Iterable[Sequence[Any]], *, numeric_from: int = 1,
          numeric_to: int | None = None, css: str = "data", row_classes: Sequence[str] | None = None) -> Table:
    """A data table (:class:`~vsbench.results.page_model.Table`): ``headers`` are ``(label,
    unit)`` or ``(group, label, unit)``; columns ``numeric_from`` up to (not including)
    ``numeric_to`` are right-aligned numbers."""
    return Table(list(headers), [list(r) for r in rows], numeric_from, numeric_to, css, row_classes)


def kv_table(pairs: Iterable[tuple[str, Any]]) -> KeyValues:
    return KeyValues(list(pairs))


def badge(text: str, kind: str) -> Badge:
    return Badge(text, kind)


def plan_title(files: RunFiles, plan_index: Any) -> str:
    """A plan's label, with its index where two plans of the run share a label."""
    labels = [t.get("label") for t in files.tests]
    label = next((t.get("label") for t in files.tests if t.get("plan_index") == plan_index), None)
    if label is None:
        return f"plan {plan_index}"
    return f"{label} (plan {plan_index})" if labels.count(label) > 1 else str(label)
