"""Terminal listings: ``vsbench --list`` and ``vsbench --list-plugins``."""

from __future__ import annotations

from typing import Iterable

from rich.console import Console
from rich.table import Table

from vsbench.runner import plugins
from vsbench.runner.testcases import Testcase


def print_testcases(console: Console, cases: Iterable[Testcase]) -> None:
    cases = list(cases)
    table = Table(title="Testcases", show_lines=False)
    widest = max((len(c.name) for c in cases), default=4)
    table.add_column("name", style="bold", no_wrap=True, min_width=widest)
    table.add_column("deployment", no_wrap=True)
    table.add_column("traffic", no_wrap=True, min_width=18)
    table.add_column("description")
    for case in cases:
        traffic = case.layer.get("traffic", {}).get("type", "")
        table.add_row(case.name, case.deployment, traffic, _summary(case.description))
    console.print(table)


def _summary(text: str, limit: int = 72) -> str:
    """The description's first clause, short enough for one table line."""
    first = text.split(". ")[0].split(" (")[0].split(", ")[0].rstrip(".")
    return first if len(first) <= limit else first[: limit - 1] + "…"


def print_plugins(console: Console) -> None:
    table = Table(title="Plugins")
    table.add_column("kind", no_wrap=True)
    table.add_column("name", style="bold", no_wrap=True)
    table.add_column("description")
    table.add_column("from", no_wrap=True)
    for info in plugins.describe_all():
        if info.load_error:
            table.add_row(info.kind, info.name, f"[red]cannot load: {info.load_error}[/red]", "")
        else:
            table.add_row(info.kind, info.name, info.description, info.distribution)
    console.print(table)
