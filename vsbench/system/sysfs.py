"""Reading one value of /sys or /proc where its absence is a fact, not an error.

Host facts are read item by item so that one file a kernel (or a VM) does not have is a
``None`` in the record -- said as such -- rather than a failed check or run.
"""

from __future__ import annotations

from pathlib import Path


def read_text(path: Path) -> str | None:
    """The stripped contents, or None when the file cannot be read (absent, EINVAL, EACCES)."""
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None


def read_int(path: Path) -> int | None:
    """The file's integer, or None when absent or not an integer."""
    text = read_text(path)
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None
