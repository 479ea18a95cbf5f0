"""The RFC 2889 figures of one frame size (``FrameSizeResult.rfc2889`` in results.json).

Units are in the names, as RFC 2889 states them: forwarding rates in frames per second
(received over every output port), the learning rate in addresses per second (one
learning frame per address, so the rate the learning frames were sent at), the caching
capacity in addresses, flooded frames in frames.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Rfc2889Step:
    """One trial of the forwarding-rate ladder (section 5.1)."""

    offered_load_fps: float
    forwarding_rate_fps: float
    tx_frames: int
    rx_frames: int
    trial_index: int
    valid: bool


@dataclass
class Rfc2889Iteration:
    """One learning + test iteration (sections 5.7, 5.8): ``addresses`` learning frames at
    ``learning_rate_fps`` (trial ``learning_trial``), then ``test_tx_frames`` test frames
    (trial ``test_trial``) of which ``test_rx_frames`` reached the learning port and
    ``flooded_frames`` the monitor port."""

    addresses: int
    learning_rate_fps: float
    test_tx_frames: int
    test_rx_frames: int
    flooded_frames: int
    passed: bool
    valid: bool
    learning_trial: int | None = None
    test_trial: int | None = None


@dataclass
class Rfc2889Result:
    """``test``: ``forwarding``, ``learning`` or ``caching``.

    forwarding: ``forwarding_rate_fps`` at the maximum offered load
    (``max_offered_load_fps``, FRMOL), ``max_forwarding_rate_fps`` (MFR) and the offered
    load it was measured at, every step in ``steps``.
    learning: ``learning_rate_addresses_per_s`` for ``addresses`` addresses;
    ``first_fail_rate_fps`` the lowest rate tried that did not learn them all.
    caching: ``caching_capacity_addresses`` at ``learning_rate_fps``;
    ``first_fail_addresses`` the smallest count tried that was not all held.
    Both: ``flooded_frames`` the test frames flooded to the monitor port at that failing
    value (None when none failed), ``bounded`` False when the top of the searched range
    (``search_high``) passed -- the figure is a lower bound -- and ``iterations``."""

    test: str
    forwarding_rate_fps: float | None = None
    max_offered_load_fps: float | None = None
    max_forwarding_rate_fps: float | None = None
    max_forwarding_rate_offered_fps: float | None = None
    steps: list[Rfc2889Step] = field(default_factory=list)
    learning_rate_addresses_per_s: float | None = None
    caching_capacity_addresses: int | None = None
    addresses: int | None = None
    learning_rate_fps: float | None = None
    test_rate_fps: float | None = None
    search_low: float | None = None
    search_high: float | None = None
    bounded: bool | None = None
    first_fail_addresses: int | None = None
    first_fail_rate_fps: float | None = None
    flooded_frames: int | None = None
    invalid_iterations: int = 0
    iterations: list[Rfc2889Iteration] = field(default_factory=list)
