"""The bill of materials of the system under test (RFC 8204), for ``sysinfo.json``.

Everything that changes a figure and is not in config.yaml: CPU model and online cores,
SMT, frequency governor, isolated CPUs, NUMA layout, hugepages, kernel and its command line,
and the versions each plugin reports. Read from /proc and /sys only (no commands), each
item independently, so one unreadable file is a ``null`` rather than a failed run.
"""

from __future__ import annotations

import os
import platform
import socket
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

from vsbench.system.sysfs import read_text

SCHEMA_ID = "vsbench.sysinfo/1"


_read = read_text


def cpu_model(proc: Path = Path("/proc")) -> str | None:
    text = _read(proc / "cpuinfo") or ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("model name", "Model", "cpu model", "Hardware"):
            return value.strip()
    return None


def cpu_list_count(text: str | None) -> int:
    """Number of CPUs in a kernel CPU list (``0-3,6`` -> 5)."""
    count = 0
    for part in (text or "").split(","):
        part = part.strip()
        if not part:
            continue
        lo, _, hi = part.partition("-")
        count += int(hi) - int(lo) + 1 if hi else 1
    return count


def threads_per_core(sys_cpu: Path) -> int | None:
    siblings = _read(sys_cpu / "cpu0" / "topology" / "thread_siblings_list")
    return cpu_list_count(siblings) or None if siblings is not None else None


def cpu_packages(sys_cpu: Path = Path("/sys/devices/system/cpu")) -> dict[int, list[int]]:
    """Online CPUs by physical package (socket) id; {} when the kernel does not say."""
    packages: dict[int, list[int]] = {}
    for path in sorted(sys_cpu.glob("cpu[0-9]*"), key=lambda p: int(p.name[3:])):
        found = _read(path / "topology" / "physical_package_id")
        if found is not None and found.lstrip("-").isdigit():
            packages.setdefault(int(found), []).append(int(path.name[3:]))
    return packages


def numa_nodes(sys_node: Path) -> list[dict[str, Any]]:
    nodes = []
    if sys_node.is_dir():
        for path in sorted(sys_node.glob("node[0-9]*"), key=lambda p: int(p.name[4:])):
            nodes.append({"node": int(path.name[4:]), "cpus": _read(path / "cpulist") or ""})
    return nodes


def hugepages(sys_hugepages: Path) -> list[dict[str, int]]:
    pools = []
    if sys_hugepages.is_dir():
        for path in sorted(sys_hugepages.glob("hugepages-*kB")):
            size_kb = int(path.name.removeprefix("hugepages-").removesuffix("kB"))
            pools.append({
                "size_bytes": size_kb * 1024,
                "total": int(_read(path / "nr_hugepages") or 0),
                "free": int(_read(path / "free_hugepages") or 0),
            })
    return pools


def memory_total_bytes(proc: Path = Path("/proc")) -> int | None:
    for line in (_read(proc / "meminfo") or "").splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    return None


def os_release() -> str | None:
    for line in (_read(Path("/etc/os-release")) or "").splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip().strip('"')
    return None


#: Kernel parameters that change a benchmark's figures. Only these are recorded: the full
#: command line may carry arguments for init that are nobody's business in a result file.
TUNING_PARAMETERS = (
    "isolcpus", "nohz_full", "rcu_nocbs", "irqaffinity", "nosmt", "mitigations",
    "hugepages", "hugepagesz", "default_hugepagesz", "transparent_hugepage",
    "intel_iommu", "amd_iommu", "iommu", "intel_pstate", "idle", "processor.max_cstate",
    "intel_idle.max_cstate", "numa_balancing", "skew_tick", "nmi_watchdog", "tsc", "preempt",
)


def kernel_tuning(cmdline: str | None) -> str | None:
    """The performance-relevant parameters of ``cmdline`` (before any ``--``), in order."""
    if cmdline is None:
        return None
    kept = []
    for token in cmdline.split():
        if token == "--":
            break
        if token.split("=", 1)[0] in TUNING_PARAMETERS:
            kept.append(token)
    return " ".join(kept)


def collect(
    run_id: str,
    plugin_versions: Iterable[dict[str, Any]] = (),
    *,
    proc: Path = Path("/proc"),
    sys_root: Path = Path("/sys"),
    host_settings: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The sysinfo.json document. ``plugin_versions`` items: ``{plan_index, kind, name,
    versions}`` (plus ``error`` when ``version()`` failed). ``host_settings``: the lab
    settings of :mod:`vsbench.system.host_settings` judged for the run's configuration
    (what ``vsbench doctor --host`` prints), recorded when given."""
    from vsbench import __version__

    sys_cpu = sys_root / "devices" / "system" / "cpu"
    online = _read(sys_cpu / "online")
    uname = platform.uname()
    doc = {
        "schema": SCHEMA_ID,
        "run_id": run_id,
        "collected_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "host": {"hostname": socket.gethostname(), "os_release": os_release()},
        "cpu": {
            "model": cpu_model(proc),
            "architecture": uname.machine,
            "online": online,
            "online_count": cpu_list_count(online) if online else (os.cpu_count() or 0),
            "isolated": _read(sys_cpu / "isolated"),
            "threads_per_core": threads_per_core(sys_cpu),
            "governor": _read(sys_cpu / "cpu0" / "cpufreq" / "scaling_governor"),
        },
        "memory": {"total_bytes": memory_total_bytes(proc)},
        "numa": numa_nodes(sys_root / "devices" / "system" / "node"),
        "hugepages": hugepages(sys_root / "kernel" / "mm" / "hugepages"),
        "kernel": {"release": uname.release, "version": uname.version, "cmdline": kernel_tuning(_read(proc / "cmdline"))},
        "software": {
            "vsbench": __version__,
            "python": sys.version.split()[0],
        },
        "plugins": [dict(p) for p in plugin_versions],
    }
    if host_settings is not None:
        doc["host_settings"] = host_settings
    return doc


def plugin_versions(plan_index: int, kind: str, plugin: Any) -> dict[str, Any]:
    """One ``plugins`` entry: what ``plugin.version()`` reports, or why it could not."""
    entry: dict[str, Any] = {"plan_index": plan_index, "kind": kind, "name": plugin.name or type(plugin).__name__}
    try:
        entry["versions"] = {str(k): str(v) for k, v in (plugin.version() or {}).items()}
    except Exception as exc:  # noqa: BLE001 - a version we cannot read is recorded as such
        entry["versions"] = {}
        entry["error"] = f"{type(exc).__name__}: {exc}"
    return entry
