"""Imports point down the layers of DESIGN.md, and the core never imports a plugin module."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Highest first; a module may import its own layer and any layer after it.
LAYERS = ["cli", "conformance", "suite", "runner", "deployment", "measurement", "results", "interfaces", "system"]
PURE = ["vsbench.measurement.search", "vsbench.measurement.metrics"]
IO_MODULES = {"subprocess", "socket", "os", "shutil", "pathlib", "pyroute2", "zmq", "requests"}


def imports_of(path: Path) -> list[tuple[str, int]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.module, node.lineno))
    return found


def layer_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "vsbench" or len(parts) < 2:
        return None
    return parts[1] if parts[1] in LAYERS else None


def core_modules():
    for path in sorted((ROOT / "vsbench").rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        yield ".".join(rel.parts), path


def test_imports_point_down():
    violations = []
    for module, path in core_modules():
        own = layer_of(module)
        if own is None:
            continue
        for imported, line in imports_of(path):
            target = layer_of(imported)
            if target is not None and LAYERS.index(target) < LAYERS.index(own):
                violations.append(f"{path.relative_to(ROOT)}:{line} ({own}) imports {imported} ({target})")
    assert not violations, "upward imports:\n" + "\n".join(violations)


def test_core_never_imports_plugins_by_name():
    offenders = [
        f"{path.relative_to(ROOT)}:{line} imports {imported}"
        for module, path in core_modules()
        if not module.startswith("vsbench.conformance")
        for imported, line in imports_of(path)
        if imported.split(".")[0] == "vsbench_plugins"
    ]
    assert not offenders, "\n".join(offenders)


def test_search_and_metrics_do_no_io():
    offenders = []
    for module, path in core_modules():
        if not any(module.startswith(p) for p in PURE):
            continue
        for imported, line in imports_of(path):
            if imported.split(".")[0] in IO_MODULES:
                offenders.append(f"{path.relative_to(ROOT)}:{line} imports {imported}")
    assert not offenders, "pure modules doing I/O:\n" + "\n".join(offenders)
