"""RFC 2889 benchmarks as pure functions: forwarding rate, address caching, address learning.

No I/O here: the traffic types (:mod:`vsbench.runner.traffic_rfc2889`) run the trials and
hand each outcome to these functions; the unit tests drive them with a model switch.

* Forwarding rate (RFC 2889 section 5.1): trials at a ladder of offered loads; the
  *forwarding rate at the maximum offered load* (FRMOL) is the frames per second received
  at the highest offered load, the *maximum forwarding rate* (MFR) the highest received
  rate over every offered load (with the load it was measured at). Both in frames/s.
* Address caching capacity (section 5.7): how many addresses the switch holds. One
  iteration sends ``N`` learning frames, one per source address, from the learning port,
  at a low rate, then ``N`` test frames from the test port addressed to those ``N``
  addresses. The iteration passes when every test frame reached the learning port and
  none reached the monitor port (a frame to an unknown address is flooded there). ``N`` is
  binary-searched between a minimum and a maximum (addresses).
* Address learning rate (section 5.8): the same iteration with ``N`` fixed (at most the
  caching capacity) and the rate of the learning frames binary-searched: the highest rate
  (addresses per second: one learning frame per address) at which every address was
  learned.

Both searches share :func:`search_highest_pass`: the highest value of an ordered range
that passes, assuming (as the RFC's binary search does) that passing is monotone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Sequence

# The figures' rules live beside the result model (recompute reads them there; results
# sits below measurement); re-exported here, where the searches use them.
from vsbench.results.rfc2889_figures import (  # noqa: F401
    AddressIteration,
    ForwardingFigures,
    LoadStep,
    forwarding_figures,
)

#: Default ladder of the forwarding-rate test: percent of the frame size's max load.
DEFAULT_LOAD_PERCENTS: tuple[float, ...] = (10, 20, 30, 40, 50, 60, 70, 80, 90, 100)
#: The learned addresses count up from this locally administered unicast MAC; the test
#: port's and monitor port's own MACs are outside the range (see :func:`address_range`).
ADDRESS_BASE_MAC = "02:28:89:00:00:00"
#: The most addresses one search may ask for (the MAC varies in its last 24 bits here).
MAX_ADDRESSES = 1 << 24


class Rfc2889Error(ValueError):
    """A setting makes the benchmark impossible; one line for the user."""


# -- forwarding rate (section 5.1) -------------------------------------------------------------


def offered_loads(max_load_fps: float, percents: Sequence[float]) -> list[float]:
    """The ladder's loads, ascending, each percent of ``max_load_fps`` (0 < p <= 100)."""
    if max_load_fps <= 0:
        raise Rfc2889Error(f"max load must be positive, got {max_load_fps}")
    if not percents:
        raise Rfc2889Error("traffic.rfc2889.load_percents is empty")
    bad = [p for p in percents if not 0 < float(p) <= 100]
    if bad:
        raise Rfc2889Error(f"traffic.rfc2889.load_percents must lie in (0, 100], got {bad[0]}")
    return [max_load_fps * float(p) / 100.0 for p in sorted({float(p) for p in percents})]


# -- address iterations (sections 5.7 and 5.8) ---------------------------------------------------


@dataclass
class SearchOutcome:
    """The highest passing value of a search and how it was found.

    ``value`` None: even ``low`` failed. ``bounded`` False: ``high`` passed, so ``value``
    is a lower bound of the DUT's figure (the search range ended first). ``invalid``
    counts probes the generator could not deliver (each treated as not passing, so the
    figure is what could be shown, and a note says so)."""

    value: float | None
    low: float
    high: float
    bounded: bool
    tried: list[tuple[float, bool | None]] = field(default_factory=list)
    invalid: int = 0


def search_highest_pass(probe: Callable[[float], bool | None], *, low: float, high: float,
                        resolution: float, integer: bool = False, max_probes: int = 64) -> SearchOutcome:
    """Binary search for the highest value in ``[low, high]`` whose ``probe`` passes.

    ``probe(value)`` returns True (pass), False (fail) or None (invalid: not measured as
    asked; treated as a failure and counted). ``high`` is tried first: if it passes, the
    search ends there, unbounded (RFC 2889 section 5.7: the device holds at least that).
    Then ``low``: if it fails, there is no passing value. Then the midpoint of the passing
    and failing values until they are at most ``resolution`` apart (integers: adjacent
    when ``resolution`` is 1). ``max_probes`` caps the trials."""
    if not (low > 0 and high >= low):
        raise Rfc2889Error(f"search range must satisfy 0 < low <= high, got {low}..{high}")
    if resolution <= 0:
        raise Rfc2889Error(f"search resolution must be positive, got {resolution}")
    outcome = SearchOutcome(value=None, low=low, high=high, bounded=True)

    def run(value: float) -> bool:
        verdict = probe(int(value) if integer else value)
        outcome.tried.append((value, verdict))
        if verdict is None:
            outcome.invalid += 1
        return bool(verdict)

    if run(high):
        outcome.value, outcome.bounded = high, False
        return outcome
    if high == low or not run(low):
        return outcome
    passing, failing = low, high
    while failing - passing > resolution and len(outcome.tried) < max_probes:
        mid = (passing + failing) / 2.0
        if integer:
            mid = math.floor(mid)
            if mid <= passing:
                break
        if run(mid):
            passing = mid
        else:
            failing = mid
    outcome.value = passing
    return outcome


def address_range(count: int) -> tuple[str, str]:
    """The first and last of ``count`` addresses counted up from :data:`ADDRESS_BASE_MAC`."""
    if not 1 <= count <= MAX_ADDRESSES:
        raise Rfc2889Error(f"address count must be 1..{MAX_ADDRESSES}, got {count}")
    return ADDRESS_BASE_MAC, mac_plus(ADDRESS_BASE_MAC, count - 1)


def mac_plus(mac: str, offset: int) -> str:
    """``mac`` plus ``offset`` as a 48-bit number (the way the generator counts them)."""
    value = int(mac.replace(":", ""), 16) + int(offset)
    if not 0 <= value < 1 << 48:
        raise Rfc2889Error(f"{mac} + {offset} is not a MAC address")
    text = f"{value:012x}"
    return ":".join(text[i:i + 2] for i in range(0, 12, 2))


def learning_duration_s(addresses: int, rate_fps: float) -> float:
    """How long ``addresses`` learning frames (one per address) take at ``rate_fps``."""
    return addresses / rate_fps
