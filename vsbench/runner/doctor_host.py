"""``vsbench doctor --host``: this host's lab settings, judged for the configuration.

Where plain ``vsbench doctor`` asks "can vsbench run here", ``--host`` asks what a lab asks
before trusting a figure: are the NICs and the pollers on one NUMA node, are the cores
isolated, is the clock fixed, are hugepages where the pollers are (seed report 000's boot,
BIOS and OS settings). One ``ok``/``warn``/``fail`` line per setting, with the fix; exit 2
when a line fails (the configuration cannot run here as written), as doctor does for a
missing prerequisite. The same record goes into every run's sysinfo.json.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from vsbench.runner import lab_targets
from vsbench.runner.doctor import selected_plugins
from vsbench.system import host_settings, host_verdicts


def judge_host(config: Mapping[str, Any], flags: Mapping[str, str | None],
          root: Path = Path("/")) -> host_settings.HostSettings:
    targets = lab_targets.of_config(config, selected_plugins(config, flags, every=False))
    return host_settings.collect(targets, root)


def summary(settings: host_settings.HostSettings) -> str:
    counts = {s: sum(1 for line in settings.lines if line.status == s)
              for s in (host_verdicts.OK, host_verdicts.WARN, host_verdicts.FAIL)}
    verdict = "settings fail (see fail lines)" if settings.failed else "as configured, runnable here"
    return f"doctor --host: {counts['ok']} ok, {counts['warn']} warn, {counts['fail']} fail; {verdict}"


def exit_code(settings: host_settings.HostSettings) -> int:
    """2 when a line fails (as plain doctor for a missing prerequisite), else 0."""
    return 2 if settings.failed else 0


def sysinfo_section(configs: list[Mapping[str, Any]], root: Path = Path("/")) -> dict[str, Any]:
    """``host_settings`` of sysinfo.json for a run's plans (their NICs and cores, merged)."""
    return host_settings.collect(lab_targets.of_configs(configs), root).to_json()
