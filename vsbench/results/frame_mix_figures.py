"""Per-size figures of a frame mix (IMIX) at a reported point, from its trial.

Why apart from :mod:`vsbench.results.summary`: a mix is measured as one load, so its
aggregate figures (NDR fps, L1/L2 bit/s at the mix's mean size, % of line rate) are the
ordinary point's; what a mix adds is the breakdown per size, and that is a function of the
mix and the point's trial alone -- the runner and :mod:`vsbench.results.recompute` call the
same function, so the breakdown recomputes from trials.jsonl like every other figure.

Per size: its share of the frames (the mix's weight over the total), its frames/s and
bit/s at the point's throughput (share x throughput: the mix went out in that proportion),
the frames of that size the trial sent -- exact, counted off the cycle each stream starts
at (:meth:`FrameMix.frames_of_size` of each direction's frames sent) -- and, where the
generator counted its received frames by size (``generator_stats["rx_frames_by_size"]``),
those; None where it did not (never a share of the total passed off as a count).
"""

from __future__ import annotations

from typing import Any

from vsbench.interfaces.frame_mix import FrameMix
from vsbench.interfaces.traffic import l1_bps, l2_bps
from vsbench.results.model import FrameSizeResult, ReportedPoint, TrialRecord


def tx_frames_by_size(mix: FrameMix, trial: TrialRecord) -> dict[int, int]:
    """Frames of each size the trial sent: every direction's stream starts the cycle anew."""
    r = trial.result
    counts = [d.tx_frames for d in r.directions] or [r.tx_frames]
    out = {s: 0 for s in mix.sizes_bytes}
    for sent in counts:
        for size, n in mix.frames_of_size(int(sent)).items():
            out[size] += n
    return out


def rx_frames_by_size(trial: TrialRecord) -> dict[int, int] | None:
    """What the generator itself counted received per size, None when it did not count."""
    counted = (trial.result.generator_stats or {}).get("rx_frames_by_size")
    if not isinstance(counted, dict):
        return None
    return {int(k): int(v) for k, v in counted.items()}


def per_size(mix: FrameMix, point: ReportedPoint, trial: TrialRecord | None) -> list[dict[str, Any]]:
    """The breakdown of ``point`` (its ``throughput_fps``) over the sizes of ``mix``;
    ``trial`` is the point's trial (``trial_index``), None when it has none."""
    shares = mix.shares
    sent = tx_frames_by_size(mix, trial) if trial is not None else None
    received = rx_frames_by_size(trial) if trial is not None else None
    out = []
    for size, weight in zip(mix.sizes_bytes, mix.weights):
        fps = None if point.throughput_fps is None else shares[size] * point.throughput_fps
        out.append({
            "frame_size_bytes": int(size),
            "weight": int(weight),
            "frame_share": shares[size],
            "throughput_fps": fps,
            "throughput_l1_mbps": None if fps is None else l1_bps(fps, size) / 1e6,
            "throughput_l2_mbps": None if fps is None else l2_bps(fps, size) / 1e6,
            "tx_frames": None if sent is None else int(sent[size]),
            "rx_frames": None if received is None else received.get(int(size)),
        })
    return out


def annotate(fs: FrameSizeResult, mix: FrameMix, records: list[TrialRecord]) -> None:
    """Set ``fs.frame_mix`` and every point's ``per_size`` (points off a trial of
    ``records``, looked up by ``trial_index``)."""
    fs.frame_mix = mix.to_json()
    by_index = {r.trial_index: r for r in records}
    for point in fs.points:
        point.per_size = per_size(mix, point, by_index.get(point.trial_index))
