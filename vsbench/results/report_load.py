"""report.html section of a noisy neighbour (``load:``): what stress-ng was asked to do,
where, and the load it was *measured* to put on each CPU beside the throughput.

Reads results.json only (``tests[].load`` asked, ``frame_sizes[].load`` measured, see
:mod:`vsbench.runner.noisy_load`); nothing is computed here that results.json does not hold.
"""

from __future__ import annotations

from typing import Any, Mapping

from vsbench.results import report_page as h
from vsbench.results.page_model import Heading, Paragraph, compact

MIB = 1024 * 1024


def _cpus(values: Any) -> str:
    return ", ".join(f"cpu{c}" for c in values or []) or "none"


def section(test: Mapping[str, Any]) -> list[Any]:
    """The load table of one test ([] without a ``load``)."""
    asked = test.get("load")
    if not isinstance(asked, Mapping):
        return []
    rows = []
    for fs in test.get("frame_sizes") or []:
        measured = fs.get("load") if isinstance(fs.get("load"), Mapping) else None
        ndr = next((p.get("throughput_fps") for p in fs.get("points") or [] if p.get("throughput_fps") is not None), None)
        if measured is None:
            rows.append([fs.get("frame_size_bytes"), h.DASH, h.fmt_fixed(asked.get("load_percent"), 0), h.DASH,
                         h.DASH, h.DASH, h.DASH, h.DASH, h.fmt_fps(ndr), h.DASH])
            continue
        for cpu, v in (measured.get("cpus") or {}).items():
            rows.append([fs.get("frame_size_bytes"), f"cpu{cpu}", h.fmt_fixed(asked.get("load_percent"), 0),
                         h.fmt_fixed(v.get("load_percent"), 1), h.fmt_fixed(v.get("min_trial_load_percent"), 1),
                         h.fmt_fixed(v.get("cpu_s"), 2), h.fmt_fixed(v.get("wall_s"), 1),
                         h.fmt_fixed((measured.get("pss_bytes") or 0) / MIB, 0), h.fmt_fps(ndr),
                         h.fmt_fixed(measured.get("trials"))])
    headers = [("Frame size", "B"), ("Loaded CPU", ""), ("stress-ng load", "asked", "%"),
               ("stress-ng load", "measured", "%"), ("stress-ng load", "lowest trial", "%"),
               ("stress-ng CPU time", "s"), ("Trials' wall time", "s"), ("stress-ng resident", "PSS", "MiB"),
               ("Throughput", "first goal", "fps"), ("Trials", "")]
    pattern = asked.get("pattern")
    what = (f"one CPU worker (--cpu 1 --cpu-load {h.fmt_fixed(asked.get('load_percent'))})" if pattern == "cpu" else
            f"one vm worker keeping {h.fmt_fixed((asked.get('vm_bytes_per_cpu') or 0) / MIB)} MiB written "
            f"(memory_percent {h.fmt_fixed(asked.get('memory_percent'))} of the available memory, capped at "
            f"{h.fmt_fixed(asked.get('memory_max_mb'))} MiB), stopped and continued to "
            f"{h.fmt_fixed(asked.get('load_percent'))} % of every 100 ms")
    shared = asked.get("shares_generator_cpus") or []
    text = (f"Noisy neighbour: stress-ng, {what}, pinned on each of {_cpus(asked.get('cpus'))} "
            f"({asked.get('cpus_rule')}; the DUT's reserved CPUs: {_cpus(asked.get('reserved_cpus'))}). "
            "Measured: the CPU time of every process of each instance's process group (/proc) over the wall "
            "time of the frame size's trials, and their resident memory at each trial's end as PSS (shared pages split among their sharers; the largest is shown).")
    if shared:
        text += (f" The load shares {_cpus(shared)} with the generator: a trial the generator could not send "
                 "as asked is invalid, never counted as DUT loss.")
    return compact([Heading(3, "Noisy neighbour (stress-ng) beside the throughput"), Paragraph.of(text, "muted"),
                    h.table(headers, rows, numeric_from=2)])
