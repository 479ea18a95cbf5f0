"""The building blocks of every HTML page vsbench writes (report, compare, trend): plain
data that the Jinja2 templates in ``templates/`` lay out. Pure.

A page module builds a list of blocks -- headings, paragraphs, key/value tables, data
tables, figures, note lists -- from the run's data; every number is formatted there, with
its unit. The templates only arrange and escape (autoescape is on): no markup is built in
Python, so a value read from a file can never become markup.

Table cells are text, or one of the small cell types below (a badge, a link, a monospace
or emphasised text, several lines, a list of notes).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence, Union


# -- cells ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Badge:
    text: str
    kind: str  # ok | warning | error | info
    cell_kind = "badge"


@dataclass(frozen=True)
class Link:
    text: str
    href: str
    after: str = ""  # plain text after the link
    cell_kind = "link"


@dataclass(frozen=True)
class Mono:
    text: str
    cell_kind = "mono"


@dataclass(frozen=True)
class Em:
    text: str
    cell_kind = "em"


@dataclass(frozen=True)
class Lines:
    """Several lines in one cell."""

    items: tuple[str, ...]
    cell_kind = "lines"


@dataclass(frozen=True)
class NoteItem:
    """One validity note: ``where`` is shown in bold before it (``href`` links it)."""

    severity: str
    text: str
    where: str | None = None
    href: str | None = None


@dataclass(frozen=True)
class NoteCell:
    items: tuple[NoteItem, ...]
    cell_kind = "notes"


@dataclass(frozen=True)
class Bar:
    """A signed percentage drawn as a bar in a cell (the compare page's gain column)."""

    percent: float | None
    text: str
    kind: str  # better | worse | noise | unknown
    scale_percent: float = 100.0
    cell_kind = "bar"

    @property
    def width(self) -> float:
        if self.percent is None or not self.scale_percent:
            return 0.0
        return min(50.0, 50.0 * abs(self.percent) / self.scale_percent)


Cell = Union[str, Badge, Link, Mono, Em, Lines, NoteCell, Bar]


# -- blocks --------------------------------------------------------------------------------


@dataclass(frozen=True)
class HeadCell:
    label: str
    unit: str = ""
    colspan: int = 1
    rowspan: int = 1
    numeric: bool = False
    group: bool = False


@dataclass
class Table:
    """A data table in a scrolling box.

    ``headers`` are ``(label, unit)`` or ``(group, label, unit)``: consecutive columns of
    one group share a spanning header. Columns ``numeric_from`` up to (not including)
    ``numeric_to`` are right-aligned numbers.
    """

    headers: Sequence[tuple[str, ...]]
    rows: list[list[Cell]]
    numeric_from: int = 1
    numeric_to: int | None = None
    css: str = "data"
    row_classes: Sequence[str] | None = None
    kind = "table"

    def numeric(self, i: int) -> bool:
        return i >= self.numeric_from and (self.numeric_to is None or i < self.numeric_to)

    def head_rows(self) -> list[list[HeadCell]]:
        headers = self.headers
        if not any(len(h) == 3 for h in headers):
            return [[HeadCell(h[0], h[1] if len(h) > 1 else "", numeric=self.numeric(i)) for i, h in enumerate(headers)]]
        top: list[HeadCell] = []
        bottom: list[HeadCell] = []
        i = 0
        while i < len(headers):
            if len(headers[i]) == 3:
                group = headers[i][0]
                j = i
                while j < len(headers) and len(headers[j]) == 3 and headers[j][0] == group:
                    bottom.append(HeadCell(headers[j][1], headers[j][2], numeric=self.numeric(j)))
                    j += 1
                top.append(HeadCell(group, colspan=j - i, group=True))
                i = j
            else:
                top.append(HeadCell(headers[i][0], headers[i][1], rowspan=2, numeric=self.numeric(i)))
                i += 1
        return [top, bottom]

    def row_class(self, r: int) -> str:
        return self.row_classes[r] if self.row_classes and r < len(self.row_classes) else ""


@dataclass
class KeyValues:
    pairs: list[tuple[str, Cell]]
    kind = "kv"


@dataclass
class Heading:
    level: int
    text: str
    badge: Badge | None = None
    kind = "heading"


@dataclass
class Paragraph:
    """Text, optionally with inline code spans: ``parts`` alternate text and code."""

    parts: tuple[str, ...]
    css: str = ""
    kind = "paragraph"

    @classmethod
    def of(cls, text: str, css: str = "") -> "Paragraph":
        return cls((text,), css)


@dataclass
class Notes:
    items: list[NoteItem]
    kind = "notes"


@dataclass
class Figure:
    uri: str
    caption: str
    kind = "figure"


@dataclass
class Details:
    """Folded content: preformatted ``text``, or ``blocks``."""

    summary: str
    text: str = ""
    blocks: list[Any] = field(default_factory=list)
    kind = "details"


@dataclass
class Group:
    """Blocks side by side (columns) or in a section with an anchor."""

    blocks: list[Any]
    layout: str = "cols"  # cols | section | col | footer
    anchor: str | None = None
    css: str = ""
    kind = "group"


Block = Union[Table, KeyValues, Heading, Paragraph, Notes, Figure, Details, Group]


def compact(blocks: Sequence[Any]) -> list[Any]:
    """``blocks`` without the Nones and empty lists that optional parts leave."""
    out: list[Any] = []
    for block in blocks:
        if block is None or block == []:
            continue
        if isinstance(block, list):
            out.extend(compact(block))
        else:
            out.append(block)
    return out


def figure(uri: str | None, caption: str) -> Figure | None:
    return Figure(uri, caption) if uri else None


@dataclass
class Page:
    """One HTML page: its title, its heading line, what is under it, and the blocks."""

    title: str
    heading: str
    heading_mono: str = ""
    subtitle: str = ""
    blocks: list[Any] = field(default_factory=list)
