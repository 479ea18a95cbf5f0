"""Whether one trial is good or bad for one goal.

A trial is *bad* for a goal when its loss ratio exceeds the goal's ``loss_ratio`` or, for a
goal with a latency bound, when the 99th percentile of its probe latencies exceeds
``max_latency_p99_ns``. Kept apart from the searches so every mode judges trials the same
way, and so a test can check the judgement on its own.
"""

from __future__ import annotations

import numpy as np

from vsbench.interfaces.traffic import INVALID_DISTURBED, TrialResult
from vsbench.measurement.validity import invalid_kind

from .api import Goal

#: Tolerance for comparing a loss ratio to a goal's, so 0.005 is not "above" 0.005 because
#: of float rounding of frame counts.
_LOSS_EPSILON = 1e-12


def trial_p99_ns(trial: TrialResult) -> float | None:
    """The 99th percentile one-way latency of the trial's probes, or ``None`` without data.

    From per-packet records it is the sample at rank ceil(0.99 n) (the nearest-rank
    definition, never interpolated below a real sample); from a histogram it is the upper
    edge of the bucket holding that rank (the conservative value the histogram allows).
    """
    if trial.probes is not None and len(trial.probes.latency_ns):
        samples = np.asarray(trial.probes.latency_ns)
        rank = int(np.ceil(0.99 * samples.size)) - 1
        return float(np.partition(samples, rank)[rank])
    hist = trial.latency_histogram
    if hist is not None:
        counts = np.asarray(hist.counts, dtype=np.int64)
        total = int(counts.sum())
        if total <= 0:
            return None
        rank = int(np.ceil(0.99 * total))
        index = int(np.searchsorted(np.cumsum(counts), rank))
        lowers = np.asarray(hist.bucket_lower_ns, dtype=np.float64)
        if index + 1 < lowers.size:
            upper = float(lowers[index + 1])
        else:
            upper = float(hist.max_ns) if hist.max_ns is not None else float(lowers[index])
        if hist.max_ns is not None:
            upper = min(upper, float(hist.max_ns))
        return upper
    return None


def missed_regardless_of_pacing(goal: Goal, trial: TrialResult) -> bool:
    """True when a disturbed ``trial`` missed ``goal`` by more loss than its late frames
    can explain: the device would have missed it offered evenly too.

    A stall delays frames and the catch-up sends them closer together; a FIFO queue (or a
    policer's bucket) then holds at most those displaced frames more than it would have,
    so the unevenness costs at most ``PacingStats.late_frames`` frames. More lost than that,
    beyond the goal's loss ratio, is the device's own loss. A latency goal cannot be
    separated this way (False), nor a trial without the count."""
    if goal.max_latency_p99_ns is not None or trial.pacing is None or trial.pacing.late_frames is None:
        return False
    sent = trial.tx_frames
    if sent <= 0:
        return False
    own_loss = (sent - trial.rx_frames) - trial.pacing.late_frames
    return own_loss / sent > goal.loss_ratio + _LOSS_EPSILON


def trial_is_bad(goal: Goal, trial: TrialResult) -> bool:
    """True when ``trial`` violates ``goal`` (too much loss, or p99 latency over the bound).

    A goal with a latency bound treats a trial without latency data as bad: a bound that
    cannot be checked is not met. A *disturbed* trial (every frame went out in the trial's
    time, but not evenly: a stall, then a catch-up burst) is judged like a valid one: the
    device got the same frames in the same time, in a harder pattern, so a goal it met is
    met (for a work-conserving queue or a token-bucket policer, whatever passes the uneven
    load passes the even one), and a goal it missed counts as missed -- conservative, and
    only after the measurer's retries (:mod:`.measurer`). Any other invalid trial is bad
    for every goal.
    """
    if not trial.valid and invalid_kind(trial) != INVALID_DISTURBED:
        return True
    if trial.loss_ratio > goal.loss_ratio + _LOSS_EPSILON:
        return True
    if goal.max_latency_p99_ns is not None:
        p99 = trial_p99_ns(trial)
        if p99 is None or p99 > goal.max_latency_p99_ns:
            return True
    return False
