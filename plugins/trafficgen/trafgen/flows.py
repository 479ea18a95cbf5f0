"""How N flows are spread over the varying header fields, as trafgen runtime counters.

trafgen's field counters (``dinc(min, max)``) advance every varying field by one per frame,
all in lock-step, each wrapping at its own period. The frame sequence then cycles with the
least common multiple of the periods, and frame ``k`` carries, in each field, its base value
plus ``k mod period``. A plan gives every varying field a period such that

* the cycle is exactly ``flows`` frames long and its ``flows`` frames are pairwise
  distinct (so each flow gets ``1/flows`` of the traffic, uniformly interleaved), and
* every field stays inside its range (a port never passes 65535).

A field wide enough for ``flows`` values counts through all of them; a narrower field
counts through the largest divisor of ``flows`` that fits (the cycle stays ``flows`` long).
When no field is wide enough (ports only), ``flows`` is split into pairwise coprime factors,
one per field: by the Chinese remainder theorem the combinations are then all distinct.

The burst pattern (``FlowFields.pattern``) keeps each flow for ``run`` consecutive frames:
frame ``k`` carries flow ``k // run`` of the cycle above (so the whole cycle is
``flows * run`` frames, each flow still getting ``1/flows`` of them). The scatter pattern
is ``run`` 1.

Pure functions; no I/O.
"""

from __future__ import annotations

import ipaddress
import math
from dataclasses import dataclass
from typing import Iterable, Mapping

from vsbench.interfaces.traffic import FlowFields

#: Width in bits of the part of each field that varies. trafgen counts over at most the
#: last 4 bytes of a field, so a MAC address varies in its last 32 bits.
FIELD_BITS: dict[str, int] = {
    "src_ip": 32,
    "dst_ip": 32,
    "src_port": 16,
    "dst_port": 16,
    "src_mac": 32,
    "dst_mac": 32,
}

#: The field a field becomes in the reverse direction.
SWAPPED: dict[str, str] = {
    "src_ip": "dst_ip",
    "dst_ip": "src_ip",
    "src_port": "dst_port",
    "dst_port": "src_port",
    "src_mac": "dst_mac",
    "dst_mac": "src_mac",
}


class FlowPlanError(ValueError):
    """The flows asked for do not fit the fields allowed to vary; one line for the user."""


def base_value(fields: FlowFields, name: str) -> int:
    """The integer the counter of ``name`` starts from (flow 0's value of its varying part)."""
    value = getattr(fields, name)
    if name.endswith("_ip"):
        return int(ipaddress.IPv4Address(value))
    if name.endswith("_port"):
        return int(value)
    if name.endswith("_mac"):
        return int(str(value).replace(":", "")[-8:], 16)
    raise FlowPlanError(f"unknown flow field {name!r}")


def capacity(fields: FlowFields, name: str) -> int:
    """How many consecutive values ``name`` can take from its base without overflowing."""
    return (1 << FIELD_BITS[name]) - base_value(fields, name)


def _prime_powers(n: int) -> list[int]:
    """``n`` as a list of prime powers (e.g. 360 -> [8, 9, 5])."""
    powers = []
    p = 2
    while p * p <= n:
        if n % p == 0:
            q = 1
            while n % p == 0:
                n //= p
                q *= p
            powers.append(q)
        p += 1 if p == 2 else 2
    if n > 1:
        powers.append(n)
    return powers


def _divisors(n: int) -> list[int]:
    small, large = [], []
    for d in range(1, math.isqrt(n) + 1):
        if n % d == 0:
            small.append(d)
            if d != n // d:
                large.append(n // d)
    return small + large[::-1]


def largest_divisor_at_most(n: int, limit: int) -> int:
    return max(d for d in _divisors(n) if d <= limit)


def _coprime_split(flows: int, caps: Mapping[str, int]) -> dict[str, int] | None:
    """Assign the prime powers of ``flows`` to fields so each product fits its capacity."""
    powers = sorted(_prime_powers(flows), reverse=True)
    names = list(caps)
    products = {n: 1 for n in names}

    def place(i: int) -> bool:
        if i == len(powers):
            return True
        tried = set()
        for name in names:
            if products[name] in tried:  # symmetric states: same outcome
                continue
            tried.add(products[name])
            if products[name] * powers[i] <= caps[name]:
                products[name] *= powers[i]
                if place(i + 1):
                    return True
                products[name] //= powers[i]
        return False

    return dict(products) if place(0) else None


@dataclass(frozen=True)
class FlowPlan:
    """Period of each field's counter; fields not listed (or with period 1) are constant."""

    flows: int
    periods: tuple[tuple[str, int], ...] = ()
    #: Consecutive frames of one flow (the burst pattern's run; 1: scatter).
    run: int = 1

    def period(self, name: str) -> int:
        return dict(self.periods).get(name, 1)

    @property
    def varying(self) -> tuple[str, ...]:
        return tuple(name for name, p in self.periods if p > 1)

    def offset(self, name: str, flow: int) -> int:
        """How far flow ``flow``'s value of ``name`` is from the base value."""
        return flow % self.period(name)

    def swapped(self) -> "FlowPlan":
        """The plan of the reverse direction (source and destination fields exchanged)."""
        return FlowPlan(self.flows, tuple((SWAPPED[n], p) for n, p in self.periods), self.run)

    def cycle_length(self) -> int:
        """Distinct flows the counters cycle through (``flows``)."""
        length = 1
        for _, p in self.periods:
            length = length * p // math.gcd(length, p)
        return length

    def flow_of_frame(self, k: int) -> int:
        """The flow frame ``k`` (0-based) of a direction carries."""
        return (k // self.run) % self.cycle_length()


def plan_flows(fields: FlowFields, flows: int, vary: Iterable[str] | None = None) -> FlowPlan:
    """Spread ``flows`` flows over ``vary`` (default ``fields.vary``); see the module doc."""
    names = tuple(fields.vary if vary is None else vary)
    if flows < 1:
        raise FlowPlanError(f"flows must be at least 1, got {flows}")
    unknown = [n for n in names if n not in FIELD_BITS]
    if unknown:
        raise FlowPlanError(
            f"cannot vary {', '.join(unknown)}; choose from {', '.join(FIELD_BITS)}"
        )
    if len(set(names)) != len(names):
        raise FlowPlanError(f"a field is listed twice in vary: {', '.join(names)}")
    run = fields.frames_per_flow_run
    if run < 1:
        raise FlowPlanError(f"traffic.fields.burst_run must be at least 1, got {run}")
    if flows == 1:
        return FlowPlan(1)
    if not names:
        raise FlowPlanError(f"{flows} flows need at least one field in vary")
    caps = {}
    for name in names:
        try:
            caps[name] = capacity(fields, name)
        except (ValueError, ipaddress.AddressValueError) as exc:
            raise FlowPlanError(f"{name}: {exc}") from None
    if any(c >= flows for c in caps.values()):
        periods = {n: (flows if c >= flows else largest_divisor_at_most(flows, c)) for n, c in caps.items()}
    else:
        split = _coprime_split(flows, caps)
        if split is None:
            limits = ", ".join(f"{n} {c}" for n, c in caps.items())
            raise FlowPlanError(
                f"{flows} flows do not fit in {', '.join(names)} (values available: {limits}); "
                f"vary an address field as well or choose another flow count"
            )
        periods = split
    plan = FlowPlan(flows, tuple((n, periods[n]) for n in names), run)
    assert plan.cycle_length() == flows, (plan, flows)
    return plan


def flow_values(fields: FlowFields, plan: FlowPlan, flow: int) -> FlowFields:
    """The concrete header values of flow ``flow`` (0-based) under ``plan``."""
    import dataclasses

    changes = {}
    for name in plan.varying:
        value = base_value(fields, name) + plan.offset(name, flow)
        if name.endswith("_ip"):
            changes[name] = str(ipaddress.IPv4Address(value))
        elif name.endswith("_port"):
            changes[name] = value
        else:
            head = str(getattr(fields, name)).replace(":", "")[:-8]
            hexed = head + f"{value:08x}"
            changes[name] = ":".join(hexed[i:i + 2] for i in range(0, 12, 2))
    return dataclasses.replace(fields, **changes)


def reverse_fields(fields: FlowFields) -> FlowFields:
    """The reverse direction's fields: sources and destinations exchanged, ``vary`` too."""
    import dataclasses

    return dataclasses.replace(
        fields,
        src_mac=fields.dst_mac,
        dst_mac=fields.src_mac,
        src_ip=fields.dst_ip,
        dst_ip=fields.src_ip,
        src_port=fields.dst_port,
        dst_port=fields.src_port,
        vary=tuple(SWAPPED.get(n, n) for n in fields.vary),
    )
