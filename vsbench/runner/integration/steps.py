"""Integration steps: the closed set of step kinds, their parsing and the reference syntax.

A step list is data, never code: each step is one of :data:`STEP_KINDS` with the options
its JSON schema (``integration_testcase.schema.json``) allows, and a step refers to an
earlier step's result only as ``${name}`` (the object it made: a port, a flow) or
``${name.field}`` (one of the fields :data:`RESULT_FIELDS` lists for that step's kind).
A reference is a whole YAML string -- nothing is interpolated into text, nothing is
evaluated, no attribute of a Python object is looked up by name: results are plain
dicts of the fields below. Everything that can be checked before the switch starts is
checked here (pure, unit-tested): unknown or later step names, a field the step kind does
not produce, a bridge used before any step added it, duplicate names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

STEP_KINDS = ("add_bridge", "delete_bridge", "add_port", "delete_port", "add_flow", "delete_flow", "connect",
              "send_traffic", "port_counters", "link_counters", "check_counters", "check_dump", "check_command",
              "wait")

#: What ``${step}`` is (the object a step made), by step kind; None: only fields.
RESULT_OBJECTS = {"add_port": "port", "add_flow": "flow"}
#: The fields ``${step.field}`` may name, by step kind (the step's result is a dict of them).
RESULT_FIELDS: dict[str, tuple[str, ...]] = {
    "add_bridge": ("name",),
    "add_port": ("name", "number", "iface"),
    "send_traffic": ("tx_frames", "rx_frames", "rx_wrong_frames", "tx_fps"),
    "port_counters": ("rx_packets", "tx_packets", "rx_dropped", "tx_dropped"),
    "link_counters": ("rx_packets", "tx_packets", "rx_bytes", "tx_bytes", "rx_dropped", "tx_dropped"),
}

#: Tools a ``check_command`` step may run (argv[0]), in the DUT namespace, without a shell.
COMMAND_ALLOW_LIST = ("ip", "bridge", "tc", "ethtool", "sysctl")

REF_RE = re.compile(r"^\$\{([a-z][a-z0-9_]*)(?:\.([a-z_]+))?\}$")


class StepError(ValueError):
    """A step list that cannot run as written; one line naming the step."""


@dataclass(frozen=True)
class Ref:
    """``${step}`` (field None) or ``${step.field}``."""

    step: str
    field: str | None = None

    def __str__(self) -> str:
        return "${" + self.step + (f".{self.field}" if self.field else "") + "}"


@dataclass(frozen=True)
class Step:
    """One step: its position (1-based), kind, optional name and options (references
    parsed into :class:`Ref`)."""

    index: int
    kind: str
    name: str | None
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """``3 add_port p1``: how results, the console and JUnit name the step."""
        return f"{self.index} {self.kind}" + (f" {self.name}" if self.name else "")


def parse_ref(text: Any) -> Ref | None:
    """The reference ``text`` is, or None when it is not one (a plain value)."""
    if not isinstance(text, str):
        return None
    m = REF_RE.match(text)
    return Ref(m.group(1), m.group(2)) if m else None


def _refs_in(value: Any) -> Any:
    """``value`` with every whole-string reference (also in lists and mappings) parsed."""
    ref = parse_ref(value)
    if ref is not None:
        return ref
    if isinstance(value, list):
        return [_refs_in(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _refs_in(v) for k, v in value.items()}
    if isinstance(value, str) and "${" in value:
        raise StepError(f"{value!r}: a reference is a whole value (${{step}} or ${{step.field}}), "
                        "never part of a text")
    return value


def _all_refs(value: Any) -> list[Ref]:
    if isinstance(value, Ref):
        return [value]
    if isinstance(value, list):
        return [r for v in value for r in _all_refs(v)]
    if isinstance(value, Mapping):
        return [r for v in value.values() for r in _all_refs(v)]
    return []


#: Where a step kind expects an object reference, and which object.
OBJECT_SLOTS: dict[str, dict[str, str]] = {
    "delete_port": {"port": "port"},
    "connect": {"a": "port", "b": "port"},
    "port_counters": {"port": "port"},
    "add_flow": {"output": "port"},
    "delete_flow": {"flow": "flow"},
}


def parse_steps(raw: Sequence[Mapping[str, Any]], testbed_ports: int = 2) -> list[Step]:
    """Schema-valid ``steps`` -> :class:`Step` list, every reference checked against the
    steps before it. Raises :class:`StepError` (one line naming the step)."""
    steps: list[Step] = []
    kinds_by_name: dict[str, str] = {}
    bridges: set[str] = set()
    for index, item in enumerate(raw, start=1):
        kinds = [k for k in item if k != "name"]
        if len(kinds) != 1 or kinds[0] not in STEP_KINDS:
            raise StepError(f"step {index}: exactly one of {', '.join(STEP_KINDS)} (and an optional name), "
                            f"not {', '.join(map(str, kinds)) or 'nothing'}")
        kind, name = kinds[0], item.get("name")
        where = f"step {index} {kind}" + (f" {name}" if name else "")
        if name is not None and name in kinds_by_name:
            raise StepError(f"{where}: the name {name!r} is already step {name}'s")
        try:
            options = _refs_in(dict(item[kind] or {}))
        except StepError as exc:
            raise StepError(f"{where}: {exc}") from None
        for ref in _all_refs(options):
            _check_ref(ref, kinds_by_name, where)
        for slot, wanted in OBJECT_SLOTS.get(kind, {}).items():
            ref = options.get(slot)
            if ref is not None and (not isinstance(ref, Ref) or ref.field is not None
                                    or RESULT_OBJECTS.get(kinds_by_name[ref.step]) != wanted):
                raise StepError(f"{where}: {slot} must be ${{step}} of an earlier step that made a {wanted}")
        if kind == "add_flow":
            in_port = options["match"].get("in_port")
            if in_port is not None and (in_port.field is not None or kinds_by_name[in_port.step] != "add_port"):
                raise StepError(f"{where}: match.in_port must be ${{step}} of an add_port step")
            if ("output" in options) == ("drop" in options):
                raise StepError(f"{where}: give either output (a port) or drop: true")
        bridge = options.get("bridge")
        if kind == "add_bridge":
            bridges.add(bridge)
        elif bridge is not None and bridge not in bridges:
            raise StepError(f"{where}: bridge {bridge!r} is not added by any earlier step")
        if kind == "check_dump":
            _check_contains(options, where)
            if options["of"] == "flows" and "bridge" not in options:
                raise StepError(f"{where}: a flow dump is a bridge's: give bridge")
        if kind == "check_command":
            _check_contains(options, where, optional=True)
            tool = options["argv"][0]
            if isinstance(tool, Ref) or tool not in COMMAND_ALLOW_LIST:
                raise StepError(f"{where}: {tool} is not one of the tools a step may run "
                                f"({', '.join(COMMAND_ALLOW_LIST)})")
        if kind == "add_port":
            _check_add_port(options, testbed_ports, where)
        if kind == "send_traffic":
            ends = (options.get("from_port", 0), options.get("to_port", 1))
            if ends[0] == ends[1] or max(ends) >= testbed_ports:
                raise StepError(f"{where}: from_port and to_port must be two of the testbed's "
                                f"{testbed_ports} ports")
        if kind == "link_counters" and options["port"] >= testbed_ports:
            raise StepError(f"{where}: port {options['port']}: the testbed has {testbed_ports} port(s)")
        if kind == "check_counters":
            for side in ("left", "right", "minus"):
                ref = options.get(side)
                if isinstance(ref, Ref) and ref.field is None:
                    raise StepError(f"{where}: {side} must be a number or ${{step.field}}")
            if not isinstance(options.get("left"), Ref) and "minus" in options:
                raise StepError(f"{where}: minus goes with a counter on the left")
        steps.append(Step(index, kind, name, options))
        if name is not None:
            kinds_by_name[name] = kind
    return steps


def _check_ref(ref: Ref, kinds_by_name: Mapping[str, str], where: str) -> None:
    if ref.step not in kinds_by_name:
        raise StepError(f"{where}: {ref} names no earlier step")
    kind = kinds_by_name[ref.step]
    if ref.field is None:
        if kind not in RESULT_OBJECTS:
            raise StepError(f"{where}: {ref}: a {kind} step makes no object; name one of its fields")
    elif ref.field not in RESULT_FIELDS.get(kind, ()):
        fields = ", ".join(RESULT_FIELDS.get(kind, ())) or "none"
        raise StepError(f"{where}: {ref}: a {kind} step has no field {ref.field!r} (it has: {fields})")


def _check_contains(options: Mapping[str, Any], where: str, optional: bool = False) -> None:
    given = [k for k in ("contains", "lacks") if k in options]
    if len(given) > 1 or (not given and not optional):
        raise StepError(f"{where}: give one of contains or lacks")
    for key in given:
        if not isinstance(options[key], Ref):
            try:
                re.compile(options[key])
            except re.error as exc:
                raise StepError(f"{where}: {key}: not a regular expression: {exc}") from None


def _check_add_port(options: Mapping[str, Any], testbed_ports: int, where: str) -> None:
    kind = options["kind"]
    if kind in ("physical", "vxlan"):
        if "port" not in options:
            raise StepError(f"{where}: a {kind} port needs port (the testbed port index)")
        if options["port"] >= testbed_ports:
            raise StepError(f"{where}: port {options['port']}: the testbed has {testbed_ports} port(s)")
    elif "port" in options:
        raise StepError(f"{where}: a {kind} port takes no testbed port")
    if "key" in options and kind != "vxlan":
        raise StepError(f"{where}: key (the VNI) is a vxlan port's")


# ---------------------------------------------------------------------------- resolution


def resolve(value: Any, results: Mapping[str, Mapping[str, Any]], objects: Mapping[str, Any]) -> Any:
    """``value`` with its references replaced: ``${step}`` by ``objects[step]``,
    ``${step.field}`` by ``results[step][field]``. Pure lookups in two dicts."""
    if isinstance(value, Ref):
        if value.field is None:
            if value.step not in objects:
                raise StepError(f"{value}: step {value.step} made nothing (it did not run, or was undone)")
            return objects[value.step]
        try:
            return results[value.step][value.field]
        except KeyError:
            raise StepError(f"{value}: step {value.step} has no {value.field} result") from None
    if isinstance(value, list):
        return [resolve(v, results, objects) for v in value]
    if isinstance(value, Mapping):
        return {k: resolve(v, results, objects) for k, v in value.items()}
    return value


COMPARATORS = {
    "==": lambda a, b: a == b, "!=": lambda a, b: a != b, ">=": lambda a, b: a >= b,
    "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, "<": lambda a, b: a < b,
}


def compare(left: float, op: str, right: float, factor: float | None = None,
            minus: float | None = None) -> tuple[bool, str]:
    """(holds, the check written out with its values) for a ``check_counters`` step:
    ``left [- minus] op right [* factor]``. Pure."""
    if left is None or right is None:
        return False, f"{left} {op} {right}: a counter the switch or generator does not report"
    text = _num(left)
    if minus is not None:
        left = left - minus
        text = f"{text} - {_num(minus)} (= {_num(left)})"
    target = right * factor if factor is not None else right
    text += f" {op} {_num(right)}" + (f" * {factor} (= {_num(target)})" if factor is not None else "")
    return bool(COMPARATORS[op](left, target)), text


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.6g}"
