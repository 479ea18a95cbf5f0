"""What every traffic type shares: the frame-size job, its error, max load, search config,
warm-up, latency wanted/floor and how a frame size's result is finished.

Its own module so :mod:`traffic_types` (throughput, continuous, the registry) and
:mod:`traffic_types_extra` (back2back, burst, load_sweep) both import downwards from here
instead of importing each other (an import cycle before).
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
from vsbench.measurement import ceiling as ceilings
from vsbench.measurement import warmup as warmups
from vsbench.measurement.trial_runner import TrialRunner
from vsbench.results import summary
from vsbench.results.model import FrameSizeResult, GeneratorFloor, LatencyPoint, ReportedPoint, TrialRecord
from vsbench.runner.guard import unwrap

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
    #: The run's measured generator ceilings (:mod:`vsbench.measurement.ceiling`), shared by
    #: every plan, keyed by :attr:`ceiling_key`: measured once per run and reused.
    ceilings: dict = field(default_factory=dict)
    #: What the ceiling depends on besides the frame size (the testbed and switch behind
    #: the port); the runner sets it.
    testbed_key: tuple = ()
    #: The generator ports and the deployment as built: a traffic type that reconfigures
    #: the generator between phases (RFC 2889's learning and test frames) or asks the
    #: topology for something (emptying the address table) needs them.
    ports: tuple = ()
    deployment: Any = None

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
    """``search.max_load_fps`` if set, else min(generator capability, nominal line rate);
    never above the generator's measured ceiling (:func:`generator_ceiling`)."""
    configured = job.search_section.get("max_load_fps")
    if configured:
        limit = float(configured)
    else:
        limit = job.nominal_line_rate_fps
        if job.capabilities.max_rate_fps:
            limit = min(limit, float(job.capabilities.max_rate_fps))
    ceiling = generator_ceiling(job, limit)
    if ceiling is not None and ceiling.max_load_fps < limit:
        limit = ceiling.max_load_fps
        job.result.max_load_is_ceiling = True
    return limit


def ceiling_key(job: FrameSizeJob) -> tuple:
    p = job.profile
    return (job.generator.name, *job.testbed_key, p.frame_size_bytes, p.flows, p.bidirectional,
            p.encapsulation, p.fields, p.reverse_fields, p.streams)


def generator_ceiling(job: FrameSizeJob, expected_fps: float) -> ceilings.Ceiling | None:
    """The generator's ceiling at this frame size, measured with unpaced bursts (role
    ``calibration``; the slower of :data:`~vsbench.measurement.ceiling.CALIBRATION_BURSTS`)
    the first time the run needs it and reused after; None when the
    generator does not ask for it (``capabilities().ceiling_calibration``) or
    ``traffic.generator_ceiling`` is off. Recorded in the frame size's result."""
    if not job.capabilities.ceiling_calibration or not getattr(job.generator, "supports_bursts", False):
        return None
    if not job.traffic.get("generator_ceiling", True):
        return None
    key = ceiling_key(job)
    found = job.ceilings.get(key)
    if found is None:
        share = ceilings.share_for(job.traffic.get("generator_ceiling_share"), job.capabilities.ceiling_share)
        frames = ceilings.calibration_frames(expected_fps, job.profile.directions)
        records = [job.trials.run_burst(frames, role="calibration") for _ in range(ceilings.CALIBRATION_BURSTS)]
        try:
            found = ceilings.slowest(ceilings.ceiling_from(r.result, share, r.trial_index) for r in records)
        except ceilings.CeilingError as exc:
            raise TrafficTypeError(f"generator ceiling at {job.frame_size_bytes} B: {exc}") from None
        job.ceilings[key] = found
        log.info("generator ceiling at %d B: %.0f fps unpaced; the search asks at most %.0f fps (%.0f%%)",
                 job.frame_size_bytes, found.burst_rate_fps, found.max_load_fps, found.share * 100)
    job.result.generator_ceiling_fps = found.burst_rate_fps
    job.result.generator_ceiling_trial = found.trial_index
    return found


def search_config(job: FrameSizeJob, max_load: float) -> SearchConfig:
    """The frame size's :class:`SearchConfig`, from the ``search:`` section.

    Trial lengths: ``multi`` searches with ``search.trial_duration_s`` (default 1 s); the
    binary modes and confirmation trials use ``traffic.trial_duration_s`` (the RFC 2544
    trial duration). ``--test-params "trial_duration=2"`` sets both (the plan's
    ``search.trial_duration_s`` is written when the plan is built).
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
                                          full_trial_duration_s=job.trial_duration_s,
                                          max_load_is_estimate=bool(job.result.max_load_is_ceiling))
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
                          max_load_fps=max_load, min_load_fps=min_load,
                          run=job.profile.fields.frames_per_flow_run if job.profile.flows > 1 else 1)
    if warmup.capped:
        _warn(job, warmups.cap_warning(warmup))
    log.info("warm-up: %.0f fps for %.1f s, %.2g passes over %d flows per direction%s",
             warmup.load_fps, warmup.duration_s, warmup.planned_passes, warmup.flows_per_direction,
             " (rate raised)" if warmup.rate_raised else "")
    if type(unwrap(job.generator)).warm_up is not TrafficGenerator.warm_up:
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
