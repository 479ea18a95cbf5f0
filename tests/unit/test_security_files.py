"""What a run creates on disk is not writable by other local users, whatever the umask,
and a symlink planted at a results path is not followed out of the run directory
(docs/security.rst)."""

from __future__ import annotations

import os
import stat

import pytest

from tests.unit.runs_kit import make_run, vsbench
from vsbench.results import writers
from vsbench.results.trial_log import TrialLog
from vsbench.system import private_files, runstate

OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH


@pytest.fixture
def open_umask():
    """umask 0: what a service or a container often runs with; modes must not rely on it."""
    old = os.umask(0)
    yield
    os.umask(old)


def writable_by_others(path):
    return [str(p) for p in [path, *path.rglob("*")] if not p.is_symlink() and p.lstat().st_mode & OTHERS_WRITE]


def test_a_run_creates_nothing_others_can_write(tmp_path, testkit, open_umask, capsys):
    results = tmp_path / "deep" / "results"
    run_dir = make_run(tmp_path, testkit, results)
    assert (run_dir / "logs").is_dir() and (run_dir / "results.json").is_file()
    assert writable_by_others(tmp_path / "deep") == []
    assert writable_by_others(testkit["state"]) == []
    capsys.readouterr()


def test_a_new_sqlite_store_is_not_writable_by_others(tmp_path, open_umask):
    """SQLite creates its file with the umask's mode: 0666 under umask 0, a lab's history
    any local user could rewrite. A link planted at the name is not followed."""
    from vsbench.results.store import Store, StoreError

    with Store(f"sqlite:///{tmp_path / 'store.sqlite'}"):
        pass
    assert (tmp_path / "store.sqlite").stat().st_mode & 0o777 == 0o644
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "planted.sqlite").symlink_to(tmp_path / "elsewhere" / "victim.sqlite")
    with pytest.raises(StoreError, match="cannot open store"):
        Store(f"sqlite:///{tmp_path / 'planted.sqlite'}")
    assert not (tmp_path / "elsewhere" / "victim.sqlite").exists()


def test_the_state_dir_is_created_private(tmp_path, open_umask):
    base = tmp_path / "a" / "state"
    with runstate.claim("abcdef", base=base) as held:
        assert writable_by_others(tmp_path / "a") == []
        assert held.work_dir.is_dir()


def test_a_state_dir_others_can_write_is_repaired_or_refused(tmp_path):
    """A predictable state dir (``/tmp/vsbench-UID``) another user made first, or one left
    group-writable, must not hold a run's lock and work files as it is."""
    mine = tmp_path / "mine"
    mine.mkdir()
    os.chmod(mine, 0o777)
    private_files.private_dir(mine)
    assert mine.stat().st_mode & 0o777 == 0o755
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)  # a sticky shared directory such as /tmp is no state dir
    with pytest.raises(private_files.UnsafePathError, match="other users"):
        private_files.private_dir(shared)
    link = tmp_path / "link"
    link.symlink_to(mine)
    with pytest.raises(private_files.UnsafePathError, match="symlink"):
        private_files.private_dir(link)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a directory to another user")
def test_a_state_dir_owned_by_another_user_is_refused(tmp_path):
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o755)
    os.chown(theirs, 65534, 65534)
    with pytest.raises(private_files.UnsafePathError, match="owned by uid 65534"):
        runstate.claim("abcdef", base=theirs)


def test_write_atomic_replaces_a_planted_symlink(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("precious\n")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    for name in ("results.json", "report.html"):
        (run_dir / name).symlink_to(outside)
        writers.write_atomic(run_dir / name, "new\n")
        assert not (run_dir / name).is_symlink() and (run_dir / name).read_text() == "new\n"
    assert outside.read_text() == "precious\n"


def test_write_atomic_never_writes_through_a_planted_temporary_file(tmp_path):
    """The temporary file's name is predictable: a symlink there must not be written through."""
    outside = tmp_path / "outside.txt"
    outside.write_text("precious\n")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / ".results.json.tmp").symlink_to(outside)
    writers.write_atomic(run_dir / "results.json", "new\n")
    assert outside.read_text() == "precious\n"
    assert (run_dir / "results.json").read_text() == "new\n" and not (run_dir / "results.json").is_symlink()


def test_appended_files_refuse_a_planted_symlink(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("precious\n")
    (tmp_path / "trials.jsonl").symlink_to(outside)
    with pytest.raises(OSError):
        TrialLog(tmp_path / "trials.jsonl")
    (tmp_path / "x.log").symlink_to(outside)
    with pytest.raises(OSError):
        private_files.open_append(tmp_path / "x.log")
    assert outside.read_text() == "precious\n"


def test_report_regeneration_does_not_follow_planted_links(tmp_path, testkit, capsys):
    """A run directory is input (copied, unpacked from someone's archive): ``vsbench report``
    on one with report.html and its temporary name linked elsewhere writes inside it."""
    run_dir = make_run(tmp_path, testkit, testkit["results"])
    outside = tmp_path / "outside.txt"
    outside.write_text("precious\n")
    (run_dir / "report.html").unlink()
    (run_dir / "report.html").symlink_to(outside)
    (run_dir / ".report.html.tmp").symlink_to(tmp_path / "elsewhere.txt")
    assert vsbench("report", str(run_dir))[0] == 0
    assert outside.read_text() == "precious\n" and not (tmp_path / "elsewhere.txt").exists()
    assert (run_dir / "report.html").read_text().startswith("<!DOCTYPE html>")
    capsys.readouterr()


def test_the_libvirt_driver_root_in_tmp_is_not_taken_over(tmp_path, monkeypatch):
    """``<tmp>/vsb-libvirt-<pid>`` has a predictable name and holds the configuration libvirt
    reads for QEMU run as root: a link planted there (or another user's directory) is refused."""
    from vsbench.system.vm import runner

    monkeypatch.setattr(runner.tempfile, "gettempdir", lambda: str(tmp_path))
    monkeypatch.setattr(runner, "_driver_root", None)
    elsewhere = tmp_path / "attacker"
    elsewhere.mkdir()
    (tmp_path / f"{runner.DRIVER_ROOT_PREFIX}{os.getpid()}").symlink_to(elsewhere)
    with pytest.raises(private_files.UnsafePathError, match="symlink"):
        runner.embedded_driver_root(None)
    assert list(elsewhere.iterdir()) == []
