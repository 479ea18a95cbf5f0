"""What a plugin that starts a DPDK program needs around it (l3fwd, testpmd): hugepages
and a file prefix of its own (:func:`prepare_memory`, every undo registered), the
``net_virtio_user`` arguments for the switch's vhost-user sockets and ``net_af_packet``
ones for veth ends, and its port counters through DPDK's telemetry socket, named as the
VNF contract's ``trial_end`` names them."""

from vsbench.system.dpdk_app import (
    DpdkAppError,
    DpdkMemory,
    af_packet_vdev,
    counter_deltas,
    ethdev_counters,
    prepare_memory,
    release_recorded,
    telemetry_query,
    telemetry_socket,
    virtio_user_vdevs,
)

__all__ = [
    "DpdkAppError", "DpdkMemory", "af_packet_vdev", "counter_deltas", "ethdev_counters", "prepare_memory",
    "release_recorded", "telemetry_query", "telemetry_socket", "virtio_user_vdevs",
]
