"""Sphinx directives that generate vsbench's reference pages from the code itself, so the
docs cannot drift from it (``sphinx-build -W`` runs in the tests):

``.. vsbench-testcases::``
    the testcase catalogue: every ``testcases/*.yaml``, validated by the same loader the CLI
    uses, with its description, deployment, traffic, search, matrix and thresholds;
``.. vsbench-cli::``
    every command's ``--help`` (``vsbench.cli.main.PARSERS``), subcommands included;
``.. vsbench-suite:: NAME``
    one suite's runs (testcase, plugins, parameters per profile, what the host must have) and
    ids (what each table shows and where the report prints its own figures), from the suite
    file through the same loader ``vsbench --suite`` uses.
"""

from __future__ import annotations

import argparse
import os

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles


def _rst(directive: SphinxDirective, lines: list[str]) -> list[nodes.Node]:
    """Generated reStructuredText (with section titles) parsed in place of the directive."""
    container = nodes.section()
    container.document = directive.state.document
    nested_parse_with_titles(directive.state, StringList(lines, source="vsbench_docs"), container)
    return container.children


def _scalar(value) -> str:
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    if isinstance(value, dict):
        return "; ".join(f"{k}: {_scalar(v)}" for k, v in value.items())
    return str(value)


class TestcaseCatalogue(SphinxDirective):
    def run(self):
        from vsbench.runner import testcases

        folder = testcases.default_testcase_dir()
        lines: list[str] = []
        for case in testcases.load_all(folder):
            self.env.note_dependency(str(case.path))
            traffic = case.layer.get("traffic") or {}
            lines += [case.name, "-" * len(case.name), "", case.description, "",
                      f"* **Deployment:** ``{case.deployment}``",
                      f"* **Traffic type:** ``{traffic.get('type', 'rfc2544_throughput')}``"]
            if traffic.get("frame_sizes"):
                lines.append(f"* **Frame sizes:** {_scalar(traffic['frame_sizes'])} B")
            for key in ("flows", "bidirectional", "trial_duration_s"):
                if key in traffic:
                    lines.append(f"* **traffic.{key}:** ``{_scalar(traffic[key])}``")
            for section in ("search", "latency", "dut", "vnf", "thresholds"):
                if case.layer.get(section):
                    lines.append(f"* **{section}:** ``{_scalar(case.layer[section])}``")
            for path, values in case.matrix.items():
                lines.append(f"* **Matrix** ``{path}``: {_scalar(values)} (one plan each)")
            for target, source in case.links.items():
                lines.append(f"* **Link:** ``{target}`` = ``{source}``")
            lines += ["", "Run it:", "", ".. code-block:: text", "", f"    vsbench --test {case.name}", ""]
        return _rst(self, lines)


def _parser_sections(title: str, parser: argparse.ArgumentParser, level: str) -> list[str]:
    parser.prog = title
    help_text = parser.format_help()
    lines = [title, level * len(title), "", ".. code-block:: text", ""]
    lines += [f"    {line}" if line else "" for line in help_text.splitlines()]
    lines.append("")
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                lines += _parser_sections(f"{title} {name}", sub, "^")
    return lines


class CommandLine(SphinxDirective):
    def run(self):
        from vsbench.cli import main

        os.environ.setdefault("COLUMNS", "100")  # argparse wraps help to the terminal width
        lines: list[str] = []
        for title, build in main.PARSERS.items():
            lines += _parser_sections(title, build(), "~")
        return _rst(self, lines)


def _params(params) -> str:
    return "; ".join(f"``{k}={_scalar(v)}``" for k, v in params.items()) or "none"


class SuiteReference(SphinxDirective):
    required_arguments = 1

    def run(self):
        from vsbench.suite import catalog, metrics

        suite = catalog.find(self.arguments[0])
        self.env.note_dependency(str(suite.path))
        lines = ["Runs", "~~~~", "",
                 f"Every profile's parameters: quick: {_params(suite.profiles['quick'].params)}; "
                 f"full: {_params(suite.profiles['full'].params)}.", ""]
        for run in suite.runs:
            plugins = ", ".join(f"{k} ``{v}``" for k, v in run.flags().items() if v) or "the testcase's plugins"
            lines += [f"* **{run.name}**: testcase ``{run.test}``, {plugins}; parameters {_params(run.params)}"]
            for name, profile in run.profiles.items():
                what = _params(profile.params) if profile.params else ""
                if profile.skip:
                    what = f"left out ({profile.skip})"
                if profile.repeat:
                    what += f" x{profile.repeat} repeats"
                lines.append(f"  - {name}: {what or 'as above'}")
            if run.requires:
                lines.append(f"  - needs: {_scalar(run.requires)}")
            if run.note:
                lines.append(f"  - {run.note}")
        lines += ["", "Ids", "~~~", ""]
        for table in suite.tables:
            columns = ", ".join(f"{metrics.describe(c).label} ({metrics.describe(c).unit})" for c in table.columns)
            series = ", ".join(f"{s.label} (run {s.run})" for s in table.series)
            lines += [f"* **{table.id}** -- {table.title}. Rows by {', '.join(table.rows)}; series: {series}; "
                      f"columns: {columns}."]
            ref = table.reference
            if ref is not None:
                lines.append(f"  The report's figures: {ref.source or 'not printed'}"
                             + ("" if ref.printed else " (a chart only: none to set beside ours)") + ".")
        return _rst(self, lines)


def setup(app):
    app.add_directive("vsbench-testcases", TestcaseCatalogue)
    app.add_directive("vsbench-cli", CommandLine)
    app.add_directive("vsbench-suite", SuiteReference)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
