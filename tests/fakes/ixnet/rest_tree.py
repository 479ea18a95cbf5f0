"""The in-memory object tree of one fake IxNetwork session, addressed the way the REST API is.

IxNetwork exposes its configuration as a tree of nodes under
``/api/v1/sessions/<id>/ixnetwork``: a *list* child is a collection whose items carry a
numeric ``id`` (``.../vport/1``), a *single* child is a node without an id
(``.../traffic``, ``.../configElement/1/frameRate``). This module knows nothing about
traffic: it resolves hrefs, creates/updates/deletes nodes with attribute checking (the real
server answers an unknown attribute or enum value with 400, so the fake does too) and answers
``operations/select``, the query restpy's ``find()`` sends.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator


class RestError(Exception):
    """An error the server reports as ``{"errors": [{"detail": ...}]}`` with ``status``."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


@dataclass
class Kind:
    """What a node of one SDM name may hold: attribute defaults, enums, children."""

    attrs: dict[str, Any] = field(default_factory=dict)
    enums: dict[str, tuple[str, ...]] = field(default_factory=dict)
    read_only: tuple[str, ...] = ()
    singles: tuple[str, ...] = ()  # child nodes created with the node
    lists: tuple[str, ...] = ()  # child collections (start empty unless a hook fills them)
    free_attrs: bool = False  # accept any attribute (nodes the fake does not model closely)


class Node:
    """One object of the tree. ``id`` is None for a single child."""

    def __init__(self, tree: "Tree", kind: str, parent: "Node | None", node_id: int | None,
                 prefix: str | None = None) -> None:
        self.tree = tree
        self.kind = kind
        self.parent = parent
        self.id = node_id
        self._prefix = prefix  # only the root: the href it lives at
        self.spec = spec = tree.kind(kind, parent.kind if parent is not None else None)
        self.attrs: dict[str, Any] = {k: _copy(v) for k, v in spec.attrs.items()}
        self.singles: dict[str, Node] = {}
        self.lists: dict[str, list[Node]] = {name: [] for name in spec.lists}
        self.next_ids: dict[str, int] = {name: 1 for name in spec.lists}
        for name in spec.singles:
            self.singles[name] = Node(tree, name, self, None)

    @property
    def href(self) -> str:
        if self.parent is None:
            assert self._prefix is not None
            return self._prefix
        base = f"{self.parent.href}/{self.kind}"
        return base if self.id is None else f"{base}/{self.id}"

    def add_child(self, name: str, attrs: dict[str, Any] | None = None,
                  node_id: int | None = None) -> "Node":
        """Append an item to the collection ``name`` (ids count up, never reused)."""
        if name not in self.lists:
            raise RestError(404, f"{self.href} has no collection {name!r}")
        if node_id is None:
            node_id = self.next_ids[name]
        self.next_ids[name] = max(self.next_ids[name], node_id + 1)
        child = Node(self.tree, name, self, node_id)
        if attrs:
            child.update(attrs, creating=True)
        self.lists[name].append(child)
        return child

    def remove(self) -> None:
        if self.parent is None or self.id is None:
            raise RestError(405, f"{self.href} cannot be deleted")
        self.parent.lists[self.kind].remove(self)

    def children(self) -> Iterator[tuple[str, "Node"]]:
        for name, node in self.singles.items():
            yield name, node
        for name, items in self.lists.items():
            for node in items:
                yield name, node

    def update(self, payload: dict[str, Any], creating: bool = False) -> None:
        """Set attributes after checking names, read-only flags and enum values."""
        spec = self.spec
        for key, value in payload.items():
            if key in ("id", "href", "links", "xpath"):
                continue
            if not spec.free_attrs and key not in spec.attrs:
                raise RestError(400, f"{key!r} is not a valid attribute of {self.kind}")
            if key in spec.read_only and not creating:
                raise RestError(400, f"attribute {key!r} of {self.kind} is read-only")
            allowed = spec.enums.get(key)
            if allowed is not None and value not in allowed:
                raise RestError(400, f"{value!r} is not a valid value for {self.kind}.{key}; "
                                     f"valid values are {', '.join(allowed)}")
        hook = self.tree.validators.get(self.kind)
        if hook is not None:
            hook(self, payload)
        for key, value in payload.items():
            if key in ("id", "href", "links", "xpath"):
                continue
            self.attrs[key] = _copy(value)

    def to_json(self, with_href: bool = True) -> dict[str, Any]:
        """The object as GET returns it: attributes, id and a self link."""
        self.tree.refresh(self)
        out: dict[str, Any] = {k: _copy(v) for k, v in self.attrs.items()}
        if self.id is not None:
            out["id"] = self.id
        if with_href:
            out["href"] = self.href
        out["links"] = [{"rel": "self", "method": "GET", "href": self.href}]
        return out


class Tree:
    """The nodes of one session plus the rules (kinds, validators) they obey."""

    def __init__(self, prefix: str, kinds: dict[str, Kind], root_kind: str = "ixnetwork") -> None:
        self._kinds = kinds
        self.validators: dict[str, Callable[[Node, dict[str, Any]], None]] = {}
        # Called before a node of that kind is read, for attributes that depend on time
        # (traffic state, statistics pages).
        self.readers: dict[str, Callable[[Node], None]] = {}
        self.root = Node(self, root_kind, None, None, prefix=prefix)

    def kind(self, name: str, parent_kind: str | None = None) -> Kind:
        """The rules for ``name``; ``"<parent>/<name>"`` wins where a name is reused."""
        return (self._kinds.get(f"{parent_kind}/{name}") or self._kinds.get(name)
                or Kind(free_attrs=True))

    def refresh(self, node: Node) -> None:
        reader = self.readers.get(node.kind)
        if reader is not None:
            reader(node)

    # ------------------------------------------------------------------ addressing

    def resolve(self, href: str) -> tuple[Node, str | None]:
        """``href`` → (node, None) for an object or (parent, name) for a collection."""
        href = href.split("?", 1)[0].rstrip("/")
        prefix = self.root.href
        if href != prefix and not href.startswith(prefix + "/"):
            raise RestError(404, f"{href} is not in this session")
        parts = [p for p in href[len(prefix):].split("/") if p]
        node = self.root
        i = 0
        while i < len(parts):
            name = parts[i]
            if name in node.singles:
                node = node.singles[name]
                i += 1
                continue
            if name in node.lists:
                if i + 1 == len(parts):
                    return node, name
                wanted = parts[i + 1].strip('"')
                match = next((n for n in node.lists[name] if str(n.id) == wanted), None)
                if match is None:
                    raise RestError(404, f"{href}: no {name} with id {wanted}")
                node = match
                i += 2
                continue
            raise RestError(404, f"{href}: {node.kind} has no child {name!r}")
        return node, None

    def node(self, href: str) -> Node:
        node, collection = self.resolve(href)
        if collection is not None:
            raise RestError(400, f"{href} is a collection, not an object")
        return node

    # ------------------------------------------------------------------ select

    def select(self, payload: dict[str, Any], xpath: bool = False) -> list[dict[str, Any]]:
        """Answer ``operations/select``: one result per entry of ``selects``.

        Each result holds the requested properties of the ``from`` node and, for each
        ``children`` entry in order, the matching descendants (the first entry matches
        direct children; later entries match children of what the previous ones matched,
        nested under their own names), filtered by property regexes.
        """
        selects = payload.get("selects")
        if not isinstance(selects, list):
            raise RestError(400, "select: 'selects' must be a list")
        results = []
        for sel in selects:
            start = self.node(str(sel.get("from", "")))
            out = _project(start, sel.get("properties", []), xpath)
            _select_children(start, out, list(sel.get("children", [])), xpath)
            results.append(out)
        return results


def _project(node: Node, properties: list[str], xpath: bool) -> dict[str, Any]:
    node.tree.refresh(node)
    out: dict[str, Any] = {"href": node.href}
    if node.id is not None:
        out["id"] = node.id
    if xpath:
        out["xpath"] = _xpath_of(node)
    if "*" in properties:
        out.update({k: _copy(v) for k, v in node.attrs.items()})
    else:
        for name in properties:
            if name in node.attrs:
                out[name] = _copy(node.attrs[name])
    return out


def _select_children(node: Node, out: dict[str, Any], specs: list[dict[str, Any]],
                     xpath: bool) -> None:
    if not specs:
        return
    spec, rest = specs[0], specs[1:]
    pattern = re.compile(str(spec.get("child", "")))
    filters = [(f.get("property", ""), re.compile(str(f.get("regex", ""))))
               for f in spec.get("filters", [])]
    for name, child in node.children():
        if not pattern.search(name):
            continue
        if any(not rx.search(_as_text(child.attrs.get(prop, ""))) for prop, rx in filters):
            continue
        item = _project(child, spec.get("properties", []), xpath)
        _select_children(child, item, rest, xpath)
        out.setdefault(name, []).append(item)


def _xpath_of(node: Node) -> str:
    parts = []
    while node.parent is not None:
        parts.append(node.kind if node.id is None else f"{node.kind}[{node.id}]")
        node = node.parent
    return "/" + "/".join(reversed(parts))


def _as_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value
