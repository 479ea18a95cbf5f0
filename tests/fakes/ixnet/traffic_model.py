"""What the fake's chassis sends and what the modelled DUT between its ports does to it.

Pure computation, no HTTP: the session turns the applied traffic configuration into
:class:`Stream` objects, starts a :class:`TrafficRun` and reads counters from it at any
instant. Counters are functions of time, so a client that reads statistics too early sees
them still moving, exactly like a real chassis.

The DUT: a forwarding engine of ``capacity_fps`` frames/s shared by all directions. Below
capacity every frame is forwarded; above it each direction keeps ``capacity / offered`` of
its frames. Latency is ``base_latency_ns`` up to 80 % load, then grows linearly to
``buffer_latency_ns`` at 100 % and stays there when overloaded. Received-frame counters trail
the transmit counters by ``stats_lag_s`` (frames in flight plus statistics collection), so a
generator must wait for the drain before reading them.
"""

from __future__ import annotations

import ipaddress
import math
from dataclasses import dataclass, field
from functools import reduce

L1_OVERHEAD_BYTES = 20


# ---------------------------------------------------------------------- field values


def parse_field_value(fmt: str, text: object) -> int:
    """A field value as IxNetwork formats it (``iPv4``, ``mAC``, ``hex``, ``decimal``)."""
    raw = str(text).strip()
    if fmt == "iPv4":
        return int(ipaddress.IPv4Address(raw))
    if fmt == "mAC":
        parts = raw.replace("-", ":").split(":")
        if len(parts) != 6 or not all(len(p) in (1, 2) for p in parts):
            raise ValueError(f"{raw!r} is not a MAC address")
        return int("".join(p.zfill(2) for p in parts), 16)
    if fmt == "hex":
        return int(raw, 16)
    value = float(raw)
    if value != int(value):
        raise ValueError(f"{raw!r} is not an integer")
    return int(value)


FIELD_BITS = {"iPv4": 32, "mAC": 48}


def field_count(fmt: str, bits_default: int, value_type: str, start: object, step: object,
                count: object) -> int:
    """How many distinct values an increment/decrement field cycles through (checked)."""
    if value_type == "singleValue":
        return 1
    if value_type not in ("increment", "decrement"):
        raise ValueError(f"value type {value_type!r} is not modelled")
    n = int(float(str(count)))
    if n < 1:
        raise ValueError(f"countValue {count!r} must be >= 1")
    first = parse_field_value(fmt, start)
    stride = parse_field_value(fmt, step)
    bits = FIELD_BITS.get(fmt, bits_default)
    last = first + stride * (n - 1) if value_type == "increment" else first - stride * (n - 1)
    if not 0 <= last < 2 ** bits:
        raise ValueError(f"{n} values from {start} step {step} leave the field's range")
    return n if stride else 1


def lockstep_flows(counts: list[int]) -> int:
    """Fields that all advance once per frame repeat after the lcm of their counts."""
    return reduce(lambda a, b: a * b // math.gcd(a, b), counts, 1)


# ---------------------------------------------------------------------- DUT


@dataclass(frozen=True)
class DutModel:
    capacity_fps: float = 1_000_000.0
    base_latency_ns: float = 5_000.0
    buffer_latency_ns: float = 250_000.0
    stats_lag_s: float = 0.1

    def forwarded_ratio(self, offered_fps: float) -> float:
        if offered_fps <= self.capacity_fps or offered_fps <= 0:
            return 1.0
        return self.capacity_fps / offered_fps

    def latency_ns(self, offered_fps: float) -> tuple[float, float, float]:
        """(min, avg, max) one-way latency through the DUT at this aggregate load."""
        load = offered_fps / self.capacity_fps if self.capacity_fps > 0 else math.inf
        if load <= 0.8:
            avg = self.base_latency_ns
        elif load < 1.0:
            avg = self.base_latency_ns + (load - 0.8) / 0.2 * (self.buffer_latency_ns - self.base_latency_ns)
        else:
            avg = self.buffer_latency_ns
        return (self.base_latency_ns * 0.9, avg, avg * 1.5 + self.base_latency_ns)


# ---------------------------------------------------------------------- traffic


@dataclass
class Stream:
    """One applied flow group: a config element's frames from one port to another."""

    item_name: str
    tx_port: str  # vport name
    rx_port: str
    frame_size_bytes: int
    rate_fps: float  # as configured (before the line-rate cap)
    control: str  # continuous | fixedDuration | fixedFrameCount
    duration_s: float
    frame_count: int
    flows: int
    line_rate_bps: float
    headers: dict[str, str] = field(default_factory=dict)  # field type id -> value or start..step xcount

    @property
    def line_rate_fps(self) -> float:
        return self.line_rate_bps / ((self.frame_size_bytes + L1_OVERHEAD_BYTES) * 8)

    @property
    def actual_rate_fps(self) -> float:
        return min(self.rate_fps, self.line_rate_fps)

    def send_time_s(self) -> float:
        """How long the stream transmits (inf when continuous)."""
        if self.control == "fixedDuration":
            return self.duration_s
        if self.control == "fixedFrameCount":
            return self.frame_count / self.actual_rate_fps
        return math.inf


@dataclass
class StreamCounters:
    tx_frames: int
    rx_frames: int
    tx_rate_fps: float
    rx_rate_fps: float
    latency_ns: tuple[float, float, float] | None
    first_rx_s: float | None
    last_rx_s: float | None


@dataclass
class TrafficRun:
    """Traffic started at ``start`` (monotonic seconds) with the applied streams."""

    streams: list[Stream]
    dut: DutModel
    start: float
    latency_enabled: bool
    stopped_at: float | None = None
    _ends: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._ends = [self.start + s.send_time_s() for s in self.streams]

    @property
    def offered_fps(self) -> float:
        return sum(s.actual_rate_fps for s in self.streams)

    def end_of(self, i: int) -> float:
        end = self._ends[i]
        return end if self.stopped_at is None else min(end, self.stopped_at)

    def transmitting(self, now: float) -> bool:
        return any(now < self.end_of(i) for i in range(len(self.streams)))

    def stop(self, now: float) -> None:
        if self.stopped_at is None:
            self.stopped_at = now

    def last_end(self) -> float:
        return max((self.end_of(i) for i in range(len(self.streams))), default=self.start)

    def counters(self, i: int, now: float) -> StreamCounters:
        s = self.streams[i]
        end = self.end_of(i)
        rate = s.actual_rate_fps
        sent_s = max(0.0, min(now, end) - self.start)
        if s.control == "fixedFrameCount" and now >= end and self.stopped_at is None:
            tx = s.frame_count
        else:
            tx = int(round(rate * sent_s)) if now >= end else int(rate * sent_s)
        ratio = self.dut.forwarded_ratio(self.offered_fps)
        arrived_s = max(0.0, min(now - self.dut.stats_lag_s, end) - self.start)
        if now >= end + self.dut.stats_lag_s:
            rx = int(math.floor(tx * ratio + 1e-9))
        else:
            rx = min(int(rate * arrived_s * ratio), tx)
        running = now < end
        latency = self.dut.latency_ns(self.offered_fps) if (self.latency_enabled and rx > 0) else None
        first = self.start + self.dut.stats_lag_s - self.start if rx > 0 else None
        last = (min(now, end + self.dut.stats_lag_s) - self.start) if rx > 0 else None
        return StreamCounters(tx, rx, rate if running else 0.0, rate * ratio if running else 0.0,
                              latency, first, last)
