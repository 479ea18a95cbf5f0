"""Sphinx directives that generate vsbench's reference pages from the code itself, so the
docs cannot drift from it (``sphinx-build -W`` runs in the tests):

``.. vsbench-testcases::``
    the testcase catalogue: every ``testcases/*.yaml``, validated by the same loader the CLI
    uses, with its description, deployment, traffic, search, matrix and thresholds;
``.. vsbench-cli::``
    every command's ``--help`` (``vsbench.cli.main.PARSERS``), subcommands included.
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


def setup(app):
    app.add_directive("vsbench-testcases", TestcaseCatalogue)
    app.add_directive("vsbench-cli", CommandLine)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
