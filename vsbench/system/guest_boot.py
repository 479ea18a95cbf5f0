"""What booting Debian's stock kernel under QEMU needs, shared by the kernel lab and VNF VMs.

Standard library only, and no other vsbench import: ``tools/kernel-lab/kernel_lab.py`` loads
this module before any venv exists. It finds the kernel (``linux-image-amd64``), a static
busybox (``busybox-static``) and the module files with their dependencies, and writes
``newc`` cpio archives, the format the kernel unpacks an initramfs from.
"""

from __future__ import annotations

import glob
import re
import subprocess
from pathlib import Path
from typing import Iterable, Sequence

#: A minimal firmware that boots a -kernel image faster than SeaBIOS (qemu-system-data).
QBOOT = "/usr/share/qemu/qboot.rom"


class GuestBootError(Exception):
    """A piece of the guest (kernel, busybox, module) is missing; one line for the user."""


def find_kernel(version: str | None = None, hint: str = "apt-get install linux-image-amd64") -> tuple[Path, str]:
    """The Debian kernel image to boot and its version (newest installed unless given)."""
    if version:
        image = Path(f"/boot/vmlinuz-{version}")
        if not image.is_file():
            raise GuestBootError(f"kernel {version} not installed: no {image} ({hint})")
        return image, version
    candidates = []
    for image in glob.glob("/boot/vmlinuz-*"):
        ver = image[len("/boot/vmlinuz-"):]
        if Path(f"/lib/modules/{ver}/modules.dep").is_file():
            candidates.append((version_key(ver), Path(image), ver))
    if not candidates:
        raise GuestBootError(f"no Debian kernel with modules under /boot and /lib/modules ({hint})")
    _, image, ver = max(candidates)
    return image, ver


def version_key(version: str) -> tuple:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"[.-]", version))


def find_busybox(hint: str = "apt-get install busybox-static") -> Path:
    for candidate in ("/bin/busybox", "/usr/bin/busybox"):
        path = Path(candidate)
        if path.is_file() and is_static(path):
            return path
    raise GuestBootError(f"a static busybox is needed for the initramfs ({hint})")


def is_static(path: Path) -> bool:
    """True for an ELF file without a PT_INTERP program header (i.e. statically linked)."""
    data = path.read_bytes()[:65536]
    if data[:4] != b"\x7fELF" or data[4] != 2:
        return False
    phoff = int.from_bytes(data[0x20:0x28], "little")
    phentsize = int.from_bytes(data[0x36:0x38], "little")
    phnum = int.from_bytes(data[0x38:0x3A], "little")
    for i in range(phnum):
        off = phoff + i * phentsize
        if int.from_bytes(data[off:off + 4], "little") == 3:  # PT_INTERP
            return False
    return True


def module_load_order(kernel_version: str, modules: Sequence[str]) -> list[Path]:
    """Module files to insmod, dependencies first, each once (built-ins contribute none)."""
    ordered: list[Path] = []
    for module in modules:
        proc = subprocess.run(
            ["modprobe", "--show-depends", "-S", kernel_version, module],
            capture_output=True, text=True, check=False,
        )
        if proc.returncode != 0:
            raise GuestBootError(f"module {module} not found for kernel {kernel_version}: {proc.stderr.strip()}")
        for line in proc.stdout.splitlines():
            parts = line.split()
            if parts and parts[0] == "insmod":
                path = Path(parts[1])
                if path not in ordered:
                    ordered.append(path)
    return ordered


def cpio_entry(name: str, mode: int, data: bytes = b"", ino: int = 0) -> bytes:
    """One entry of a ``newc`` cpio archive (the format the kernel unpacks an initramfs from).
    Every field that could vary between builds (owner, mtime) is zero, so the same inputs
    give the same bytes."""
    encoded = name.encode() + b"\0"
    fields = [ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(encoded), 0]
    header = b"070701" + b"".join(f"{v:08x}".encode() for v in fields)
    out = header + encoded
    out += b"\0" * (-len(out) % 4)
    out += data
    out += b"\0" * (-len(out) % 4)
    return out


def cpio_archive(directories: Iterable[str], files: Iterable[tuple[str, int, bytes]],
                 symlinks: Iterable[tuple[str, str]] = ()) -> bytes:
    """A whole archive: ``directories`` (created 0755, parents first), ``files`` as
    ``(path, mode, data)`` (mode without the file-type bits), ``symlinks`` as
    ``(path, target)``, then the trailer."""
    entries: list[bytes] = []
    ino = 1
    for directory in directories:
        entries.append(cpio_entry(directory, 0o040755, ino=ino))
        ino += 1
    for path, mode, data in files:
        entries.append(cpio_entry(path, 0o100000 | mode, data, ino=ino))
        ino += 1
    for path, target in symlinks:
        entries.append(cpio_entry(path, 0o120777, target.encode(), ino=ino))
        ino += 1
    entries.append(cpio_entry("TRAILER!!!", 0))
    return b"".join(entries)


def parent_dirs(paths: Iterable[str]) -> list[str]:
    """Every directory above ``paths`` (relative, no leading /), parents first, once each."""
    found: set[str] = set()
    for path in paths:
        parts = path.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            found.add("/".join(parts[:i]))
    return sorted(found, key=lambda d: (d.count("/"), d))
