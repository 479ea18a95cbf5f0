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
from vsbench.interfaces.traffic import GeneratorCapabilities, TrafficProfile
from vsbench.interfaces.trafficgen import TrafficGenerator
from vsbench.measurement.latency_report import floor_not_measured, generator_floor, latency_summary
from vsbench.measurement.goal_report import goal_stats, run_search
from vsbench.measurement.search import SearchConfig
from vsbench.measurement.search.settings import search_config_from_section
from vsbench.measurement import warmup as warmups
from vsbench.measurement.trial_runner import TrialRunner
from vsbench.results import summary
from vsbench.results.model import FrameSizeResult, GeneratorFloor, LatencyPoint, ReportedPoint, TrialRecord

log = logging.getLogger(__name__)


class TrafficTypeError(ValueError):
    """The traffic section cannot be run as asked; one line for the user."""


@dataclass
class FrameSizeJob:
    """Everything one frame size of one plan needs."""

    config: Mapping[str, Any]
    profile: TrafficProfile
    generator: TrafficGenerator
    capabilities: GeneratorCapabilities
    trials: TrialRunner
    nominal_line_rate_fps: float
    result: FrameSizeResult
    #: Called with the frame size's max load before the first trial (for the display).
    on_start: Callable[[float | None], None] = lambda _max: None
    notes: list[str] = field(default_factory=list)

    @property
    def traffic(self) -> Mapping[str, Any]:
        return self.config.get("traffic") or {}

    @property
    def search_section(self) -> Mapping[str, Any]:
        return self.config.get("search") or {}

    @property
    def latency_section(self) -> Mapping[str, Any]:
        return self.config.get("latency") or {}

    @property
    def frame_size_bytes(self) -> int:
        return self.profile.frame_size_bytes

    @property
    def trial_duration_s(self) -> float:
        return float(self.traffic.get("trial_duration_s") or 60.0)


def max_load_fps(job: FrameSizeJob) -> float:
    """``search.max_load_fps`` if set, else min(generator capability, nominal line rate)."""
    configured = job.search_section.get("max_load_fps")
    if configured:
        return float(configured)
    limit = job.nominal_line_rate_fps
    if job.capabilities.max_rate_fps:
        limit = min(limit, float(job.capabilities.max_rate_fps))
    return limit


def search_config(job: FrameSizeJob, max_load: float) -> SearchConfig:
    """The frame size's :class:`SearchConfig`, from the ``search:`` section.

    Trial lengths: ``multi`` searches with ``search.trial_duration_s`` (default 1 s); the
    binary modes and confirmation trials use ``traffic.trial_duration_s`` (the RFC 2544
    trial duration, ``--test-params "trial_duration=2"``).
    """
    section = {k: v for k, v in job.search_section.items() if k != "max_load_fps"}
    min_load = float(section.get("min_load_fps") or 1000.0)
    if min_load >= max_load:
        raise TrafficTypeError(
            f"search.min_load_fps {min_load:.0f} is not below max_load {max_load:.0f} fps "
            f"at {job.frame_size_bytes} B"
        )
    try:
        return search_config_from_section(section, max_load_fps=max_load,
                                          full_trial_duration_s=job.trial_duration_s)
    except ValueError as exc:
        raise TrafficTypeError(str(exc)) from None


def latency_wanted(job: FrameSizeJob) -> bool:
    """True when latency is enabled and the generator can measure it (else a note)."""
    if not job.latency_section.get("enabled"):
        return False
    if not job.capabilities.latency:
        note = f"latency not measured: {job.generator.name or 'the generator'} has no latency support"
        if note not in job.notes:
            job.notes.append(note)
        return False
    return True


def warm_up(job: FrameSizeJob, max_load: float) -> None:
    """A low-rate trial with the full flow set so caches are populated; recorded as
    ``warmup`` (with the flows it covered) and never shown to the search.

    Sized by :func:`vsbench.measurement.warmup.plan`: every flow ``traffic.warmup_passes``
    times, the rate raised up to ``traffic.warmup_max_share`` of max load before the trial
    is stretched up to ``traffic.warmup_max_s``; a cap that leaves flows (or passes) out is
    a warning and a note of the frame size."""
    try:
        settings = warmups.settings_from_traffic(job.traffic)
    except warmups.WarmupError as exc:
        raise TrafficTypeError(str(exc)) from None
    if not settings.enabled:
        return
    min_load = float(job.search_section.get("min_load_fps") or 1000.0)
    warmup = warmups.plan(settings, flows=job.profile.flows, directions=job.profile.directions,
                          max_load_fps=max_load, min_load_fps=min_load)
    if warmup.capped:
        _warn(job, warmups.cap_warning(warmup))
    log.info("warm-up: %.0f fps for %.1f s, %.2g passes over %d flows per direction%s",
             warmup.load_fps, warmup.duration_s, warmup.planned_passes, warmup.flows_per_direction,
             " (rate raised)" if warmup.rate_raised else "")
    if type(job.generator).warm_up is not TrafficGenerator.warm_up:
        # the generator's own warm-up; it returns no counters to record
        job.generator.warm_up(warmup.load_fps, warmup.duration_s)
        return
    record = job.trials.run(warmup.load_fps, warmup.duration_s, role="warmup", warmup=warmup)
    covered = record.warmup
    if not warmup.capped and covered and not covered["all_flows_covered"]:
        _warn(job, f"warm-up sent only {covered['flows_covered']} of {warmup.flows_per_direction} flows "
                   f"per direction (the generator sent less than asked); the first search trials may "
                   f"measure flow setup")


def _warn(job: FrameSizeJob, note: str) -> None:
    log.warning("%s", note)
    if note not in job.notes:
        job.notes.append(note)


def _records_since(job: FrameSizeJob, start: int) -> list[TrialRecord]:
    return job.trials.records[start:]


def account(fs: FrameSizeResult, records: list[TrialRecord], notes: list[str] = ()) -> None:
    """Fill the trial counts, times and validity notes of ``fs`` from its records."""
    t = summary.tally(records)
    fs.trial_count = t.trial_count
    fs.invalid_trial_count = t.invalid_trial_count
    fs.trial_seconds = t.trial_seconds
    fs.effective_seconds = t.effective_seconds
    fs.notes = [*notes, *t.notes]


def _finish(job: FrameSizeJob, start: int, points: list[ReportedPoint], extra_notes: list[str]) -> FrameSizeResult:
    fs = job.result
    fs.points = points
    account(fs, _records_since(job, start), [*job.notes, *extra_notes])
    fs.status = "complete"
    return fs


#: Defaults of the latency follow-ups (conf/10_traffic.yaml ``latency:``).
LATENCY_TRIAL_S = 10.0
LATENCY_FRACTIONS = (0.0, 0.1, 0.5, 0.9)
LATENCY_REFERENCE = "PDR"
LATENCY_AT_GOALS = ("NDR",)


def latency_plan(job: FrameSizeJob, throughputs: dict[str, float | None]) -> list[tuple[str, str, float, float]]:
    """(label, reference goal, fraction, load) of each latency trial after the search.

    Fractions of the reference goal's throughput (default 0, 10, 50, 90% of PDR; 0 means
    probes only) and each ``at_goals`` goal's throughput (default NDR); equal loads once.
    """
    lat = job.latency_section
    names = list(throughputs)
    reference = lat.get("reference_goal") or LATENCY_REFERENCE
    if reference not in throughputs and names:
        reference = names[-1]  # e.g. a testcase with only an NDR goal
    fractions = lat.get("load_fractions")
    fractions = LATENCY_FRACTIONS if fractions is None else fractions
    at_goals = lat.get("at_goals")
    at_goals = LATENCY_AT_GOALS if at_goals is None else at_goals
    plan: list[tuple[str, str, float, float]] = []
    seen: set[float] = set()

    def add(label: str, ref: str, fraction: float, load: float) -> None:
        key = round(load, 3)
        if key not in seen:
            seen.add(key)
            plan.append((label, ref, float(fraction), float(load)))

    ref_fps = throughputs.get(reference)
    for fraction in fractions:
        if fraction == 0:
            add("probes only", reference, 0.0, 0.0)
        elif ref_fps:
            add(f"{fraction * 100:g}% of {reference}", reference, fraction, fraction * ref_fps)
    for name in at_goals:
        if throughputs.get(name):
            add(name, name, 1.0, throughputs[name])
    return plan


def measure_generator_floor(job: FrameSizeJob) -> GeneratorFloor:
    """The generator's own latency without the DUT at this frame size (a ``floor`` trial).

    Measured when ``latency.generator_floor`` is on (the default) and the generator can
    (``capabilities().latency_floor``): the probe stream over a direct loop for
    ``latency.generator_floor_duration_s`` (default: the latency trial duration, so the
    floor is backed by as many samples as each figure it sits beside). Otherwise the floor
    says why it was not measured (switched off; a generator without such a path). A floor
    the generator tried and failed to measure is also a note of the frame size: unlike
    the other two it is a surprise that qualifies the latency figures.
    """
    lat = job.latency_section
    if not lat.get("generator_floor", True):
        return floor_not_measured("switched off (latency.generator_floor: false)")
    name = job.generator.name or "the generator"
    if not job.capabilities.latency_floor:
        return floor_not_measured(f"{name} cannot measure its latency without the DUT")
    duration = float(lat.get("generator_floor_duration_s") or lat.get("trial_duration_s") or LATENCY_TRIAL_S)
    try:
        floor = generator_floor(job.trials.run_floor(duration))
    except PluginError as exc:
        log.warning("generator latency floor not measured: %s", exc)
        floor = floor_not_measured(f"{name} failed to measure it: {exc}")
    if not floor.measured:
        note = f"generator latency floor not measured: {floor.reason}"
        if note not in job.notes:
            job.notes.append(note)
    return floor


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
        ))
    return points


def rfc2544_throughput(job: FrameSizeJob) -> FrameSizeResult:
    start = len(job.trials.records)
    max_load = max_load_fps(job)
    cfg = search_config(job, max_load)
    fs = job.result
    fs.max_load_fps = max_load
    fs.search_max_load_fps = max_load
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
        point = summary.search_point(
            name=name,
            frame_size_bytes=job.frame_size_bytes,
            nominal_line_rate_fps=job.nominal_line_rate_fps,
            lower_bound_fps=throughput,
            upper_bound_fps=goal_result.upper_bound_fps,
            bound_trial=_record_at(job, run.trials, goal_result.lower_bound_trial),
            upper_trial=_record_at(job, run.trials, goal_result.upper_bound_trial),
            latency_trial=latency_rec,
            goal_loss_ratio=goal_result.goal.loss_ratio,
            goal_exceed_ratio=goal_result.goal.exceed_ratio,
            conditional_throughput_fps=goal_result.conditional_throughput_fps,
            regular=goal_result.regular,
            irregular_reason=goal_result.irregular_reason,
            stats=goal_stats(goal_result),
        )
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
    raise TrafficTypeError("traffic type continuous needs traffic.rate_fps or traffic.rate_percent")


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
        frame_size_bytes=job.frame_size_bytes,
        nominal_line_rate_fps=job.nominal_line_rate_fps,
        trial=record,
    )
    if point.latency_trial_index is not None:  # the full summary, as for a search goal's point
        point.latency_summary = latency_summary(record.result)
    return _finish(job, start, [point], [])


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
    if kind == "continuous" and not (traffic.get("rate_fps") or traffic.get("rate_percent")):
        raise TrafficTypeError("traffic type continuous needs traffic.rate_fps or traffic.rate_percent")
    _extra.check(traffic)


def check_generator(traffic: Mapping[str, Any], generator_cls: type) -> None:
    """Raise :class:`TrafficTypeError` when the generator class cannot run the traffic type
    (bursts need ``supports_bursts``)."""
    _extra.check_generator(traffic, generator_cls)


# back2back, burst and load_sweep live in their own module (it imports this one lazily)
from vsbench.runner import traffic_types_extra as _extra  # noqa: E402

TRAFFIC_TYPES.update(_extra.TYPES)
