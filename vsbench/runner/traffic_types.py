"""Traffic types: what is measured at one frame size, from trials to a FrameSizeResult.

* ``rfc2544_throughput``: one warm-up at low rate with the full flow set (role
  ``warmup``, never a result), the search engine over the trial callable (default: the
  multi-goal search for NDR and PDR; loads bounded by ``min_load_fps`` and a
  ``max_load_fps`` that defaults to the smaller of the generator's capability and the
  nominal line rate, lowered when the generator cannot deliver), then, when
  ``latency.enabled``, latency trials of ``latency.trial_duration_s`` (default 10 s) at
  ``latency.load_fractions`` of the reference goal's throughput (default 0/10/50/90% of
  PDR; 0 = probes only) and at each ``latency.at_goals`` throughput (default NDR),
  preceded by the generator's own latency floor (:func:`measure_generator_floor`).
* ``continuous``: optional warm-up, then one trial at ``traffic.rate_fps`` (or
  ``rate_percent`` of the nominal line rate) for ``trial_duration_s``; with latency, the
  generator's floor first.

Every figure is computed by :mod:`vsbench.results.summary` from the trial records, the
same functions :mod:`vsbench.results.recompute` applies to trials.jsonl afterwards.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from vsbench.interfaces.plugin import PluginError
from vsbench.interfaces.traffic import L1_OVERHEAD_BYTES, GeneratorCapabilities, TrafficProfile
from vsbench.interfaces.trafficgen import TrafficGenerator
from vsbench.measurement.latency_report import floor_not_measured, generator_floor, latency_summary
from vsbench.measurement.goal_report import goal_stats, run_search
from vsbench.measurement.search import SearchConfig
from vsbench.measurement.search.measurer import measured_despite
from vsbench.measurement.search.settings import search_config_from_section
from vsbench.measurement import ceiling as ceilings
from vsbench.measurement import warmup as warmups
from vsbench.measurement.trial_runner import TrialRunner
from vsbench.results import summary
from vsbench.results.model import FrameSizeResult, GeneratorFloor, LatencyPoint, ReportedPoint, TrialRecord

from vsbench.runner import traffic_tcp as _tcp  # tcp
from vsbench.runner import traffic_types_extra as _extra  # back2back, burst, load_sweep
from vsbench.runner import traffic_rfc2889 as _rfc2889  # rfc2889_forwarding, _learning, _caching
from vsbench.runner.traffic_job import (  # noqa: F401 -- re-exported: the shared job API
    TrafficTypeError,
    FrameSizeJob,
    max_load_fps,
    search_config,
    latency_wanted,
    warm_up,
    _warn,
    _records_since,
    account,
    _finish,
    LATENCY_TRIAL_S,
    LATENCY_FRACTIONS,
    LATENCY_REFERENCE,
    LATENCY_AT_GOALS,
    latency_plan,
    measure_generator_floor,
)

log = logging.getLogger(__name__)


def latency_follow_ups(job: FrameSizeJob, throughputs: dict[str, float | None]) -> list[LatencyPoint]:
    """Run the latency trials of :func:`latency_plan` (role ``final``, probes on)."""
    duration = float(job.latency_section.get("trial_duration_s") or LATENCY_TRIAL_S)
    points = []
    for label, reference, fraction, load in latency_plan(job, throughputs):
        try:
            rec = job.trials.run(load, duration, role="final", latency=True)
        except PluginError as exc:
            if load > 0:
                raise
            # a generator that cannot send probes without bulk traffic (TRex): said, not fatal
            job.notes.append(f"latency with probes only not measured: {exc}")
            continue
        r = rec.result
        points.append(LatencyPoint(
            label=label, reference=reference, fraction=fraction, load_fps=load, trial_index=rec.trial_index,
            latency=summary.latency_stats(r), summary=latency_summary(r),
            loss_ratio=r.loss_ratio if r.tx_frames > 0 else None,
            generator_floor=job.result.generator_floor,
            valid=r.valid, invalid_reason=None if r.valid else r.invalid_reason,
        ))
    return points


def rfc2544_throughput(job: FrameSizeJob) -> FrameSizeResult:
    start = len(job.trials.records)
    max_load = max_load_fps(job)
    cfg = search_config(job, max_load)
    fs = job.result
    fs.max_load_fps = max_load
    fs.search_max_load_fps = max_load
    fs.search_max_load_is_estimate = cfg.max_load_is_estimate
    fs.search_revision = cfg.revision
    fs.min_load_fps = cfg.min_load_fps
    fs.search_mode = cfg.mode
    job.on_start(max_load)
    warm_up(job, max_load)
    chosen, outcome, repetitions = run_search(job.trials.trial_fn("search"), cfg)
    notes = list(outcome.notes)
    if outcome.max_load_fps is not None and outcome.max_load_fps < max_load:
        fs.max_load_fps = outcome.max_load_fps
    if outcome.generator_limited:
        fs.generator_limited = True
        notes.insert(0, f"generator-limited: max_load lowered to {fs.max_load_fps:.0f} fps "
                        f"(asked up to {max_load:.0f} fps)")
    throughputs = {g.goal.name: g.lower_bound_fps for g, _ in chosen}
    if latency_wanted(job):
        fs.generator_floor = measure_generator_floor(job)
        fs.latency_points = latency_follow_ups(job, throughputs)
        notes.extend(lp.caveat() for lp in fs.latency_points if not lp.valid)
    by_load = {}
    for lp in fs.latency_points:
        by_load.setdefault((lp.reference, round(lp.load_fps, 3)), lp)
    points = []
    for goal_result, run in chosen:
        name = goal_result.goal.name
        throughput = goal_result.lower_bound_fps
        latency_point = by_load.get((name, round(throughput, 3))) if throughput else None
        latency_rec = None
        if latency_point is not None:
            latency_rec = next(r for r in job.trials.records if r.trial_index == latency_point.trial_index)
        if throughput is None:
            notes.append(f"{name}: no load passed (not even min_load {cfg.min_load_fps:.0f} fps)")
        bound = _record_at(job, run.trials, goal_result.lower_bound_trial)
        point = summary.search_point(
            name=name,
            frame_size_bytes=job.profile.mean_frame_size_bytes,  # a mix's bit rates: its mean size
            nominal_line_rate_fps=job.nominal_line_rate_fps,
            lower_bound_fps=throughput,
            upper_bound_fps=goal_result.upper_bound_fps,
            bound_trial=bound,
            sending_caveat=None if bound is None else measured_despite(bound.result),
            upper_trial=_record_at(job, run.trials, goal_result.upper_bound_trial),
            latency_trial=latency_rec,
            goal_loss_ratio=goal_result.goal.loss_ratio,
            goal_exceed_ratio=goal_result.goal.exceed_ratio,
            conditional_throughput_fps=goal_result.conditional_throughput_fps,
            regular=goal_result.regular,
            irregular_reason=goal_result.irregular_reason,
            stats=goal_stats(goal_result),
        )
        if fs.max_load_is_ceiling and ceilings.at_ceiling(throughput, fs.search_max_load_fps, cfg.relative_width):
            point.at_generator_ceiling = True
            notes.append(f"{name} {throughput:.0f} fps is a lower bound: it is the generator's ceiling at "
                         f"{job.frame_size_bytes} B ({fs.generator_ceiling_fps:.0f} fps unpaced), and the device "
                         f"forwarded all of it")
        if goal_result.lower_bound_provisional:
            point.lower_bound_provisional = True
        point.repetitions = None if repetitions is None else repetitions.get(name)
        if latency_point is not None:
            point.latency_summary = latency_point.summary
        points.append(point)
        if not goal_result.regular and goal_result.irregular_reason:
            notes.append(f"{name}: {goal_result.irregular_reason}")
    return _finish(job, start, points, notes)


def _record_at(job: FrameSizeJob, trials: list, index: int | None) -> TrialRecord | None:
    if index is None or not 0 <= index < len(trials):
        return None
    return job.trials.record_of(trials[index])


def continuous_rate_fps(job: FrameSizeJob) -> float:
    rate = job.traffic.get("rate_fps")
    if rate:
        return float(rate)
    percent = job.traffic.get("rate_percent")
    if percent:
        return float(percent) / 100.0 * job.nominal_line_rate_fps
    bps = job.traffic.get("rate_l1_bps")
    if bps:  # L1: each frame costs its (mean) size plus preamble, SFD and gap on the wire
        return float(bps) / ((job.profile.mean_frame_size_bytes + L1_OVERHEAD_BYTES) * 8)
    raise TrafficTypeError("traffic type continuous needs traffic.rate_fps, rate_percent or rate_l1_bps")


def continuous(job: FrameSizeJob) -> FrameSizeResult:
    start = len(job.trials.records)
    rate = continuous_rate_fps(job)
    job.result.max_load_fps = rate
    job.on_start(rate)
    warm_up(job, rate)
    latency = latency_wanted(job)
    if latency:
        job.result.generator_floor = measure_generator_floor(job)
    record = job.trials.run(rate, job.trial_duration_s, role="continuous", latency=latency)
    point = summary.continuous_point(
        frame_size_bytes=job.profile.mean_frame_size_bytes,
        nominal_line_rate_fps=job.nominal_line_rate_fps,
        trial=record,
    )
    if point.latency_trial_index is not None:  # the full summary, as for a search goal's point
        point.latency_summary = latency_summary(record.result)
    return _finish(job, start, [point], [])


#: Traffic types that take a frame mix: its search and fixed-rate figures are the
#: aggregate's, with a per-size breakdown (:mod:`vsbench.results.frame_mix_figures`).
MIX_TYPES = ("rfc2544_throughput", "continuous")

TRAFFIC_TYPES: dict[str, Callable[[FrameSizeJob], FrameSizeResult]] = {
    "rfc2544_throughput": rfc2544_throughput,
    "continuous": continuous,
}


def check(traffic: Mapping[str, Any]) -> None:
    """Raise :class:`TrafficTypeError` for a traffic section no traffic type can run."""
    kind = traffic.get("type", "rfc2544_throughput")
    if kind not in TRAFFIC_TYPES:
        raise TrafficTypeError(
            f"traffic type {kind!r} is not implemented yet (available: {', '.join(sorted(TRAFFIC_TYPES))})"
        )
    if kind == "continuous" and not (traffic.get("rate_fps") or traffic.get("rate_percent")
                                     or traffic.get("rate_l1_bps")):
        raise TrafficTypeError("traffic type continuous needs traffic.rate_fps, rate_percent or rate_l1_bps")
    if kind not in MIX_TYPES and any(isinstance(e, str) and not e.strip().isdigit()
                                     for e in (traffic.get("frame_sizes") or []) if isinstance(e, str)):
        raise TrafficTypeError(f"traffic type {kind} does not take a frame mix (traffic.frame_sizes); "
                               f"mixes run with {' or '.join(MIX_TYPES)}")
    _extra.check(traffic)


def check_generator(traffic: Mapping[str, Any], generator_cls: type) -> None:
    """Raise :class:`TrafficTypeError` when the generator class cannot run the traffic type
    (bursts need ``supports_bursts``, tcp ``supports_tcp``, a flow pattern other than
    scatter its ``flow_patterns``)."""
    _extra.check_generator(traffic, generator_cls)
    _tcp.check_generator(traffic, generator_cls)
    if any(isinstance(e, str) and not e.strip().isdigit() for e in (traffic.get("frame_sizes") or [])
           if isinstance(e, str)) and not getattr(generator_cls, "supports_frame_mix", False):
        name = getattr(generator_cls, "name", None) or generator_cls.__name__
        raise TrafficTypeError(f"trafficgen {name} cannot send a frame mix (traffic.frame_sizes "
                               f"{list(traffic.get('frame_sizes'))}); the embedded trafgen sends mixes")
    pattern = (traffic.get("fields") or {}).get("pattern") or "scatter"
    patterns = tuple(getattr(generator_cls, "flow_patterns", ("scatter",)))
    if pattern not in patterns:
        name = getattr(generator_cls, "name", None) or generator_cls.__name__
        raise TrafficTypeError(f"traffic.fields.pattern {pattern}: trafficgen {name} cannot send it "
                               f"(its flow patterns: {', '.join(patterns)}; the embedded trafgen sends burst)")


TRAFFIC_TYPES.update(_extra.TYPES)
TRAFFIC_TYPES[_tcp.KIND] = _tcp.tcp_workload
TRAFFIC_TYPES.update(_rfc2889.TYPES)
