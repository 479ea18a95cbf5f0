"""Hugepage bookkeeping: page arithmetic, mount discovery, and that only our files go.

Reservation is exercised on a sysfs-shaped directory here (arithmetic and the
subtract-not-restore rule) and on the real /proc/sys/vm in the ovs_dpdk integration test.
"""

from pathlib import Path

import pytest

from vsbench.system import hugepages
from vsbench.system.resources import ResourceStack


def fake_sysfs(tmp_path: Path, nr: int = 0) -> Path:
    root = tmp_path / "hugepages"
    for size in (2048, 1048576):
        d = root / f"hugepages-{size}kB"
        d.mkdir(parents=True)
        (d / "nr_hugepages").write_text(f"{nr if size == 2048 else 0}\n")
    return root


def nr(root: Path) -> int:
    return int((root / "hugepages-2048kB" / "nr_hugepages").read_text())


def test_pages_for_mb():
    assert hugepages.pages_for_mb(512) == 256
    assert hugepages.pages_for_mb(513) == 257
    assert hugepages.pages_for_mb(1024, 1048576) == 1
    assert hugepages.pages_for_mb(0) == 0


def test_supported_sizes(tmp_path):
    assert hugepages.supported_page_sizes_kb(fake_sysfs(tmp_path)) == [2048, 1048576]
    assert hugepages.supported_page_sizes_kb(tmp_path / "none") == []
    assert "no 4096 kB" in hugepages.hugetlb_available(4096, fake_sysfs(tmp_path / "x"))


def test_reserve_raises_by_need_and_release_subtracts(tmp_path):
    root = fake_sysfs(tmp_path, nr=10)
    with ResourceStack() as stack:
        res = hugepages.reserve(256, stack, root=root)
        assert (res.pages_before, res.pages_added, res.size_mb) == (10, 256, 512)
        assert nr(root) == 266
        # another run reserved 100 more meanwhile: teardown must leave those alone
        (root / "hugepages-2048kB" / "nr_hugepages").write_text("366\n")
    assert nr(root) == 110


def test_recorded_reservation_of_a_killed_run_is_released(tmp_path):
    root = fake_sysfs(tmp_path, nr=4)
    record = tmp_path / "hugepages.json"
    stack = ResourceStack()
    hugepages.reserve(100, stack, root=root, record=record)
    assert nr(root) == 104 and record.exists()
    huge = tmp_path / "huge"
    huge.mkdir()
    (huge / "vsba1b2c3ovsmap_0").write_text("")
    (huge / "rtemap_0").write_text("")
    hugepages.register_dpdk_file_cleanup(stack, huge, "vsba1b2c3ovs", record)
    # the run dies without closing its stack; cleanup finds the record
    runtime = tmp_path / "dpdk"
    assert hugepages.release_recorded(record, root, runtime_root=runtime) == 100
    assert [p.name for p in huge.iterdir()] == ["rtemap_0"]
    assert nr(root) == 4 and not record.exists()
    assert hugepages.release_recorded(record, root) == 0


def test_reserve_unknown_size_is_one_line_error(tmp_path):
    with pytest.raises(hugepages.HugepageError, match="no 4096 kB"):
        hugepages.reserve(1, ResourceStack(), page_size_kb=4096, root=fake_sysfs(tmp_path))


MOUNTS = """\
sysfs /sys sysfs rw,nosuid 0 0
hugetlbfs /dev/hugepages hugetlbfs rw,relatime,pagesize=2M 0 0
nodev /mnt/huge1g hugetlbfs rw,relatime,pagesize=1024M 0 0
nodev /tmp/vsb-a1b2c3-ovs-x/hugepages hugetlbfs rw,relatime 0 0
"""


def test_hugetlbfs_mounts_by_page_size():
    assert hugepages.hugetlbfs_mounts(2048, MOUNTS) == [Path("/dev/hugepages"), Path("/tmp/vsb-a1b2c3-ovs-x/hugepages")]
    assert hugepages.hugetlbfs_mounts(1048576, MOUNTS) == [Path("/mnt/huge1g")]
    assert len(hugepages.hugetlbfs_mounts(None, MOUNTS)) == 3


def test_only_files_with_our_prefix_are_removed(tmp_path):
    huge = tmp_path / "huge"
    huge.mkdir()
    ours = ["vsba1b2c3ovsmap_0", "vsba1b2c3ovsmap_17"]
    theirs = ["rtemap_0", "vsbffffffovsmap_0", "vsba1b2c3ovsXmap_0", "vsba1b2c3ovs"]
    for name in ours + theirs:
        (huge / name).write_text("")
    runtime = tmp_path / "dpdk"
    (runtime / "vsba1b2c3ovs").mkdir(parents=True)
    (runtime / "vsba1b2c3ovs" / "config").write_text("")
    (runtime / "rte").mkdir()

    assert [p.name for p in hugepages.our_files(huge, "vsba1b2c3ovs")] == ours
    removed = hugepages.remove_dpdk_files(huge, "vsba1b2c3ovs", runtime_root=runtime)
    assert {p.name for p in removed} == set(ours) | {"vsba1b2c3ovs"}
    assert sorted(p.name for p in huge.iterdir()) == sorted(theirs)
    assert [p.name for p in runtime.iterdir()] == ["rte"]


def test_empty_prefix_is_refused(tmp_path):
    with pytest.raises(ValueError):
        hugepages.remove_dpdk_files(tmp_path, "")
