"""The console's switch-efficiency lines and scaling tables (what report.html shows, in text).

After each frame size and in the end summary: the cores the switch consumed at the reported
point's trial, Mpps per core, and the datapath's counters of that trial (PMD cache hits and
upcalls, kernel lookups hit/missed/lost, flows offloaded to TC). After a run over a
``dut.rules`` / ``traffic.flows`` matrix: one table per scaling curve, count versus frame
rate and Mpps per core. The figures are picked by :mod:`vsbench.results.switch_figures`
and :mod:`vsbench.results.scaling` from the JSON form of the results, as report.html's are.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from rich.table import Table

from vsbench.results import scaling, switch_figures
from vsbench.results.model import FrameSizeResult, ReportedPoint, RunResults, TestResult


def _point_json(point: ReportedPoint) -> dict[str, Any]:
    return dataclasses.asdict(point)


def point_line(fs: FrameSizeResult) -> str | None:
    """``0.50 cores (threads), 0.463 Mpps per core; PMD: EMC hits ...`` of the primary point."""
    point = fs.primary
    if point is None:
        return None
    return switch_figures.point_text(_point_json(point))


def frame_size_lines(test: TestResult) -> list[str]:
    """One ``switch at <size> B <goal>: ...`` line per frame size whose point has figures."""
    lines = []
    for fs in test.frame_sizes:
        text = point_line(fs)
        if text and fs.primary is not None:
            lines.append(f"switch at {fs.frame_size_bytes} B {fs.primary.name}: {text}")
    return lines


def scaling_tables(results: RunResults) -> list[Table]:
    """One table per scaling curve of the run (none without a rule/flow matrix)."""
    tests = results.to_json()["tests"]
    tables = []
    for curve in scaling.curves(tests):
        count = "Rules" if curve.axis == "dut.rules" else "Flows"
        table = Table(title=f"{curve.title}: {curve.axis_label} versus {curve.goal} frame rate",
                      title_justify="left")
        for header in (count, "Frame B", f"{curve.goal} Mpps", "Switch cores", "Mpps/core", "Datapath", "Status"):
            table.add_column(header, justify="left" if header in ("Datapath", "Status") else "right")
        for size, points in sorted(curve.series.items()):
            for p in points:
                flags = [p.status] + (["irregular"] if p.regular is False else []) + (
                    ["CPU oversubscribed"] if p.oversubscribed else [])
                table.add_row(f"{p.count:,}", str(size), switch_figures.fmt_mpps(p.throughput_fps),
                              switch_figures.fmt_cores(p.switch_cores), switch_figures.fmt_mpps(p.fps_per_core),
                              p.datapath or "-", ", ".join(flags))
        tables.append(table)
    return tables
