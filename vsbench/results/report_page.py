"""Page helpers of the HTML report: number formatting (units in cell or header), escaping,
tables and figures.

Their own module so the report's section modules (:mod:`report_scaling`,
:mod:`report_traffic`) and :mod:`report_html`, which assembles the page from them, all import
downwards from here instead of importing each other (an import cycle before).
"""

from __future__ import annotations

import html
from typing import Any, Iterable, Sequence

import yaml

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


def e(text: Any) -> str:
    """HTML-escape anything read from a file."""
    return html.escape(str(text), quote=True)


class Raw(str):
    """Markup built here from escaped parts; table cells that are already HTML."""


def cell(value: Any) -> str:
    return value if isinstance(value, Raw) else e(value)


def table(headers: Sequence[tuple[str, ...]], rows: Iterable[Sequence[Any]], *, numeric_from: int = 1,
          numeric_to: int | None = None, css: str = "data", row_classes: Sequence[str] | None = None) -> str:
    """A table in a horizontally scrolling box.

    ``headers`` are ``(label, unit)`` or ``(group, label, unit)``; the unit is shown under
    the label and consecutive columns of one group share a spanning group header. Columns
    ``numeric_from`` up to (not including) ``numeric_to`` are right-aligned numbers.
    """
    def numeric(i: int) -> bool:
        return i >= numeric_from and (numeric_to is None or i < numeric_to)

    def th(i: int, label: str, unit: str, extra: str = "") -> str:
        return (f'<th class="{"num" if numeric(i) else ""}"{extra}>{e(label)}'
                + (f'<span class="unit">{e(unit)}</span>' if unit else "") + "</th>")

    grouped = any(len(h) == 3 for h in headers)
    if not grouped:
        head = "<tr>" + "".join(th(i, h[0], h[1]) for i, h in enumerate(headers)) + "</tr>"
    else:
        top, bottom, i = [], [], 0
        while i < len(headers):
            if len(headers[i]) == 3:
                group = headers[i][0]
                j = i
                while j < len(headers) and len(headers[j]) == 3 and headers[j][0] == group:
                    bottom.append(th(j, headers[j][1], headers[j][2]))
                    j += 1
                top.append(f'<th class="group" colspan="{j - i}">{e(group)}</th>')
                i = j
            else:
                top.append(th(i, headers[i][0], headers[i][1], ' rowspan="2"'))
                i += 1
        head = f"<tr>{''.join(top)}</tr><tr>{''.join(bottom)}</tr>"
    body = []
    for r, row in enumerate(rows):
        klass = f' class="{e(row_classes[r])}"' if row_classes and row_classes[r] else ""
        tds = "".join(f'<td class="{"num" if numeric(i) else ""}">{cell(v)}</td>' for i, v in enumerate(row))
        body.append(f"<tr{klass}>{tds}</tr>")
    return (f'<div class="scroll"><table class="{css}"><thead>{head}</thead>'
            f'<tbody>{"".join(body)}</tbody></table></div>')


def kv_table(pairs: Iterable[tuple[str, Any]]) -> str:
    rows = "".join(f"<tr><th>{e(k)}</th><td>{cell(v)}</td></tr>" for k, v in pairs)
    return f'<table class="kv"><tbody>{rows}</tbody></table>'


def badge(text: str, kind: str) -> Raw:
    return Raw(f'<span class="badge {e(kind)}">{e(text)}</span>')


def figure(uri: str | None, caption: str) -> str:
    if not uri:
        return ""
    return (f'<figure><img src="{e(uri)}" alt="{e(caption)}"><figcaption>{e(caption)}</figcaption>'
            "</figure>")


def plan_title(files: RunFiles, plan_index: Any) -> str:
    """A plan's label, with its index where two plans of the run share a label."""
    labels = [t.get("label") for t in files.tests]
    label = next((t.get("label") for t in files.tests if t.get("plan_index") == plan_index), None)
    if label is None:
        return f"plan {plan_index}"
    return f"{label} (plan {plan_index})" if labels.count(label) > 1 else str(label)
