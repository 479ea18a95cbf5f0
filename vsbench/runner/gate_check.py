"""What a run's plans will measure, known before they run: the names CI gates may use.

``--fail-below``/``--fail-above`` thresholds, ``--regression-metric`` names and
``--baseline-variant`` keys are checked here against the plans, before anything is created.
Why: a gate is only evaluated after the last trial, and a gate on a figure that was never
measured fails -- so a typo (``ndr_fsp``, ``ndr_fps@63`` in a run of 64 and 512 B) used to
cost a whole run and then reported a regression (exit 3) that CI could not tell from a real
one. A gate naming nothing the run will produce is bad input: one line naming the option
and the closest name, exit 2, nothing run.

What a plan produces follows its traffic type (the point names each type reports, turned
into metric names by :func:`vsbench.results.run_metrics.point_metrics`):
``rfc2544_throughput`` a point per search goal, ``continuous``/``burst`` one point,
``load_sweep`` its two chosen steps, ``back2back`` the burst length, ``tcp`` the TCP
figures; latency figures where the plan measures latency. A figure the plan names but that
a run may still lack (no NDR found, too few probes for a p99) is left to the gate itself.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, replace
from typing import Any, Iterable, Mapping, Sequence

from vsbench.measurement import profiles
from vsbench.measurement.search.settings import goals_from_section
from vsbench.results import run_metrics, summary
from vsbench.results.thresholds import Threshold, ThresholdError, from_testcase
from vsbench.runner import traffic_tcp
from vsbench.runner.plan import TestPlan

#: Point names of the traffic types that report fixed points (the search's are its goals;
#: tests/unit/test_gate_names.py checks real runs produce no other name).
FIXED_POINTS = {
    "continuous": ("continuous",),
    "burst": ("burst",),
    "load_sweep": (summary.SWEEP_ZERO_LOSS, summary.SWEEP_MAX_RX),
}


@dataclass(frozen=True)
class PlanFigures:
    """What one plan will measure: its label, frame sizes and metric names."""

    label: str
    frame_sizes_bytes: tuple[int, ...]
    metrics: frozenset[str]
    #: latency figures are named but ``latency.enabled`` is off
    latency_off: bool = False


def _frame_sizes(config: Mapping[str, Any]) -> tuple[int, ...]:
    traffic = config.get("traffic") or {}
    if traffic.get("type") == traffic_tcp.KIND:  # the frame size label of a TCP plan: MTU + 18
        return (traffic_tcp.frame_size(config),)
    try:  # a frame mix (imix) is filed under its mean size, rounded
        return tuple(profiles.frame_sizes(traffic))
    except profiles.ProfileError:
        return ()  # the preflight says what is wrong with them


def plan_figures(plan: TestPlan) -> PlanFigures | None:
    """The figures ``plan`` can produce; None for a traffic type this module does not know
    (preflight refuses it; a vendor's would be unchecked rather than wrongly refused)."""
    config = plan.config
    traffic = config.get("traffic") or {}
    kind = traffic.get("type") or "rfc2544_throughput"
    if kind == traffic_tcp.KIND:
        return PlanFigures(plan.label, _frame_sizes(config), frozenset(run_metrics.TCP_METRICS))
    if kind == "back2back":
        return PlanFigures(plan.label, _frame_sizes(config), frozenset(run_metrics.B2B_METRICS))
    if kind == "rfc2544_throughput":
        try:
            points: Sequence[str] = [g.name for g in goals_from_section(config.get("search") or {})]
        except (TypeError, ValueError):
            return None  # a malformed goal is the search's own error, under its own name
    elif kind in FIXED_POINTS:
        points = FIXED_POINTS[kind]
    else:
        return None
    metrics = {m for p in points for m in run_metrics.point_metrics(p)}
    latency = bool((config.get("latency") or {}).get("enabled"))
    if latency:
        metrics.update(run_metrics.LATENCY_METRICS)
    return PlanFigures(plan.label, _frame_sizes(config), frozenset(metrics), latency_off=not latency)


def figures_of(plans: Iterable[TestPlan]) -> list[PlanFigures]:
    """:func:`plan_figures` of every plan it knows (repeats once)."""
    return list(dict.fromkeys(f for f in map(plan_figures, plans) if f is not None))


def _closest(name: str, names: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, sorted(set(names)), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def check_threshold(option: str, spec: str, threshold: Threshold, plans: Sequence[PlanFigures]) -> None:
    """Raise :class:`ThresholdError` (one line naming ``option`` and ``spec``) when no plan
    has the threshold's frame size, or a plan it applies to cannot produce its metric."""
    if not plans:
        return
    where = f"{option} {spec}"
    size = threshold.frame_size_bytes
    applies = [p for p in plans if size is None or size in p.frame_sizes_bytes]
    if not applies:
        sizes = sorted({s for p in plans for s in p.frame_sizes_bytes})
        nearest = min(sizes, key=lambda s: (abs(s - size), s)) if sizes else None
        hint = f"; did you mean @{nearest}?" if nearest is not None else ""
        raise ThresholdError(f"{where}: no test of this run has {size} B frames{hint} "
                             f"(frame sizes: {', '.join(map(str, sizes))})")
    metric = threshold.metric
    lacking = [p for p in applies if metric not in p.metrics]
    if not lacking:
        return
    produced = {m for p in applies for m in p.metrics}
    if metric in produced:  # some tests have it, these do not: the gate would fail on them
        names = ", ".join(p.label for p in lacking)
        raise ThresholdError(f"{where}: {names} does not measure {metric} (it measures "
                             f"{', '.join(sorted(lacking[0].metrics))})")
    if metric in run_metrics.LATENCY_METRICS and all(p.latency_off for p in lacking):
        raise ThresholdError(f"{where}: latency is not measured in this run (latency.enabled is false)")
    raise ThresholdError(f"{where}: no test of this run measures {metric!r}{_closest(metric, produced)} "
                         f"(metrics: {', '.join(sorted(produced))})")


def check_testcase_thresholds(plans: Iterable[TestPlan]) -> None:
    """A testcase's own ``thresholds`` section must name figures its plans measure (its
    frame sizes may be ones a run leaves out: such a gate just does not apply)."""
    for plan in plans:
        section = plan.config.get("thresholds")
        if not section:
            continue
        where = f"{(plan.config.get('test') or {}).get('file') or plan.name}: thresholds"
        try:
            found, _ = from_testcase(section)
        except ThresholdError as exc:
            raise ThresholdError(f"{where}: {exc}") from None
        figures = plan_figures(plan)
        for threshold in found if figures is not None else ():
            size = "" if threshold.frame_size_bytes is None else f"@{threshold.frame_size_bytes}"
            check_threshold(f"{where}.{threshold.kind}", f"{threshold.metric}{size}",
                            replace(threshold, frame_size_bytes=None), [figures])


def check_regression_metrics(names: Sequence[str], plans: Sequence[PlanFigures]) -> None:
    """Each ``--regression-metric`` must be a figure some plan of the run produces."""
    if not plans:
        return
    produced = {m for p in plans for m in p.metrics}
    for name in names:
        if name not in produced:
            raise ThresholdError(f"--regression-metric {name}: no test of this run measures it"
                                 f"{_closest(name, produced)} (metrics: {', '.join(sorted(produced))})")


def variants_by_testcase(plans: Iterable[TestPlan]) -> dict[str, list[dict[str, Any]]]:
    """Each testcase's plans' matrix settings, as the feature matrix groups them."""
    out: dict[str, list[dict[str, Any]]] = {}
    for plan in plans:
        if plan.variant:
            out.setdefault(plan.name, []).append(dict(plan.variant))
    return out
