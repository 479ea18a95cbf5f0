"""Hugepages for a DPDK process: reserve just what it needs, give it back afterwards.

Only a DPDK plugin calls this. Three things are acquired, each with its undo registered on
the run's :class:`ResourceStack` the moment it exists:

1. **Pages.** ``nr_hugepages`` of the page size is *raised by* the pages needed (never set to
   an absolute value), the kernel's grant is checked, and at teardown the same number is
   *subtracted* from whatever the value is then. Subtracting, rather than writing back the
   value seen before, keeps a concurrent run's pages intact when two runs overlap. The
   read-modify-write is serialised between vsbench processes with a file lock.
2. **A private hugetlbfs mount** (optional): DPDK needs a hugetlbfs mount to find pages, and a
   fresh mount under the run directory holds only our files, so unmounting it cannot touch
   anybody else's. Used when the host has no mount or the user asks for it.
3. **Our page files and DPDK runtime directory**: whatever DPDK left under the mount with our
   ``--file-prefix`` (a run that used a shared mount such as ``/dev/hugepages``) and
   ``/var/run/dpdk/<prefix>``. Files of other prefixes are never touched.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import math
import os
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterator

from vsbench.system import commands
from vsbench.system.resources import ResourceStack

log = logging.getLogger(__name__)

SYSFS_HUGEPAGES = Path("/sys/kernel/mm/hugepages")
PROC_MOUNTS = Path("/proc/mounts")
DPDK_RUNTIME_ROOT = Path("/var/run/dpdk")
LOCK_PATH = Path("/run/lock/vsbench-hugepages.lock")


class HugepageError(Exception):
    """Hugepages could not be reserved or mounted; the message is one line for the user."""


@dataclass(frozen=True)
class HugepageReservation:
    """What :func:`reserve` did: ``pages_added`` pages of ``page_size_kb`` on top of
    ``pages_before`` (the value seen just before raising it)."""

    page_size_kb: int
    pages_before: int
    pages_added: int

    @property
    def size_mb(self) -> float:
        return self.pages_added * self.page_size_kb / 1024


def _nr_path(page_size_kb: int, root: Path = SYSFS_HUGEPAGES) -> Path:
    return root / f"hugepages-{page_size_kb}kB" / "nr_hugepages"


def supported_page_sizes_kb(root: Path = SYSFS_HUGEPAGES) -> list[int]:
    """Page sizes the kernel offers (e.g. ``[2048, 1048576]``); empty without hugetlb."""
    if not root.is_dir():
        return []
    sizes = []
    for entry in root.iterdir():
        name = entry.name
        if name.startswith("hugepages-") and name.endswith("kB"):
            sizes.append(int(name[len("hugepages-") : -2]))
    return sorted(sizes)


def read_counter(page_size_kb: int, counter: str, root: Path = SYSFS_HUGEPAGES) -> int:
    """One per-size counter (``nr_hugepages``, ``free_hugepages``, ...)."""
    return int((root / f"hugepages-{page_size_kb}kB" / counter).read_text().strip())


def pages_for_mb(size_mb: float, page_size_kb: int = 2048) -> int:
    """Whole pages needed to hold ``size_mb`` megabytes."""
    return max(0, math.ceil(size_mb * 1024 / page_size_kb))


@contextlib.contextmanager
def _locked(lock_path: Path = LOCK_PATH) -> Iterator[None]:
    """Serialise read-modify-write of nr_hugepages between vsbench processes."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _write_nr(path: Path, value: int) -> None:
    path.write_text(f"{value}\n")


def release(reservation: HugepageReservation, root: Path = SYSFS_HUGEPAGES) -> int:
    """Give back the pages :func:`reserve` added; return the new ``nr_hugepages``."""
    path = _nr_path(reservation.page_size_kb, root)
    with _locked():
        current = int(path.read_text().strip())
        target = max(0, current - reservation.pages_added)
        _write_nr(path, target)
        now = int(path.read_text().strip())
    log.info("hugepages %d kB: released %d pages (%d -> %d)",
             reservation.page_size_kb, reservation.pages_added, current, now)
    return now


def reserve(
    pages: int,
    resources: ResourceStack,
    *,
    page_size_kb: int = 2048,
    root: Path = SYSFS_HUGEPAGES,
    record: Path | None = None,
) -> HugepageReservation:
    """Raise ``nr_hugepages`` by ``pages`` and check the kernel granted them all.

    Registers :func:`release` on ``resources`` once pages were added. When the kernel grants
    fewer (fragmented or short memory), what it did grant is given back at once and
    :class:`HugepageError` says how many were missing. With ``record``, the reservation is
    also written there (JSON) until released, so ``vsbench cleanup`` can give back the
    pages of a run that was killed (:func:`release_recorded`).
    """
    if page_size_kb not in supported_page_sizes_kb(root):
        raise HugepageError(f"kernel offers no {page_size_kb} kB hugepages ({root} has none)")
    path = _nr_path(page_size_kb, root)
    with _locked():
        before = int(path.read_text().strip())
        if pages <= 0:
            return HugepageReservation(page_size_kb, before, 0)
        try:
            _write_nr(path, before + pages)
        except OSError as exc:
            raise HugepageError(f"cannot raise {path} to {before + pages}: {exc.strerror}") from exc
        granted = int(path.read_text().strip()) - before
    reservation = HugepageReservation(page_size_kb, before, max(0, granted))
    if granted < pages:
        if granted > 0:
            release(reservation, root)
        raise HugepageError(
            f"kernel granted {max(0, granted)} of {pages} {page_size_kb} kB hugepages "
            f"(free memory too fragmented or too small)"
        )
    if record is not None:
        record.write_text(json.dumps(asdict(reservation)) + "\n")
        resources.register(f"hugepage record {record}", record.unlink, missing_ok=True)
    resources.register(f"{pages} hugepages of {page_size_kb} kB", release, reservation, root)
    log.info("hugepages %d kB: reserved %d pages (%d -> %d)", page_size_kb, pages, before, before + pages)
    return reservation


def release_recorded(record: Path, root: Path = SYSFS_HUGEPAGES,
                     runtime_root: Path = DPDK_RUNTIME_ROOT) -> int:
    """Undo what a run that was killed recorded: its DPDK files (prefix), its private
    hugetlbfs mount, then its pages; remove the record. Returns the pages released (0
    when there is no record). The run's DPDK process must be dead first (pages in use
    are only freed when it exits)."""
    try:
        data = json.loads(record.read_text())
    except FileNotFoundError:
        return 0
    huge_dir = Path(data["huge_dir"]) if data.get("huge_dir") else None
    if data.get("file_prefix"):
        remove_dpdk_files(huge_dir, data["file_prefix"], runtime_root)
    if huge_dir is not None and data.get("private_mount"):
        unmount_private(huge_dir)
    reservation = HugepageReservation(int(data["page_size_kb"]), int(data["pages_before"]),
                                      int(data["pages_added"]))
    release(reservation, root)
    record.unlink(missing_ok=True)
    return reservation.pages_added


def _update_record(record: Path | None, **fields: object) -> None:
    if record is None or not record.exists():
        return
    data = json.loads(record.read_text())
    data.update(fields)
    record.write_text(json.dumps(data) + "\n")


def hugetlbfs_mounts(page_size_kb: int | None = None, mounts_text: str | None = None) -> list[Path]:
    """Mount points of hugetlbfs (optionally only those with ``page_size_kb`` pages).

    A mount without ``pagesize=`` uses the default page size (2 MB on x86-64).
    """
    text = mounts_text if mounts_text is not None else PROC_MOUNTS.read_text()
    found = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 4 or fields[2] != "hugetlbfs":
            continue
        options = dict(o.split("=", 1) if "=" in o else (o, "") for o in fields[3].split(","))
        size = _parse_pagesize_kb(options.get("pagesize", "2M"))
        if page_size_kb is None or size == page_size_kb:
            found.append(Path(fields[1].replace("\\040", " ")))
    return found


def _parse_pagesize_kb(text: str) -> int:
    units = {"K": 1, "M": 1024, "G": 1024 * 1024}
    text = text.strip().upper().rstrip("B")
    if text and text[-1] in units:
        return int(text[:-1]) * units[text[-1]]
    return int(text) // 1024


def mount_private(mount_dir: Path, resources: ResourceStack, *, page_size_kb: int = 2048,
                  record: Path | None = None) -> Path:
    """Mount a fresh hugetlbfs at ``mount_dir`` (created) and register its unmount (and
    note it in ``record``, see :func:`reserve`)."""
    mount_dir.mkdir(parents=True, exist_ok=True)
    pagesize = f"{page_size_kb // 1024}M" if page_size_kb < 1024 * 1024 else f"{page_size_kb // (1024 * 1024)}G"
    try:
        commands.run(["mount", "-t", "hugetlbfs", "-o", f"pagesize={pagesize}", "nodev", str(mount_dir)])
    except commands.CommandError as exc:
        raise HugepageError(f"cannot mount hugetlbfs at {mount_dir}: {exc}") from exc
    resources.register(f"hugetlbfs mount {mount_dir}", unmount_private, mount_dir)
    _update_record(record, huge_dir=str(mount_dir), private_mount=True)
    return mount_dir


def unmount_private(mount_dir: Path) -> None:
    """Unmount a mount made by :func:`mount_private` and remove its (empty) directory."""
    commands.run(["umount", str(mount_dir)], check=False)
    with contextlib.suppress(OSError):
        mount_dir.rmdir()


def our_files(huge_dir: Path, file_prefix: str) -> list[Path]:
    """Hugepage files DPDK created with ``--file-prefix=file_prefix`` (``<prefix>map_N``,
    ``<prefix>map_N_M``, ...); never a file of another prefix."""
    if not huge_dir.is_dir():
        return []
    return sorted(p for p in huge_dir.iterdir() if p.name.startswith(f"{file_prefix}map_"))


def remove_dpdk_files(huge_dir: Path | None, file_prefix: str, runtime_root: Path = DPDK_RUNTIME_ROOT) -> list[Path]:
    """Remove our page files under ``huge_dir`` and DPDK's runtime dir for our prefix.

    Returns what was removed. ``file_prefix`` must be non-empty: an empty prefix would
    match everybody's files.
    """
    if not file_prefix:
        raise ValueError("refusing to remove hugepage files without a file prefix")
    removed: list[Path] = []
    if huge_dir is not None:
        for path in our_files(huge_dir, file_prefix):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                removed.append(path)
    runtime = runtime_root / file_prefix
    if runtime.is_dir():
        shutil.rmtree(runtime, ignore_errors=True)
        removed.append(runtime)
        with contextlib.suppress(OSError):
            runtime_root.rmdir()  # only succeeds when no other prefix is left in it
    return removed


def register_dpdk_file_cleanup(
    resources: ResourceStack, huge_dir: Path | None, file_prefix: str, record: Path | None = None
) -> None:
    """Register removal of our page files / runtime dir (call before starting DPDK), and
    note the prefix in ``record`` (see :func:`reserve`)."""
    _update_record(record, file_prefix=file_prefix,
                   **({"huge_dir": str(huge_dir)} if huge_dir is not None else {}))
    resources.register(
        f"DPDK files with prefix {file_prefix}", remove_dpdk_files, huge_dir, file_prefix
    )


def hugetlb_available(page_size_kb: int = 2048, root: Path = SYSFS_HUGEPAGES) -> str | None:
    """None when ``page_size_kb`` hugepages can be reserved here, else one line saying why not."""
    sizes = supported_page_sizes_kb(root)
    if not sizes:
        return f"kernel has no hugetlb support ({root} missing)"
    if page_size_kb not in sizes:
        return f"kernel offers no {page_size_kb} kB hugepages (has {', '.join(map(str, sizes))} kB)"
    if not os.access(_nr_path(page_size_kb, root), os.W_OK):
        return "cannot write nr_hugepages (needs root)"
    return None
