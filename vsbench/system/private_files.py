"""Directories and files other local users cannot write, opened without following links.

Why: a run's directory, its logs and the state directory hold what the results are read
from and what ``vsbench cleanup`` acts on. Created with the process umask they are only as
private as the umask (a service or container often runs with umask 0, a desktop with 002);
so every directory here is made ``0o755`` and every file ``0o644`` at most, whatever the
umask (which can still take more away).

And a run directory is also *input*: copied, unpacked from an archive someone sent,
regenerated with ``vsbench report``. A symlink planted at a file name vsbench writes must
not send the write out of the directory: files are created with ``O_NOFOLLOW`` (and
``O_EXCL`` where a fresh file is meant), and :func:`private_dir` refuses a state directory
that is a symlink, another user's, or a shared one like ``/tmp``.
"""

from __future__ import annotations

import errno
import logging
import os
import stat
from pathlib import Path
from typing import IO

log = logging.getLogger(__name__)

DIR_MODE = 0o755
FILE_MODE = 0o644
_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH


class UnsafePathError(OSError):
    """A directory vsbench would keep its state in that other users can write or redirect."""


def make_dirs(path: Path, *, exist_ok: bool = True) -> Path:
    """``mkdir -p path`` with :data:`DIR_MODE` for every directory it creates.

    ``Path.mkdir(parents=True)`` gives the parents ``0o777 & ~umask``, and ``os.makedirs``
    applies ``mode`` to the leaf only (Python >= 3.7), hence this loop."""
    path = Path(path)
    missing = []
    at = path
    while not at.exists() and not at.is_symlink():
        missing.append(at)
        if at.parent == at:
            break
        at = at.parent
    if not missing and not exist_ok:
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(path))
    for directory in reversed(missing):
        try:
            directory.mkdir(mode=DIR_MODE)
        except FileExistsError:
            if directory == path and not exist_ok:
                raise
    return path


def private_dir(path: Path) -> Path:
    """``path`` created (:func:`make_dirs`), or checked when it exists: a real directory,
    owned by this user, that no other user can write. One of ours that others can write
    (left by an old umask) loses those bits; a symlink, another user's directory, or a
    shared sticky one such as ``/tmp`` is refused with :class:`UnsafePathError`."""
    path = Path(path)
    make_dirs(path)
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        raise UnsafePathError(f"{path} is a symlink; vsbench keeps its state only in a real directory")
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafePathError(f"{path} is not a directory")
    if st.st_uid != os.geteuid():
        raise UnsafePathError(f"{path} is owned by uid {st.st_uid}, not by this user ({os.geteuid()}): "
                              f"another user could change what vsbench keeps there; remove it or set "
                              f"$VSBENCH_STATE_DIR")
    if st.st_mode & _OTHERS_WRITE:
        if st.st_mode & stat.S_ISVTX:
            raise UnsafePathError(f"{path} is a shared directory other users can write (mode "
                                  f"{stat.S_IMODE(st.st_mode):o}); give vsbench a directory of its own")
        os.chmod(path, stat.S_IMODE(st.st_mode) & ~_OTHERS_WRITE)
        log.info("%s was writable by other users; made it %o", path, stat.S_IMODE(st.st_mode) & ~_OTHERS_WRITE)
    return path


def open_fd(path: Path, flags: int) -> int:
    """``os.open(path, flags | O_CREAT | O_NOFOLLOW | O_CLOEXEC, FILE_MODE)``: a symlink at
    ``path`` is an error (``ELOOP``), never followed."""
    return os.open(path, flags | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, FILE_MODE)


def open_append(path: Path, encoding: str = "utf-8", errors: str | None = None) -> IO[str]:
    """A text file opened for appending (a log), created :data:`FILE_MODE`, not through a link."""
    return open(open_fd(path, os.O_WRONLY | os.O_APPEND), "a", encoding=encoding, errors=errors)


def create_fresh(path: Path) -> int:
    """A new file at ``path`` for writing (``O_EXCL``): whatever was there, a planted symlink
    included, is unlinked first, so the write lands in this directory or fails."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    return open_fd(path, os.O_WRONLY | os.O_EXCL)
