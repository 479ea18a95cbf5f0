"""Hugepages for DPDK processes: reserve (and give back) pages, a private hugetlbfs mount,
and removal of the DPDK files a process leaves in it. Every function that acquires
something takes the run's resource stack and registers the undo itself."""

from vsbench.system.hugepages import (
    HugepageError,
    HugepageReservation,
    hugetlb_available,
    hugetlbfs_mounts,
    mount_private,
    pages_for_mb,
    register_dpdk_file_cleanup,
    release_recorded,
    reserve,
)

__all__ = [
    "HugepageError", "HugepageReservation", "hugetlb_available", "hugetlbfs_mounts",
    "mount_private", "pages_for_mb", "register_dpdk_file_cleanup", "release_recorded", "reserve",
]
