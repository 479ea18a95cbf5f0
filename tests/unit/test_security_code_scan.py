"""An AST scan of vsbench/ and plugins/ for the calls that hand data to a shell or an
interpreter (docs/security.rst): ``shell=True`` on any call, ``os.system``, ``os.popen``,
``eval``, ``exec``, ``yaml.load`` without a safe loader, ``yaml.unsafe_load``, ``pickle``
loads. Every subprocess takes an argv list, so a value with spaces, quotes or ``;`` in a
setting is one argument, never shell syntax."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("vsbench", "plugins")
SAFE_LOADERS = {"SafeLoader", "CSafeLoader", "BaseLoader", "CBaseLoader"}
FORBIDDEN_CALLS = {("os", "system"), ("os", "popen"), ("yaml", "unsafe_load"), ("yaml", "full_load"),
                   ("pickle", "loads"), ("pickle", "load"), ("marshal", "loads")}
FORBIDDEN_BUILTINS = {"eval", "exec"}


def _dotted(node: ast.AST) -> tuple[str, ...]:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return tuple(reversed(parts))


def findings(source: str, where: str) -> list[str]:
    """What the scan objects to in ``source``, as ``where:line: why``."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        name = _dotted(node.func)
        for kw in node.keywords:
            if kw.arg == "shell" and not (isinstance(kw.value, ast.Constant) and kw.value.value is False):
                out.append(f"{where}:{node.lineno}: shell={ast.unparse(kw.value)}")
        if name[-2:] in FORBIDDEN_CALLS:
            out.append(f"{where}:{node.lineno}: {'.'.join(name)}")
        if len(name) == 1 and name[0] in FORBIDDEN_BUILTINS:
            out.append(f"{where}:{node.lineno}: {name[0]}()")
        if name[-2:] == ("yaml", "load"):
            loader = next((kw.value for kw in node.keywords if kw.arg == "Loader"),
                          node.args[1] if len(node.args) > 1 else None)
            if loader is None or _dotted(loader)[-1:] not in {(s,) for s in SAFE_LOADERS}:
                out.append(f"{where}:{node.lineno}: yaml.load without a safe loader")
    return out


def test_no_shell_eval_or_unsafe_yaml_in_vsbench_and_plugins():
    files = [p for d in SCANNED for p in sorted((ROOT / d).rglob("*.py"))]
    assert len(files) > 100
    found = [f for p in files for f in findings(p.read_text(encoding="utf-8"), str(p.relative_to(ROOT)))]
    assert found == []


@pytest.mark.parametrize("source", [
    "import subprocess\nsubprocess.run('ls ' + x, shell=True)",
    "subprocess.Popen(cmd, shell=flag)",
    "import os\nos.system('rm -rf ' + d)",
    "os.popen(c)",
    "eval(text)",
    "exec(code)",
    "yaml.load(f)",
    "yaml.load(f, Loader=yaml.Loader)",
    "yaml.load(f, yaml.FullLoader)",
    "yaml.unsafe_load(f)",
    "pickle.loads(b)",
])
def test_the_scan_sees_each_kind(source):
    assert findings(source, "x.py"), source


@pytest.mark.parametrize("source", [
    "subprocess.run(['ls', d], shell=False)",
    "yaml.load(f, Loader=yaml.SafeLoader)",
    "yaml.safe_load(f)",
    "ast.literal_eval(s)",
])
def test_the_scan_passes_the_safe_forms(source):
    assert findings(source, "x.py") == []
