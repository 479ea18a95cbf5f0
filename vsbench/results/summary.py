"""Reported figures as pure functions of trial records: the one place they are computed.

The runner uses these while a run goes; :mod:`vsbench.results.recompute` uses the same
functions over ``trials.jsonl`` and ``config.yaml`` afterwards, so a reported number and
its recomputation cannot drift apart.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from vsbench.interfaces.traffic import TrialResult, l1_bps, l2_bps
from vsbench.results.model import (
    Back2BackRepetition,
    Back2BackResult,
    BurstPoint,
    LatencyStats,
    ReportedPoint,
    SweepStep,
    TrialRecord,
)


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
    sending_caveat: str | None = None,
) -> ReportedPoint:
    """The reported point of one search goal: throughput = the goal's lower bound.

    ``sending_caveat`` says why the search measured by ``bound_trial`` although it is
    invalid (``late`` or ``disturbed``: ``vsbench.measurement.search.measurer.measured_despite``);
    the point is then valid and carries it."""
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
        # an invalid trial the search measured by all the same (sent late, or unevenly):
        # the point is valid and names the caveat, not the red "invalid" of a trial the
        # search could not use
        point.sending_caveat = None if r.valid else sending_caveat
        point.valid = r.valid or point.sending_caveat is not None
    if bound_trial is not None:
        point.efficiency, point.datapath = efficiency(bound_trial), switch_datapath(bound_trial)
        point.vnf = vnf_figures(bound_trial)
        point.thread_cpu = thread_cpu(bound_trial)
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
        vnf=vnf_figures(trial),
        thread_cpu=thread_cpu(trial),
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
    """What forwarding cost the switch in ``trial``, from its ``switch`` record -- or, in
    a topology without a switch (a router between the generator's ports), what it cost the
    VNFs (their ``cpu_s``; ``cpu_source`` then starts with ``vnf``).

    ``switch_cpu_s``: CPU seconds the switch consumed (threads or softirq, ``cpu_source``);
    ``switch_cores``: those over the seconds they were measured in (1.0 = one core busy);
    ``fps_per_core``: frames/s received per core consumed (the Mpps-per-core of the
    OVS-TC report). None when the switch reported no CPU time.
    """
    sw = trial.switch or {}
    cpu_s, elapsed_s, source = sw.get("cpu_s"), sw.get("elapsed_s"), sw.get("cpu_source")
    warnings = sw.get("warnings") or ()
    if not sw:  # a topology without a switch (phy_router_phy): the VNFs are the DUT
        vnfs = [v for v in (trial.vnf or {}).get("vnfs") or ()
                if v.get("cpu_s") is not None and v.get("elapsed_s")]
        if vnfs:
            # routers that route on the same CPUs (two instances on a 2-CPU host) each
            # measured those CPUs' whole softirq time: count it once
            cpu_s = sum(float(v["cpu_s"]) for v in _distinct_cpus(vnfs))
            elapsed_s = max(float(v["elapsed_s"]) for v in vnfs)
            source = "vnf " + ", ".join(sorted({str(v.get("cpu_source") or "threads") for v in vnfs}))
            warnings = [w for v in vnfs for w in v.get("warnings") or ()]
    if cpu_s is None or not elapsed_s:
        return None
    cores = float(cpu_s) / float(elapsed_s)
    rx_fps = trial.result.rx_fps
    return {
        "switch_cpu_s": float(cpu_s),
        "cpu_source": source,
        "elapsed_s": float(elapsed_s),
        "switch_cores": cores,
        "fps_per_core": rx_fps / cores if cores > 0 else None,
        "oversubscribed": any(w.get("oversubscribed", True) for w in warnings),
    }


def _distinct_cpus(vnfs: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The VNFs whose CPU time is their own: the first of several that measured the same
    ``rx_cpus`` (kernel forwarding is measured per CPU, not per router), every other one."""
    seen: set[tuple[int, ...]] = set()
    out = []
    for v in vnfs:
        cpus = v.get("rx_cpus")
        if cpus:
            key = tuple(sorted(int(c) for c in cpus))
            if key in seen:
                continue
            seen.add(key)
        out.append(v)
    return out


def thread_cpu(trial: TrialRecord) -> list[dict] | None:
    """Per-thread CPU time of the switch and of each VNF at ``trial``: ``[{"owner",
    "name", "tid", "busy_s", "utilization", "last_cpu"}]`` (owner ``vswitch`` or
    ``vnf <i>``); None when neither reported threads."""
    rows = [{"owner": "vswitch", **t} for t in (trial.switch or {}).get("threads") or ()]
    for v in (trial.vnf or {}).get("vnfs") or ():
        rows += [{"owner": f"vnf {v.get('index')}", **t} for t in v.get("threads") or ()]
    return rows or None


def vnf_figures(trial: TrialRecord) -> dict | None:
    """The VNFs' side of ``trial`` (None without a VNF): per VNF its frames received and
    transmitted over all ports, frames its rings missed, CPU in cores; per generator
    direction the frames lost in each stage; and the frames lost in all switch passes and
    in all VNFs."""
    doc = trial.vnf or {}
    if not doc.get("vnfs"):
        return None
    vnfs = []
    duration = trial.result.intended_duration_s
    for v in doc["vnfs"]:
        ports = v.get("ports") or []
        elapsed = v.get("elapsed_s")
        tx_frames = sum(int(p.get("tx_frames", 0)) for p in ports)
        vnfs.append({
            "index": v.get("index"), "name": v.get("name"),
            "rx_frames": sum(int(p.get("rx_frames", 0)) for p in ports),
            "tx_frames": tx_frames,
            # what this VNF alone forwarded per second of the trial (two routers side by
            # side: each instance's throughput; their sum is the point's)
            "forwarded_fps": tx_frames / duration if duration > 0 else None,
            "rx_missed": sum(int(p.get("rx_missed", 0)) for p in ports),
            "cpu_s": v.get("cpu_s"),
            "cores": float(v["cpu_s"]) / float(elapsed) if v.get("cpu_s") is not None and elapsed else None,
            "starved": any(w.get("oversubscribed", True) for w in v.get("warnings") or ()),
            **({"error": v["error"]} if v.get("error") else {}),
        })
    directions = doc.get("stages") or []
    attributed = [d for d in directions if d.get("attributed")]
    lost = None
    if attributed:
        lost = {"switch": 0, "vnf": 0}
        for d in attributed:
            for stage in d.get("stages") or ():
                lost[stage["stage"]] += int(stage["lost_frames"])
    return {"vnfs": vnfs, "stages": directions, "lost_frames": lost,
            "lost_at": sorted({d["lost_at"] for d in attributed if d.get("lost_at")})}


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


# -- traffic types beside throughput (back2back, burst, load_sweep) ------------------------


def burst_point(trial: TrialRecord) -> BurstPoint:
    """One burst trial as reported: frames asked, sent, received, and its burst rate."""
    r = trial.result
    return BurstPoint(
        trial_index=trial.trial_index,
        burst_frames=int(r.burst_frames if r.burst_frames is not None else round(r.intended_frames)),
        tx_frames=int(r.tx_frames),
        rx_frames=int(r.rx_frames),
        lost_frames=int(r.lost_frames),
        loss_ratio=r.loss_ratio if r.tx_frames > 0 else None,
        send_time_s=r.tx_duration_s,
        burst_rate_fps=r.burst_rate_fps,
        valid=bool(r.valid),
        latency=latency_stats(r),
    )


def burst_passed(trial: TrialRecord) -> bool:
    """A back-to-back burst passes when it was valid and lost no frame."""
    r = trial.result
    return bool(r.valid) and r.tx_frames > 0 and r.rx_frames >= r.tx_frames


def back2back_frames(trials: Sequence[TrialRecord]) -> int:
    """The result of one burst-length search from its trials: the longest length whose
    every trial passed (0 when none did). The binary search only tries a length longer
    than a passing one after it, so this equals the search's own answer."""
    by_length: dict[int, list[TrialRecord]] = {}
    for t in trials:
        by_length.setdefault(int(t.result.burst_frames or 0), []).append(t)
    passed = [n for n, ts in by_length.items() if n > 0 and all(burst_passed(t) for t in ts)]
    return max(passed) if passed else 0


def mean_burst_rate_fps(trials: Sequence[TrialRecord]) -> float | None:
    """Mean rate the valid bursts went out at, weighted by frames (total sent / total time)."""
    valid = [t.result for t in trials if t.result.valid and t.result.tx_duration_s and t.result.tx_frames > 0]
    if not valid:
        return None
    return sum(r.tx_frames for r in valid) / sum(r.tx_duration_s for r in valid)


def back2back_result(
    *,
    repetitions: Sequence[Sequence[TrialRecord]],
    trials_per_length: int,
    max_frames: int,
    resolution_frames: int,
    nominal_line_rate_fps: float | None,
    max_rate_source: str,
    throughput_fps: float | None,
    throughput_source: str | None,
) -> Back2BackResult:
    """The back-to-back benchmark (RFC 9004) from the burst trials of each repetition.

    ``max_rate_source`` ``achieved_burst_rate``: the max theoretical frame rate is the mean
    rate the valid bursts really went out at; ``nominal_line_rate``: the nominal line rate.
    No buffer time when a search never saw loss (``bounded`` False): the buffer was not found.
    """
    from vsbench.results import back2back_figures as b2b

    counts = [back2back_frames(rep) for rep in repetitions]
    stats = b2b.frame_stats(counts)
    every = [t for rep in repetitions for t in rep]
    burst_rate = mean_burst_rate_fps(every)
    max_rate = burst_rate if max_rate_source == "achieved_burst_rate" else nominal_line_rate_fps
    bounded = not any(n >= max_frames for n in counts)
    implied = corrected = None
    # unbounded (the longest burst lost nothing): the DUT's buffer was never found, no time
    if stats.avg is not None and max_rate and bounded:
        implied = b2b.implied_buffer_time_s(stats.avg, max_rate)
        if throughput_fps:
            corrected = b2b.corrected_buffer_time_s(stats.avg, max_rate, throughput_fps)
    return Back2BackResult(
        frames_avg=stats.avg,
        frames_min=stats.min,
        frames_max=stats.max,
        frames_stdev=stats.stdev,
        repetitions=[Back2BackRepetition(frames=n, trial_indices=[t.trial_index for t in rep])
                     for n, rep in zip(counts, repetitions)],
        trials_per_length=int(trials_per_length),
        max_frames=int(max_frames),
        resolution_frames=int(resolution_frames),
        bounded=bounded,
        burst_rate_fps=burst_rate,
        nominal_line_rate_fps=nominal_line_rate_fps,
        bursts_at_line_rate=b2b.at_line_rate(burst_rate, nominal_line_rate_fps),
        max_rate_fps=max_rate,
        max_rate_source=max_rate_source,
        throughput_fps=throughput_fps,
        throughput_source=throughput_source,
        implied_buffer_time_s=implied,
        corrected_buffer_time_s=corrected,
    )


def sweep_step(trial: TrialRecord, percent: float) -> SweepStep:
    """One load_sweep step from its trial."""
    r = trial.result
    return SweepStep(
        percent=float(percent),
        offered_load_fps=float(r.intended_load_fps),
        tx_fps=r.achieved_tx_fps,
        rx_fps=r.rx_fps,
        loss_ratio=r.loss_ratio if r.tx_frames > 0 else None,
        lost_frames=int(r.lost_frames),
        trial_index=trial.trial_index,
        valid=bool(r.valid),
        latency=latency_stats(r),
    )


#: The reported points of a load_sweep: the highest step without loss, the highest RX rate.
SWEEP_ZERO_LOSS = "sweep_zero_loss"
SWEEP_MAX_RX = "sweep_max_rx"


def sweep_selection(steps: Sequence[SweepStep]) -> dict[str, int]:
    """Trial index of each reported sweep point: ``sweep_zero_loss`` the highest valid step
    that lost nothing, ``sweep_max_rx`` the valid step with the highest RX rate (the first
    of equals). A name is missing when no step qualifies."""
    chosen: dict[str, int] = {}
    valid = [s for s in steps if s.valid]
    lossless = [s for s in valid if s.lost_frames <= 0 and s.loss_ratio is not None]
    if lossless:
        chosen[SWEEP_ZERO_LOSS] = max(lossless, key=lambda s: s.offered_load_fps).trial_index
    if valid:
        best = max(s.rx_fps for s in valid)
        chosen[SWEEP_MAX_RX] = next(s for s in valid if s.rx_fps == best).trial_index
    return chosen


def fixed_point(name: str, *, frame_size_bytes: int, nominal_line_rate_fps: float | None,
                trial: TrialRecord) -> ReportedPoint:
    """A reported point read off one fixed-rate trial or burst (as ``continuous``), named
    ``name``: throughput = the trial's RX rate."""
    point = continuous_point(frame_size_bytes=frame_size_bytes, nominal_line_rate_fps=nominal_line_rate_fps,
                             trial=trial)
    point.name = name
    return point
