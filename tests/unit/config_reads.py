"""Which keys of the resolved configuration the code reads, found by reading the code.

A static scan, so that a key read on a rarely taken path counts as much as one read on
every run. It follows the idioms this code base uses to reach a section and its keys:

* a root is any name or attribute called ``config`` or ``run_config`` (the resolved
  configuration, or a plan's);
* ``X.get("k")``, ``X["k"]``, ``X.get("k") or {}``, ``dict(X)`` extend or keep X's path;
* a local variable, a function's return value or a property keeps the path it was
  assigned from (``traffic = config.get("traffic") or {}``; ``def _dut(self): return
  dict(self.config.get("dut") or {})``; ``job.traffic``);
* a function called with a section as its first argument reads through its first
  parameter (``flow_fields(traffic.get("fields"))``);
* ``for key in KEYS: section.get(key)`` over a tuple of string constants reads each key;
* ``Cls(**section)`` reads every key of the section (marked ``path.*``).

What the scan cannot follow is reported as schema keys nobody reads; the test that uses
it then says where to look. Kept in tests/: it is a check on the code, not part of it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

ROOT_NAMES = frozenset({"config", "run_config"})
WRAPPERS = frozenset({"dict", "_mapping", "Mapping", "MappingProxyType"})

Path_ = tuple[str, ...]


@dataclass
class Scan:
    """What one pass over the code found: key paths read, and where."""

    reads: dict[str, set[str]] = field(default_factory=dict)
    #: Functions and properties whose return value is a config path, by name.
    returns: dict[str, Path_] = field(default_factory=dict)
    #: Functions whose first parameter receives a config path, by name.
    first_params: dict[str, Path_] = field(default_factory=dict)
    #: Functions that read ``path[param]``: called by name with a constant key, they read
    #: ``path.key`` (``def get(key, default): return traffic.get(key)``).
    key_funcs: dict[str, tuple[Path_, int]] = field(default_factory=dict)
    #: Module-level tuples of string constants, by name (``_SIMPLE_KEYS``).
    key_tuples: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: ``ast.walk`` of each scope, by node id: every scope is walked in three rounds, and a
    #: module's walk holds its functions' (walking them afresh made this test 40 s long).
    walks: dict[int, list[ast.AST]] = field(default_factory=dict)

    def walk(self, node: ast.AST) -> list[ast.AST]:
        found = self.walks.get(id(node))
        if found is None:
            found = self.walks[id(node)] = list(ast.walk(node))
        return found

    def add(self, path: Path_, where: str) -> None:
        if path:
            self.reads.setdefault(".".join(path), set()).add(where)


def _str_tuple(node: ast.AST) -> tuple[str, ...] | None:
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and node.elts and all(
            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
        return tuple(e.value for e in node.elts)  # type: ignore[attr-defined]
    return None


class _Resolver:
    def __init__(self, scan: Scan, env: dict[str, Path_], loop_keys: dict[str, tuple[str, ...]]) -> None:
        self.scan, self.env, self.loop_keys = scan, env, loop_keys

    def keys(self, node: ast.AST) -> tuple[str, ...] | None:
        """The string key(s) an index expression stands for."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return (node.value,)
        if isinstance(node, ast.Name) and node.id in self.loop_keys:
            return self.loop_keys[node.id]
        return None

    def paths(self, e: ast.AST) -> list[Path_]:
        """Every config path ``e`` may evaluate to ([] when it is not config)."""
        if isinstance(e, ast.Name):
            if e.id in self.env:
                return [self.env[e.id]]
            return [()] if e.id in ROOT_NAMES else []
        if isinstance(e, ast.Attribute):
            if e.attr in ROOT_NAMES:
                return [()]
            if e.attr in self.scan.returns:
                return [self.scan.returns[e.attr]]
            return []
        if isinstance(e, ast.BoolOp) and isinstance(e.op, ast.Or):
            return self.paths(e.values[0])
        if isinstance(e, ast.Call):
            f = e.func
            if isinstance(f, ast.Attribute) and f.attr == "get" and e.args:
                keys = self.keys(e.args[0])
                return [p + (k,) for p in self.paths(f.value) for k in keys or ()]
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
            if name in WRAPPERS and e.args:
                return self.paths(e.args[0])
            if name in self.scan.returns:
                return [self.scan.returns[name]]
            return []
        if isinstance(e, ast.Subscript):
            keys = self.keys(e.slice)
            return [p + (k,) for p in self.paths(e.value) for k in keys or ()]
        if isinstance(e, ast.DictComp) and len(e.generators) == 1:
            it = e.generators[0].iter  # {k: v for k, v in X.items() if ...} keeps X's path
            if isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and it.func.attr == "items":
                return self.paths(it.func.value)
        return []


def _loop_keys(scope: ast.AST, scan: Scan) -> dict[str, tuple[str, ...]]:
    """Loop variables that run over tuples of string keys, in ``scope``."""
    out: dict[str, tuple[str, ...]] = {}
    for node in scan.walk(scope):
        targets = []
        if isinstance(node, (ast.For, ast.comprehension)):
            targets = [(node.target, node.iter)]
        for target, it in targets:
            keys = _str_tuple(it) or (scan.key_tuples.get(it.id) if isinstance(it, ast.Name) else None)
            if keys and isinstance(target, ast.Name):
                out[target.id] = keys
    return out


def _scan_scope(scope: ast.AST, scan: Scan, where: str, record: bool) -> None:
    env: dict[str, Path_] = {}
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        params = [a.arg for a in scope.args.args if a.arg not in ("self", "cls")]
        if params and scope.name in scan.first_params:
            env[params[0]] = scan.first_params[scope.name]
    r = _Resolver(scan, env, _loop_keys(scope, scan))
    body = scan.walk(scope)
    for _ in range(3):  # chains of assignments, in any order
        for node in body:
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                paths = r.paths(node.value)
                if len(targets) == 1 and isinstance(targets[0], ast.Name) and paths and paths[0]:
                    env[targets[0].id] = paths[0]
    for inner in body:
        if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)):
            params = [a.arg for a in inner.args.args]
            for node in scan.walk(inner):
                index = None
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" \
                        and node.args and isinstance(node.args[0], ast.Name):
                    index, target = node.args[0].id, node.func.value
                elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Name):
                    index, target = node.slice.id, node.value
                if index in params and index not in r.loop_keys:
                    for p in r.paths(target):
                        if p:
                            scan.key_funcs.setdefault(inner.name, (p, params.index(index)))
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        for node in body:
            if isinstance(node, ast.Return) and node.value is not None:
                paths = r.paths(node.value)
                if paths and paths[0]:
                    scan.returns.setdefault(scope.name, paths[0])
    for node in body:
        if isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
            if name and name not in WRAPPERS and name != "get" and node.args:
                paths = r.paths(node.args[0])
                if paths and paths[0]:
                    scan.first_params.setdefault(name, paths[0])
            for kw in node.keywords:
                if kw.arg is None and record:
                    for p in r.paths(kw.value):
                        scan.add(p + ("*",), f"{where}:{node.lineno}")
        if record and isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in scan.key_funcs:
            path, index = scan.key_funcs[node.func.id]
            if len(node.args) > index:
                for key in r.keys(node.args[index]) or ():
                    scan.add(path + (key,), f"{where}:{node.lineno}")
        if record and isinstance(node, (ast.Call, ast.Subscript)):
            for p in r.paths(node):
                scan.add(p, f"{where}:{node.lineno}")


def scan_code(roots: list[Path], base: Path) -> Scan:
    """Scan every ``*.py`` under ``roots``; paths in ``reads`` are dotted config keys."""
    scan = Scan()
    trees = []
    for root in roots:
        for file in sorted(root.rglob("*.py")):
            tree = ast.parse(file.read_text(), filename=str(file))
            trees.append((str(file.relative_to(base)), tree))
            for node in tree.body:
                if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                    keys = _str_tuple(node.value)
                    if keys:
                        scan.key_tuples[node.targets[0].id] = keys
    scopes = [(where, node) for where, tree in trees for node in ast.walk(tree)
              if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef))]
    for rounds_left in (2, 1, 0):  # learn returns and parameters first, then record reads
        for where, scope in scopes:
            _scan_scope(scope, scan, where, record=rounds_left == 0)
    return scan


def schema_paths(node: dict, prefix: Path_ = ()) -> set[str]:
    """Dotted paths of every property the schema defines (objects with ``properties``)."""
    out: set[str] = set()
    for key, sub in (node.get("properties") or {}).items():
        path = prefix + (key,)
        out.add(".".join(path))
        if isinstance(sub, dict) and "properties" in sub:
            out |= schema_paths(sub, path)
    return out
