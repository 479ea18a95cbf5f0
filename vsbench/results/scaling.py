"""Scaling curves: the plans of a rule- or flow-count matrix, read together.

A testcase with a matrix over ``dut.rules`` (rule_complexity) or ``traffic.flows``
(flow_scalability) runs one plan per count; results.json holds one test per plan, each with
its ``variant`` (``{"dut.rules": 1000}``). The figure the Netronome OVS-TC report draws is
across plans: frame rate at the zero-loss goal versus the count, and Mpps per core consumed
versus the count. :func:`curves` groups the run's tests into those curves.

A curve is one testcase on one switch with one generator, deployment and set of the other
matrix values, along one axis; it has a series per frame size. Its points are the plans'
reported points of one goal (NDR when the testcase has it, else the first goal). Pure: no
I/O, the input is results.json's ``tests`` list (or ``RunResults.to_json()["tests"]``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from vsbench.results import switch_figures

#: Matrix keys that make a scaling axis, in order of preference.
AXES = ("dut.rules", "traffic.flows")
AXIS_LABEL = {"dut.rules": "OpenFlow rules per direction", "traffic.flows": "flows per direction"}
PREFERRED_GOAL = "NDR"


@dataclass(frozen=True)
class ScalingPoint:
    """One plan's figure at one frame size: ``count`` rules (or flows) -> throughput."""

    count: int
    plan_index: int | None
    label: str
    goal: str
    throughput_fps: float | None
    switch_cores: float | None
    fps_per_core: float | None
    flows: int | None
    status: str
    regular: bool | None
    oversubscribed: bool
    datapath: str | None

    @property
    def mpps_per_core(self) -> float | None:
        return None if self.fps_per_core is None else self.fps_per_core / 1e6


@dataclass
class ScalingCurve:
    """The points of one testcase x switch x generator x fixed matrix values, along ``axis``.

    ``series`` maps a frame size (bytes) to its points in increasing count order.
    """

    axis: str
    testcase: str
    vswitch: str
    trafficgen: str
    deployment: str
    fixed: tuple[tuple[str, Any], ...] = ()
    series: dict[int, list[ScalingPoint]] = field(default_factory=dict)

    @property
    def title(self) -> str:
        extra = "".join(f", {k}={v}" for k, v in self.fixed)
        return f"{self.testcase} on {self.vswitch} ({self.trafficgen}, {self.deployment}{extra})"

    @property
    def axis_label(self) -> str:
        return AXIS_LABEL.get(self.axis, self.axis)

    @property
    def goal(self) -> str:
        for points in self.series.values():
            for p in points:
                return p.goal
        return PREFERRED_GOAL

    def counts(self) -> list[int]:
        return sorted({p.count for points in self.series.values() for p in points})

    def plottable(self) -> bool:
        """Two or more counts with a throughput in some series: a curve, not a dot."""
        return any(len({p.count for p in pts if p.throughput_fps is not None}) >= 2 for pts in self.series.values())


def axis_of(test: Mapping[str, Any]) -> str | None:
    """The scaling axis of a test's matrix assignment, or None when it has none."""
    variant = test.get("variant") if isinstance(test.get("variant"), Mapping) else {}
    for axis in AXES:
        value = variant.get(axis)
        if isinstance(value, int) and not isinstance(value, bool):
            return axis
    return None


def goal_point(fs: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The point a curve reads at one frame size: NDR if reported, else the first."""
    points = [p for p in fs.get("points") or [] if isinstance(p, Mapping)]
    for p in points:
        if p.get("name") == PREFERRED_GOAL:
            return p
    return points[0] if points else None


def _number(value: Any) -> float | None:
    return switch_figures._number(value)  # noqa: SLF001 - one definition of "a finite number"


def curves(tests: Iterable[Mapping[str, Any]]) -> list[ScalingCurve]:
    """The run's scaling curves, in the order their first plan ran."""
    found: dict[tuple, ScalingCurve] = {}
    for test in tests:
        axis = axis_of(test)
        if axis is None:
            continue
        variant = dict(test.get("variant") or {})
        count = int(variant.pop(axis))
        fixed = tuple(sorted((k, v) for k, v in variant.items() if k not in AXES))
        key = (axis, test.get("testcase"), test.get("vswitch"), test.get("trafficgen"), test.get("deployment"),
               repr(fixed))
        curve = found.get(key)
        if curve is None:
            curve = found[key] = ScalingCurve(
                axis=axis, testcase=str(test.get("testcase") or ""), vswitch=str(test.get("vswitch") or ""),
                trafficgen=str(test.get("trafficgen") or ""), deployment=str(test.get("deployment") or ""),
                fixed=fixed)
        for fs in test.get("frame_sizes") or []:
            size = fs.get("frame_size_bytes")
            if not isinstance(size, int):
                continue
            point = goal_point(fs) or {}
            flows = test.get("flows")
            curve.series.setdefault(size, []).append(ScalingPoint(
                count=count,
                plan_index=test.get("plan_index"),
                label=str(test.get("label") or ""),
                goal=str(point.get("name") or PREFERRED_GOAL),
                throughput_fps=_number(point.get("throughput_fps")),
                switch_cores=switch_figures.switch_cores(point),
                fps_per_core=switch_figures.fps_per_core(point),
                flows=flows if isinstance(flows, int) else None,
                status=str(fs.get("status") or test.get("status") or "unknown"),
                regular=point.get("regular") if isinstance(point.get("regular"), bool) else None,
                oversubscribed=switch_figures.oversubscribed(point),
                datapath=switch_figures.datapath_text(point),
            ))
    for curve in found.values():
        for size in curve.series:
            curve.series[size].sort(key=lambda p: p.count)
    return list(found.values())


def drop_ratio(points: list[ScalingPoint]) -> float | None:
    """Throughput at the smallest count over throughput at the largest (the report's
    "fell 24x from 64 to 1M rules"), or None without two measured ends."""
    measured = [p for p in points if p.throughput_fps]
    if len(measured) < 2:
        return None
    return measured[0].throughput_fps / measured[-1].throughput_fps  # type: ignore[operator]
