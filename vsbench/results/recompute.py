"""Recompute a run's reported figures from ``trials.jsonl`` and ``config.yaml`` alone.

Every point in results.json names the trials it came from; this module rebuilds each point
with the same functions the runner used (:mod:`vsbench.results.summary`) and reports any
figure that does not match. It is how "every number is recomputable" is checked, and the
basis for regenerating reports without re-running anything.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from vsbench.interfaces.frame_mix import FrameMix
from vsbench.interfaces.traffic import CAVEAT_LATE, line_rate_fps
from vsbench.results import frame_mix_figures, recompute_rfc2889, summary, writers
from vsbench.results.model import ReportedPoint, TrialRecord
from vsbench.results.trial_log import read_trials

#: Point fields that are functions of the trials and the config.
POINT_FIELDS = (
    "throughput_fps", "throughput_l1_mbps", "throughput_l2_mbps", "line_rate_percent",
    "offered_load_fps", "tx_fps", "rx_fps", "loss_ratio", "valid", "sending_caveat",
)
LATENCY_FIELDS = ("samples", "min_ns", "avg_ns", "max_ns", "probes_sent")
TALLY_FIELDS = ("trial_count", "invalid_trial_count", "trial_seconds", "effective_seconds")
#: Points read off one trial like ``continuous`` (burst, load_sweep, rfc2889_forwarding).
FIXED_POINT_NAMES = ("burst", summary.SWEEP_ZERO_LOSS, summary.SWEEP_MAX_RX, "FRMOL", "MFR")
BURST_FIELDS = ("burst_frames", "tx_frames", "rx_frames", "lost_frames", "loss_ratio", "send_time_s",
                "burst_rate_fps", "valid")
SWEEP_FIELDS = ("offered_load_fps", "tx_fps", "rx_fps", "loss_ratio", "lost_frames", "valid")
BACK2BACK_FIELDS = ("frames_avg", "frames_min", "frames_max", "frames_stdev", "bounded", "burst_rate_fps",
                    "bursts_at_line_rate", "max_rate_fps", "implied_buffer_time_s", "corrected_buffer_time_s")


def _compare(where: str, fields: tuple[str, ...], reported: dict, again: Any, problems: list[str]) -> None:
    for name in fields:
        if not _same(getattr(again, name), reported.get(name)):
            problems.append(f"{where}: {name} {reported.get(name)} != recomputed {getattr(again, name)}")


def verify_traffic_types(fs: dict, trials: list[TrialRecord], own: set[int], where: str) -> list[str]:
    """The bursts, the back-to-back benchmark and the load sweep of one frame size, rebuilt
    from their trials. Back-to-back: each repetition's frames are the longest burst length
    whose every trial lost nothing, and the averages, burst rate and buffer times follow
    from them and from the reported throughput (an input: configured or searched before) --
    the search's choice of lengths is not replayed. Load sweep: every step and which step
    each reported point was read off."""
    problems: list[str] = []

    def trial(index: int, what: str) -> TrialRecord | None:
        if index not in own or index >= len(trials):
            problems.append(f"{where} {what}: trial {index} is not a trial of this frame size")
            return None
        return trials[index]

    for b in fs.get("bursts") or []:
        rec = trial(b["trial_index"], "burst")
        if rec is not None:
            _compare(f"{where} burst #{b['trial_index']}", BURST_FIELDS, b, summary.burst_point(rec), problems)
    b2b = fs.get("back2back")
    if b2b:
        groups = []
        for rep in b2b["repetitions"]:
            recs = [trial(i, "back2back") for i in rep["trial_indices"]]
            groups.append([r for r in recs if r is not None])
            if summary.back2back_frames(groups[-1]) != rep["frames"]:
                problems.append(f"{where} back2back: repetition frames {rep['frames']} != recomputed "
                                f"{summary.back2back_frames(groups[-1])}")
        again = summary.back2back_result(
            repetitions=groups, trials_per_length=b2b["trials_per_length"], max_frames=b2b["max_frames"],
            resolution_frames=b2b["resolution_frames"], nominal_line_rate_fps=b2b["nominal_line_rate_fps"],
            max_rate_source=b2b["max_rate_source"], throughput_fps=b2b["throughput_fps"],
            throughput_source=b2b["throughput_source"])
        _compare(f"{where} back2back", BACK2BACK_FIELDS, b2b, again, problems)
    steps = []
    for step in fs.get("sweep") or []:
        rec = trial(step["trial_index"], "sweep step")
        if rec is None:
            continue
        again = summary.sweep_step(rec, step["percent"])
        steps.append(again)
        _compare(f"{where} sweep {step['percent']:g}%", SWEEP_FIELDS, step, again, problems)
    problems.extend(recompute_rfc2889.verify(fs, trial, where))  # RFC 2889 steps and iterations
    if fs.get("sweep"):
        chosen = summary.sweep_selection(steps)
        for point in fs.get("points") or []:
            if point["name"] in (summary.SWEEP_ZERO_LOSS, summary.SWEEP_MAX_RX) \
                    and chosen.get(point["name"]) != point["trial_index"]:
                problems.append(f"{where} {point['name']}: read off trial {point['trial_index']}, recomputed "
                                f"{chosen.get(point['name'])}")
    return problems


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        if a is None or b is None:
            return a is b
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def nominal_line_rate_fps(config: dict, frame_size_bytes: int, port_pairs: int = 1) -> float:
    """The nominal line rate of every generator port that sends: both ports of each pair
    when bidirectional, one when not (:func:`sending_port_pairs` says how many pairs; the
    runner's own figure is ``vsbench.measurement.profiles.nominal_line_rate_fps``)."""
    link_bps = float(config["testbed"]["link_gbps"]) * 1e9
    directions = 2 if (config.get("traffic") or {}).get("bidirectional", True) else 1
    return line_rate_fps(link_bps, frame_size_bytes) * directions * max(1, int(port_pairs or 1))


def sending_port_pairs(test: dict, config: dict) -> int:
    """Pairs of generator ports a test sent on: results.json's ``topology.port_pairs``
    (p2p/phy_vnf_phy ``topology.port_pairs``, lanes, every router port of
    ``phy_router_phy``'s instances). A run that did not record it had one pair, except
    ``phy_router_phy``'s: ``topology.port_pairs`` x ``dut.router_instances`` of its config
    (the router sends from every port; half of them unidirectionally)."""
    recorded = (test.get("topology") or {}).get("port_pairs")
    if recorded:
        return int(recorded)
    if test.get("deployment") == "phy_router_phy":
        pairs = int((config.get("topology") or {}).get("port_pairs") or 1)
        return pairs * int((config.get("dut") or {}).get("router_instances") or 1)
    return 1


def recompute_point(point: dict, trials: list[TrialRecord], frame_size_bytes: int, nominal: float) -> ReportedPoint:
    """Rebuild ``point`` (a results.json point) from the trials it references."""
    def at(index: int | None) -> TrialRecord | None:
        return None if index is None else trials[index]

    if point["name"] == "continuous":
        return summary.continuous_point(frame_size_bytes=frame_size_bytes, nominal_line_rate_fps=nominal,
                                        trial=trials[point["trial_index"]])
    if point["name"] in FIXED_POINT_NAMES:
        return summary.fixed_point(point["name"], frame_size_bytes=frame_size_bytes, nominal_line_rate_fps=nominal,
                                   trial=trials[point["trial_index"]])
    bound = at(point["trial_index"])
    caveat = point.get("sending_caveat")
    # a late trial was filed at a grid load at or below the rate it delivered, not at the
    # load it was asked for (the replayed search checks which: vsbench.measurement.recheck)
    lower = point.get("lower_bound_fps") if caveat == CAVEAT_LATE else None if bound is None else bound.result.intended_load_fps
    return summary.search_point(
        name=point["name"],
        frame_size_bytes=frame_size_bytes,
        nominal_line_rate_fps=nominal,
        sending_caveat=caveat,
        lower_bound_fps=lower,
        upper_bound_fps=None,
        bound_trial=bound,
        latency_trial=at(point["latency_trial_index"]),
    )


def verify(run_dir: Path) -> list[str]:
    """Every mismatch between results.json and its recomputation (empty when consistent)."""
    run_dir = Path(run_dir)
    results = json.loads((run_dir / "results.json").read_text())
    plans = writers.read_config_yaml(run_dir / "config.yaml")["plans"]
    trials = read_trials(run_dir / "trials.jsonl")
    problems: list[str] = []
    for i, rec in enumerate(trials):
        if rec.trial_index != i:
            problems.append(f"trials.jsonl line {i + 1} has trial_index {rec.trial_index}")
    for test in results["tests"]:
        config = plans[test["plan_index"]]["config"]
        for fs in test["frame_sizes"]:
            key = fs["frame_size_bytes"]
            mix = FrameMix.from_json(fs["frame_mix"]) if fs.get("frame_mix") else None
            # a mix's figures are at its mean wire size; it is filed under that mean rounded
            size = mix.mean_frame_size_bytes if mix is not None else key
            where = f"{test['label']} {key} B" + (f" ({mix.name})" if mix is not None else "")
            own = [r for r in trials if r.identity.plan_index == test["plan_index"] and r.frame_size_bytes == key]
            own_indices = {r.trial_index for r in own}
            if fs["status"] == "not-run":
                continue
            t = summary.tally(own)
            for name in TALLY_FIELDS:
                if not _same(getattr(t, name), fs[name]):
                    problems.append(f"{where}: {name} {fs[name]} != recomputed {getattr(t, name)}")
            if fs.get("link_speed_source") == "port":  # the ports' own speeds, as the run read them
                nominal = sum(line_rate_fps(bps, size) for bps in fs["link_speeds_bps"])
            else:
                nominal = nominal_line_rate_fps(config, size, sending_port_pairs(test, config))
            if not _same(nominal, fs["nominal_line_rate_fps"]):
                problems.append(f"{where}: nominal line rate {fs['nominal_line_rate_fps']} != {nominal}")
            problems.extend(verify_traffic_types(fs, trials, own_indices, where))
            for point in fs["points"]:
                for key in ("trial_index", "latency_trial_index"):
                    idx = point[key]
                    if idx is not None and (idx >= len(trials) or idx not in own_indices):
                        problems.append(f"{where} {point['name']}: {key} {idx} is not a trial of this frame size")
                        break
                else:
                    again = recompute_point(point, trials, size, nominal)
                    for name in POINT_FIELDS:
                        if not _same(getattr(again, name), point[name]):
                            problems.append(f"{where} {point['name']}: {name} {point[name]} != recomputed "
                                            f"{getattr(again, name)}")
                    if mix is not None:
                        problems.extend(_verify_per_size(mix, point, again, trials, where))
                    lat = point["latency"]
                    if (lat is None) != (again.latency is None):
                        problems.append(f"{where} {point['name']}: latency presence differs")
                    elif lat is not None:
                        for name in LATENCY_FIELDS:
                            if not _same(getattr(again.latency, name), lat[name]):
                                problems.append(f"{where} {point['name']}: latency {name} {lat[name]} != "
                                                f"recomputed {getattr(again.latency, name)}")
    return problems


def _verify_per_size(mix: FrameMix, point: dict, again: ReportedPoint, trials: list[TrialRecord],
                     where: str) -> list[str]:
    """A mix's per-size breakdown of ``point``, rebuilt from its trial."""
    index = point.get("trial_index")
    rows = frame_mix_figures.per_size(mix, again, None if index is None else trials[index])
    reported = point.get("per_size") or []
    if len(reported) != len(rows):
        return [f"{where} {point['name']}: per_size has {len(reported)} sizes, the mix {len(rows)}"]
    problems = []
    for mine, theirs in zip(rows, reported):
        for name, value in mine.items():
            if not _same(value, theirs.get(name)):
                problems.append(f"{where} {point['name']} {mine['frame_size_bytes']} B: per_size {name} "
                                f"{theirs.get(name)} != recomputed {value}")
    return problems


def nothing_to_recompute(run_dir: Path) -> str | None:
    """Why ``run_dir`` has no figure to recompute, or None when it has trials.

    A run that ended before its first trial (a failed start, a signal during set-up) has
    an empty trials.jsonl: checking it finds no mismatch, and "every figure recomputes"
    would pass off a run that measured nothing as verified."""
    run_dir = Path(run_dir)
    if read_trials(run_dir / "trials.jsonl"):
        return None
    try:
        status = json.loads((run_dir / "results.json").read_text()).get("status")
    except (OSError, ValueError, AttributeError):
        status = None
    ended = f" (the run's status is {status}: it ended before its first trial)" if status and status != "complete" else ""
    return f"nothing to recompute: {run_dir / 'trials.jsonl'} holds no trial{ended}"
