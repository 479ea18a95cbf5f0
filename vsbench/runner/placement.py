"""CPU placement warnings for a plan, from what its plugins say about their threads.

On a small machine a busy-polling switch thread sharing a core with the generator
measures the scheduler, not the switch. Plugins that busy-poll expose
``busy_poll_cpus() -> {owner: set of CPUs}`` (the ovs_dpdk PMDs, a DPDK generator) and a
generator may expose ``generator_cpus() -> set of CPUs``; both are optional duck-typed
methods beside the contracts. The verdict is :func:`vsbench.system.cpu.check_oversubscription`;
this module only gathers its inputs and words the result for results.json.
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger(__name__)

OVERSUBSCRIBED_PREFIX = "CPU oversubscribed"


def warnings(*plugins: Any) -> list[str]:
    """One line per placement warning (oversubscribed ones first), or [] when roomy."""
    busy: dict[str, set[int]] = {}
    generator_cpus: set[int] = set()
    for plugin in plugins:
        if plugin is None:
            continue
        try:
            if hasattr(plugin, "busy_poll_cpus"):
                for owner, cpus in (plugin.busy_poll_cpus() or {}).items():
                    busy.setdefault(owner, set()).update(cpus)
            if hasattr(plugin, "generator_cpus"):
                generator_cpus.update(plugin.generator_cpus() or ())
        except Exception as exc:  # noqa: BLE001 - a placement probe must not fail the run
            log.warning("could not read CPU placement of %s: %s", getattr(plugin, "name", plugin), exc)
    if not busy:
        return []
    try:
        from vsbench.system import cpu
    except ImportError:  # pragma: no cover - cpu.py ships with vsbench
        return []
    found = cpu.check_oversubscription(busy, generator_cpus)
    ordered = sorted(found, key=lambda w: not w.oversubscribed)
    return [
        (f"{OVERSUBSCRIBED_PREFIX} ({w.code}): {w.message}; figures measure CPU contention, not the DUT"
         if w.oversubscribed else f"CPU placement ({w.code}): {w.message}")
        for w in ordered
    ]
