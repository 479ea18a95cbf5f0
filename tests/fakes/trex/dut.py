"""The device under test the fake TRex is wired to, and the ledger of what was sent.

Model: generator ports are cabled in pairs through a DUT (0 <-> 1, 2 <-> 3, ...). The DUT
forwards an aggregate of at most ``capacity_fps`` frames/s over all directions; above that
every stream loses the same share (rx = tx * capacity / offered). A frame needs
``delay_s`` to cross, so receive counters lag the transmit counters by that much: a client
that reads counters without a drain wait sees frames "in flight". One-way latency is
``latency_us`` +- ``latency_spread_us`` (normal, clipped at 1 µs), plus
``overload_latency_us`` while the DUT is over capacity (a full queue).

A DUT may have a buffer of ``buffer_frames``: while the offered aggregate O exceeds the
capacity C, the excess fills the buffer at O - C frames/s and nothing is lost until it is
full; then every stream loses the same share as without a buffer. When the offered load
drops below C the buffer drains at C - O. So a burst of L frames at O > C loses nothing
iff L <= B / (1 - C / O). Buffered frames are counted as received ``delay_s`` after they
were sent (the queueing delay shows only in latency samples, as while overloaded). With
``buffer_frames`` 0 the DUT is the bufferless one above.

Counting is exact piecewise-constant integration: a stream *run* (one start of one
stream) sends at a fixed rate from ``t0`` to ``t1``; the forwarding ratio changes only
when some run starts or stops or the buffer fills up, so each run is split into *pieces*
of constant ratio. When a run starts or stops the ledger plans the DUT's future from
then on (known run ends and the buffer-full instant are the plan's boundaries); the next
start or stop re-plans from its own instant.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field


def overlap(t0: float, t1: float | None, upto: float) -> float:
    """Seconds of [t0, t1) before ``upto``."""
    if t1 is not None and upto >= t1:
        return t1 - t0
    return max(0.0, upto - t0)


def run_overlap(t0: float, length: float | None, upto: float) -> float:
    """Like :func:`overlap` for a run of known ``length``: a finished run gives exactly
    ``length`` (so 50000 pps for 0.3 s is 15000 frames, not 14999 after float rounding)."""
    if length is not None and upto >= t0 + length:
        return length
    return max(0.0, upto - t0)


@dataclass
class Piece:
    t0: float
    t1: float | None
    ratio: float  # forwarded share in this piece
    queueing: bool = False  # frames wait in the DUT's buffer (latency as when overloaded)

    @property
    def congested(self) -> bool:
        """Frames in this piece see a full or filling queue: latency samples get the
        overload share."""
        return self.ratio < 1.0 or self.queueing


@dataclass
class StreamRun:
    """One stream transmitting once: fixed rate, fixed packet, known rx port."""

    port: int
    stream_id: int
    rx_port: int
    pps: float
    pkt_len: int  # bytes without FCS
    t0: float
    length: float | None  # seconds it sends for; None: until stopped
    pg_id: int | None = None
    latency: bool = False
    pieces: list[Piece] = field(default_factory=list)

    @property
    def t1(self) -> float | None:
        return None if self.length is None else self.t0 + self.length

    def tx(self, upto: float) -> int:
        return int(math.floor(self.pps * run_overlap(self.t0, self.length, upto) + 1e-9))

    def rx(self, upto: float, delay_s: float) -> int:
        """Frames that reached the rx port by ``upto`` (they left ``delay_s`` earlier)."""
        seen = upto - delay_s
        if all(p.ratio >= 1.0 for p in self.pieces):
            return int(math.floor(self.pps * run_overlap(self.t0, self.length, seen) + 1e-9))
        total = sum(self.pps * p.ratio * overlap(p.t0, p.t1, seen) for p in self.pieces)
        return int(math.floor(total + 1e-9))

    def rx_by_piece(self, upto: float, delay_s: float) -> list[tuple[Piece, int]]:
        """Received frames per piece, summing to :meth:`rx` (for latency sampling)."""
        seen = upto - delay_s
        out, cumulative, given = [], 0.0, 0
        total = self.rx(upto, delay_s)
        for piece in self.pieces:
            cumulative += self.pps * piece.ratio * overlap(piece.t0, piece.t1, seen)
            n = min(int(math.floor(cumulative + 1e-9)), total) - given
            out.append((piece, n))
            given += n
        if out and given < total:
            piece, n = out[-1]
            out[-1] = (piece, n + total - given)
        return out

    def ratio_at(self, at: float) -> float:
        """The forwarded share of this run at ``at`` (pieces may already be planned ahead)."""
        for piece in self.pieces:
            if piece.t0 <= at and (piece.t1 is None or at < piece.t1):
                return piece.ratio
        return self.pieces[-1].ratio if self.pieces else 1.0

    def cut_pieces(self, at: float) -> None:
        """Forget the plan from ``at`` on: pieces starting there go, one spanning it ends."""
        self.pieces = [p for p in self.pieces if p.t0 < at]
        if self.pieces and (self.pieces[-1].t1 is None or self.pieces[-1].t1 > at):
            self.pieces[-1].t1 = at

    def extend(self, t0: float, t1: float | None, ratio: float, queueing: bool) -> None:
        """Append a piece, or lengthen the last one when it carries on with the same ratio
        (so pieces only split where something changes: exact sums stay exact)."""
        last = self.pieces[-1] if self.pieces else None
        if last is not None and last.t1 == t0 and last.ratio == ratio and last.queueing == queueing:
            last.t1 = t1
            return
        self.pieces.append(Piece(t0, t1, ratio, queueing))

    def close(self, at: float) -> None:
        if self.length is None or at < self.t0 + self.length:
            self.length = max(0.0, at - self.t0)
        self.cut_pieces(self.t0 + self.length)


@dataclass
class DutModel:
    capacity_fps: float | None = None  # aggregate over all directions; None: unlimited
    delay_s: float = 0.002
    latency_us: float = 15.0
    latency_spread_us: float = 3.0
    overload_latency_us: float = 400.0
    ooo_ratio: float = 0.0
    dup_ratio: float = 0.0
    buffer_frames: float = 0.0  # frames the DUT holds while over capacity before it drops

    def ratio(self, offered_fps: float) -> float:
        if self.capacity_fps is None or offered_fps <= self.capacity_fps:
            return 1.0
        return self.capacity_fps / offered_fps

    def peer(self, port: int) -> int:
        return port ^ 1

    def phases(self, t0: float, t1: float | None, offered_fps: float,
               queue_frames: float) -> list["Segment"]:
        """What the DUT does over [t0, t1) at a constant offered load, starting with
        ``queue_frames`` buffered: at most two segments, split where the buffer becomes
        full (over capacity) or empty (under capacity)."""
        cap = self.capacity_fps
        if cap is None:
            return [Segment(t0, t1, offered_fps, 1.0, 0.0, 0.0)]
        slope = offered_fps - cap  # frames/s into (+) or out of (-) the buffer
        if slope > 0:
            room = self.buffer_frames - queue_frames
            if room <= 0:
                return [Segment(t0, t1, offered_fps, cap / offered_fps, self.buffer_frames, 0.0)]
            turn = t0 + room / slope  # the buffer is full from here on
            first = Segment(t0, turn, offered_fps, 1.0, queue_frames, slope, queueing=True)
        elif slope < 0 and queue_frames > 0:
            turn = t0 + queue_frames / -slope  # the buffer is empty from here on
            first = Segment(t0, turn, offered_fps, 1.0, queue_frames, slope, queueing=True)
        else:  # at capacity the buffer holds its level; under it with nothing buffered
            return [Segment(t0, t1, offered_fps, 1.0, queue_frames, 0.0, queueing=queue_frames > 0)]
        if t1 is not None and turn >= t1:
            first.t1 = t1
            return [first]
        # the level at the turn is exactly full or empty (no float residue from the slope)
        level = self.buffer_frames if slope > 0 else 0.0
        return [first, *self.phases(turn, t1, offered_fps, level)]


@dataclass
class Segment:
    """One stretch of the DUT's plan: constant offered load and forwarding ratio, the
    buffer level moving linearly from ``queue0`` at ``slope`` frames/s."""

    t0: float
    t1: float | None
    offered_fps: float
    ratio: float
    queue0: float
    slope: float
    queueing: bool = False

    def queue_at(self, at: float) -> float:
        """Buffered frames at ``at`` (within the segment or at its end)."""
        return max(0.0, self.queue0 + self.slope * (at - self.t0))


class Ledger:
    """Every stream run since the server started; counters are computed from it."""

    def __init__(self, dut: DutModel) -> None:
        self.dut = dut
        self.runs: list[StreamRun] = []
        self.plan: list[Segment] = []  # the DUT from the last start/stop on

    def active(self, at: float) -> list[StreamRun]:
        return [r for r in self.runs if r.t0 <= at and (r.t1 is None or r.t1 > at)]

    def queue_at(self, at: float) -> float:
        """Frames in the DUT's buffer at ``at``, from the current plan."""
        for seg in self.plan:
            if seg.t0 <= at and (seg.t1 is None or at < seg.t1):
                return seg.queue_at(at)
        return 0.0

    def plan_from(self, at: float) -> list[Segment]:
        """The DUT's future from ``at`` if nothing starts or stops: intervals between the
        known ends of the running runs, each split by the buffer filling or draining."""
        running = self.active(at)
        ends = sorted({r.t1 for r in running if r.t1 is not None})
        queue = self.queue_at(at)
        plan: list[Segment] = []
        t = at
        for t_next in [*ends, None]:
            offered = sum(r.pps for r in running if r.t1 is None or r.t1 > t)
            segments = self.dut.phases(t, t_next, offered, queue)
            plan.extend(segments)
            if t_next is None:
                break
            queue, t = segments[-1].queue_at(t_next), t_next
        return plan

    def rebalance(self, at: float) -> None:
        """Runs started or stopped at ``at``: re-plan the DUT's forwarding from then on."""
        self.plan = self.plan_from(at)
        for run in self.active(at):
            run.cut_pieces(at)
            for seg in self.plan:
                t0 = max(seg.t0, run.t0)
                t1 = seg.t1 if run.t1 is None or (seg.t1 is not None and seg.t1 < run.t1) else run.t1
                if t1 is not None and t1 <= t0:
                    continue
                run.extend(t0, t1, seg.ratio, seg.queueing)

    def add(self, runs: list[StreamRun]) -> None:
        self.runs.extend(runs)
        if runs:
            self.rebalance(min(r.t0 for r in runs))

    def close(self, runs: list[StreamRun], at: float) -> None:
        for run in runs:
            run.close(at)
        self.rebalance(at)

    def port_tx(self, port: int, upto: float) -> tuple[int, int]:
        pkts = byts = 0
        for r in self.runs:
            if r.port == port:
                n = r.tx(upto)
                pkts += n
                byts += n * r.pkt_len
        return pkts, byts

    def port_rx(self, port: int, upto: float) -> tuple[int, int]:
        pkts = byts = 0
        for r in self.runs:
            if r.rx_port == port:
                n = r.rx(upto, self.dut.delay_s)
                pkts += n
                byts += n * r.pkt_len
        return pkts, byts

    def current_pps(self, port: int, at: float, *, rx: bool) -> float:
        total = 0.0
        for r in self.active(at):
            if rx and r.rx_port == port:
                total += r.pps * r.ratio_at(at)
            elif not rx and r.port == port:
                total += r.pps
        return total


# --------------------------------------------------------------------------- latency


def trex_bucket_us(sample_us: float) -> int:
    """TRex's histogram bucket (lower bound, µs) for one sample (``time_histogram.cpp``):
    under 10 µs counts as "0"; then 10..90, 100..900, 1000.. by leading digit."""
    d10 = int(sample_us / 10.0)
    if d10 == 0:
        return 0
    base = 10
    while d10 >= 10:
        d10 //= 10
        base *= 10
    return base * d10


@dataclass
class LatencyState:
    """Samples drawn so far for one latency packet group."""

    seed: int
    drawn: dict[int, int] = field(default_factory=dict)  # piece id -> samples drawn
    histogram: dict[int, int] = field(default_factory=dict)
    count: int = 0
    total_us: float = 0.0
    min_us: float | None = None
    max_us: float | None = None
    last_us: float | None = None
    jitter_us: float = 0.0

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def add(self, dut: DutModel, n: int, overloaded: bool) -> None:
        for _ in range(n):
            sample = max(1.0, self.rng.gauss(dut.latency_us, dut.latency_spread_us))
            if overloaded:
                sample += dut.overload_latency_us * (0.5 + self.rng.random())
            bucket = trex_bucket_us(sample)
            self.histogram[bucket] = self.histogram.get(bucket, 0) + 1
            self.count += 1
            self.total_us += sample
            self.min_us = sample if self.min_us is None else min(self.min_us, sample)
            self.max_us = sample if self.max_us is None else max(self.max_us, sample)
            if self.last_us is not None:
                # RFC 3550 style smoothed jitter, as TRex's rx core keeps it
                self.jitter_us += (abs(sample - self.last_us) - self.jitter_us) / 16.0
            self.last_us = sample

    def update(self, dut: DutModel, runs: list[StreamRun], upto: float) -> None:
        for run in runs:
            for piece, n in run.rx_by_piece(upto, dut.delay_s):
                key = id(piece)
                have = self.drawn.get(key, 0)
                if n > have:
                    self.add(dut, n - have, piece.congested)
                    self.drawn[key] = n

    def to_json(self) -> dict:
        """The ``lat`` object of get_pgid_stats, in µs (integers where TRex has them)."""
        out: dict = {
            "average": self.total_us / self.count if self.count else 0.0,
            "total_max": int(self.max_us or 0),
            "total_min": int(self.min_us or 0),
            "last_max": int(self.max_us or 0),
            "jit": round(self.jitter_us, 3),
        }
        if self.histogram:
            out["histogram"] = {str(k): v for k, v in sorted(self.histogram.items())}
        else:
            out["histogram"] = {}
        return out
