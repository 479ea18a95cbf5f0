"""The ``load:`` section: a noisy neighbour (stress-ng) beside the traffic, and its measured load.

VSPERF's ``phy2phy_cpu_load`` and ``phy2phy_mem_load`` ran RFC 2544 throughput while
stress-ng loaded the host: ``load 100 %, 4 reserved cores, pattern c`` and ``load 50 %,
pattern m, load_memory 80 %``. VSPERF's *reserved* cores were the ones kept free of the
load, for the vSwitch. Here the cores the DUT reserves are the ones the run's CPU plan
(:mod:`vsbench.runner.placement`) gives to the switch's and the VNFs' busy pollers (the
OvS-DPDK PMD): ``load.cpus: unreserved`` (the default) loads every other online CPU. On
the 2-CPU embedded testbed that is the CPU the generator runs on for ovs_dpdk (the PMD has
the other), and both CPUs for linux_bridge (it has no busy poller; the kernel forwards in
softirq on whichever CPU the frame arrives). A list of CPU ids loads exactly those.

What was asked is recorded beside what was measured: each trial's ``collectors.stress_ng``
in trials.jsonl (per loaded CPU the CPU seconds stress-ng's processes used over the trial's
wall time, and their proportional set size, PSS), and per frame size ``load`` in results.json.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from vsbench.system import commands, stress_ng
from vsbench.system.resources import ResourceStack

COLLECTOR_NAME = "stress_ng"
PATTERNS = ("cpu", "mem")
#: The stress-ng ``--timeout`` backstop when vsbench itself is killed with SIGKILL.
DEFAULT_TIMEOUT_S = 4 * 3600


class LoadError(ValueError):
    """A ``load`` section that cannot run: one line for the user."""


@dataclass(frozen=True)
class LoadSettings:
    """The validated ``load`` section. ``cpus`` None: the unreserved CPUs."""

    tool: str = "stress-ng"
    pattern: str = "cpu"
    load_percent: float = 100.0
    cpus: tuple[int, ...] | None = None
    memory_percent: float | None = None
    memory_max_mb: float | None = 1024.0
    timeout_s: int = DEFAULT_TIMEOUT_S


def settings_from_config(config: Mapping[str, Any]) -> LoadSettings | None:
    """The run's load settings, None when the configuration has no (or a null) ``load``."""
    section = config.get("load")
    if not section:
        return None
    if not isinstance(section, Mapping):
        raise LoadError("load must be a mapping (tool, pattern, load_percent, cpus, memory_percent)")
    tool = str(section.get("tool", "stress-ng"))
    if tool != "stress-ng":
        raise LoadError(f"load.tool {tool!r} is not supported (stress-ng)")
    pattern = str(section.get("pattern", "cpu"))
    if pattern not in PATTERNS:
        raise LoadError(f"load.pattern {pattern!r} is not one of {', '.join(PATTERNS)}")
    load = float(section.get("load_percent", 100))
    if not 0 < load <= 100:
        raise LoadError(f"load.load_percent must be in (0, 100], not {load:g}")
    raw_cpus = section.get("cpus", "unreserved")
    cpus: tuple[int, ...] | None
    if raw_cpus in (None, "unreserved"):
        cpus = None
    elif isinstance(raw_cpus, list) and raw_cpus and all(isinstance(c, int) and c >= 0 for c in raw_cpus):
        cpus = tuple(sorted(set(raw_cpus)))
    else:
        raise LoadError(f"load.cpus must be 'unreserved' or a list of CPU ids, not {raw_cpus!r}")
    memory = section.get("memory_percent")
    if pattern == "mem":
        memory = 10.0 if memory is None else float(memory)
        if not 0 < memory <= 95:
            raise LoadError(f"load.memory_percent must be in (0, 95], not {memory:g}")
    cap = section.get("memory_max_mb", 1024)
    return LoadSettings(tool, pattern, load, cpus, None if memory is None else float(memory),
                        None if cap is None else float(cap), int(section.get("timeout_s", DEFAULT_TIMEOUT_S)))


def check_config(config: Mapping[str, Any], online: Iterable[int]) -> LoadSettings | None:
    """Preflight: the section is valid, its CPUs exist and stress-ng is installed."""
    settings = settings_from_config(config)
    if settings is None:
        return None
    missing = sorted(set(settings.cpus or ()) - set(online))
    if missing:
        raise LoadError(f"load.cpus names CPU(s) {missing} that are not online ({sorted(online)})")
    if commands.which(stress_ng.BINARY) is None:
        raise LoadError("load needs stress-ng, which is not installed (apt-get install stress-ng)")
    return settings


def choose_cpus(settings: LoadSettings, online: Iterable[int], reserved: Iterable[int]) -> tuple[tuple[int, ...], str]:
    """The CPUs to load and why: the asked ones, or every online CPU the DUT's busy pollers
    do not hold (all online CPUs when they hold every one: a load must land somewhere, and
    the CPU plan then says the switch shares its CPU with it)."""
    if settings.cpus is not None:
        return settings.cpus, "load.cpus"
    online_set, reserved_set = set(online), set(reserved)
    free = tuple(sorted(online_set - reserved_set))
    if free:
        return free, "unreserved: online CPUs minus the DUT's busy pollers"
    return tuple(sorted(online_set)), "unreserved: the DUT's busy pollers hold every CPU, so all are loaded"


def reserved_cpus(cpu_plan: Mapping[str, Any]) -> tuple[int, ...]:
    """The CPUs the run's CPU plan gives to the switch's and VNFs' busy pollers."""
    found: set[int] = set()
    for thread in cpu_plan.get("threads") or ():
        if thread.get("role") in ("vswitch", "vnf"):
            found.update(int(c) for c in thread.get("cpus") or ())
    return tuple(sorted(found))


def vm_bytes_per_cpu(settings: LoadSettings, available_bytes: int, n_cpus: int) -> int | None:
    """``memory_percent`` of the host's available memory, capped at ``memory_max_mb``
    (a shared host must keep working), split over the loaded CPUs; None for ``cpu``."""
    if settings.pattern != "mem" or not n_cpus:
        return None
    total = available_bytes * (settings.memory_percent or 0) / 100.0
    if settings.memory_max_mb is not None:
        total = min(total, settings.memory_max_mb * 1024 * 1024)
    return max(int(total // n_cpus), 4096)


def mem_available_bytes(meminfo: Path = Path("/proc/meminfo")) -> int:
    for line in meminfo.read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    raise LoadError("cannot read MemAvailable from /proc/meminfo")


def load_between(before: Mapping[int, stress_ng.GroupSample], after: Mapping[int, stress_ng.GroupSample]) -> dict[str, Any]:
    """What the load measured between two samples of every loaded CPU's group (pure):
    per CPU the CPU seconds and their share of the wall time, the group's PSS."""
    cpus: dict[str, Any] = {}
    wall = 0.0
    rss = 0
    for cpu, end in sorted(after.items()):
        start = before.get(cpu)
        if start is None:
            continue
        span = max(end.monotonic_s - start.monotonic_s, 0.0)
        used = max(end.cpu_s - start.cpu_s, 0.0)
        wall = max(wall, span)
        rss += end.pss_bytes
        cpus[str(cpu)] = {
            "cpu_s": round(used, 3),
            "wall_s": round(span, 3),
            "load_percent": round(100.0 * used / span, 1) if span > 0 else None,
            "processes": end.processes,
            "pinned": sorted(end.allowed_cpus) == [cpu],
        }
    return {"cpus": cpus, "wall_s": round(wall, 3), "pss_bytes": rss}


def aggregate(measurements: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """A frame size's load from its trials' measurements (pure): per CPU the summed CPU
    seconds over the summed wall time (``load_percent``), the lowest trial's load
    (``min_trial_load_percent``), and the largest PSS (resident memory, shared pages split) of any trial."""
    per_cpu: dict[str, dict[str, float]] = {}
    rss = 0
    count = 0
    for m in measurements:
        if not m or "cpus" not in m:
            continue
        count += 1
        rss = max(rss, int(m.get("pss_bytes") or 0))
        for cpu, v in (m.get("cpus") or {}).items():
            acc = per_cpu.setdefault(cpu, {"cpu_s": 0.0, "wall_s": 0.0, "min": float("inf")})
            acc["cpu_s"] += float(v.get("cpu_s") or 0)
            acc["wall_s"] += float(v.get("wall_s") or 0)
            if v.get("load_percent") is not None:
                acc["min"] = min(acc["min"], float(v["load_percent"]))
    if not count:
        return None
    cpus = {
        cpu: {
            "cpu_s": round(a["cpu_s"], 3),
            "wall_s": round(a["wall_s"], 3),
            "load_percent": round(100.0 * a["cpu_s"] / a["wall_s"], 1) if a["wall_s"] > 0 else None,
            "min_trial_load_percent": None if a["min"] == float("inf") else a["min"],
        }
        for cpu, a in sorted(per_cpu.items(), key=lambda kv: int(kv[0]))
    }
    loads = [c["load_percent"] for c in cpus.values() if c["load_percent"] is not None]
    return {
        "trials": count,
        "cpus": cpus,
        "mean_load_percent": round(sum(loads) / len(loads), 1) if loads else None,
        "pss_bytes": rss,
    }


def summary_text(load: Mapping[str, Any] | None) -> str:
    """``stress-ng measured: cpu0 99.8 %, resident 512 MiB (PSS) over 4 trial(s)`` for the console and report."""
    if not load:
        return "stress-ng measured: no trial"
    parts = [f"cpu{cpu} {v['load_percent']:.1f} %" if v.get("load_percent") is not None else f"cpu{cpu} ?"
             for cpu, v in (load.get("cpus") or {}).items()]
    rss = int(load.get("pss_bytes") or 0)
    text = "stress-ng measured: " + ", ".join(parts)
    if rss >= 16 * 1024 * 1024:
        text += f", resident {rss / 1024 / 1024:.0f} MiB (PSS)"
    return text + f" over {load.get('trials')} trial(s)"


class LoadCollector:
    """Samples every loaded CPU's stress-ng group around each trial (a collector by duck
    type, so trials.jsonl carries the load each trial really ran beside)."""

    name = COLLECTOR_NAME

    def __init__(self, instances: Sequence[stress_ng.StressInstance]) -> None:
        self.instances = list(instances)
        self._before: dict[int, stress_ng.GroupSample] = {}

    def begin(self) -> None:
        self._before = {i.cpu: i.sample() for i in self.instances}

    def end(self) -> dict[str, Any]:
        after = {i.cpu: i.sample() for i in self.instances}
        doc = load_between(self._before, after)
        dead = [i.cpu for i in self.instances if not i.alive()]
        if dead:
            doc["exited_cpus"] = dead
        return doc


class NoisyLoad:
    """The plan's stress-ng instances, one per loaded CPU, each torn down by its pid."""

    def __init__(self, settings: LoadSettings, cpus: Sequence[int], rule: str, reserved: Sequence[int],
                 generator_cpus: Sequence[int] = ()) -> None:
        self.settings = settings
        self.cpus = tuple(cpus)
        self.rule = rule
        self.reserved = tuple(reserved)
        self.generator_cpus = tuple(generator_cpus)
        self.vm_bytes = (vm_bytes_per_cpu(settings, mem_available_bytes(), len(self.cpus))
                         if settings.pattern == "mem" else None)
        self.instances: list[stress_ng.StressInstance] = []

    def start(self, resources: ResourceStack, log_dir: Path | None, settle_s: float = 0.5,
              work_dir: Path | None = None) -> None:
        for cpu in self.cpus:
            argv = stress_ng.stress_argv(self.settings.pattern, cpu, self.settings.load_percent, self.vm_bytes,
                                         self.settings.timeout_s, temp_path=work_dir)
            log_path = None if log_dir is None else log_dir / f"stress-ng-cpu{cpu}.log"
            instance = stress_ng.StressInstance(cpu, argv, self.settings.load_percent,
                                                duty_cycle=self.settings.pattern == "mem", log_path=log_path)
            resources.register(f"stress-ng on cpu{cpu} (pid {instance.pid})", instance.stop)
            self.instances.append(instance)
        time.sleep(settle_s)  # the workers are forked and (mem) have their memory mapped
        dead = [i.cpu for i in self.instances if not i.alive()]
        if dead:
            raise LoadError(f"stress-ng exited at once on cpu {dead} (see its log)")

    def collector(self) -> LoadCollector:
        return LoadCollector(self.instances)

    def describe(self) -> dict[str, Any]:
        """What was asked, for results.json (``tests[].load``)."""
        return {
            "tool": self.settings.tool,
            "pattern": self.settings.pattern,
            "load_percent": self.settings.load_percent,
            "cpus": list(self.cpus),
            "cpus_rule": self.rule,
            "reserved_cpus": list(self.reserved),
            "shares_generator_cpus": sorted(set(self.cpus) & set(self.generator_cpus)),
            "memory_percent": self.settings.memory_percent,
            "memory_max_mb": self.settings.memory_max_mb,
            "vm_bytes_per_cpu": self.vm_bytes,
            "pids": [i.pid for i in self.instances],
            "argv": [i.argv for i in self.instances],
        }

    def text(self) -> str:
        s = self.settings
        what = f"{s.load_percent:g} % cpu" if s.pattern == "cpu" else (
            f"{s.load_percent:g} % vm, {self.vm_bytes / 1024 / 1024:.0f} MiB per CPU" if self.vm_bytes else "vm")
        line = (f"noisy neighbour: stress-ng {what} on cpu {','.join(map(str, self.cpus))} ({self.rule}; "
                f"reserved {','.join(map(str, self.reserved)) or 'none'})")
        shared = sorted(set(self.cpus) & set(self.generator_cpus))
        if shared:
            line += (f"; it shares cpu {','.join(map(str, shared))} with the generator: a trial it cannot "
                     "send at the asked rate is invalid, never DUT loss")
        return line


def start_for_plan(config: Mapping[str, Any], cpu_plan: Mapping[str, Any], resources: ResourceStack,
                   log_dir: Path | None, work_dir: Path | None = None) -> NoisyLoad | None:
    """Start the plan's load (None without a ``load`` section) on the CPUs chosen from
    the plan's CPU plan, each instance's teardown registered on ``resources``."""
    settings = settings_from_config(config)
    if settings is None:
        return None
    online = [int(c) for c in cpu_plan.get("online_cpus") or ()]
    reserved = reserved_cpus(cpu_plan)
    cpus, rule = choose_cpus(settings, online, reserved)
    generator = sorted({int(c) for t in cpu_plan.get("threads") or () if t.get("role") == "generator"
                        for c in t.get("cpus") or ()})
    noise = NoisyLoad(settings, cpus, rule, reserved, generator)
    noise.start(resources, log_dir, work_dir=work_dir)
    return noise


def account(records: Sequence[Any]) -> dict[str, Any] | None:
    """The frame size's load from its trial records (their ``collectors.stress_ng``)."""
    return aggregate([r.collectors.get(COLLECTOR_NAME) for r in records if r.collectors.get(COLLECTOR_NAME)])
