"""What a plugin that starts a DPDK program may use (part of the plugin contract).

Re-exports, so that plugins import only ``vsbench.interfaces``: hugepages and file prefix
for the program (:func:`prepare_memory`), ``net_virtio_user`` arguments for the switch's
vhost-user sockets, DPDK telemetry queries, and the command runner that starts and ends
processes by pid.
"""

from vsbench.system.commands import CommandError, ManagedProcess, run, spawn, wait_for, which
from vsbench.system.dpdk_app import (
    DpdkAppError,
    DpdkMemory,
    counter_deltas,
    ethdev_counters,
    prepare_memory,
    release_recorded,
    telemetry_query,
    telemetry_socket,
    virtio_user_vdevs,
)
from vsbench.system.resources import ResourceStack

__all__ = [
    "CommandError", "DpdkAppError", "DpdkMemory", "ManagedProcess", "counter_deltas", "ResourceStack", "ethdev_counters",
    "prepare_memory", "release_recorded", "run", "spawn", "telemetry_query", "telemetry_socket",
    "virtio_user_vdevs", "wait_for", "which",
]
