"""cleanup decides on names alone: dead runs' leftovers go, live runs and strangers stay."""

from pathlib import Path

from vsbench.system import cleanup, runstate
from vsbench.system.cleanup import Leftover, ProcessInfo, Snapshot

DEAD, LIVE, OTHER = "a1b2c3", "d4e5f6", "0f0f0f"


def _snap():
    return Snapshot(
        netns=[f"vsb-{DEAD}-tg", f"vsb-{DEAD}-dut", f"vsb-{LIVE}-dut", "vsbench-notours", "blue"],
        netns_pids={f"vsb-{DEAD}-tg": [101], f"vsb-{DEAD}-dut": [102, 103], f"vsb-{LIVE}-dut": [201]},
        links=[f"vsb{DEAD}tg0", f"vsb{LIVE}tg0", "vsbr0", "eth0"],
        mounts=["/", f"/run/vsbench/{DEAD}/p0/huge", f"/run/vsbench/{LIVE}/p0/huge", "/dev/hugepages"],
        hugepage_files=[Path(f"/dev/hugepages/vsb{DEAD}ovsmap_0"), Path(f"/dev/hugepages/vsb{LIVE}ovsmap_0")],
        dpdk_runtime=[Path(f"/var/run/dpdk/vsb{DEAD}ovs"), Path(f"/var/run/dpdk/vsb{LIVE}ovs")],
        temp_entries=[Path(f"/tmp/vsb-{DEAD}-ovs-x1y2"), Path(f"/tmp/vsb-{LIVE}-ovs-zz"), Path("/tmp/vsbuild")],
        state_entries=[Path(f"/run/vsbench/{DEAD}"), Path(f"/run/vsbench/{DEAD}.lock"),
                       Path(f"/run/vsbench/{LIVE}"), Path(f"/run/vsbench/{LIVE}.lock"),
                       Path("/run/vsbench/README")],
        processes={
            101: ProcessInfo(101, 5000, ("/usr/sbin/trafgen", "--dev", f"vsb{DEAD}tg0")),
            102: ProcessInfo(102, 5001, ("ovsdb-server",)),
            103: ProcessInfo(103, 5002, ("ovs-vswitchd",)),
            201: ProcessInfo(201, 6000, ("ovs-vswitchd",)),
            301: ProcessInfo(301, 7000, ("ovsdb-server", f"--remote=punix:/tmp/vsb-{DEAD}-ovs-x1y2/db.sock")),
            302: ProcessInfo(302, 7001, ("ovsdb-server", f"--remote=punix:/tmp/vsb-{LIVE}-ovs-zz/db.sock")),
            303: ProcessInfo(303, 7002, ("ovsdb-server", "--remote=punix:/var/run/openvswitch/db.sock")),
            1: ProcessInfo(1, 1, ("/sbin/init",)),
        },
        hugepage_records=[Path(f"/run/vsbench/{DEAD}/p0/vsb-{DEAD}-ovs-ab/hugepages.json"),
                          Path(f"/run/vsbench/{LIVE}/p0/vsb-{LIVE}-ovs-cd/hugepages.json")],
    )


def test_only_dead_runs_leftovers_are_planned_in_a_safe_order():
    items = cleanup.plan(_snap(), live={LIVE})
    assert {i.run_id for i in items} == {DEAD}
    by_kind = {}
    for i in items:
        by_kind.setdefault(i.kind, []).append(i.name)
    assert sorted(by_kind["process"]) == ["101", "102", "103", "301"]
    assert by_kind["netns"] == [f"vsb-{DEAD}-tg", f"vsb-{DEAD}-dut"]
    assert by_kind["link"] == [f"vsb{DEAD}tg0"]
    assert by_kind["mount"] == [f"/run/vsbench/{DEAD}/p0/huge"]
    assert by_kind["hugepage-file"] == [f"/dev/hugepages/vsb{DEAD}ovsmap_0"]
    assert by_kind["dpdk-runtime"] == [f"/var/run/dpdk/vsb{DEAD}ovs"]
    assert by_kind["hugepage-reservation"] == [f"/run/vsbench/{DEAD}/p0/vsb-{DEAD}-ovs-ab/hugepages.json"]
    assert sorted(by_kind["directory"]) == sorted([f"/tmp/vsb-{DEAD}-ovs-x1y2", f"/run/vsbench/{DEAD}"])
    assert by_kind["lock"] == [f"/run/vsbench/{DEAD}.lock"]
    kinds = [i.kind for i in items]
    assert kinds == sorted(kinds, key=cleanup.KIND_ORDER.index)
    # processes go before their namespace, mounts before the directory holding them
    assert kinds.index("process") < kinds.index("netns") and kinds.index("mount") < kinds.index("directory")
    assert kinds.index("hugepage-reservation") < kinds.index("directory")


def test_processes_are_identified_by_pid_and_start_time():
    items = [i for i in cleanup.plan(_snap(), live={LIVE}) if i.kind == "process"]
    assert {(i.pid, i.start_ticks) for i in items} == {(101, 5000), (102, 5001), (103, 5002), (301, 7000)}


def test_nothing_of_a_live_run_or_of_others_is_touched():
    items = cleanup.plan(_snap(), live={LIVE, DEAD})
    assert items == []


def test_own_process_is_never_ended_even_inside_our_namespace():
    items = cleanup.plan(_snap(), live={LIVE}, own_pids={102})
    assert "102" not in [i.name for i in items if i.kind == "process"]


def test_only_restricts_to_given_runs():
    snap = _snap()
    snap.netns.append(f"vsb-{OTHER}-tg")
    items = cleanup.plan(snap, live=set(), only={OTHER})
    assert [(i.kind, i.name) for i in items] == [("netns", f"vsb-{OTHER}-tg")]


def test_an_empty_machine_needs_nothing():
    assert cleanup.plan(Snapshot(), live=set()) == []
    report = cleanup.remove([])
    assert report.summary() == "nothing to clean up"


def test_removal_is_idempotent_on_files(tmp_path, monkeypatch):
    state = tmp_path / "state"
    (state / DEAD / "p0").mkdir(parents=True)
    (state / f"{DEAD}.lock").write_text("{}")
    snap = Snapshot(state_entries=sorted(state.iterdir()))
    items = cleanup.plan(snap, live=runstate.live_run_ids(state))
    report = cleanup.remove(items, state_dir=state)
    assert {i.kind for i in report.removed} == {"directory", "lock"} and not report.failed
    assert list(state.iterdir()) == []
    again = cleanup.plan(Snapshot(state_entries=sorted(state.iterdir())), live=set())
    assert again == [] and cleanup.remove(again).summary() == "nothing to clean up"


def test_a_run_that_is_live_at_removal_time_is_skipped(tmp_path):
    state = tmp_path / "state"
    claim = runstate.claim(DEAD, base=state)
    try:
        item = Leftover("directory", str(claim.work_dir), DEAD)
        report = cleanup.remove([item], state_dir=state)
        assert report.removed == [] and report.live_runs == [DEAD]
        assert claim.work_dir.is_dir()
        assert "left alone: live run(s) a1b2c3" in report.summary()
    finally:
        claim.release()
    assert not runstate.is_live(DEAD, state)


def test_dry_run_reports_without_removing(tmp_path):
    d = tmp_path / f"vsb-{DEAD}-ovs-q"
    d.mkdir()
    report = cleanup.remove([Leftover("directory", str(d), DEAD)], dry_run=True, state_dir=tmp_path)
    assert d.is_dir() and "would remove directory" in report.summary()


def test_mount_parsing_unescapes_spaces():
    text = "tmpfs /run tmpfs rw 0 0\nnodev /run/vsbench/a1b2c3/my\\040huge hugetlbfs rw,pagesize=2M 0 0\n"
    assert cleanup.mount_points(text) == ["/run", "/run/vsbench/a1b2c3/my huge"]
    assert cleanup.hugetlbfs_mounts(text) == [Path("/run/vsbench/a1b2c3/my huge")]


def test_lock_is_the_liveness_signal(tmp_path):
    claim = runstate.claim(LIVE, base=tmp_path)
    assert runstate.live_run_ids(tmp_path) == {LIVE}
    assert runstate.read_claim(LIVE, tmp_path)["run_id"] == LIVE
    claim.release()
    assert runstate.live_run_ids(tmp_path) == set()


def test_a_dead_runs_hugepage_reservation_is_given_back(tmp_path):
    from vsbench.system import hugepages

    sysfs = tmp_path / "sys"
    pool = sysfs / "hugepages-2048kB"
    pool.mkdir(parents=True)
    (pool / "nr_hugepages").write_text("260\n")  # 4 of ours on top of 256 somebody else's
    record = tmp_path / "state" / DEAD / "p0" / f"vsb-{DEAD}-ovs-ab" / "hugepages.json"
    record.parent.mkdir(parents=True)
    record.write_text('{"page_size_kb": 2048, "pages_before": 256, "pages_added": 4}')
    assert hugepages.release_recorded(record, root=sysfs) == 4
    assert (pool / "nr_hugepages").read_text().strip() == "256"
    assert not record.exists()
