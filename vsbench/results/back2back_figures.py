"""RFC 9004's back-to-back figures: pure arithmetic over measured numbers, no I/O.

They live in the results layer so that :mod:`vsbench.results.summary` and
:mod:`vsbench.results.recompute` compute them with the same code the run used;
:mod:`vsbench.measurement.back2back` (the burst-length search) re-exports them.

* implied DUT buffer time (s) = average back-to-back frames / max theoretical frame rate
* corrected DUT buffer time (s) = (1 / max theoretical frame rate) x (average back-to-back
  frames - average back-to-back frames / max theoretical frame rate x measured throughput)

The burst of B frames lasts B / R seconds at the max rate R; the DUT forwards at its
throughput T meanwhile, so B / R x T frames never needed a buffer, and B x (1 - T / R)
frames, in time at rate R, is the corrected buffer time (RFC 9004 section 5). It is only
defined for 0 < T < R: with throughput at the max rate a DUT needs no buffer and RFC 9004
does not run the test.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Sequence

#: A burst rate within this share of the nominal line rate counts as "at line rate".
LINE_RATE_TOLERANCE = 0.01


class Back2BackError(ValueError):
    """Back-to-back figures cannot be computed from these values; one line for the user."""


@dataclass(frozen=True)
class FrameStats:
    """Average, minimum, maximum and sample standard deviation of back-to-back frames."""

    avg: float | None
    min: int | None
    max: int | None
    stdev: float | None
    count: int


def frame_stats(frames: Sequence[int]) -> FrameStats:
    """RFC 9004's reported statistics over the repetitions (stdev None below 2 values)."""
    values = [int(f) for f in frames]
    if not values:
        return FrameStats(None, None, None, None, 0)
    stdev = statistics.stdev(values) if len(values) > 1 else None
    return FrameStats(statistics.fmean(values), min(values), max(values), stdev, len(values))


def implied_buffer_time_s(avg_frames: float, max_rate_fps: float) -> float:
    """Average back-to-back frames expressed in seconds at the max theoretical rate."""
    if max_rate_fps <= 0:
        raise Back2BackError("the max theoretical frame rate must be positive")
    return avg_frames / max_rate_fps


def corrected_buffer_time_s(avg_frames: float, max_rate_fps: float, throughput_fps: float) -> float | None:
    """RFC 9004's corrected buffer time (module docstring); None unless 0 < T < R."""
    if max_rate_fps <= 0:
        raise Back2BackError("the max theoretical frame rate must be positive")
    if throughput_fps <= 0 or throughput_fps >= max_rate_fps:
        return None
    return (avg_frames - avg_frames / max_rate_fps * throughput_fps) / max_rate_fps


def at_line_rate(burst_rate_fps: float | None, nominal_line_rate_fps: float | None,
                 tolerance: float = LINE_RATE_TOLERANCE) -> bool | None:
    """True when bursts went out at the nominal line rate (within ``tolerance``)."""
    if burst_rate_fps is None or not nominal_line_rate_fps:
        return None
    return burst_rate_fps >= (1.0 - tolerance) * nominal_line_rate_fps
