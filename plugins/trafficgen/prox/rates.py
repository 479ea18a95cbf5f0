"""Frames per second <-> PROX ``speed`` percentages, and PROX packet sizes.

PROX's ``speed <core> <task> <pct>`` sets the token-bucket rate of one generator task to
``pct * 12 500 000`` bytes/s: a percentage of **10 Gb/s whatever the real link speed**, per
core, accepted from 0 to 1000 (100 Gb/s). The generator charges every packet its *wire* size
``max(len, 60) + 4 (FCS) + 20 (preamble, SFD, IFG)`` where ``len`` is the ``pkt_size`` it was
given, and ``pkt_size`` is the frame **without** the FCS (a 64 B frame is ``pkt_size 60``).
So for a frame of ``S`` bytes (FCS included, S >= 64), per core::

    pct = fps_per_core * (S + 20) / 12 500 000          fps_per_core = aggregate / directions / cores

Pitfalls this module exists to avoid (all seen in wrappers of PROX):

* Using the link speed instead of 10 Gb/s as the 100 % base: on a 25 G or 40 G port a "100 %"
  is still 10 Gb/s.
* Forgetting that the rate is per *core*: with two generator cores per port each gets half.
* Forgetting the 20 B of preamble/IFG, or counting the FCS twice (``pkt_size`` already
  excludes it, PROX adds 4 back), or sending ``pkt_size = S`` (frames 4 B too long).
* ``pct * (size + 20) / line_speed / 8``-style formulas that yield a fraction, not a percent.
* Out-of-range values: PROX rejects ``pct > 1000`` with only a log line and **keeps the old
  rate**, so a too-high request silently runs at the previous trial's rate. We clamp to 1000
  and the trial shows what was really sent.
* PROX parses the value with ``%f`` (float32): send enough digits, expect ~1e-7 relative error.
"""

from __future__ import annotations

from vsbench.interfaces.traffic import FCS_BYTES, L1_OVERHEAD_BYTES

PROX_SPEED_UNIT_BYTES_PER_S = 12_500_000  # 1 % of 10 Gb/s, in bytes/s
PROX_MAX_SPEED_PERCENT = 1000.0
PROX_MIN_PKT_SIZE = 60  # shorter templates are padded to 60 B (+FCS) on the wire


def prox_pkt_size(frame_size_bytes: int) -> int:
    """The ``pkt_size`` argument for a frame of ``frame_size_bytes`` (FCS included)."""
    return frame_size_bytes - FCS_BYTES


def wire_bytes(frame_size_bytes: int) -> int:
    """Bytes PROX's token bucket charges per frame: padded frame + FCS + 20 B L1 overhead."""
    return max(prox_pkt_size(frame_size_bytes), PROX_MIN_PKT_SIZE) + FCS_BYTES + L1_OVERHEAD_BYTES


def speed_percent(fps_per_core: float, frame_size_bytes: int) -> float:
    """PROX ``speed`` value making one core send ``fps_per_core`` frames/s (not clamped)."""
    if fps_per_core < 0:
        raise ValueError(f"negative rate {fps_per_core}")
    return fps_per_core * wire_bytes(frame_size_bytes) / PROX_SPEED_UNIT_BYTES_PER_S


def fps_per_core(percent: float, frame_size_bytes: int) -> float:
    """Frames/s one core sends at ``speed`` ``percent`` (inverse of :func:`speed_percent`)."""
    return percent * PROX_SPEED_UNIT_BYTES_PER_S / wire_bytes(frame_size_bytes)


def speed_commands(
    load_fps: float, frame_size_bytes: int, gen_cores: list[list[int]], task: int
) -> tuple[list[str], bool]:
    """``speed`` commands splitting ``load_fps`` (aggregate) over the ports in ``gen_cores``
    (one list of cores per sending port) and their cores. Returns the commands and whether
    any value had to be clamped to PROX's 1000 % maximum."""
    return speed_commands_for_tasks(load_fps, frame_size_bytes,
                                    [[(core, task) for core in cores] for cores in gen_cores])


def speed_commands_for_tasks(
    load_fps: float, frame_size_bytes: int, gen_tasks: list[list[tuple[int, int]]]
) -> tuple[list[str], bool]:
    """:func:`speed_commands` with each port's generators as ``(core, task)`` pairs (a PROX
    whose cores carry several tasks: the embedded testbed's, on a 2-CPU host)."""
    directions = len(gen_tasks)
    commands: list[str] = []
    clamped = False
    for pairs in gen_tasks:
        pct = speed_percent(load_fps / directions / len(pairs), frame_size_bytes)
        if pct > PROX_MAX_SPEED_PERCENT:
            pct, clamped = PROX_MAX_SPEED_PERCENT, True
        for core, task in pairs:
            commands.append(f"speed {core} {task} {pct:.9g}")
    return commands, clamped
