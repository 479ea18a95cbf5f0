"""``trials.jsonl``: every trial appended and on disk before the next one starts.

DESIGN.md principle 4: a crash, Ctrl-C or ``kill -9`` must leave every finished trial
readable. Each record is one line written with a single ``write`` call, flushed and
``fsync``-ed before :meth:`TrialLog.append` returns. A process killed in the middle of a
write can leave at most one partial last line, which :func:`read_trials` skips.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Iterator

from vsbench.results.model import TrialRecord
from vsbench.system import private_files

log = logging.getLogger(__name__)

FILE_NAME = "trials.jsonl"


class TrialLog:
    """Append-only writer of one run's ``trials.jsonl``."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        private_files.make_dirs(self.path.parent)
        # Unbuffered binary append: one os.write per record, no Python-side buffer to lose.
        # Not through a symlink planted at the path (private_files).
        self._fd: int | None = private_files.open_fd(self.path, os.O_WRONLY | os.O_APPEND)
        self.count = 0

    def append(self, record: TrialRecord) -> None:
        """Write ``record`` as one line and make it durable before returning."""
        if self._fd is None:
            raise ValueError(f"{self.path} is closed")
        line = json.dumps(record.to_json(), separators=(",", ":"), allow_nan=False) + "\n"
        data = line.encode("utf-8")
        whole = os.fstat(self._fd).st_size  # the end of the last whole line
        written = 0
        try:
            while written < len(data):
                written += os.write(self._fd, data[written:])
            os.fsync(self._fd)
        except OSError:
            # A full disk (ENOSPC, EDQUOT) can take part of the line: cut it off, so the file
            # stays whole lines -- every trial before this one readable by any JSON-lines reader.
            try:
                os.ftruncate(self._fd, whole)
            except OSError:
                pass  # read_trials still skips a torn last line
            raise
        self.count += 1

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "TrialLog":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def iter_trial_docs(path: Path) -> Iterator[dict]:
    """The JSON objects of ``path``, skipping a torn last line left by a killed writer."""
    with open(path, "rb") as f:
        lines = f.read().split(b"\n")
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            yield json.loads(raw)
        except json.JSONDecodeError:
            if number == len(lines):  # the unterminated last line of an interrupted write
                log.warning("%s: ignoring a partial last line (the run was killed mid-write)", path)
                continue
            raise ValueError(f"{path}:{number}: not a JSON line") from None


def read_trials(path: Path) -> list[TrialRecord]:
    """Every complete record of ``path``, in the order they were written."""
    return [TrialRecord.from_json(doc) for doc in iter_trial_docs(path)]
