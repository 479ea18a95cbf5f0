"""Loss, duplicates and reordering of a probe stream (RFC 4737), with bounded memory.

Definitions (RFC 4737 section 3 and 4):

* ``NextExp`` is one more than the highest sequence number received so far; a packet with
  sequence number ``s < NextExp`` is **reordered**. Duplicates are removed first: a second
  copy of a sequence number is a **duplicate**, never a reordered packet.
* The **reordering extent** of a reordered packet is ``i - j``, where ``i`` is its arrival
  position and ``j`` the position of the earliest arrival with a higher sequence number.
* A **loss burst** is a maximal run of consecutive sequence numbers that never arrived.

:class:`SequenceTracker` processes arrivals chunk by chunk with numpy. It remembers only a
window of the ``window`` sequence numbers below ``NextExp``; an arrival older than that is
counted as ``late`` (reordered by more than the window, or a very late duplicate -- the two
cannot be told apart without unbounded memory). :func:`analyze_sequence` runs a tracker
whose window covers the whole stream, so it is exact.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

DEFAULT_WINDOW = 1 << 16


@dataclass
class SequenceSummary:
    sent: int | None
    received: int  # arrivals, duplicates included
    unique: int
    duplicates: int
    reordered: int
    late: int  # arrived more than the tracker's window after NextExp passed them
    max_reorder_extent: int
    lost: int | None  # sent - unique (None when sent is unknown)
    loss_bursts: int
    max_loss_burst: int
    loss_burst_lengths: dict[int, int] = field(default_factory=dict)  # length -> bursts

    @property
    def reordered_ratio(self) -> float:
        """Reordered over unique received packets (RFC 4737 section 4.1.3)."""
        return (self.reordered + self.late) / self.unique if self.unique else 0.0

    def to_dict(self) -> dict:
        return {
            "sent": self.sent,
            "received": self.received,
            "unique": self.unique,
            "duplicates": self.duplicates,
            "reordered": self.reordered,
            "late": self.late,
            "reordered_ratio": self.reordered_ratio,
            "max_reorder_extent": self.max_reorder_extent,
            "lost": self.lost,
            "loss_bursts": self.loss_bursts,
            "max_loss_burst": self.max_loss_burst,
            "loss_burst_lengths": {str(k): v for k, v in sorted(self.loss_burst_lengths.items())},
        }


class SequenceTracker:
    """Streaming RFC 4737 accounting over sequence numbers starting at 0."""

    def __init__(self, window: int = DEFAULT_WINDOW):
        if window < 1:
            raise ValueError("window must be positive")
        self.window = int(window)
        self.low = 0  # every sequence number below this is final
        self.next_exp = 0
        self.arrivals = 0
        self.unique = 0
        self.duplicates = 0
        self.reordered = 0
        self.late = 0
        self.max_extent = 0
        self._seen = np.zeros(0, dtype=bool)  # covers [low, next_exp)
        # arrivals that raised NextExp, within the window: their sequence numbers
        # (increasing) and arrival positions -- the "earliest later packet" of a reorder
        self._raise_seq = np.zeros(0, dtype=np.int64)
        self._raise_at = np.zeros(0, dtype=np.int64)
        self._open_burst = 0
        self._bursts: dict[int, int] = {}

    def add(self, sequence, final: bool = False) -> None:
        """Account a chunk of arrivals (in arrival order).

        Linear passes over the chunk plus work proportional to the out-of-order packets:
        an arrival that raises NextExp is never a duplicate nor reordered, so only the
        others (few, in any sane stream) are examined one by one. ``final=True`` skips
        keeping history that only later chunks would need.
        """
        seq = np.asarray(sequence, dtype=np.int64)
        if seq.size == 0:
            return
        start = self.arrivals
        self.arrivals += int(seq.size)
        low, old_next = self.low, self.next_exp
        running = np.maximum.accumulate(seq)
        np.maximum(running, old_next - 1, out=running)
        high = int(running[-1]) + 1
        # before[i] = NextExp - 1 as packet i arrives
        not_raising = np.empty(seq.size, dtype=bool)
        not_raising[0] = seq[0] <= old_next - 1
        np.less_equal(seq[1:], running[:-1], out=not_raising[1:])
        self._grow(high - low)
        if high > old_next:
            self._mark_raised(seq, running, old_next)
        others = np.flatnonzero(not_raising)
        if others.size:
            self._examine(seq, running, others, start, old_next)
        if not final:
            raising = ~not_raising
            self._raise_seq = np.concatenate((self._raise_seq, seq[raising]))
            self._raise_at = np.concatenate((self._raise_at, np.flatnonzero(raising) + start))
        self.unique += int(seq.size - others.size)  # raises; _examine adds the reordered
        self.next_exp = high
        self._finalize(max(self.low, self.next_exp - self.window), final)

    def _mark_raised(self, seq, running, old_next: int) -> None:
        """Mark [old_next, high) as seen except the gaps that raising arrivals jumped.

        The running maximum only moves at raising arrivals, so its steps larger than one
        are exactly the gaps.
        """
        low = self.low
        high = int(running[-1]) + 1
        self._seen[old_next - low: high - low] = True
        step = np.diff(running)
        jumps = np.flatnonzero(step > 1) + 1
        gap_start = running[jumps - 1] + 1
        gap_len = step[jumps - 1] - 1
        if seq[0] > old_next:  # the chunk's first arrival jumped over [old_next, seq[0])
            gap_start = np.concatenate(([old_next], gap_start))
            gap_len = np.concatenate(([seq[0] - old_next], gap_len))
        if gap_len.size == 0:
            return
        gap_start = gap_start - low
        if gap_len.size <= 64:
            for a, n in zip(gap_start.tolist(), gap_len.tolist()):
                self._seen[a: a + n] = False
        else:
            total = int(gap_len.sum())
            offsets = np.repeat(gap_start - np.concatenate(([0], np.cumsum(gap_len)[:-1])), gap_len)
            self._seen[offsets + np.arange(total)] = False

    def _examine(self, seq, running, others, start: int, old_next: int) -> None:
        """Classify the arrivals that did not raise NextExp: late, duplicate or reordered."""
        low = self.low
        s = seq[others]
        too_old = s < low
        self.late += int(np.count_nonzero(too_old))
        if too_old.all():
            return
        others, s = others[~too_old], s[~too_old]
        # first copies only, in arrival order
        _, first = np.unique(s, return_index=True)
        first_copy = np.zeros(s.size, dtype=bool)
        first_copy[first] = True
        seen_before = self._seen[s - low].copy()
        # the chunk's own raises were marked already: a value the running max took exactly
        # counts as seen; history before the chunk is in _seen as it stood
        dup = ~first_copy | seen_before
        fresh = ~dup
        self.duplicates += int(np.count_nonzero(dup))
        if not fresh.any():
            return
        others, s = others[fresh], s[fresh]
        self.reordered += int(s.size)
        self.unique += int(s.size)
        self._seen[s - low] = True
        # reordering extent: arrival position minus that of the first arrival above s
        in_chunk = s >= old_next
        extents = np.empty(s.size, dtype=np.int64)
        if in_chunk.any():
            j = np.searchsorted(running, s[in_chunk], side="right")
            extents[in_chunk] = others[in_chunk] - j
        if (~in_chunk).any():
            k = np.searchsorted(self._raise_seq, s[~in_chunk], side="right")
            k = np.minimum(k, max(0, self._raise_at.size - 1))
            if self._raise_at.size:
                extents[~in_chunk] = others[~in_chunk] + start - self._raise_at[k]
            else:
                extents[~in_chunk] = 0
        self.max_extent = max(self.max_extent, int(extents.max()))

    def _grow(self, length: int) -> None:
        if length > self._seen.size:
            seen = np.zeros(length, dtype=bool)
            seen[: self._seen.size] = self._seen
            self._seen = seen

    def _finalize(self, new_low: int, final: bool = False) -> None:
        """Sequence numbers below ``new_low`` are final: count the loss bursts among them."""
        count = new_low - self.low
        if count <= 0:
            return
        self._grow(count)
        self._count_bursts(~self._seen[:count])
        self._seen = self._seen[count:].copy()
        self.low = new_low
        if final:
            return
        keep_from = int(np.searchsorted(self._raise_seq, new_low, side="left"))
        # keep the last raise below new_low too: it may be the first passer of a late packet
        keep_from = max(0, keep_from - 1)
        self._raise_seq = self._raise_seq[keep_from:]
        self._raise_at = self._raise_at[keep_from:]

    def _count_bursts(self, missing: np.ndarray) -> None:
        """Add the runs of True in ``missing`` (a contiguous slice) to the burst counts."""
        if missing.size == 0:
            return
        where = np.flatnonzero(missing)
        if where.size == 0:
            self._close_burst()
            return
        breaks = np.flatnonzero(np.diff(where) != 1)
        starts = np.concatenate(([where[0]], where[breaks + 1]))
        ends = np.concatenate((where[breaks] + 1, [where[-1] + 1]))
        lengths = ends - starts
        if starts[0] == 0 and self._open_burst:
            lengths[0] += self._open_burst
            self._open_burst = 0
        else:
            self._close_burst()
        # a run touching the end of this slice may continue in the next one
        if ends[-1] == missing.size:
            self._open_burst = int(lengths[-1])
            lengths = lengths[:-1]
        if lengths.size:
            values, counts = np.unique(lengths, return_counts=True)
            for v, c in zip(values.tolist(), counts.tolist()):
                self._bursts[v] = self._bursts.get(v, 0) + c

    def _close_burst(self) -> None:
        if self._open_burst:
            self._bursts[self._open_burst] = self._bursts.get(self._open_burst, 0) + 1
            self._open_burst = 0

    def summary(self, sent: int | None = None) -> SequenceSummary:
        """The counts so far; with ``sent``, everything below it that never arrived is lost.

        Non-destructive: the tracker can keep receiving afterwards.
        """
        saved = (dict(self._bursts), self._open_burst)
        try:
            if sent is not None:
                tail = np.ones(max(0, sent - self.low), dtype=bool)
                seen = self._seen[: tail.size]
                tail[: seen.size] &= ~seen
                self._count_bursts(tail)
            self._close_burst()
            bursts = dict(self._bursts)
        finally:
            self._bursts, self._open_burst = saved
        return SequenceSummary(
            sent=sent,
            received=self.arrivals,
            unique=self.unique,
            duplicates=self.duplicates,
            reordered=self.reordered,
            late=self.late,
            max_reorder_extent=self.max_extent,
            lost=None if sent is None else max(0, sent - self.unique - self.late),
            loss_bursts=sum(bursts.values()),
            max_loss_burst=max(bursts) if bursts else 0,
            loss_burst_lengths=bursts,
        )


def analyze_sequence(sequence, sent: int | None = None) -> SequenceSummary:
    """Exact RFC 4737 accounting of a whole stream of sequence numbers in arrival order."""
    seq = np.asarray(sequence, dtype=np.int64)
    span = int(seq.max()) + 1 if seq.size else 0
    tracker = SequenceTracker(window=max(1, span, sent or 0))
    tracker.add(seq, final=True)
    return tracker.summary(sent)
