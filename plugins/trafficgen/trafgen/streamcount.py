"""Bulk frames received per stream and port, counted in the kernel by their direction byte.

A profile of port-to-port streams (:class:`~vsbench.interfaces.traffic.PortStream`: a router
with 4 or 8 ports, each sending to one or several others) can have several streams arrive
at one generator port, so the port's counter no longer says which stream a frame belongs
to. Every bulk frame carries its stream's number (the direction byte after
:data:`BULK_MAGIC`), and a small eBPF socket filter on a packet socket per receiving port
counts the bulk frames of each number in a per-CPU array -- then rejects the frame, so
nothing is queued or copied: one short program run per frame, on the CPU that received it.

The counts give each stream's frames received on the port it was meant for, and the frames
that arrived on any other port (a router that sent them out of the wrong port): those are
delivered wrong, not received.

The program is assembled here (ten instructions) and loaded with the ``bpf`` system call
through ctypes: no compiler, no library. Linux >= 3.19 (eBPF socket filters, per-CPU
arrays from 4.6).
"""

from __future__ import annotations

import ctypes
import os
import socket
import struct
from pathlib import Path

from pyroute2.netns import create_socket

from vsbench_plugins.trafficgen.trafgen_probe import (
    BULK_MAGIC,
    ETH_P_ALL,
    PACKET_IGNORE_OUTGOING,
    RX_PAYLOAD_OFFSET,
    SOL_PACKET,
)

SYS_BPF = {"x86_64": 321, "aarch64": 280}.get(os.uname().machine, 321)
BPF_MAP_CREATE, BPF_MAP_LOOKUP_ELEM, BPF_PROG_LOAD = 0, 1, 5
BPF_MAP_TYPE_PERCPU_ARRAY = 6
BPF_PROG_TYPE_SOCKET_FILTER = 1
BPF_FUNC_MAP_LOOKUP_ELEM = 1
SO_ATTACH_BPF = 50
#: Stream numbers a direction byte can hold.
SLOTS = 256
#: Where the direction byte is in a received plain bulk frame (from the MAC header).
DIRECTION_OFFSET = RX_PAYLOAD_OFFSET + 2


class StreamCountError(OSError):
    """The counter could not be set up; ``str()`` is one line."""


def _insn(code: int, dst: int = 0, src: int = 0, off: int = 0, imm: int = 0) -> bytes:
    return struct.pack("<BBhi", code, (src << 4) | dst, off, imm)


def program(map_fd: int, magic_offset: int = RX_PAYLOAD_OFFSET) -> bytes:
    """``if frame[magic] == BULK_MAGIC: counts[frame[magic + 2]] += 1``; return 0 (reject)."""
    ld_abs_h, ld_abs_b = 0x28, 0x30          # BPF_LD | BPF_ABS | BPF_H / BPF_B (result in r0)
    mov_x, mov_k, add_k = 0xBF, 0xB7, 0x07  # BPF_ALU64 | BPF_MOV | BPF_X, ... BPF_K, BPF_ADD | BPF_K
    jne_k, jeq_k = 0x55, 0x15
    stx_w, ldx_dw, stx_dw, call, exit_ = 0x63, 0x79, 0x7B, 0x85, 0x95
    ld_imm64 = 0x18
    out = [
        _insn(mov_x, 6, 1),                              # r6 = skb (LD_ABS reads through r6)
        _insn(ld_abs_h, imm=magic_offset),               # r0 = ntohs(frame[magic])
        _insn(jne_k, 0, off=11, imm=BULK_MAGIC),         # not a bulk frame: out
        _insn(ld_abs_b, imm=magic_offset + 2),           # r0 = direction byte
        _insn(stx_w, 10, 0, off=-4),                     # key on the stack
        _insn(ld_imm64, 1, 1, imm=map_fd), _insn(0),     # r1 = the map (pseudo map fd)
        _insn(mov_x, 2, 10), _insn(add_k, 2, imm=-4),    # r2 = &key
        _insn(call, imm=BPF_FUNC_MAP_LOOKUP_ELEM),
        _insn(jeq_k, 0, off=3, imm=0),                   # no slot: out
        _insn(ldx_dw, 1, 0), _insn(add_k, 1, imm=1), _insn(stx_dw, 0, 1),  # this CPU's count += 1
        _insn(mov_k, 0, imm=0), _insn(exit_),            # out: accept nothing
    ]
    return b"".join(out)


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _bpf(cmd: int, attr: bytes) -> int:
    buf = ctypes.create_string_buffer(attr, len(attr))
    fd = _libc().syscall(SYS_BPF, cmd, buf, len(attr))
    if fd < 0:
        err = ctypes.get_errno()
        raise StreamCountError(err, os.strerror(err))
    return fd


def possible_cpus(path: Path = Path("/sys/devices/system/cpu/possible")) -> int:
    """How many values a per-CPU map holds per key (the kernel's possible CPUs)."""
    top = 0
    for part in path.read_text().strip().split(","):
        top = max(top, int(part.split("-")[-1]))
    return top + 1


class _Counter:
    """One receiving port: its per-CPU map, program and socket."""

    def __init__(self, netns: str | None, iface: str, ncpus: int) -> None:
        self.iface = iface
        self.ncpus = ncpus
        self.map_fd = self.prog_fd = -1
        self.sock: socket.socket | None = None
        try:
            self.map_fd = _bpf(BPF_MAP_CREATE, struct.pack("<IIIII", BPF_MAP_TYPE_PERCPU_ARRAY, 4, 8, SLOTS, 0)
                               + bytes(100))
            insns = program(self.map_fd)
            code = ctypes.create_string_buffer(insns, len(insns))
            license_ = ctypes.create_string_buffer(b"GPL")
            log = ctypes.create_string_buffer(1 << 14)
            attr = struct.pack("<IIQQIIQII", BPF_PROG_TYPE_SOCKET_FILTER, len(insns) // 8,
                               ctypes.addressof(code), ctypes.addressof(license_), 1, len(log),
                               ctypes.addressof(log), 0, 0) + bytes(72)
            try:
                self.prog_fd = _bpf(BPF_PROG_LOAD, attr)
            except StreamCountError as exc:
                last = log.value.decode(errors="replace").strip().splitlines()
                raise StreamCountError(exc.errno, f"{exc.strerror}{' -- ' + last[-1] if last else ''}") from None
            if netns is None:
                self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
            else:
                self.sock = create_socket(netns, family=socket.AF_PACKET, socket_type=socket.SOCK_RAW, proto=0,
                                          flags=0)
            self.sock.setsockopt(socket.SOL_SOCKET, SO_ATTACH_BPF, struct.pack("i", self.prog_fd))
            self.sock.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
            self.sock.bind((iface, ETH_P_ALL))
        except BaseException:
            self.close()
            raise

    def read(self, slots: int) -> list[int]:
        """Frames counted so far for stream numbers ``0 .. slots-1`` (summed over CPUs)."""
        values = ctypes.create_string_buffer(8 * self.ncpus)
        out = []
        for slot in range(slots):
            key = ctypes.c_uint32(slot)
            attr = struct.pack("<IIQQQ", self.map_fd, 0, ctypes.addressof(key), ctypes.addressof(values), 0)
            _bpf(BPF_MAP_LOOKUP_ELEM, attr)
            out.append(sum(struct.unpack(f"<{self.ncpus}Q", values.raw)))
        return out

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        for name in ("prog_fd", "map_fd"):
            fd = getattr(self, name)
            if fd >= 0:
                os.close(fd)
                setattr(self, name, -1)


class StreamCounter:
    """Bulk frames of each stream number (``0 .. streams-1``) received on each of ``ifaces``
    (inside ``netns``), counted since the counter was made; :meth:`read` returns them."""

    def __init__(self, netns: str | None, ifaces: list[str], streams: int) -> None:
        if not 1 <= streams <= SLOTS:
            raise StreamCountError(0, f"stream numbers go up to {SLOTS - 1}, not {streams - 1}")
        self.streams = streams
        ncpus = possible_cpus()
        self._counters: list[_Counter] = []
        try:
            for iface in ifaces:
                self._counters.append(_Counter(netns, iface, ncpus))
        except BaseException:
            self.close()
            raise

    def read(self) -> dict[str, list[int]]:
        """{port: [frames of stream 0, of stream 1, ...]} since the counter was made."""
        return {c.iface: c.read(self.streams) for c in self._counters}

    def close(self) -> None:
        for c in self._counters:
            c.close()
        self._counters = []


def delta(before: dict[str, list[int]], after: dict[str, list[int]]) -> dict[str, list[int]]:
    """Counts between two reads."""
    return {iface: [a - b for a, b in zip(after[iface], before.get(iface, [0] * len(after[iface])))]
            for iface in after}
