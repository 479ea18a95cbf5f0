"""Which runs are alive: every run holds an exclusive lock on its own state file.

``vsbench cleanup`` must remove what a killed run left and never touch a live run's
resources. A pid alone cannot tell (pids are reused); a lock can: the running vsbench
process holds ``flock(LOCK_EX)`` on ``<state_dir>/<run_id>.lock`` for its whole life, the
kernel drops the lock when the process dies however it dies (``kill -9`` included), and
child processes do not inherit it (Python opens files non-inheritable). So a run is alive
exactly when its lock file is locked.

The state directory also holds the run's work directory ``<state_dir>/<run_id>/`` (OvS DB
and sockets, DPDK runtime files, private hugetlbfs mounts: short paths, on tmpfs), which
``cleanup`` removes once the run is dead.
"""

from __future__ import annotations

import errno
import fcntl
import json
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

from vsbench.system import private_files
from vsbench.system.naming import RUN_ID_RE

log = logging.getLogger(__name__)

DEFAULT_STATE_DIR = Path("/run/vsbench")
STATE_DIR_ENV = "VSBENCH_STATE_DIR"


def state_dir() -> Path:
    """``$VSBENCH_STATE_DIR``, else /run/vsbench when it can be used, else a per-user
    directory under the temp dir (a non-root run with an external DUT needs no /run)."""
    env = os.environ.get(STATE_DIR_ENV)
    if env:
        return Path(env)
    try:
        DEFAULT_STATE_DIR.mkdir(mode=0o755, parents=True, exist_ok=True)
        if os.access(DEFAULT_STATE_DIR, os.W_OK):
            return DEFAULT_STATE_DIR
    except OSError:
        pass
    import tempfile

    return Path(tempfile.gettempdir()) / f"vsbench-{os.getuid()}"


@dataclass
class RunClaim:
    """The live run's hold on its lock file; :meth:`release` (or process death) ends it."""

    run_id: str
    lock_path: Path
    work_dir: Path
    _fd: int | None = None

    def release(self) -> None:
        """Drop the lock and remove the lock file and the (by now empty) work dir."""
        if self._fd is None:
            return
        try:
            self.lock_path.unlink(missing_ok=True)
        finally:
            os.close(self._fd)
            self._fd = None
        try:
            self.work_dir.rmdir()
        except OSError as exc:
            if exc.errno not in (errno.ENOENT, errno.ENOTEMPTY, errno.EEXIST):
                raise
            if exc.errno != errno.ENOENT:
                log.warning("run work dir %s is not empty after teardown; `vsbench cleanup` removes it",
                            self.work_dir)

    def __enter__(self) -> "RunClaim":
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def claim(run_id: str, run_dir: Path | None = None, base: Path | None = None) -> RunClaim:
    """Lock ``<base>/<run_id>.lock`` for this process and create the run's work dir.

    The file records pid, start time and result directory for people reading it; the
    lock, not its content, is what says "alive".
    """
    if not RUN_ID_RE.match(run_id):
        raise ValueError(f"not a run id: {run_id!r}")
    base = private_files.private_dir(base or state_dir())
    lock_path = base / f"{run_id}.lock"
    fd = private_files.open_fd(lock_path, os.O_RDWR)  # never through a link planted there
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise RuntimeError(f"run {run_id} is already live") from None
    info = {"run_id": run_id, "pid": os.getpid(), "started": time.time(),
            "run_dir": str(run_dir) if run_dir else None}
    os.ftruncate(fd, 0)
    os.write(fd, (json.dumps(info) + "\n").encode())
    work_dir = base / run_id
    work_dir.mkdir(mode=0o755, exist_ok=True)
    return RunClaim(run_id, lock_path, work_dir, fd)


def is_live(run_id: str, base: Path | None = None) -> bool:
    """True when a process holds the lock of ``run_id``."""
    lock_path = (base or state_dir()) / f"{run_id}.lock"
    try:
        fd = os.open(lock_path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def live_run_ids(base: Path | None = None) -> set[str]:
    """Run ids whose lock is held right now."""
    base = base or state_dir()
    if not base.is_dir():
        return set()
    ids = set()
    for path in base.glob("*.lock"):
        run_id = path.stem
        if RUN_ID_RE.match(run_id) and is_live(run_id, base):
            ids.add(run_id)
    return ids


def read_claim(run_id: str, base: Path | None = None) -> dict | None:
    """The recorded pid/start/run_dir of ``run_id`` (None when there is no readable file)."""
    try:
        return json.loads(((base or state_dir()) / f"{run_id}.lock").read_text())
    except (OSError, ValueError):
        return None
