"""The generator's own ceiling at a frame size: what it sends when nothing holds it back.

A software generator (the embedded one) shares its CPU with the kernel work of the frames
it sends, so how fast it can go depends on the host, the frame size and the device behind
the port. A search that asks for more than that gets trials the generator cannot deliver:
invalid, retried, and max_load chased down trial by trial (the quick start once had 44%
of its trials invalid that way). So the runner measures the ceiling once per frame size
and testbed, with unpaced bursts (role ``calibration``; the slower of two), and gives the
search ``max_load = min(max_load, ceiling)``. A goal whose lower bound is that max_load is then
reported as what it is: a lower bound, the generator's ceiling, not the device's limit.

Pure functions: the calibration trial itself is run by the runner.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from vsbench.interfaces.traffic import TrialResult

#: Length of the calibration burst in seconds at the expected rate: long enough that the
#: start (socket and ring set-up are outside the timed span anyway) and a descheduled
#: millisecond do not matter, short enough to cost little per frame size.
CALIBRATION_S = 0.3
#: The share of the unpaced rate the search may ask for. Paced at 100% the sender has no
#: slack to catch up after the machine took its CPU for a moment; a few percent keep the
#: search's top trials deliverable (measured: tools/bench/generator_engines.py).
CEILING_SHARE = 0.95
#: Frames of the calibration burst never fewer than this (a tiny burst measures start-up).
MIN_CALIBRATION_FRAMES = 20_000
#: Calibration bursts per ceiling; the slower one counts. One burst's rate is noisy with a
#: long upper tail on a shared host: the embedded generator's bursts into OvS-DPDK ranged
#: 180..440 kfps at one frame size, and after a burst more than 10 % above the median the
#: first search trial fell short in 14 of 17 frame sizes (in 6 of 39 otherwise). The slower
#: of two lowered the quick start's invalid trials from a median of 12 % to 9 % (3 runs each,
#: same hour) for one more short trial per frame size.
CALIBRATION_BURSTS = 2


class CeilingError(ValueError):
    """The calibration trial cannot give a ceiling; one line for the user."""


@dataclass(frozen=True)
class Ceiling:
    """The measured ceiling of one frame size: the unpaced rate and what the search may ask."""

    burst_rate_fps: float
    share: float
    trial_index: int | None = None

    @property
    def max_load_fps(self) -> float:
        return self.burst_rate_fps * self.share


def share_for(configured: float | None, generator_share: float | None) -> float:
    """The share of the ceiling the search may ask for: the configured one
    (``traffic.generator_ceiling_share``), else the generator's own
    (``GeneratorCapabilities.ceiling_share``: what its paced trials deliver of its unpaced
    rate), else :data:`CEILING_SHARE`."""
    for share in (configured, generator_share):
        if share:
            if not 0 < float(share) <= 1:
                raise ValueError(f"the ceiling share must be in (0, 1], got {share}")
            return float(share)
    return CEILING_SHARE


def calibration_frames(expected_fps: float, directions: int, duration_s: float = CALIBRATION_S) -> int:
    """Frames of the calibration burst: ``duration_s`` at ``expected_fps``, split evenly
    over ``directions`` (a multiple of it), at least :data:`MIN_CALIBRATION_FRAMES`."""
    if directions < 1:
        raise ValueError("a burst needs at least one direction")
    frames = max(MIN_CALIBRATION_FRAMES, int(expected_fps * duration_s))
    return frames - frames % directions


def ceiling_from(result: TrialResult, share: float = CEILING_SHARE, trial_index: int | None = None) -> Ceiling:
    """The ceiling a calibration burst measured (its frames over its own sending time)."""
    if not 0 < share <= 1:
        raise ValueError(f"the ceiling share must be in (0, 1], got {share}")
    rate = result.burst_rate_fps
    if rate is None or rate <= 0 or result.tx_frames <= 0:
        raise CeilingError("the calibration burst reported no sending time, so no rate")
    return Ceiling(burst_rate_fps=float(rate), share=float(share), trial_index=trial_index)


def slowest(ceilings: Iterable[Ceiling]) -> Ceiling:
    """The ceiling of the slowest calibration burst (:data:`CALIBRATION_BURSTS`)."""
    found = list(ceilings)
    if not found:
        raise CeilingError("no calibration burst was run")
    return min(found, key=lambda c: c.burst_rate_fps)


def at_ceiling(lower_bound_fps: float | None, max_load_fps: float | None, relative_width: float) -> bool:
    """True when a goal's lower bound is the search's max_load (within one width): the
    device forwarded all the generator could send there, so the figure is a lower bound."""
    if lower_bound_fps is None or not max_load_fps:
        return False
    return lower_bound_fps >= max_load_fps * (1.0 - relative_width) - 1e-9
