"""Bulk frames received per frame size, counted in the kernel: a frame mix's own rx counts.

Why: a mix (IMIX) is measured as one load, and the ports' counters say how many frames
arrived, not of which size. One packet socket per (receiving port, size) with a classic
BPF filter that accepts a bulk frame (:data:`BULK_MAGIC` at the start of its UDP payload)
of exactly that length counts them: the kernel's ``PACKET_STATISTICS`` of each socket
(which also count what its full buffer dropped) is the count, and the filter keeps one
byte of each accepted frame, so counting costs a filter run and a one-byte copy per frame.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from vsbench_plugins.trafficgen.trafgen.foreign import ForeignFrameCounter
from vsbench_plugins.trafficgen.trafgen_probe import BULK_MAGIC, RX_PAYLOAD_OFFSET

_LD_W_LEN = 0x80   # BPF_LD | BPF_W | BPF_LEN: A = frame length
_LD_H_ABS = 0x28
_LD_B_ABS = 0x30
_JEQ_K = 0x15
_RET_K = 0x06


def size_filter(wire_len_bytes: int, payload_offset: int = RX_PAYLOAD_OFFSET) -> list[tuple[int, int, int, int]]:
    """Accept (one byte of) an IPv4/UDP bulk frame of exactly ``wire_len_bytes`` (no FCS)."""
    return [
        (_LD_W_LEN, 0, 0, 0),
        (_JEQ_K, 0, 7, int(wire_len_bytes)),
        (_LD_H_ABS, 0, 0, 12),
        (_JEQ_K, 0, 5, 0x0800),
        (_LD_B_ABS, 0, 0, 23),
        (_JEQ_K, 0, 3, 17),
        (_LD_H_ABS, 0, 0, payload_offset),
        (_JEQ_K, 0, 1, BULK_MAGIC),
        (_RET_K, 0, 0, 1),
        (_RET_K, 0, 0, 0),
    ]


class SizeCounter:
    """Bulk frames of each size received on ``ifaces`` (inside ``netns``), summed over them.

    ``sizes`` maps a frame size (FCS included, as reported) to its length on the wire as a
    packet socket sees it (without FCS)."""

    def __init__(self, netns: str | None, ifaces: Sequence[str], sizes: Mapping[int, int]) -> None:
        self._counters: dict[int, ForeignFrameCounter] = {}
        try:
            for size, wire in sizes.items():
                program = size_filter(wire)
                self._counters[int(size)] = ForeignFrameCounter(netns, list(ifaces), {i: program for i in ifaces})
        except BaseException:
            self.close()
            raise

    def read(self) -> dict[int, int]:
        """Frames of each size received since the previous read (the kernel resets them)."""
        return {size: sum(c.read().values()) for size, c in self._counters.items()}

    def close(self) -> None:
        for counter in self._counters.values():
            counter.close()
        self._counters = {}
