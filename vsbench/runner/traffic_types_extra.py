"""Traffic types beside throughput: ``back2back``, ``burst`` and ``load_sweep``.

Thin runners: the decisions are pure functions elsewhere (the burst-length search in
:mod:`vsbench.measurement.back2back`, the load ladder in
:mod:`vsbench.measurement.load_sweep`), every figure comes from the trial records through
:mod:`vsbench.results.summary`, the functions :mod:`vsbench.results.recompute` applies to
trials.jsonl afterwards.

* ``back2back`` (RFC 2544 section 26.4 as updated by RFC 9004): optionally a throughput
  search first (``traffic.b2b_measure_throughput``) unless ``traffic.b2b_throughput_fps``
  gives the throughput; then ``traffic.b2b_repetitions`` complete binary searches over the
  burst length (``b2b_max_frames`` down to ``b2b_resolution_frames``), each length tried
  with ``traffic.b2b_trials`` bursts sent back to back (unpaced) that must all lose
  nothing. Reported: the average back-to-back frames (min, max, stdev), the implied and
  the corrected DUT buffer time. The max theoretical frame rate is, by default
  (``traffic.b2b_max_rate: achieved``), the rate the bursts really went out at: on the
  embedded testbed a veth has no line rate, its nominal ``testbed.link_gbps`` is a label,
  and the DUT saw frames arrive at the generator's rate; ``nominal`` uses the nominal line
  rate instead. Which one is recorded (``max_rate_source``), and bursts slower than the
  nominal line rate are flagged (``bursts_at_line_rate`` false and a note), as RFC 9004
  only reports bursts at the max theoretical rate.
* ``burst``: ``traffic.burst_count`` bursts of ``traffic.burst_frames`` frames, unpaced or
  at ``traffic.rate_fps``; loss per burst and, with latency enabled, latency.
* ``load_sweep``: one trial of ``traffic.trial_duration_s`` per step of the ladder
  (0.01 % steps to 0.1 %, 0.1 % steps to 1 %, 1 % steps to ``traffic.sweep_max_percent``,
  default 100 %) of the frame size's max load -- ``search.max_load_fps`` if set, else the
  smaller of the generator's capability and the nominal line rate, as for the throughput
  search; offered, sent, received, loss and (latency enabled) latency at each step. It
  stops early after ``traffic.sweep_stop_after_invalid`` invalid steps in a row (the
  generator cannot deliver more).

:mod:`vsbench.runner.traffic_types` registers these; both build on
:mod:`vsbench.runner.traffic_job` (the shared job API), neither imports the other's module.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Mapping

from vsbench.measurement import back2back as b2b
from vsbench.measurement import load_sweep as sweeps
from vsbench.measurement.latency_report import latency_summary
from vsbench.results import summary
from vsbench.results.model import FrameSizeResult, TrialRecord
from vsbench.runner import plugins, traffic_job

log = logging.getLogger(__name__)

BURST_TYPES = ("back2back", "burst")
#: RFC 2544 section 26.4: bursts of at least 2 s at the max rate.
B2B_DEFAULT_BURST_S = 2.0
#: Default resolution of the burst-length search: this share of the longest burst.
B2B_DEFAULT_RESOLUTION_SHARE = 0.001
MAX_RATE_SOURCES = {"achieved": "achieved_burst_rate", "nominal": "nominal_line_rate"}


def _tt():
    return traffic_job


def _error(message: str) -> Exception:
    return _tt().TrafficTypeError(message)


# -- checks ------------------------------------------------------------------------------------


def check(traffic: Mapping[str, Any]) -> None:
    """Settings problems of the three types that the schema cannot see (one line each)."""
    kind = traffic.get("type")
    if kind == "burst" and not traffic.get("burst_frames"):
        raise _error("traffic type burst needs traffic.burst_frames (frames per burst, aggregate)")
    if kind == "back2back":
        max_frames, min_frames = traffic.get("b2b_max_frames"), traffic.get("b2b_min_frames")
        if max_frames and min_frames and int(min_frames) > int(max_frames):
            raise _error(f"traffic.b2b_min_frames {min_frames} is above b2b_max_frames {max_frames}")
        source = traffic.get("b2b_max_rate") or "achieved"
        if source not in MAX_RATE_SOURCES:
            raise _error(f"traffic.b2b_max_rate must be one of {', '.join(MAX_RATE_SOURCES)}, not {source!r}")
    if kind == "load_sweep":
        try:
            sweeps.sweep_percents(float(traffic.get("sweep_max_percent") or 100.0),
                                  float(traffic.get("sweep_min_percent") or 0.0))
        except sweeps.SweepError as exc:
            raise _error(str(exc)) from None


def check_generator(traffic: Mapping[str, Any], generator_cls: type) -> None:
    """A burst traffic type needs a generator that declares ``supports_bursts``."""
    kind = traffic.get("type")
    if kind in BURST_TYPES and getattr(generator_cls, "supports_bursts", False) is not True:
        name = getattr(generator_cls, "name", None) or generator_cls.__name__
        able = ", ".join(_burst_capable_generators()) or "none installed"
        raise _error(f"traffic type {kind} sends bursts of a given length; trafficgen {name} cannot "
                     f"(it does not declare supports_bursts; installed generators that do: {able})")


def _burst_capable_generators() -> list[str]:
    """Installed generators that declare ``supports_bursts`` (only for the error message:
    a plugin that fails to load is left out, its own error belongs to its own run)."""
    able = []
    for name in plugins.available("trafficgen"):
        try:
            cls = plugins.load("trafficgen", name)
        except plugins.UnknownPluginError:
            continue
        if getattr(cls, "supports_bursts", False) is True:
            able.append(name)
    return able


# -- back2back -----------------------------------------------------------------------------


def _b2b_settings(job, burst_max_rate_fps: float) -> tuple[int, int, int, int, int]:
    t = job.traffic
    max_frames = int(t.get("b2b_max_frames") or max(1, round(B2B_DEFAULT_BURST_S * burst_max_rate_fps)))
    dirs = job.profile.directions
    max_frames -= max_frames % dirs  # every burst splits evenly over the directions
    resolution = int(t.get("b2b_resolution_frames") or max(dirs, round(B2B_DEFAULT_RESOLUTION_SHARE * max_frames)))
    min_frames = int(t.get("b2b_min_frames") or resolution)
    trials = int(t.get("b2b_trials") or 1)
    repetitions = int(t.get("b2b_repetitions") or 1)
    if max_frames < dirs:
        raise _error(f"traffic.b2b_max_frames {max_frames} is too short for {dirs} direction(s)")
    return max_frames, min(min_frames, max_frames), resolution, trials, repetitions


def _even(frames: int, directions: int) -> int:
    return max(directions, frames - frames % directions)


def _measure_throughput(job) -> tuple[float | None, str | None, list[str]]:
    """The throughput the corrected buffer time needs: configured, searched, or none."""
    tt = _tt()
    configured = job.traffic.get("b2b_throughput_fps")
    if configured:
        return float(configured), "config", []
    if not job.traffic.get("b2b_measure_throughput"):
        return None, None, ["corrected buffer time not computed: no throughput (set traffic.b2b_throughput_fps "
                            "or traffic.b2b_measure_throughput: true)"]
    max_load = tt.max_load_fps(job)
    cfg = tt.search_config(job, max_load)
    chosen, outcome, _ = tt.run_search(job.trials.trial_fn("search"), cfg)
    notes = [f"throughput search: {n}" for n in outcome.notes]
    if not chosen:
        return None, None, notes + ["throughput search reported no goal"]
    goal, _run = chosen[0]
    if goal.lower_bound_fps is None:
        return None, None, notes + [f"throughput search: {goal.goal.name} found no passing load"]
    return float(goal.lower_bound_fps), f"search:{goal.goal.name}", notes


def back2back(job) -> FrameSizeResult:
    tt = _tt()
    start = len(job.trials.records)
    fs = job.result
    max_load = tt.max_load_fps(job)
    max_frames, min_frames, resolution, per_length, repetitions = _b2b_settings(job, max_load)
    source = MAX_RATE_SOURCES[job.traffic.get("b2b_max_rate") or "achieved"]
    dirs = job.profile.directions
    fs.max_load_fps = max_load
    job.on_start(None)
    tt.warm_up(job, max_load)
    throughput, throughput_source, notes = _measure_throughput(job)

    groups: list[list[TrialRecord]] = []
    for _ in range(repetitions):
        trials: list[TrialRecord] = []

        def passes(frames: int, trials=trials) -> bool:
            ok = True
            for _ in range(per_length):
                rec = job.trials.run_burst(_even(frames, dirs), role="search")
                trials.append(rec)
                if not summary.burst_passed(rec):
                    ok = False
                    break  # one lossy burst decides the length
            return ok

        b2b.search_burst_length(passes, max_frames=max_frames, min_frames=min_frames,
                                resolution_frames=resolution)
        groups.append(trials)

    result = summary.back2back_result(
        repetitions=groups, trials_per_length=per_length, max_frames=max_frames,
        resolution_frames=resolution, nominal_line_rate_fps=job.nominal_line_rate_fps,
        max_rate_source=source, throughput_fps=throughput, throughput_source=throughput_source,
    )
    fs.back2back = result
    fs.bursts = [summary.burst_point(t) for rep in groups for t in rep]
    notes += back2back_notes(result, repetitions)
    return tt._finish(job, start, [], notes)


def back2back_notes(result, repetitions: int) -> list[str]:
    """What a reader must know to judge a back-to-back figure (RFC 9004's conditions)."""
    notes = []
    if not result.bounded:
        notes.append(f"back2back unbounded: no frame lost even in the longest burst tried ({result.max_frames} "
                     "frames); the DUT kept up with the generator, the figure is a lower bound and no buffer time is given")
    if result.bursts_at_line_rate is False:
        pct = 100.0 * result.burst_rate_fps / result.nominal_line_rate_fps
        notes.append(f"bursts went out at {result.burst_rate_fps:.0f} fps, {pct:.1f}% of the nominal line rate: "
                     "RFC 9004 reports back-to-back only for bursts at the max theoretical frame rate; buffer "
                     f"times use the {result.max_rate_source.replace('_', ' ')}")
    if result.throughput_fps and result.max_rate_fps and result.throughput_fps >= result.max_rate_fps:
        notes.append(f"throughput {result.throughput_fps:.0f} fps is not below the max rate "
                     f"{result.max_rate_fps:.0f} fps: RFC 9004 says back-to-back is then not meaningful "
                     "(no corrected buffer time)")
    if repetitions < b2b.RFC9004_MIN_REPETITIONS:
        notes.append(f"back2back averaged over {repetitions} repetition(s); RFC 9004 asks for at least "
                     f"{b2b.RFC9004_MIN_REPETITIONS} (traffic.b2b_repetitions)")
    return notes


def _fixed_point(name: str, job, rec: TrialRecord):
    """The point read off one trial, with the full latency summary when it carried probes."""
    point = summary.fixed_point(name, frame_size_bytes=job.frame_size_bytes,
                                nominal_line_rate_fps=job.nominal_line_rate_fps, trial=rec)
    if point.latency is not None:
        point.latency_summary = latency_summary(rec.result)
    return point


# -- burst -------------------------------------------------------------------------------------


def burst(job) -> FrameSizeResult:
    tt = _tt()
    start = len(job.trials.records)
    fs = job.result
    dirs = job.profile.directions
    frames = _even(int(job.traffic["burst_frames"]), dirs)
    count = int(job.traffic.get("burst_count") or 1)
    rate = job.traffic.get("rate_fps")
    rate = float(rate) if rate else None
    fs.max_load_fps = rate
    job.on_start(rate)
    tt.warm_up(job, rate or tt.max_load_fps(job))
    latency = tt.latency_wanted(job)
    if latency:  # the generator's own floor beside the bursts' latency
        fs.generator_floor = tt.measure_generator_floor(job)
    records = [job.trials.run_burst(frames, role="continuous", rate_fps=rate, latency=latency)
               for _ in range(count)]
    fs.bursts = [summary.burst_point(r) for r in records]
    worst = burst_reported_trial(fs.bursts)
    points = []
    if worst is not None:
        rec = next(r for r in records if r.trial_index == worst)
        points.append(_fixed_point("burst", job, rec))
    return tt._finish(job, start, points, [])


def burst_reported_trial(bursts) -> int | None:
    """The burst reported as the frame size's point: the valid one that lost the largest
    share (the first of equals), else the first burst."""
    if not bursts:
        return None
    valid = [b for b in bursts if b.valid and b.loss_ratio is not None]
    if not valid:
        return bursts[0].trial_index
    worst = max(b.loss_ratio for b in valid)
    return next(b for b in valid if b.loss_ratio == worst).trial_index


# -- load_sweep --------------------------------------------------------------------------------


def load_sweep(job) -> FrameSizeResult:
    tt = _tt()
    start = len(job.trials.records)
    fs = job.result
    reference = tt.max_load_fps(job)
    percents = sweeps.sweep_percents(float(job.traffic.get("sweep_max_percent") or 100.0),
                                     float(job.traffic.get("sweep_min_percent") or 0.0))
    stop_after = int(job.traffic.get("sweep_stop_after_invalid", 3) or 0)
    fs.max_load_fps = reference
    fs.sweep_reference_fps = reference
    job.on_start(reference)
    tt.warm_up(job, reference)
    latency = tt.latency_wanted(job)
    if latency:  # the generator's own floor beside every step's latency
        fs.generator_floor = tt.measure_generator_floor(job)
    notes: list[str] = []
    invalid_run = 0
    steps = []
    for i, (percent, load) in enumerate(sweeps.sweep_loads(reference, percents)):
        log.info("load_sweep step %d/%d: %g%% = %.0f fps", i + 1, len(percents), percent, load)
        rec = job.trials.run(load, job.trial_duration_s, role="continuous", latency=latency)
        steps.append(summary.sweep_step(rec, percent))
        invalid_run = 0 if rec.valid else invalid_run + 1
        if stop_after and invalid_run >= stop_after:
            notes.append(f"load_sweep stopped at {percent:g}% ({load:.0f} fps): {invalid_run} invalid steps in a "
                         "row (the generator cannot deliver more; traffic.sweep_stop_after_invalid)")
            break
    fs.sweep = steps
    chosen = summary.sweep_selection(steps)
    by_index = {r.trial_index: r for r in job.trials.records[start:]}
    points = [_fixed_point(name, job, by_index[index]) for name, index in chosen.items()]
    if summary.SWEEP_ZERO_LOSS not in chosen:
        notes.append("load_sweep: every step lost frames (no zero-loss step)")
    return tt._finish(job, start, points, notes)


TYPES: dict[str, Callable] = {
    "back2back": back2back,
    "burst": burst,
    "load_sweep": load_sweep,
}
