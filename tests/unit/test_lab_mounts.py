"""tools/lab/mounts.py: the check that stands between the lab's teardown and rm -rf."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools" / "lab"))

from mounts import mounted_below  # noqa: E402

MOUNTS = """\
/dev/vda / ext4 rw 0 0
proc /tmp/lab/hosts/h1/rootfs/proc proc rw 0 0
/dev/vda /tmp/lab/hosts/h1/rootfs ext4 rw 0 0
tmpfs /tmp/lab-other/run tmpfs rw 0 0
tmpfs /tmp/lab/hosts/h\\0402/run tmpfs rw 0 0
"""


def test_finds_mounts_below_and_at_the_directory_only() -> None:
    assert mounted_below(Path("/tmp/lab/hosts/h1"), MOUNTS) == ["/tmp/lab/hosts/h1/rootfs/proc",
                                                               "/tmp/lab/hosts/h1/rootfs"]
    assert mounted_below(Path("/tmp/lab/hosts/h1/rootfs"), MOUNTS) == ["/tmp/lab/hosts/h1/rootfs/proc",
                                                                      "/tmp/lab/hosts/h1/rootfs"]


def test_a_sibling_with_the_same_prefix_is_not_below() -> None:
    assert mounted_below(Path("/tmp/lab"), "tmpfs /tmp/lab-other/run tmpfs rw 0 0\n") == []


def test_octal_escapes_of_proc_mounts_are_read() -> None:
    assert mounted_below(Path("/tmp/lab/hosts/h 2"), MOUNTS) == ["/tmp/lab/hosts/h 2/run"]
