"""Reported figures as pure functions of trial records: the one place they are computed.

The runner uses these while a run goes; :mod:`vsbench.results.recompute` uses the same
functions over ``trials.jsonl`` and ``config.yaml`` afterwards, so a reported number and
its recomputation cannot drift apart.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from vsbench.interfaces.traffic import TrialResult, l1_bps, l2_bps
from vsbench.results.model import LatencyStats, ReportedPoint, TrialRecord


def latency_stats(result: TrialResult) -> LatencyStats | None:
    """min/avg/max one-way latency of a trial, from its probes or else its histogram."""
    probes = result.probes
    if probes is not None:
        lat = np.asarray(probes.latency_ns, dtype=np.int64)
        if lat.size == 0:
            return LatencyStats("probes", 0, None, None, None, probes_sent=int(probes.sent))
        return LatencyStats(
            "probes",
            int(lat.size),
            float(lat.min()),
            float(lat.mean()),
            float(lat.max()),
            probes_sent=int(probes.sent),
        )
    hist = result.latency_histogram
    if hist is not None:
        edges = np.asarray(hist.bucket_lower_ns, dtype=np.float64)
        counts = np.asarray(hist.counts, dtype=np.int64)
        total = int(counts.sum())
        used = edges[counts > 0]
        min_ns = hist.min_ns if hist.min_ns is not None else (float(used.min()) if used.size else None)
        max_ns = hist.max_ns if hist.max_ns is not None else (float(used.max()) if used.size else None)
        if hist.mean_ns is not None:
            avg_ns = float(hist.mean_ns)
        else:
            avg_ns = float((edges * counts).sum() / total) if total else None
        return LatencyStats("histogram", total, min_ns, avg_ns, max_ns)
    return None


def rate_figures(
    rate_fps: float | None, frame_size_bytes: int, nominal_line_rate_fps: float | None
) -> tuple[float | None, float | None, float | None]:
    """(L1 Mbps, L2 Mbps, % of nominal line rate) of an aggregate rate."""
    if rate_fps is None:
        return None, None, None
    percent = None
    if nominal_line_rate_fps:
        percent = 100.0 * rate_fps / nominal_line_rate_fps
    return (
        l1_bps(rate_fps, frame_size_bytes) / 1e6,
        l2_bps(rate_fps, frame_size_bytes) / 1e6,
        percent,
    )


def search_point(
    *,
    name: str,
    frame_size_bytes: int,
    nominal_line_rate_fps: float | None,
    lower_bound_fps: float | None,
    upper_bound_fps: float | None,
    bound_trial: TrialRecord | None,
    upper_trial: TrialRecord | None = None,
    latency_trial: TrialRecord | None = None,
    goal_loss_ratio: float | None = None,
    goal_exceed_ratio: float | None = None,
    conditional_throughput_fps: float | None = None,
    regular: bool | None = True,
    irregular_reason: str | None = None,
    stats: dict | None = None,
) -> ReportedPoint:
    """The reported point of one search goal: throughput = the goal's lower bound."""
    l1, l2, pct = rate_figures(lower_bound_fps, frame_size_bytes, nominal_line_rate_fps)
    point = ReportedPoint(
        name=name,
        goal_loss_ratio=goal_loss_ratio,
        goal_exceed_ratio=goal_exceed_ratio,
        throughput_fps=lower_bound_fps,
        throughput_l1_mbps=l1,
        throughput_l2_mbps=l2,
        line_rate_percent=pct,
        offered_load_fps=lower_bound_fps,
        lower_bound_fps=lower_bound_fps,
        upper_bound_fps=upper_bound_fps,
        upper_bound_trial_index=None if upper_trial is None else upper_trial.trial_index,
        conditional_throughput_fps=conditional_throughput_fps,
        regular=regular,
        irregular_reason=irregular_reason,
    )
    if bound_trial is not None:
        r = bound_trial.result
        point.trial_index = bound_trial.trial_index
        point.tx_fps = r.achieved_tx_fps
        point.rx_fps = r.rx_fps
        point.loss_ratio = r.loss_ratio
        point.valid = r.valid
    if bound_trial is not None:
        point.efficiency, point.datapath = efficiency(bound_trial), switch_datapath(bound_trial)
    for key, value in (stats or {}).items():  # the search's n/k, width, confirmation
        setattr(point, key, value)
    if latency_trial is not None:
        point.latency = latency_stats(latency_trial.result)
        point.latency_trial_index = latency_trial.trial_index
    return point


def continuous_point(
    *,
    frame_size_bytes: int,
    nominal_line_rate_fps: float | None,
    trial: TrialRecord,
) -> ReportedPoint:
    """The reported point of a fixed-rate trial: throughput = the measured RX rate."""
    r = trial.result
    l1, l2, pct = rate_figures(r.rx_fps, frame_size_bytes, nominal_line_rate_fps)
    return ReportedPoint(
        efficiency=efficiency(trial),
        datapath=switch_datapath(trial),
        name="continuous",
        throughput_fps=r.rx_fps,
        throughput_l1_mbps=l1,
        throughput_l2_mbps=l2,
        line_rate_percent=pct,
        offered_load_fps=r.intended_load_fps,
        tx_fps=r.achieved_tx_fps,
        rx_fps=r.rx_fps,
        loss_ratio=r.loss_ratio,
        trial_index=trial.trial_index,
        valid=r.valid,
        latency=latency_stats(r),
        latency_trial_index=trial.trial_index if latency_stats(r) is not None else None,
    )


def efficiency(trial: TrialRecord) -> dict | None:
    """What forwarding cost the switch in ``trial``, from its ``switch`` record.

    ``switch_cpu_s``: CPU seconds the switch consumed (threads or softirq, ``cpu_source``);
    ``switch_cores``: those over the seconds they were measured in (1.0 = one core busy);
    ``fps_per_core``: frames/s received per core consumed (the Mpps-per-core of the
    OVS-TC report). None when the switch reported no CPU time.
    """
    sw = trial.switch or {}
    cpu_s, elapsed_s = sw.get("cpu_s"), sw.get("elapsed_s")
    if cpu_s is None or not elapsed_s:
        return None
    cores = float(cpu_s) / float(elapsed_s)
    rx_fps = trial.result.rx_fps
    return {
        "switch_cpu_s": float(cpu_s),
        "cpu_source": sw.get("cpu_source"),
        "elapsed_s": float(elapsed_s),
        "switch_cores": cores,
        "fps_per_core": rx_fps / cores if cores > 0 else None,
        "oversubscribed": any(w.get("oversubscribed", True) for w in sw.get("warnings") or ()),
    }


def switch_datapath(trial: TrialRecord) -> dict | None:
    """The switch's datapath deltas over ``trial`` (None when it reported none)."""
    datapath = (trial.switch or {}).get("datapath")
    return dict(datapath) if datapath else None


#: The start of a note that marks figures measured under CPU contention (report_data
#: shows such notes as errors).
OVERSUBSCRIBED_PREFIX = "CPU oversubscribed"


def starved_note(records: Sequence[TrialRecord]) -> str | None:
    """One note when busy-polling switch threads were starved during some trials: those
    figures measure CPU contention, not the switch."""
    starved = [r for r in records if any(w.get("oversubscribed", True) for w in (r.switch or {}).get("warnings") or ())]
    if not starved:
        return None
    first = next(w for w in starved[0].switch["warnings"] if w.get("oversubscribed", True))
    return (f"{OVERSUBSCRIBED_PREFIX} ({first.get('code', 'busy_poll_starved')}) in {len(starved)} of "
            f"{len(records)} trials, e.g. trial {starved[0].trial_index}: {first.get('message', '')}; "
            "figures measure CPU contention, not the DUT")


@dataclass(frozen=True)
class Tally:
    """Counts and times over a set of trials, and a note per kind of invalid trial."""

    trial_count: int
    invalid_trial_count: int
    trial_seconds: float
    effective_seconds: float
    notes: tuple[str, ...]


def tally(records: Sequence[TrialRecord]) -> Tally:
    invalid = [r for r in records if not r.valid]
    tags: Counter[str] = Counter()
    for rec in invalid:
        for reason in rec.invalid_reasons or ("unspecified",):
            tags[reason.split(":", 1)[0]] += 1
    notes: tuple[str, ...] = ()
    if invalid:
        detail = ", ".join(f"{tag} x{n}" for tag, n in sorted(tags.items()))
        notes = (f"{len(invalid)} of {len(records)} trials invalid ({detail})",)
    starved = starved_note(records)
    if starved:
        notes = (starved, *notes)
    return Tally(
        trial_count=len(records),
        invalid_trial_count=len(invalid),
        trial_seconds=float(sum(r.result.intended_duration_s for r in records)),
        effective_seconds=float(
            sum(
                r.result.effective_duration_s
                if r.result.effective_duration_s is not None
                else r.result.intended_duration_s
                for r in records
            )
        ),
        notes=notes,
    )
