"""Scaling curves across compared runs: count x frame size, one value per run. Pure.

A run over a count matrix (rules, routes, next hops, flows: :mod:`vsbench.results.scaling`)
is one test per count, labelled ``vrouter_route_scaling[dut.routes=1000]``; the flat
comparison (:mod:`vsbench.results.compare`) has a row per label x frame size x metric. This
module folds those rows back into the seed reports' shape -- per curve, a row per count and
a column per frame size and run -- and states, per run and frame size, the drop from the
smallest count to the largest (the Brocade vRouter report's "1 to 1M routes", Netronome's
"64 to 1M rules"), so two switches, kernels or route-table implementations can be laid
side by side the way the reports print them.

A curve is one testcase along one axis with one set of the other matrix values; the runs'
tests are matched by label as everywhere in compare. The figure is the primary goal's
throughput (``ndr_fps`` when the runs have it, else the first ``<goal>_fps``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from vsbench.results import scaling
from vsbench.results.compare import Comparison, Row

PREFERRED_METRIC = "ndr_fps"


@dataclass(frozen=True)
class RunDrop:
    """One run's change from the smallest measured count to the largest, at one frame size."""

    run: str
    frame_size_bytes: int
    first_count: int
    last_count: int
    first_fps: float
    last_fps: float

    @property
    def ratio(self) -> float:
        return self.first_fps / self.last_fps

    @property
    def percent(self) -> float:
        return 100.0 * (self.last_fps / self.first_fps - 1.0)


@dataclass
class CurveComparison:
    """One scaling curve over the compared runs: ``rows[(count, size)]`` is the comparison
    row of that plan and frame size (values per run, changes against the baseline)."""

    axis: scaling.Axis
    testcase: str
    fixed: tuple[tuple[str, Any], ...]
    metric: str
    runs: list[str]
    rows: dict[tuple[int, int], Row] = field(default_factory=dict)

    @property
    def title(self) -> str:
        extra = "".join(f", {k}={v}" for k, v in self.fixed)
        return f"{self.testcase}{f' ({extra[2:]})' if extra else ''}: {self.axis.label} versus {self.goal} frame rate"

    @property
    def goal(self) -> str:
        return self.metric[:-len("_fps")].upper()

    def counts(self) -> list[int]:
        return sorted({c for c, _ in self.rows})

    def frame_sizes(self) -> list[int]:
        return sorted({s for _, s in self.rows})

    def value(self, count: int, size: int, run: int) -> float | None:
        row = self.rows.get((count, size))
        value = row.values[run] if row is not None else None
        return None if value is None else value.value

    def flagged(self, count: int, size: int, run: int) -> bool:
        row = self.rows.get((count, size))
        value = row.values[run] if row is not None else None
        return bool(value is not None and value.flags)

    def drops(self) -> list[RunDrop]:
        """Per run and frame size, the measured ends (two counts or more with a figure)."""
        out = []
        for i, run in enumerate(self.runs):
            for size in self.frame_sizes():
                measured = [(c, v) for c in self.counts() if (v := self.value(c, size, i))]
                if len(measured) >= 2:
                    (c0, v0), (c1, v1) = measured[0], measured[-1]
                    out.append(RunDrop(run, size, c0, c1, v0, v1))
        return out

    def drop_sentence(self, drop: RunDrop) -> str:
        how = f"{drop.ratio:.2f}× lower" if drop.ratio >= 1 else f"{1 / drop.ratio:.2f}× higher"
        return (f"{drop.run}: {drop.frame_size_bytes} B {self.goal} {drop.first_fps / 1e6:.3f} Mpps at "
                f"{self.axis.count_text(drop.first_count)} → {drop.last_fps / 1e6:.3f} Mpps at "
                f"{self.axis.count_text(drop.last_count)}, {how} ({drop.percent:+.1f} %)")


def _metric(comparison: Comparison, labels: set[str]) -> str | None:
    """``ndr_fps`` when any of ``labels`` has it, else the first goal throughput."""
    names = [r.key.metric for r in comparison.rows if r.key.test in labels]
    if PREFERRED_METRIC in names:
        return PREFERRED_METRIC
    for name in names:
        if name.endswith("_fps") and not name.endswith(("_switched_fps", "_per_core")):
            return name
    return None


def curves(comparison: Comparison) -> list[CurveComparison]:
    """The scaling curves the compared runs share (any run having the test counts), in the
    order their first test appears; [] when no test carries a count in its variant."""
    placed: dict[str, tuple[tuple, scaling.Axis, int, tuple]] = {}
    for run in comparison.runs:
        for info in run.tests:
            if info.label in placed:
                continue
            split = scaling.split_variant(info.fields.get("variant"))
            if split is None:
                continue
            ax, count, fixed = split
            testcase = str(info.fields.get("testcase") or info.label.split("[", 1)[0])
            placed[info.label] = ((testcase, ax.key, repr(fixed)), ax, count, fixed)
    groups: dict[tuple, CurveComparison] = {}
    labels_of: dict[tuple, set[str]] = {}
    for label, (key, ax, _count, fixed) in placed.items():
        labels_of.setdefault(key, set()).add(label)
        if key not in groups:
            groups[key] = CurveComparison(ax, key[0], fixed, "", comparison.run_names)
    out = []
    for key, curve in groups.items():
        metric = _metric(comparison, labels_of[key])
        if metric is None:
            continue
        curve.metric = metric
        for row in comparison.rows:
            if row.key.metric == metric and row.key.test in labels_of[key]:
                curve.rows[(placed[row.key.test][2], row.key.frame_size_bytes)] = row
        if len(curve.counts()) >= 2:
            out.append(curve)
    return out


def to_json(curves_: list[CurveComparison]) -> list[dict[str, Any]]:
    """The curves as ``vsbench compare --format json`` carries them (``scaling``)."""
    out = []
    for c in curves_:
        out.append({
            "testcase": c.testcase, "axis": c.axis.key, "axis_label": c.axis.label,
            "fixed": {k: v for k, v in c.fixed}, "metric": c.metric, "unit": "fps",
            "counts": c.counts(), "frame_sizes_bytes": c.frame_sizes(),
            "values": [{"run": run, "frame_size_bytes": size, "count": count, "value": c.value(count, size, i)}
                       for i, run in enumerate(c.runs) for size in c.frame_sizes() for count in c.counts()],
            "drops": [{"run": d.run, "frame_size_bytes": d.frame_size_bytes, "from_count": d.first_count,
                       "to_count": d.last_count, "from_fps": d.first_fps, "to_fps": d.last_fps,
                       "ratio": d.ratio, "percent": d.percent} for d in c.drops()],
        })
    return out
