"""docs/security.rst names a test for each promise: every test it names exists, and the
page is in the documentation's table of contents."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "security.rst"


def named_tests() -> list[tuple[str, str]]:
    return re.findall(r"``(test_[a-z0-9_]+\.py)::(test_[a-z0-9_]+)``", PAGE.read_text())


def test_every_test_named_here_exists():
    named = named_tests()
    assert len(named) >= 20
    missing = []
    for module, name in named:
        path = ROOT / "tests" / "unit" / module
        defined = {n.name for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.FunctionDef)} \
            if path.is_file() else set()
        if name not in defined:
            missing.append(f"{module}::{name}")
    assert missing == []


def test_each_promise_names_a_test_and_the_page_is_linked():
    sections = re.split(r"\n[^\n]+\n-{3,}\n", PAGE.read_text())[1:]
    promises = sections[:-1]  # the last section lists what the review found
    assert len(promises) == 6
    assert all(re.search(r"``test_security_[a-z_]+\.py::test_", s) for s in promises)
    assert re.search(r"^\s+security$", (ROOT / "docs" / "index.rst").read_text(), re.M)
