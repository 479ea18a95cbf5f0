"""The import graph: no cycles inside ``vsbench``, and plugins reach only the contract.

Issue 11 items 1 and 2. Both read the source with :mod:`ast` (nothing is imported), so
a function-level ("lazy") import counts the same as one at the top: a cycle hidden inside a
function is still a cycle in the design.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONTRACT = "vsbench.interfaces"
PLUGIN_TREES = ("plugins", "examples")

def imported_modules(path: Path, *, submodules: bool = True) -> list[str]:
    """Absolute module names a file imports; with ``submodules``, ``from a import b`` also
    as ``a.b`` (b may be a submodule)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
            if submodules:
                found += [f"{node.module}.{alias.name}" for alias in node.names]
    return found


def module_graph(package_dir: Path) -> dict[str, set[str]]:
    """Module -> the modules of the same package it imports (a package is its __init__)."""
    files = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = path.relative_to(package_dir.parent).with_suffix("").parts
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return {module: {m for m in imported_modules(path) if m in files and m != module}
            for module, path in files.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_cycle_finder_finds_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles_in_vsbench():
    graph = module_graph(ROOT / "vsbench")
    assert len(graph) > 50, "the module graph was not built"
    found = cycles(graph)
    assert not found, "import cycles in vsbench/:\n" + "\n".join(" <-> ".join(c) for c in found)


def plugin_files() -> list[Path]:
    files = []
    for tree in PLUGIN_TREES:
        for path in sorted((ROOT / tree).rglob("*.py")) if (ROOT / tree).is_dir() else []:
            if ".venv" in path.parts or "build" in path.parts:
                continue
            if tree == "examples" and "tests" in path.relative_to(ROOT / tree).parts:
                continue  # a package's own tests may use the conformance kit; its plugin may not
            files.append(path)
    return files


def plugin_reach() -> set[tuple[str, str]]:
    """(file, module) for every vsbench module other than the contract a plugin imports."""
    reach = set()
    for path in plugin_files():
        for module in imported_modules(path, submodules=False):
            if module.split(".")[0] != "vsbench":
                continue
            if module == CONTRACT or module.startswith(CONTRACT + "."):
                continue
            reach.add((str(path.relative_to(ROOT)), module))
    return reach


def test_plugin_files_are_found():
    names = {str(p.relative_to(ROOT)) for p in plugin_files()}
    assert "plugins/vswitch/ovs/switch.py" in names
    for example in ("vswitch", "vnf", "trafficgen"):
        assert any(n.startswith(f"examples/vsbench-example-{example}/src/") for n in names), example


def test_plugins_import_only_the_contract():
    reach = sorted(plugin_reach())
    assert not reach, ("plugins may import only vsbench.interfaces (the plugin contract); "
                       "imports of other vsbench modules:\n" + "\n".join(f"{f} imports {m}" for f, m in reach))


def contract_names_used(path: Path) -> list[tuple[str, str]]:
    """(module, name) of every ``from vsbench.interfaces... import name`` in ``path``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and (
                node.module == CONTRACT or node.module.startswith(CONTRACT + ".")):
            found += [(node.module, alias.name) for alias in node.names]
    return found


def test_plugins_use_only_published_names():
    """What a contract module lists in ``__all__`` is the API; a plugin importing anything
    else from it (a helper the module happens to import) would break when that changes."""
    import importlib

    wrong = []
    for path in plugin_files():
        for module, name in contract_names_used(path):
            mod = importlib.import_module(module)
            public = getattr(mod, "__all__", None)
            if public is None:
                continue  # a module of the contract's own definitions: every public name
            if name not in public and not _is_submodule(module, name):
                wrong.append(f"{path.relative_to(ROOT)}: {name} is not in {module}.__all__")
    assert not wrong, "\n".join(wrong)


def _is_submodule(module: str, name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(f"{module}.{name}") is not None
