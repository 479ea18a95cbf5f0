"""Which receive queues OvS-DPDK's PMD threads poll (``dpif-netdev/pmd-rxq-show``), read
back per trial: a vhost-user port's queue count is what the VNF's virtio side asked for
and OvS followed, and this says how many of those queues are enabled and on how many PMD
cores -- with more queues than PMD cores (two CPUs: one PMD) one thread polls them all, so
a figure with more queues measures that thread's contention, not parallelism. Pure."""

from __future__ import annotations

import re
from typing import Any, Iterable

_PMD = re.compile(r"^pmd thread numa_id (\d+) core_id (\d+):")
_QUEUE = re.compile(r"^\s*port:\s*(\S+)\s+queue-id:\s*(\d+)(?:\s*\((enabled|disabled)\))?")


def parse_pmd_rxq(text: str) -> dict[str, list[dict[str, Any]]]:
    """``{port: [{"queue": 0, "enabled": True, "pmd_core": 1}, ...]}`` from
    ``pmd-rxq-show`` (a queue without an enabled/disabled mark counts as enabled: older
    OvS prints none)."""
    out: dict[str, list[dict[str, Any]]] = {}
    core = None
    for line in text.splitlines():
        pmd = _PMD.match(line)
        if pmd:
            core = int(pmd.group(2))
            continue
        queue = _QUEUE.match(line)
        if queue and core is not None:
            out.setdefault(queue.group(1), []).append(
                {"queue": int(queue.group(2)), "enabled": queue.group(3) != "disabled", "pmd_core": core})
    return out


def rxq_label(rxqs: dict[str, list[dict[str, Any]]], ports: Iterable[str]) -> dict[str, str]:
    """``{"vhost_rxqs": "4 on 1 PMD"}``: the enabled receive queues of ``ports`` (the
    vhost-user ones) and the PMD cores polling them; {} when none of them is polled."""
    queues = [q for port in ports for q in rxqs.get(port, []) if q["enabled"]]
    if not queues:
        return {}
    cores = {q["pmd_core"] for q in queues}
    return {"vhost_rxqs": f"{len(queues)} on {len(cores)} PMD{'s' if len(cores) > 1 else ''}"}
