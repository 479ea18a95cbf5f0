"""Space held back in a run directory so a full disk cannot leave results.json saying
``running``.

Why: results.json is rewritten atomically (a new file, then a rename), which needs free
blocks. When the results filesystem fills mid-run (another job's logs, a core dump), the
run fails -- and its last word, the results.json with status ``failed``, could not be
written either: the file on disk still said ``running`` (found by tools/bench/faults.py).
A run therefore allocates a small reserve file in its directory when it starts, and frees it
when a write of its final files fails for want of space, then writes them again.
"""

from __future__ import annotations

import errno
import logging
import os
from pathlib import Path

from vsbench.system import private_files

log = logging.getLogger(__name__)

FILE_NAME = ".space-reserve"
#: Larger than the results.json/results.csv of any but a huge run (a few hundred kB).
RESERVE_BYTES = 1 << 20
#: The errors that mean "no room": a full filesystem or a user's quota.
NO_SPACE = (errno.ENOSPC, errno.EDQUOT)


class SpaceReserve:
    """``size_bytes`` allocated in ``directory`` (raises OSError when they are not free: a
    run that cannot hold its reserve cannot be sure to record its end either)."""

    def __init__(self, directory: Path, size_bytes: int = RESERVE_BYTES) -> None:
        self.path: Path | None = Path(directory) / FILE_NAME
        fd = private_files.create_fresh(self.path)
        try:
            try:
                os.posix_fallocate(fd, 0, size_bytes)
            except OSError as exc:
                if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
                    raise
                os.write(fd, b"\0" * size_bytes)  # a filesystem without fallocate
                os.fsync(fd)
        except BaseException:
            os.close(fd)
            self.path.unlink(missing_ok=True)
            self.path = None
            raise
        os.close(fd)

    @property
    def held(self) -> bool:
        return self.path is not None

    def release(self) -> None:
        """Give the space back (idempotent)."""
        if self.path is not None:
            self.path.unlink(missing_ok=True)
            self.path = None


def is_no_space(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in NO_SPACE
