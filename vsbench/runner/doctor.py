"""``vsbench doctor``: is this host ready to run, and if not, which command fixes it.

Runs the same checks a run's preflight runs -- every selected plugin's
:meth:`~vsbench.interfaces.plugin.Plugin.check_prerequisites` (OvS-DPDK's includes a real
DPDK driver probe, trafgen's a real netns + veth probe) and, for a plugin that drives a
remote server or host, its :meth:`~vsbench.interfaces.plugin.Plugin.check_reachable` (a
TCP connect to each configured address and port: a TRex server that is not listening is a
MISSING line naming the address, not "ok") -- plus the host-wide ones a run
does not stop for: CPU count and the Debian packages of ``tools/packages/*.txt`` (in a
checkout). One line per check; exit 2 when anything blocking is missing.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from vsbench.runner import config as cfg
from vsbench.runner import plugins
from vsbench.runner.testcases import NO_VSWITCH
from vsbench.system import host_check

KINDS = ("vswitch", "trafficgen", "vnf")


@dataclass(frozen=True)
class CheckLine:
    """One line of the report: a check's label, its findings (empty: ok) and its time."""

    label: str
    findings: tuple[host_check.Finding, ...]
    seconds: float

    @property
    def blocking(self) -> bool:
        return any(f.blocking for f in self.findings)

    def lines(self) -> list[str]:
        if not self.findings:
            return [f"ok       {self.label} ({self.seconds:.1f} s)"]
        return [f"{'MISSING' if f.blocking else 'WARNING'}  {self.label}: {f}" for f in self.findings]


def selected_plugins(config: Mapping[str, Any], flags: Mapping[str, str | None],
                     every: bool) -> list[tuple[str, str]]:
    """``(kind, name)`` of the plugins to check: every installed one with ``every``, else
    those a run with this configuration and these flags would load."""
    out: list[tuple[str, str]] = []
    for kind in KINDS:
        names = plugins.available(kind) if every else \
            [flags.get(kind) or (config.get(kind) or {}).get("name")]
        # vswitch none (--vswitch none): no switch to check
        out += [(kind, name) for name in names if name and not (kind == "vswitch" and name == NO_VSWITCH)]
    return out


def _timed(label: str, check) -> CheckLine:
    start = time.monotonic()
    found = tuple(check())
    return CheckLine(label, found, time.monotonic() - start)


def _plugin_findings(kind: str, name: str, config: Mapping[str, Any]) -> list[host_check.Finding]:
    try:
        cls = plugins.load(kind, name)
    except plugins.UnknownPluginError as exc:
        return [host_check.Finding(str(exc), "see vsbench --list-plugins")]
    settings = (config.get(kind) or {}).get(name) or {}
    try:
        missing = cls.check_prerequisites(settings)
    except Exception as exc:  # noqa: BLE001 - one plugin's broken check is one line
        return [host_check.Finding(f"prerequisite check failed: {exc}", "report this plugin's bug")]
    return [host_check.Finding(m.what, m.remedy) for m in missing]


def _probes_reachability(kind: str, name: str) -> bool:
    """Whether the plugin overrides ``check_reachable`` (a line of its own in the report)."""
    from vsbench.interfaces.plugin import Plugin

    try:
        cls = plugins.load(kind, name)
    except plugins.UnknownPluginError:
        return False
    return getattr(cls, "check_reachable", None) is not None and \
        getattr(cls.check_reachable, "__func__", None) is not Plugin.check_reachable.__func__


def _reachability_findings(kind: str, name: str, config: Mapping[str, Any]) -> list[host_check.Finding]:
    cls = plugins.load(kind, name)
    settings = (config.get(kind) or {}).get(name) or {}
    try:
        unreachable = cls.check_reachable(settings)
    except Exception as exc:  # noqa: BLE001 - one plugin's broken probe is one line
        return [host_check.Finding(f"reachability probe failed: {exc}", "report this plugin's bug")]
    return [host_check.Finding(m.what, m.remedy) for m in unreachable]


def run_checks(config: Mapping[str, Any], flags: Mapping[str, str | None], every: bool = False,
               package_lists: Sequence[Path] = ()) -> list[CheckLine]:
    """Every check, in the order they are printed."""
    checks: list[CheckLine] = [
        _timed("CPUs", host_check.check_cpus),
        _timed("kernel: network namespaces and veth", host_check.check_testbed_kernel),
        _timed("hugepages (2048 kB)", host_check.check_hugepages),
    ]
    lists = [p for p in package_lists if p.is_file()]
    if lists:
        checks.append(_timed(f"Debian packages ({', '.join(p.name for p in lists)})",
                             lambda: host_check.check_packages(lists)))
    for kind, name in selected_plugins(config, flags, every):
        line = _timed(f"{kind} {name}", lambda k=kind, n=name: _plugin_findings(k, n, config))
        checks.append(line)
        if not line.blocking and _probes_reachability(kind, name):
            # only once its prerequisites are there: an unset address is already a MISSING line
            checks.append(_timed(f"{kind} {name}: reachable",
                                 lambda k=kind, n=name: _reachability_findings(k, n, config)))
    return checks


def default_package_lists(root: Path | None = None) -> list[Path]:
    """``tools/packages/runtime.txt`` of a checkout (absent in an installed wheel)."""
    root = root or cfg.project_root()
    return [root / "tools" / "packages" / "runtime.txt"]


def exit_code(checks: Iterable[CheckLine]) -> int:
    """2 when a blocking prerequisite is missing (as a run's preflight), else 0."""
    return 2 if any(c.blocking for c in checks) else 0
