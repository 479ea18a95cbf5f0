"""Recompute a run's search bounds and latency summaries from trials.jsonl + config.yaml.

:func:`vsbench.results.recompute.verify` rebuilds every figure that is a function of single
trials (rates, loss, tallies, simple latency). The bounds need the search itself: this
module replays the recorded ``search`` trials of each frame size, in order, through the
same pure search with the same configuration (:func:`vsbench.measurement.goal_report.run_search`).
The search must then ask for exactly the recorded loads and durations and reach exactly the
reported lower/upper bounds, conditional throughput, regularity and trial statistics; any
difference (a tampered figure, a trial missing or added) is reported, one line each.

:func:`verify` is what ``vsbench recompute RUN_DIR`` runs.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Iterator, Mapping

from vsbench.interfaces.traffic import TrialResult
from vsbench.measurement.goal_report import goal_stats, run_search
from vsbench.measurement.latency_report import generator_floor, latency_summary
from vsbench.measurement.search.measurer import measured_despite
from vsbench.measurement.search.settings import search_config_from_section
from vsbench.results import recompute, writers
from vsbench.results.model import TrialRecord, _jsonable
from vsbench.results.trial_log import read_trials

#: Point fields that the replayed search decides.
SEARCH_FIELDS = ("lower_bound_fps", "upper_bound_fps", "conditional_throughput_fps", "regular",
                 "irregular_reason", "trial_index", "upper_bound_trial_index", "lower_bound_provisional",
                 "sending_caveat")


class Diverged(Exception):
    """The replayed search asked for a trial the run did not record (or not in that order)."""


def same(a: Any, b: Any) -> bool:
    """Equal, floats within 1e-9 relative (JSON round trips), recursively."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return set(a) == set(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
    return a == b


class Replay:
    """A ``(load_fps, duration_s) -> TrialResult`` callable serving recorded trials in order."""

    def __init__(self, records: list[TrialRecord]) -> None:
        self.records = records
        self.position = 0
        self.by_result: dict[int, TrialRecord] = {}

    def __call__(self, load_fps: float, duration_s: float) -> TrialResult:
        if self.position >= len(self.records):
            raise Diverged(f"the search asks for a trial at {load_fps:.0f} fps after the last recorded one")
        rec = self.records[self.position]
        r = rec.result
        if not (math.isclose(r.intended_load_fps, load_fps, rel_tol=1e-9)
                and math.isclose(r.intended_duration_s, duration_s, rel_tol=1e-9)):
            raise Diverged(f"the search asks for {load_fps:.0f} fps x {duration_s:g} s where trial "
                           f"{rec.trial_index} ran {r.intended_load_fps:.0f} fps x {r.intended_duration_s:g} s")
        self.position += 1
        self.by_result[id(r)] = rec
        return r

    def index_of(self, trials: list[TrialResult], index: int | None) -> int | None:
        if index is None or not 0 <= index < len(trials):
            return None
        rec = self.by_result.get(id(trials[index]))
        return None if rec is None else rec.trial_index


def _caveat(trials: list[TrialResult], index: int | None) -> str | None:
    return None if index is None or not 0 <= index < len(trials) else measured_despite(trials[index])


def verify_search(config: Mapping[str, Any], fs: Mapping[str, Any], records: list[TrialRecord],
                  where: str) -> list[str]:
    """Replay one frame size's search trials; every reported search figure that differs."""
    start_max = fs.get("search_max_load_fps")
    if start_max is None:
        return []  # a run from before the bounds were recomputable
    section = {k: v for k, v in (config.get("search") or {}).items() if k != "max_load_fps"}
    full_s = float((config.get("traffic") or {}).get("trial_duration_s") or 60.0)
    cfg = search_config_from_section(section, max_load_fps=float(start_max), full_trial_duration_s=full_s,
                                     max_load_is_estimate=bool(fs.get("search_max_load_is_estimate")),
                                     revision=int(fs.get("search_revision") or 1))
    search_records = [r for r in records if r.role == "search"]
    replay = Replay(search_records)
    try:
        chosen, outcome, repetitions = run_search(replay, cfg)
    except Diverged as exc:
        return [f"{where}: search replay diverged: {exc}"]
    problems = []
    if replay.position != len(search_records):
        problems.append(f"{where}: {len(search_records) - replay.position} recorded search trial(s) the "
                        "replayed search never asked for")
    if fs.get("search_mode") is not None and fs["search_mode"] != cfg.mode:
        problems.append(f"{where}: search_mode {fs['search_mode']} != configured {cfg.mode}")
    if bool(fs.get("generator_limited", False)) != outcome.generator_limited:
        problems.append(f"{where}: generator_limited {fs.get('generator_limited')} != recomputed "
                        f"{outcome.generator_limited}")
    max_load = float(start_max)
    if outcome.max_load_fps is not None and outcome.max_load_fps < max_load:
        max_load = outcome.max_load_fps
    if not same(fs.get("max_load_fps"), max_load):
        problems.append(f"{where}: max_load_fps {fs.get('max_load_fps')} != recomputed {max_load}")
    points = [p for p in fs.get("points") or []]
    if len(points) != len(chosen):
        return problems + [f"{where}: {len(points)} points reported, the search has {len(chosen)} goals"]
    for point, (goal_result, run) in zip(points, chosen):
        name = goal_result.goal.name
        expected = {
            "lower_bound_fps": goal_result.lower_bound_fps,
            "upper_bound_fps": goal_result.upper_bound_fps,
            "conditional_throughput_fps": goal_result.conditional_throughput_fps,
            "regular": goal_result.regular,
            "irregular_reason": goal_result.irregular_reason,
            "trial_index": replay.index_of(run.trials, goal_result.lower_bound_trial),
            "upper_bound_trial_index": replay.index_of(run.trials, goal_result.upper_bound_trial),
            "throughput_fps": goal_result.lower_bound_fps,
            "lower_bound_provisional": goal_result.lower_bound_provisional,
            "sending_caveat": _caveat(run.trials, goal_result.lower_bound_trial),
            **goal_stats(goal_result),
        }
        if repetitions is not None:
            expected["repetitions"] = repetitions.get(name)
        if point.get("name") != name:
            problems.append(f"{where}: point {point.get('name')} where the search reports goal {name}")
            continue
        for key, value in expected.items():
            if key in point and not same(point[key], value):
                problems.append(f"{where} {name}: {key} {point[key]} != recomputed {value}")
    return problems


def verify_latency(fs: Mapping[str, Any], trials: list[TrialRecord], where: str) -> list[str]:
    """Each reported latency summary against its trial, and each latency trial's load."""
    problems = []
    for point in fs.get("points") or []:
        idx = point.get("latency_trial_index")
        if "latency_summary" in point and idx is not None and 0 <= idx < len(trials):
            again = latency_summary(trials[idx].result)
            if not same(point["latency_summary"], again):
                problems.append(f"{where} {point['name']}: latency_summary differs from trial {idx}")
    throughput = {p["name"]: p.get("throughput_fps") for p in fs.get("points") or []}
    for lp in fs.get("latency_points") or []:
        idx = lp["trial_index"]
        if not 0 <= idx < len(trials):
            problems.append(f"{where} latency '{lp['label']}': trial {idx} does not exist")
            continue
        r = trials[idx].result
        if not same(lp["load_fps"], r.intended_load_fps):
            problems.append(f"{where} latency '{lp['label']}': load {lp['load_fps']} != trial {idx}'s "
                            f"{r.intended_load_fps}")
        ref = throughput.get(lp["reference"])
        if ref is not None and not same(lp["load_fps"], lp["fraction"] * ref):
            problems.append(f"{where} latency '{lp['label']}': load {lp['load_fps']} is not "
                            f"{lp['fraction']} x {lp['reference']} {ref}")
        if not same(lp.get("summary"), latency_summary(r)):
            problems.append(f"{where} latency '{lp['label']}': summary differs from trial {idx}")
        if "valid" in lp and lp["valid"] != r.valid:
            problems.append(f"{where} latency '{lp['label']}': valid is {lp['valid']}, "
                            f"trial {idx}'s {r.valid}")
        if "generator_floor" in lp and not same(lp["generator_floor"], fs.get("generator_floor")):
            problems.append(f"{where} latency '{lp['label']}': generator floor differs from the frame size's")
    return problems + verify_floor(fs, trials, where)


def verify_floor(fs: Mapping[str, Any], trials: list[TrialRecord], where: str) -> list[str]:
    """The reported generator floor against its ``floor`` trial (a measured input: its
    probe records are in trials.jsonl like every other trial's)."""
    floor = fs.get("generator_floor")
    if not isinstance(floor, Mapping) or floor.get("trial_index") is None:
        return []
    idx = floor["trial_index"]
    if not 0 <= idx < len(trials):
        return [f"{where} generator floor: trial {idx} does not exist"]
    rec = trials[idx]
    if rec.role != "floor" or rec.frame_size_bytes != fs.get("frame_size_bytes"):
        return [f"{where} generator floor: trial {idx} is not a floor trial of this frame size"]
    again = _jsonable(generator_floor(rec))
    if not same(dict(floor), again):
        return [f"{where} generator floor differs from trial {idx}"]
    return []


def _frame_sizes(results: Mapping[str, Any]) -> Iterator[tuple[Mapping, Mapping]]:
    for test in results["tests"]:
        for fs in test["frame_sizes"]:
            yield test, fs


def verify(run_dir: Path) -> list[str]:
    """Every figure of results.json that its recomputation does not reproduce (empty: all do)."""
    run_dir = Path(run_dir)
    problems = recompute.verify(run_dir)
    results = json.loads((run_dir / "results.json").read_text())
    plans = writers.read_config_yaml(run_dir / "config.yaml")["plans"]
    trials = read_trials(run_dir / "trials.jsonl")
    for test, fs in _frame_sizes(results):
        if fs["status"] != "complete":
            continue
        where = f"{test['label']} {fs['frame_size_bytes']} B"
        config = plans[test["plan_index"]]["config"]
        own = [r for r in trials if r.identity.plan_index == test["plan_index"]
               and r.frame_size_bytes == fs["frame_size_bytes"]]
        if test.get("traffic_type") == "rfc2544_throughput":
            try:
                problems += verify_search(config, fs, own, where)
            except ValueError as exc:
                problems.append(f"{where}: cannot rebuild the search configuration: {exc}")
        problems += verify_latency(fs, trials, where)
    return problems
