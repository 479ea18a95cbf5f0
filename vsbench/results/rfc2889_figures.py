"""The rules of RFC 2889's figures, as pure functions over what trials measured.

* forwarding (section 5.1): FRMOL and MFR from the steps of the load ladder;
* address iterations (sections 5.7, 5.8): when an iteration of learning and test frames
  passes.

Used by the traffic types (through :mod:`vsbench.measurement.rfc2889`) and by
``vsbench recompute`` (:mod:`vsbench.results.recompute_rfc2889`), so the figure a run
reported and the one recomputed from trials.jsonl follow the same rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence


@dataclass(frozen=True)
class LoadStep:
    """One trial of the forwarding-rate ladder: offered and received frames/s."""

    offered_load_fps: float
    forwarding_rate_fps: float
    valid: bool
    trial_index: int | None = None


@dataclass(frozen=True)
class ForwardingFigures:
    """FRMOL and MFR of one frame size (frames/s), from the valid steps; None when none."""

    forwarding_rate_fps: float | None
    max_offered_load_fps: float | None
    max_forwarding_rate_fps: float | None
    max_forwarding_rate_offered_fps: float | None
    valid_steps: int


def forwarding_figures(steps: Sequence[LoadStep]) -> ForwardingFigures:
    """FRMOL: the forwarding rate of the valid step with the highest offered load (the
    maximum offered load the generator delivered); MFR: the highest forwarding rate of any
    valid step, and the offered load it was measured at (the lower load on a tie)."""
    valid = [s for s in steps if s.valid]
    if not valid:
        return ForwardingFigures(None, None, None, None, 0)
    top = max(valid, key=lambda s: s.offered_load_fps)
    best = max(valid, key=lambda s: (s.forwarding_rate_fps, -s.offered_load_fps))
    return ForwardingFigures(top.forwarding_rate_fps, top.offered_load_fps, best.forwarding_rate_fps,
                             best.offered_load_fps, len(valid))


@dataclass(frozen=True)
class AddressIteration:
    """One learning + test iteration: ``addresses`` learning frames at
    ``learning_rate_fps``, then test frames to them. ``flooded_frames``: test frames seen at
    the monitor port; ``valid`` False: the generator did not send as asked (neither a pass
    nor a DUT failure)."""

    addresses: int
    learning_rate_fps: float
    test_tx_frames: int
    test_rx_frames: int
    flooded_frames: int
    valid: bool = True
    learning_trial: int | None = None
    test_trial: int | None = None
    reason: str | None = None

    @property
    def passed(self) -> bool:
        """Every address learned: each test frame reached the learning port, none flooded."""
        return (self.valid and self.flooded_frames == 0 and self.test_tx_frames >= self.addresses
                and self.test_rx_frames == self.test_tx_frames)
