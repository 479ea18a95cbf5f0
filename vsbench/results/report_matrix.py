"""report.html's feature-matrix section: the table the console ends a run with (``vsbench
compare RUN_DIR`` prints it again) -- every variant at every frame size, its figure, its
gain over the baseline with the significance verdict, what the switch said was in effect
(``datapath.active``), and for a variant without a figure the word and, in the notes, the
reason (a userspace-TSO variant the ports cannot carry: skipped, and why).

Why here too: a report read later (a CI artifact) otherwise lost the one table the run was
for. Built from :mod:`vsbench.results.feature_matrix` with the default baseline (the first
variant); :mod:`report_html` imports this module, never the other way round.
"""

from __future__ import annotations

from typing import Any

from vsbench.results import feature_matrix, run_metrics
from vsbench.results.page_model import Heading, Paragraph
from vsbench.results.report_data import RunFiles
from vsbench.results.report_page import DASH, table


def _gain(fm: feature_matrix.FeatureMatrix, i: int, size: int, cell: feature_matrix.Cell) -> tuple[str, str]:
    if i == fm.baseline_of(size):
        return "baseline", ""
    if cell.change is None or cell.change.percent is None:
        return DASH, "" if cell.change is None else cell.change.significance
    return f"{cell.change.percent:+.1f} %", cell.change.significance


def _table(fm: feature_matrix.FeatureMatrix) -> list[Any]:
    active, common = feature_matrix.active_split(fm)
    headline, scale = ("Mfps", 1e6) if fm.metric.endswith("_fps") else ("Gbit/s", 1.0)
    rows = []
    for i, size, cell in feature_matrix.ordered_cells(fm):
        value = cell.value
        if value is None:
            shown = cell.gap or DASH
        else:
            mark = " *" if value.flags or cell.oversubscribed else ""
            partial = f" ({cell.measured}/{cell.repeats})" if cell.measured < cell.repeats else ""
            shown = f"{value.value / scale:.4f}{partial}{mark}"
        gain, verdict = _gain(fm, i, size, cell)
        rows.append([fm.variants[i].short(), size, shown, gain, verdict,
                     *(cell.active.get(a, DASH) for a in active),
                     DASH if cell.switch_cores is None else f"{cell.switch_cores:.2f}"])
    headers = [("Variant", ""), ("Frame size", "B"), (fm.metric, headline), ("Gain", ""), ("Significance", ""),
               *((a, "") for a in active), ("Switch cores", "")]
    base = fm.variants[fm.effective_baseline()]
    notes = ([f"in effect in every variant (the switch's account): "
              + ", ".join(f"{k}={v}" for k, v in common.items())] if common else [])
    notes += [f"note: {n}" for n in fm.notes]
    return [Heading(3, f"{fm.testcase}: {fm.metric} against {base.short()}"),
            table(headers, rows, numeric_from=1, numeric_to=4),
            *(Paragraph.of(n, "muted") for n in notes)]


def matrix_section(files: RunFiles) -> list[Any]:
    """The Feature matrix section's blocks; [] when no testcase of the run ran two or more
    variants (or results.json does not give a matrix)."""
    try:
        figures = run_metrics.extract(files.results, files.sysinfo, files.plans, files.trials)
        matrices = feature_matrix.matrices(files.results, figures)
    except (feature_matrix.MatrixError, KeyError, TypeError, ValueError):
        return []
    if not matrices:
        return []
    blocks: list[Any] = [Heading(2, "Feature matrix")]
    for fm in matrices:
        blocks += _table(fm)
    return blocks
