"""A small interpreter of TRex's field engine, for the fake server and for tests.

The fake validates every ``vm`` it is given the way the server does (instruction types,
field sizes and ranges, offsets inside the packet) and tests can run a stream's program
to see the frames it would produce and count distinct flows. Supported instructions:
``flow_var`` (inc/dec with min/max/step, or value_list), ``write_flow_var``,
``fix_checksum_ipv4``, ``fix_checksum_hw`` (IPv4 + UDP/TCP). Others are accepted as TRex
does but not executed (``executable`` is then False).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

KNOWN_TYPES = ("fix_checksum_hw", "fix_checksum_ipv4", "flow_var", "write_flow_var",
               "tuple_flow_var", "trim_pkt_size", "write_mask_flow_var", "flow_var_rand_limit")


class VmError(Exception):
    """A program the server would reject; ``parse`` is True for -32602 (bad params)."""

    def __init__(self, message: str, parse: bool = True) -> None:
        super().__init__(message)
        self.parse = parse


def _uint(inst: dict, key: str, bits: int) -> int:
    value = inst.get(key)
    if value is None:
        raise VmError(f"field '{key}' is missing")
    if isinstance(value, bool) or not isinstance(value, int) or value < 0 or value >= 1 << bits:
        raise VmError(f"'{key}' is '{type(value).__name__}', expecting 'uint{bits}'")
    return value


@dataclass
class FlowVar:
    name: str
    size: int
    op: str
    min_value: int
    max_value: int
    init_value: int
    step: int
    values: list[int] | None = None

    def value_at(self, k: int) -> int:
        """The variable's value for the k-th packet (k = 0 first)."""
        if self.values is not None:
            return self.values[(k * self.step) % len(self.values)]
        span = self.max_value - self.min_value + 1
        start = self.init_value - self.min_value
        if self.op == "inc":
            return self.min_value + (start + k * self.step) % span
        if self.op == "dec":
            return self.min_value + (start - k * self.step) % span
        # 'random': deterministic stand-in, a multiplicative walk over the range
        return self.min_value + (start + k * 2654435761) % span


@dataclass
class Program:
    vars: dict[str, FlowVar] = field(default_factory=dict)
    steps: list[dict[str, Any]] = field(default_factory=list)
    executable: bool = True


def compile_vm(vm: Any, packet_len: int) -> Program:
    """Validate ``vm`` against a packet of ``packet_len`` bytes; raise VmError."""
    if not isinstance(vm, dict):
        raise VmError("field 'vm' is missing")
    instructions = vm.get("instructions")
    if not isinstance(instructions, list):
        raise VmError("field 'instructions' is missing")
    prog = Program()
    for i, inst in enumerate(instructions):
        if not isinstance(inst, dict):
            raise VmError(f"array element: {i + 1} is not an object")
        kind = inst.get("type")
        if kind not in KNOWN_TYPES:
            raise VmError(f"field 'type' can only be one of [{', '.join(repr(t) for t in KNOWN_TYPES)}]")
        if kind == "flow_var":
            name = inst.get("name")
            if not isinstance(name, str) or not name:
                raise VmError("field 'name' is missing")
            size = inst.get("size")
            if size not in (1, 2, 4, 8):
                raise VmError("field 'size' can only be one of [1, 2, 4, 8]")
            op = inst.get("op")
            if op not in ("inc", "dec", "random"):
                raise VmError("field 'op' can only be one of ['inc', 'dec', 'random']")
            step = _uint(inst, "step", 64)
            if step == 0:
                raise VmError("VM: step cannot be 0")
            limit = 1 << (8 * size)
            if "value_list" in inst and inst["value_list"] is not None:
                values = [int(v) for v in inst["value_list"]]
                if not values or any(v >= limit for v in values):
                    raise VmError(f"VM: requested value is bigger than {limit - 1}")
                prog.vars[name] = FlowVar(name, size, op, min(values), max(values), values[0], step, values)
            else:
                lo, hi, init = (_uint(inst, k, 64) for k in ("min_value", "max_value", "init_value"))
                if hi < lo:
                    raise VmError(f"VM: requested flow var max value: '{hi}' is smaller than min value: {lo}")
                if not lo <= init <= hi:
                    raise VmError(f"VM: requested flow var init value: '{init}' should be in range "
                                  f"from min value '{lo}' to max value '{hi}'")
                if hi >= limit or step >= limit:
                    raise VmError(f"VM: requested value is bigger than {limit - 1}")
                prog.vars[name] = FlowVar(name, size, op, lo, hi, init, step)
        elif kind == "write_flow_var":
            name = inst.get("name")
            if name not in prog.vars:
                raise VmError(f"VM: write_flow_var of unknown flow var '{name}'", parse=False)
            offset = _uint(inst, "pkt_offset", 16)
            add = inst.get("add_value")
            if isinstance(add, bool) or not isinstance(add, int) or not -(1 << 31) <= add < 1 << 31:
                raise VmError(f"'add_value' is '{type(add).__name__}', expecting 'int'")
            if not isinstance(inst.get("is_big_endian"), bool):
                raise VmError("field 'is_big_endian' is missing")
            if offset + prog.vars[name].size > packet_len:
                raise VmError(f"write_flow_var: offset {offset} + size {prog.vars[name].size} "
                              f"is bigger than the packet ({packet_len} B)", parse=False)
            prog.steps.append(dict(inst))
        elif kind == "fix_checksum_ipv4":
            offset = _uint(inst, "pkt_offset", 16)
            if offset + 20 > packet_len:
                raise VmError("fix_checksum_ipv4: offset outside the packet", parse=False)
            prog.steps.append(dict(inst))
        elif kind == "fix_checksum_hw":
            l2, l3, l4 = (_uint(inst, k, 16) for k in ("l2_len", "l3_len", "l4_type"))
            if l2 + l3 > packet_len:
                raise VmError("fix_checksum_hw: l2_len + l3_len outside the packet", parse=False)
            prog.steps.append(dict(inst))
        else:
            prog.executable = False
    cache = vm.get("cache")
    if cache is not None and (not isinstance(cache, int) or not 0 <= cache < 1 << 16):
        raise VmError("'cache' is not uint16")
    return prog


def _ipv4_checksum(header: bytes) -> int:
    total = 0
    for i in range(0, len(header), 2):
        total += (header[i] << 8) + (header[i + 1] if i + 1 < len(header) else 0)
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return (~total) & 0xFFFF


def packet_at(prog: Program, template: bytes, k: int) -> bytes:
    """The k-th packet the program produces from ``template``."""
    pkt = bytearray(template)
    for step in prog.steps:
        kind = step["type"]
        if kind == "write_flow_var":
            var = prog.vars[step["name"]]
            value = (var.value_at(k) + step["add_value"]) % (1 << (8 * var.size))
            order = "big" if step["is_big_endian"] else "little"
            off = step["pkt_offset"]
            pkt[off : off + var.size] = value.to_bytes(var.size, order)
        elif kind == "fix_checksum_ipv4":
            _fix_ipv4(pkt, step["pkt_offset"])
        elif kind == "fix_checksum_hw":
            ip = step["l2_len"]
            _fix_ipv4(pkt, ip)
            _fix_l4(pkt, ip, step["l3_len"], step["l4_type"])
    return bytes(pkt)


def _fix_ipv4(pkt: bytearray, off: int) -> None:
    ihl = (pkt[off] & 0x0F) * 4
    pkt[off + 10 : off + 12] = b"\0\0"
    pkt[off + 10 : off + 12] = _ipv4_checksum(bytes(pkt[off : off + ihl])).to_bytes(2, "big")


def _fix_l4(pkt: bytearray, ip: int, l3_len: int, l4_type: int) -> None:
    l4 = ip + l3_len
    total_len = int.from_bytes(pkt[ip + 2 : ip + 4], "big")
    seg_len = total_len - l3_len
    csum_off = {11: 6, 13: 16}.get(l4_type)
    if csum_off is None:
        return
    pkt[l4 + csum_off : l4 + csum_off + 2] = b"\0\0"
    pseudo = bytes(pkt[ip + 12 : ip + 20]) + struct.pack("!BBH", 0, pkt[ip + 9], seg_len)
    value = _ipv4_checksum(pseudo + bytes(pkt[l4 : l4 + seg_len]))
    if l4_type == 11 and value == 0:
        value = 0xFFFF
    pkt[l4 + csum_off : l4 + csum_off + 2] = value.to_bytes(2, "big")


def distinct_packets(prog: Program, template: bytes, count: int) -> int:
    """How many distinct packets the first ``count`` packets are (flows, for tests)."""
    return len({packet_at(prog, template, k) for k in range(count)})
