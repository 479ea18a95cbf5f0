"""The console's switch-efficiency lines and scaling tables (what report.html shows, in text).

After each frame size and in the end summary: the cores the switch consumed at the reported
point's trial, Mpps per core, and the datapath's counters of that trial (PMD cache hits and
upcalls, kernel lookups hit/missed/lost, flows offloaded to TC). After a run over a
count matrix (``dut.rules``, ``dut.routes``, ``dut.nexthops``, ``traffic.flows``...): one table per scaling curve, count versus frame
rate and Mpps per core, and the drop from the smallest count to the largest. The figures are picked by :mod:`vsbench.results.switch_figures`
and :mod:`vsbench.results.scaling` from the JSON form of the results, as report.html's are.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from rich.markup import escape
from rich.table import Table

from vsbench.results import scaling, switch_figures
from vsbench.results.model import FrameSizeResult, ReportedPoint, RunResults, TestResult


def _point_json(point: ReportedPoint) -> dict[str, Any]:
    return dataclasses.asdict(point)


def owner(fs: FrameSizeResult) -> str:
    """``switch``, or ``vnf`` when the figures are a VNF's (a topology without a switch)."""
    return "switch" if fs.primary is None else switch_figures.cpu_owner(_point_json(fs.primary)).lower()


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
            owner = switch_figures.cpu_owner(_point_json(fs.primary)).lower()
            lines.append(f"{owner} at {fs.frame_size_bytes} B {fs.primary.name}: {text}")
    return lines


def scaling_tables(results: RunResults) -> list[Table]:
    """One table per scaling curve of the run (none without a count matrix); its caption
    states the drop from the smallest count to the largest per frame size."""
    tests = results.to_json()["tests"]
    tables = []
    for curve in scaling.curves(tests):
        setup = curve.has_setup()
        table = Table(title=escape(f"{curve.title}: {curve.axis_label} versus {curve.goal} frame rate"),
                      title_justify="left",
                      caption="\n".join(scaling.drop_sentence(curve, d) for d in scaling.drops(curve)) or None,
                      caption_justify="left")
        headers = [curve.axis_info.plural.capitalize(), "Frame B", f"{curve.goal} Mpps", f"{curve.cpu_owner} cores",
                   "Mpps/core"]
        if setup:
            headers += ["Install s", "FIB MiB"]
        for header in (*headers, "Datapath", "Status"):
            table.add_column(header, justify="left" if header in ("Datapath", "Status") else "right")
        for size, points in sorted(curve.series.items()):
            for p in points:
                # a search that found nothing says so (the figure cell alone is a dash)
                missing = [f"no {p.goal}"] if p.throughput_fps is None and p.status == "complete" else []
                flags = [p.status] + missing + (["irregular"] if p.regular is False else []) + (
                    ["CPU oversubscribed"] if p.oversubscribed else [])
                row = [f"{p.count:,}", str(size), switch_figures.fmt_mpps(p.throughput_fps),
                       switch_figures.fmt_cores(p.switch_cores), switch_figures.fmt_mpps(p.fps_per_core)]
                if setup:
                    install, fib = p.setup.get("install_s"), p.setup.get("fib_slab_delta_bytes")
                    row += ["-" if install is None else f"{install:.2f}",
                            "-" if fib is None else f"{fib / 2**20:.1f}"]
                table.add_row(*row, p.datapath or "-", ", ".join(flags))
        tables.append(table)
    return tables
