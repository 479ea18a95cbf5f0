"""Terminal listings: ``vsbench --list`` and ``vsbench --list-plugins``."""

from __future__ import annotations

from typing import Iterable

from rich.console import Console
from rich.markup import escape
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
    """Every registered plugin: kind, name, the package that registers it (name and
    version), built-in or third-party, the plugin API it targets, and its description --
    or, in red, why it cannot be used (a load error, an incompatible API)."""
    infos = plugins.describe_all()
    table = Table(title=f"Plugins (this vsbench provides plugin API {plugins.provided_api()})")
    table.add_column("kind", no_wrap=True)
    table.add_column("name", style="bold", no_wrap=True)
    table.add_column("package", no_wrap=True)
    table.add_column("version", no_wrap=True)
    table.add_column("distribution", no_wrap=True)
    table.add_column("api", no_wrap=True)
    table.add_column("description")
    for info in infos:
        detail = escape(info.description)
        if info.problem:
            detail = f"[red]{escape(info.problem)}[/red]"
        table.add_row(info.kind, info.name, escape(info.distribution), escape(info.version), info.origin,
                      escape(info.api_version or "-"), detail)
    console.print(table)
    unusable = [i for i in infos if not i.usable]
    if unusable:
        console.print(f"{len(unusable)} plugin(s) cannot be used here (see the red lines); "
                      "the others are unaffected.", markup=False, highlight=False)


def print_suites(console: Console, suites: Iterable, problems: Iterable[str] = ()) -> None:
    """Every registered suite: name, the report it reproduces, its ids, where it comes from,
    and its profiles (the quick one's budget)."""
    suites = sorted(suites, key=lambda s: s.name)
    table = Table(title="Suites (vsbench --suite NAME --profile quick|full)")
    widest = max((len(s.name) for s in suites), default=4)
    table.add_column("name", style="bold", no_wrap=True, min_width=widest)
    table.add_column("ids", no_wrap=True, justify="right")
    table.add_column("from", no_wrap=True)
    table.add_column("reproduces")
    for suite in suites:
        quick = suite.profiles.get("quick")
        budget = f" (quick: <= {quick.budget_minutes:g} min)" if quick and quick.budget_minutes else ""
        table.add_row(suite.name, str(len(suite.tables)), escape(suite.origin), escape(suite.title) + budget)
    console.print(table)
    for problem in problems:
        console.print(f"[red]{escape(problem)}[/red]")
