"""What is mounted below a directory, read from /proc/mounts.

Why: the lab removes its host trees with ``rm -rf --one-file-system`` only when nothing is
mounted below them; a bind mount of /dev left under a rootfs would otherwise be emptied.
"""

from __future__ import annotations

from pathlib import Path


def _unescape(field: str) -> str:
    """/proc/mounts escapes space, tab, newline and backslash as octal (\\040 ...)."""
    return field.encode().decode("unicode_escape")


def mounted_below(directory: Path, mounts_text: str | None = None) -> list[str]:
    """Mount points strictly below ``directory`` (or the directory itself)."""
    if mounts_text is None:
        mounts_text = Path("/proc/mounts").read_text()
    base = str(Path(directory).resolve())
    found = []
    for line in mounts_text.splitlines():
        fields = line.split()
        if len(fields) < 2:
            continue
        point = _unescape(fields[1])
        if point == base or point.startswith(base + "/"):
            found.append(point)
    return found
