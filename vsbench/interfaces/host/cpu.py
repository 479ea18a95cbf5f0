"""CPU time accounting of processes and threads, and CPU placement checks.

A switch reports what a trial cost it (:meth:`VSwitch.trial_end`) as the CPU time of its
threads: ``sample`` before and after, ``delta`` between. ``check_oversubscription`` and
``starved_busy_pollers`` tell when busy-polling threads shared CPUs (the trial measured
contention, not the switch).
"""

from vsbench.system.cpu import (
    CpuPlacementWarning,
    CpuSample,
    CpuUsage,
    ThreadUsage,
    check_oversubscription,
    cpus_to_mask,
    delta,
    is_oversubscribed,
    mask_to_cpus,
    online_cpus,
    parse_proc_stat,
    sample,
    starved_busy_pollers,
    task_names,
    thread_affinity,
)

__all__ = [
    "CpuPlacementWarning", "CpuSample", "CpuUsage", "ThreadUsage", "check_oversubscription",
    "cpus_to_mask", "delta", "is_oversubscribed", "mask_to_cpus", "online_cpus",
    "parse_proc_stat", "sample", "starved_busy_pollers", "task_names", "thread_affinity",
]
