"""Back-to-back frames (RFC 2544 section 26.4 as updated by RFC 9004): pure logic, no I/O.

The benchmark is the longest burst of frames sent at the maximum rate (minimum gaps) that
the DUT forwards without losing one. Three parts, each a pure function:

* :func:`search_burst_length` -- a binary search over the burst length against a
  ``passes(frames) -> bool`` callable (the runner's: ``trials_per_length`` bursts of that
  length, all with zero loss). It starts at the longest length (RFC 2544: if nothing is
  lost there, that is the result) and halves the interval until it is no wider than the
  resolution.
* :func:`frame_stats` (from :mod:`vsbench.results.back2back_figures`, where recompute can
  reach it too) -- RFC 9004 repeats the whole test and reports the average of the
  back-to-back frame counts with minimum, maximum and standard deviation.
* :func:`implied_buffer_time_s` and :func:`corrected_buffer_time_s` (also there) -- the
  buffer time of RFC 9004 section 5:

  implied DUT buffer time (s) = average back-to-back frames / max theoretical frame rate

  corrected DUT buffer time (s) = (1 / max theoretical frame rate) x
  (average back-to-back frames - average back-to-back frames / max theoretical frame rate
  x measured throughput)

  The burst lasts B / R seconds; the DUT forwards at its throughput T meanwhile, so
  B / R x T of the B frames never needed a buffer. What remains, B x (1 - T / R) frames,
  expressed in time at the max rate R, is the corrected buffer time. It is only meaningful
  when T < R (RFC 9004: with throughput at the max theoretical rate no buffer is needed and
  the test is not run); :func:`corrected_buffer_time_s` returns None otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from vsbench.results.back2back_figures import (  # noqa: F401 - re-exported: the RFC 9004 arithmetic
    LINE_RATE_TOLERANCE,
    Back2BackError,
    FrameStats,
    at_line_rate,
    corrected_buffer_time_s,
    frame_stats,
    implied_buffer_time_s,
)

#: RFC 9004 asks for at least this many repetitions of the whole test.
RFC9004_MIN_REPETITIONS = 50


@dataclass(frozen=True)
class BurstLengthSearch:
    """The outcome of one burst-length search.

    ``frames``: the longest length that passed (0 when even the shortest tried lost
    frames). ``bounded`` False: ``max_frames`` itself passed, so the DUT's figure is at
    least ``frames`` -- the search could not find where loss starts. ``tried``: every
    (length, passed) in the order asked.
    """

    frames: int
    bounded: bool
    tried: tuple[tuple[int, bool], ...]


def search_burst_length(
    passes: Callable[[int], bool],
    *,
    max_frames: int,
    min_frames: int = 1,
    resolution_frames: int = 1,
) -> BurstLengthSearch:
    """Binary search for the longest burst length in [min_frames, max_frames] that passes.

    Assumes longer bursts do not pass more easily (a DUT's buffer is finite); the largest
    length seen to pass with every longer one tried failing is returned. Stops when the
    passing and failing lengths are at most ``resolution_frames`` apart.
    """
    if min_frames < 1 or max_frames < min_frames:
        raise Back2BackError(f"burst lengths must satisfy 1 <= min ({min_frames}) <= max ({max_frames})")
    if resolution_frames < 1:
        raise Back2BackError(f"the burst length resolution must be at least 1 frame, not {resolution_frames}")
    tried: list[tuple[int, bool]] = []

    def attempt(frames: int) -> bool:
        ok = bool(passes(frames))
        tried.append((frames, ok))
        return ok

    if attempt(max_frames):
        return BurstLengthSearch(max_frames, False, tuple(tried))
    if min_frames == max_frames:
        return BurstLengthSearch(0, True, tuple(tried))
    if not attempt(min_frames):
        return BurstLengthSearch(0, True, tuple(tried))
    good, bad = min_frames, max_frames
    while bad - good > resolution_frames:
        mid = (good + bad) // 2
        if attempt(mid):
            good = mid
        else:
            bad = mid
    return BurstLengthSearch(good, True, tuple(tried))


def search_trial_count(max_frames: int, min_frames: int, resolution_frames: int) -> int:
    """Most lengths one search tries (for time estimates): max, min, then the halvings."""
    span = max_frames - min_frames
    halvings = 0 if span <= resolution_frames else math.ceil(math.log2(span / resolution_frames))
    return 2 + halvings
