"""Terminal listings: ``vsbench --list`` and ``vsbench --list-plugins``."""

from __future__ import annotations

from typing import Iterable

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from vsbench.runner import plugins
from vsbench.runner.testcases import Testcase


#: From this many columns on no column is capped: piped output (200 columns, cli.main) keeps
#: each cell on one line where it fits, as scripts reading it expect.
WIDE = 120


def print_testcases(console: Console, cases: Iterable[Testcase]) -> None:
    """Every testcase with its description's first clause. Nothing is cut with an
    ellipsis: a narrow terminal wraps (a long name folds), and piped output (main() gives it
    200 columns) keeps every word, so a script or a grep sees the whole text."""
    cases = list(cases)
    table = Table(title="Testcases", show_lines=False)
    # Deployment and traffic type share a column so the description keeps room at 80
    # columns; a name longer than the cap folds, never cut.
    narrow = console.width < WIDE
    table.add_column("name", style="bold", overflow="fold", max_width=28 if narrow else None)
    table.add_column("deployment, traffic", overflow="fold", max_width=18 if narrow else None)
    table.add_column("description", overflow="fold", ratio=1)
    for case in cases:
        traffic = case.layer.get("traffic", {}).get("type", "")
        table.add_row(case.name, f"{case.deployment}, {traffic}", escape(_summary(case.description)))
    console.print(table)


def print_integration(console: Console, cases: Iterable) -> None:
    """Every integration testcase (``vsbench --integration``): name, steps, description."""
    table = Table(title="Integration testcases (deployment: clean)", show_lines=False)
    table.add_column("name", style="bold", overflow="fold")
    table.add_column("steps", justify="right")
    table.add_column("description", overflow="fold", ratio=1)
    for case in cases:
        table.add_row(case.name, str(len(case.steps)), escape(_summary(case.description)))
    console.print(table)


def _summary(text: str) -> str:
    """The description's first clause, whole: a list line, not the description (first
    sentences run to 580 characters; docs/catalogue.rst has them all). It used to be cut at
    72 characters with an ellipsis, mid-word, even when piped."""
    return text.split(". ")[0].split(" (")[0].split(", ")[0].rstrip(".")


def print_plugins(console: Console) -> None:
    """Every registered plugin: kind, name, the package that registers it (name and
    version), built-in or third-party, the plugin API it targets, and its description --
    or, in red, why it cannot be used (a load error, an incompatible API).

    Name and refusal reason are what a user acts on, so neither is ever cut: the package,
    version, origin and API share one column to leave them room, long words fold and every
    cell wraps (at 80 columns seven no_wrap columns cut names to ``linux_bri…`` and
    squeezed the reason out of sight)."""
    infos = plugins.describe_all()
    table = Table(title=f"Plugins (this vsbench provides plugin API {plugins.provided_api()})")
    narrow = console.width < WIDE
    table.add_column("kind", overflow="fold")
    # Capped on a narrow terminal so the reason keeps room; a longer name folds, never cut.
    table.add_column("name", style="bold", overflow="fold", max_width=22 if narrow else None)
    table.add_column("package", overflow="fold", max_width=18 if narrow else None)
    table.add_column("description, or why it cannot be used", overflow="fold", ratio=1)
    for info in infos:
        detail = escape(info.description)
        if info.problem:
            detail = f"[red]{escape(info.problem)}[/red]"
        package = f"{escape(info.distribution)} {escape(info.version)} {info.origin}, API {escape(info.api_version or '-')}"
        table.add_row(info.kind, info.name, package, detail)
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
