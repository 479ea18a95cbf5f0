"""Per-CPU busy, softirq and steal time around each trial, from /proc/stat.

The machine-wide view that complements a switch's own thread accounting: it shows where
time went that no switch thread owns (softirq of a kernel datapath, the generator, noise
from other tenants of a shared machine).
"""

from __future__ import annotations

from typing import Any, ClassVar

from vsbench.interfaces import Collector
from vsbench.interfaces.host import cpu


class CpuCollector(Collector):
    description: ClassVar[str] = "Per-CPU busy, softirq and steal seconds during each trial (/proc/stat)"
    api_version: ClassVar[str] = "1.0"
    settings_schema: ClassVar[dict] = {"type": ["object", "null"], "additionalProperties": False}

    _before: cpu.CpuSample | None = None

    def begin(self) -> None:
        self._before = cpu.sample()

    def end(self) -> dict[str, Any]:
        if self._before is None:
            raise RuntimeError("CpuCollector.end() called without begin()")
        usage = cpu.delta(self._before, cpu.sample())
        self._before = None
        return {
            "elapsed_s": usage.elapsed_s,
            "cpu_busy_s": usage.busy_s,
            "softirq_s": usage.softirq_s,
            "steal_s": usage.steal_s,
        }
