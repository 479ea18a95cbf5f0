"""From an Xtesting ``run: args`` block to a vsbench command line, and from a run directory
back to Xtesting's result fields.

Kept apart from :mod:`vsbench.xtesting.testcase` (the only module importing ``xtesting``):
both halves are pure, so they are tested where Xtesting is not installed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Mapping

#: ``args`` keys taking one value, and the vsbench option each becomes.
SINGLE_OPTIONS = {
    "test": "--test", "suite": "--suite", "profile": "--profile", "only": "--only",
    "vswitch": "--vswitch", "trafficgen": "--trafficgen", "vnf": "--vnf",
    "test_params": "--test-params", "conf_file": "--conf-file", "db": "--db",
}
#: ``args`` keys taking a value or a list of them (each becomes one option).
REPEATED_OPTIONS = {"fail_below": "--fail-below", "fail_above": "--fail-above", "tag": "--tag"}


class ArgumentsError(ValueError):
    """The ``args`` block cannot become a vsbench command; the message is one line."""


def vsbench_argv(args: Mapping[str, Any], results_dir: Path) -> list[str]:
    """The vsbench command line for a testcases.yaml ``args`` block (an argv list: values
    never pass through a shell). Exactly one of ``test`` and ``suite``; a key vsbench does
    not know is refused, as a typo in a vsbench configuration is."""
    unknown = sorted(set(args) - set(SINGLE_OPTIONS) - set(REPEATED_OPTIONS))
    if unknown:
        raise ArgumentsError(f"unknown argument(s) {', '.join(unknown)} (known: "
                             f"{', '.join(sorted([*SINGLE_OPTIONS, *REPEATED_OPTIONS]))})")
    if ("test" in args) == ("suite" in args):
        raise ArgumentsError("give exactly one of 'test' and 'suite'")
    argv = [sys.executable, "-m", "vsbench.cli.main"]
    for key, option in SINGLE_OPTIONS.items():
        if key in args:
            value = args[key]
            if isinstance(value, (list, tuple, dict)) or value is None:
                raise ArgumentsError(f"'{key}' takes one value, got {value!r}")
            argv += [option, str(value)]
    for key, option in REPEATED_OPTIONS.items():
        values = args.get(key, [])
        for value in values if isinstance(values, (list, tuple)) else [values]:
            argv += [option, str(value)]
    return argv + ["--results-dir", str(results_dir)]


def newest_run_dir(results_dir: Path) -> Path | None:
    """The run directory vsbench made under ``results_dir`` last (its results.json)."""
    runs = [p.parent for p in results_dir.glob("*/results.json")]
    return max(runs, key=lambda p: p.stat().st_mtime, default=None)


def _point_fields(fs: Mapping[str, Any]) -> dict[str, Any]:
    fields: dict[str, Any] = {"status": fs.get("status")}
    for point in fs.get("points") or []:
        name = str(point.get("name", "")).lower().replace(" ", "_").replace("%", "pct")
        fields[f"{name}_fps"] = point.get("throughput_fps")
        fields[f"{name}_line_rate_percent"] = point.get("line_rate_percent")
        fields[f"{name}_valid"] = point.get("valid")
        latency = point.get("latency") or {}
        if latency:
            fields[f"{name}_latency_avg_ns"] = latency.get("avg_ns")
            fields[f"{name}_latency_max_ns"] = latency.get("max_ns")
    return fields


def result_details(run_dir: Path, exit_code: int) -> dict[str, Any]:
    """Xtesting's ``details`` of a run: its id, status, exit code and directory, and per
    test and frame size each goal's throughput (fps), % line rate, validity and latency
    (ns); the gates' verdict is the exit code (vsbench's: 0 complete and every gate held)."""
    doc = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    tests = {}
    for test in doc.get("tests") or []:
        tests[test.get("label", "")] = {
            "status": test.get("status"),
            "frame_sizes": {str(fs.get("frame_size_bytes")): _point_fields(fs) for fs in test.get("frame_sizes") or []},
        }
    return {"run_id": doc.get("run_id"), "status": doc.get("status"), "exit_code": exit_code,
            "run_dir": str(run_dir), "tests": tests}
