"""Scaling curves: the plans of a count matrix (rules, routes, next hops, flows), read together.

A testcase with a matrix over a count -- ``dut.rules`` (rule_complexity), ``dut.routes``
(vrouter_route_scaling), ``dut.nexthops`` (vrouter_nexthop_scaling), ``traffic.flows``
(flow_scalability) -- runs one plan per count; results.json holds one test per plan, each
with its ``variant`` (``{"dut.routes": 1000}``). The figures the seed reports draw are
across plans: frame rate at the zero-loss goal versus the count (the Netronome OVS-TC
report's rules, the Brocade vRouter report's routes and next hops), the same per CPU core,
and the drop from the smallest count to the largest. :func:`curves` groups the run's tests
into those curves.

The axis is data, not code: :data:`KNOWN_AXES` names the counts the shipped testcases vary
(what they are called, singular and plural), in order of preference when a plan's variant
holds several; any other integer-valued matrix key is an axis too, named by its path. A
curve is one testcase on one switch (or VNF) with one generator, deployment and set of the
other matrix values, along one axis; it has a series per frame size. Its points are the
plans' reported points of one goal (NDR when the testcase has it, else the first goal).
Pure: no I/O, the input is results.json's ``tests`` list (or ``RunResults.to_json()["tests"]``).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping

from vsbench.results import switch_figures


@dataclass(frozen=True)
class Axis:
    """A count a testcase's matrix varies: its matrix key and how to say it."""

    key: str
    singular: str
    plural: str
    #: The axis label of plots and tables, with what the count is counted per.
    label: str

    def noun(self, count: int | float) -> str:
        return self.singular if count == 1 else self.plural

    def count_text(self, count: int | float) -> str:
        """``1 route``, ``64K rules``, ``1M routes``."""
        return f"{short_count(count)} {self.noun(count)}"


#: The counts vsbench's testcases vary, in order of preference as a curve's axis.
KNOWN_AXES: tuple[Axis, ...] = (
    Axis("dut.rules", "rule", "rules", "OpenFlow rules per direction"),
    Axis("dut.routes", "route", "routes", "routes per router port"),
    Axis("dut.nexthops", "next hop", "next hops", "next hops per router port"),
    Axis("traffic.flows", "flow", "flows", "flows per direction"),
)
#: Matrix keys of the known axes, in order of preference (kept for readers of the old name).
AXES = tuple(a.key for a in KNOWN_AXES)
AXIS_LABEL = {a.key: a.label for a in KNOWN_AXES}
PREFERRED_GOAL = "NDR"


def short_count(value: int | float) -> str:
    """64, 1K, 8K, 64K, 1M: the seed reports' way of naming counts (exact multiples only;
    other values are written out with thousands separators)."""
    for scale, suffix in ((1_000_000, "M"), (1_000, "K")):
        if value >= scale and value % scale == 0:
            return f"{value // scale:g}{suffix}" if isinstance(value, int) else f"{value / scale:g}{suffix}"
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:g}"


def axis(key: str) -> Axis:
    """The axis of matrix key ``key``: a known one, or one named by its path."""
    for known in KNOWN_AXES:
        if known.key == key:
            return known
    name = key.rsplit(".", 1)[-1].replace("_", " ")
    return Axis(key, name, name, key)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def split_variant(variant: Mapping[str, Any] | None) -> tuple[Axis, int, tuple[tuple[str, Any], ...]] | None:
    """(axis, count, the other matrix values) of a plan's variant, or None without a count:
    the first known axis the variant holds, else its first integer-valued key."""
    variant = variant if isinstance(variant, Mapping) else {}
    key = next((a.key for a in KNOWN_AXES if _is_count(variant.get(a.key))), None)
    if key is None:
        key = next((k for k, v in variant.items() if _is_count(v)), None)
    if key is None:
        return None
    fixed = tuple(sorted((k, v) for k, v in variant.items() if k != key))
    return axis(key), int(variant[key]), fixed


#: What the DUT's set-up of a plan cost, as results.json's ``topology.router`` records it
#: (the vrouter's route install): key, column header, unit.
SETUP_FIGURES: tuple[tuple[str, str, str], ...] = (
    ("routes", "Routes installed", "all directions"),
    ("install_s", "Install time", "s"),
    ("fib_slab_delta_bytes", "FIB memory", "MiB"),
)


@dataclass(frozen=True)
class ScalingPoint:
    """One plan's figure at one frame size: ``count`` rules (routes, ...) -> throughput."""

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
    #: The plan's set-up figures (:data:`SETUP_FIGURES` keys), empty when it recorded none.
    setup: Mapping[str, float] = field(default_factory=dict)
    #: The point's reported share of the nominal line rate, when known.
    line_rate_percent: float | None = None
    #: How many repeats of the plan this point stands for (``--repeat``: their median).
    repeats: int = 1

    @property
    def mpps_per_core(self) -> float | None:
        return None if self.fps_per_core is None else self.fps_per_core / 1e6

    @property
    def flagged(self) -> bool:
        return self.regular is False or self.oversubscribed or self.status != "complete"


@dataclass
class ScalingCurve:
    """The points of one testcase x switch (or VNF) x generator x fixed matrix values,
    along ``axis`` (a matrix key; :attr:`axis_info` says how to name it).

    ``series`` maps a frame size (bytes) to its points in increasing count order.
    """

    axis: str
    testcase: str
    vswitch: str
    trafficgen: str
    deployment: str
    fixed: tuple[tuple[str, Any], ...] = ()
    series: dict[int, list[ScalingPoint]] = field(default_factory=dict)
    vnf: str = ""

    @property
    def axis_info(self) -> Axis:
        return axis(self.axis)

    @property
    def dut(self) -> str:
        """What was measured: the switch, the switch with its VNF, or the VNF alone (a
        deployment without a switch: phy_router_phy)."""
        switch = self.vswitch if self.vswitch not in ("", "none") else ""
        vnf = self.vnf if self.vnf not in ("", "none") else ""
        return " + ".join(x for x in (switch, vnf) if x) or "the DUT"

    @property
    def cpu_owner(self) -> str:
        """Whose CPU the per-core figures are: the switch's, or the VNF's without one."""
        return "VNF" if self.vswitch in ("", "none") else "Switch"

    @property
    def title(self) -> str:
        extra = "".join(f", {k}={v}" for k, v in self.fixed)
        return f"{self.testcase} on {self.dut} ({self.trafficgen}, {self.deployment}{extra})"

    @property
    def axis_label(self) -> str:
        return self.axis_info.label

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

    def has_setup(self) -> bool:
        return any(p.setup for points in self.series.values() for p in points)

    def per_count(self, size: int) -> list[ScalingPoint]:
        """Frame size ``size``'s points, one per count: a run with ``--repeat`` holds a plan
        per repeat, and the curve's value at a count is their median (:func:`median_point`),
        not whichever repeat came last."""
        points = self.series.get(size) or []
        counts = sorted({p.count for p in points})
        return [median_point([p for p in points if p.count == c]) for c in counts]

    def grid(self) -> tuple[list[int], list[int], dict[tuple[int, int], ScalingPoint]]:
        """The seed reports' table shape: (counts, frame sizes, point of each (count, size)),
        repeats of a plan as their median."""
        cells = {(p.count, size): p for size in self.series for p in self.per_count(size)}
        return self.counts(), sorted(self.series), cells


def _median(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def median_point(points: list[ScalingPoint]) -> ScalingPoint:
    """The repeats of one plan at one frame size as one point: the median of each figure,
    flagged (irregular, oversubscribed, not complete) when any repeat was."""
    if len(points) == 1:
        return points[0]
    first = points[0]
    statuses = {p.status for p in points}
    return replace(
        first,
        throughput_fps=_median(p.throughput_fps for p in points),
        switch_cores=_median(p.switch_cores for p in points),
        fps_per_core=_median(p.fps_per_core for p in points),
        line_rate_percent=_median(p.line_rate_percent for p in points),
        regular=False if any(p.regular is False for p in points) else first.regular,
        oversubscribed=any(p.oversubscribed for p in points),
        status=first.status if len(statuses) == 1 else "incomplete",
        repeats=len(points),
    )


def axis_of(test: Mapping[str, Any]) -> str | None:
    """The scaling axis (matrix key) of a test's matrix assignment, or None when it has none."""
    found = split_variant(test.get("variant"))
    return None if found is None else found[0].key


def goal_point(fs: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The point a curve reads at one frame size: NDR if reported, else the first."""
    points = [p for p in fs.get("points") or [] if isinstance(p, Mapping)]
    for p in points:
        if p.get("name") == PREFERRED_GOAL:
            return p
    return points[0] if points else None


def _number(value: Any) -> float | None:
    return switch_figures._number(value)  # noqa: SLF001 - one definition of "a finite number"


def setup_figures(test: Mapping[str, Any]) -> dict[str, float]:
    """The plan's set-up figures (:data:`SETUP_FIGURES`) from results.json's topology."""
    topology = test.get("topology") if isinstance(test.get("topology"), Mapping) else {}
    router = topology.get("router") if isinstance(topology.get("router"), Mapping) else {}
    out = {}
    for key, _, _ in SETUP_FIGURES:
        value = _number(router.get(key))
        if value is not None:
            out[key] = value
    return out


def curves(tests: Iterable[Mapping[str, Any]]) -> list[ScalingCurve]:
    """The run's scaling curves, in the order their first plan ran."""
    found: dict[tuple, ScalingCurve] = {}
    for test in tests:
        split = split_variant(test.get("variant"))
        if split is None:
            continue
        ax, count, fixed = split
        key = (ax.key, test.get("testcase"), test.get("vswitch"), test.get("vnf"), test.get("trafficgen"),
               test.get("deployment"), repr(fixed))
        curve = found.get(key)
        if curve is None:
            curve = found[key] = ScalingCurve(
                axis=ax.key, testcase=str(test.get("testcase") or ""), vswitch=str(test.get("vswitch") or ""),
                trafficgen=str(test.get("trafficgen") or ""), deployment=str(test.get("deployment") or ""),
                fixed=fixed, vnf=str(test.get("vnf") or ""))
        setup = setup_figures(test)
        for fs in test.get("frame_sizes") or []:
            size = fs.get("frame_size_bytes")
            if not isinstance(size, int):
                continue
            point = goal_point(fs) or {}
            flows = test.get("flows")
            throughput = _number(point.get("throughput_fps"))
            line_rate = _number(fs.get("nominal_line_rate_fps"))
            curve.series.setdefault(size, []).append(ScalingPoint(
                count=count,
                plan_index=test.get("plan_index"),
                label=str(test.get("label") or ""),
                goal=str(point.get("name") or PREFERRED_GOAL),
                throughput_fps=throughput,
                switch_cores=switch_figures.switch_cores(point),
                fps_per_core=switch_figures.fps_per_core(point),
                flows=flows if isinstance(flows, int) else None,
                status=str(fs.get("status") or test.get("status") or "unknown"),
                regular=point.get("regular") if isinstance(point.get("regular"), bool) else None,
                oversubscribed=switch_figures.oversubscribed(point),
                datapath=switch_figures.datapath_text(point),
                setup=setup,
                line_rate_percent=(100.0 * throughput / line_rate if throughput is not None and line_rate else None),
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


@dataclass(frozen=True)
class Drop:
    """From the smallest measured count to the largest, at one frame size."""

    frame_size_bytes: int
    goal: str
    first: ScalingPoint
    last: ScalingPoint

    @property
    def ratio(self) -> float:
        return self.first.throughput_fps / self.last.throughput_fps  # type: ignore[operator]

    @property
    def percent(self) -> float:
        """The change in %, negative for a drop."""
        return 100.0 * (self.last.throughput_fps / self.first.throughput_fps - 1.0)  # type: ignore[operator]


def drops(curve: ScalingCurve) -> list[Drop]:
    """Each frame size's drop (or gain) between its measured ends, in frame-size order."""
    out = []
    for size in sorted(curve.series):
        measured = [p for p in curve.per_count(size) if p.throughput_fps]
        if len(measured) >= 2:
            out.append(Drop(size, measured[0].goal, measured[0], measured[-1]))
    return out


def drop_sentence(curve: ScalingCurve, drop: Drop) -> str:
    """``64 B: NDR 0.512 Mpps at 1 route → 0.301 Mpps at 1M routes, 1.70× lower (−41.2 %)``."""
    ax = curve.axis_info
    ratio = drop.ratio
    how = f"{ratio:.2f}× lower" if ratio >= 1 else f"{1 / ratio:.2f}× higher"
    flagged = " (an end is flagged: see the table)" if drop.first.flagged or drop.last.flagged else ""
    text = (f"{drop.frame_size_bytes} B: {drop.goal} {drop.first.throughput_fps / 1e6:.3f} Mpps at "
            f"{ax.count_text(drop.first.count)} → {drop.last.throughput_fps / 1e6:.3f} Mpps at "
            f"{ax.count_text(drop.last.count)}, {how} ({drop.percent:+.1f} %){flagged}")
    a, b = drop.first.fps_per_core, drop.last.fps_per_core
    if a and b:  # what a core of the DUT forwards: the cost, even where the rate was bounded elsewhere
        per = f"{a / b:.2f}× lower" if a >= b else f"{b / a:.2f}× higher"
        text += (f"; per {curve.cpu_owner.lower()} core {a / 1e6:.3f} → {b / 1e6:.3f} Mpps, {per} "
                 f"({100.0 * (b / a - 1.0):+.1f} %)")
    return text
