"""The guest image of a VNF VM: Debian's kernel and an initramfs carrying the VNF.

Built from what Debian packages put on this host, nothing downloaded: the kernel of
``linux-image-amd64`` (``/boot/vmlinuz-*`` and its modules), ``busybox-static`` as the
guest's only userland, the VNF program(s) asked for (``dpdk-testpmd``, a built ``l3fwd``)
with every shared library ``ldd`` names, and the DPDK drivers a guest needs for virtio NICs
(PCI bus, virtio net, ring mempool) at the path the EAL loads drivers from. Files keep their
host paths, so the binaries run unchanged.

The guest's ``/init`` mounts hugetlbfs, loads ``uio_pci_generic``, hands every virtio-net
PCI function to it (DPDK drives them from user space) and then keeps a shell on the serial
console whose prompt is :data:`PROMPT`; the VM runner drives the VNF through it.

The archive is deterministic (no owners, no times) and cached under a key made of the
content hashes of everything in it, so the same packages give the same image and an
upgraded package gives a new one.
"""

from __future__ import annotations

import hashlib
import logging
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from vsbench.system import guest_boot

log = logging.getLogger(__name__)

#: The shell prompt of the guest's console; unlikely in any program's output.
PROMPT = "vsb-guest# "
#: Printed once the guest has bound its NICs and is ready for commands.
READY_MARK = "VSBENCH-GUEST-READY"
#: Kernel modules the guest loads: user-space I/O for the virtio NICs DPDK drives.
GUEST_MODULES = ("uio_pci_generic",)
#: Where Debian's DPDK 22.11 EAL loads its drivers from (RTE_EAL_PMD_PATH).
DPDK_DRIVER_DIR = Path("/usr/lib/x86_64-linux-gnu/dpdk/pmds-23.0")
#: The DPDK drivers a guest with virtio NICs needs (each from a librte-* package).
GUEST_DPDK_DRIVERS = ("librte_bus_pci.so.23", "librte_net_virtio.so.23", "librte_mempool_ring.so.23")
#: The guest's library search path (no ld.so.cache in the initramfs).
GUEST_LIBRARY_PATH = "/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu:/lib64:/usr/lib"
HINT = "apt-get install linux-image-amd64 busybox-static kmod"

INIT_SCRIPT = f"""#!/bin/busybox sh
# /init of a vsbench VNF guest (vsbench/system/vm/image.py).
/bin/busybox --install -s /bin
# the initramfs root is world-writable; DPDK's EAL refuses to load drivers below such a dir
chmod 0755 /
export PATH=/bin:/usr/bin:/usr/sbin:/sbin
export LD_LIBRARY_PATH={GUEST_LIBRARY_PATH}
mount -t devtmpfs dev /dev
mount -t proc proc /proc
mount -t sysfs sys /sys
mkdir -p /dev/hugepages /tmp /var/run /run
mount -t hugetlbfs nodev /dev/hugepages
mount -t tmpfs tmp /tmp
for m in /modules/*.ko; do insmod "$m" || echo "vsbench-guest: insmod $m failed"; done
# virtio-net (vendor 1af4, class 0x0200xx) functions go to uio_pci_generic for DPDK
for d in /sys/bus/pci/devices/*; do
    [ "$(cat "$d/vendor")" = 0x1af4 ] || continue
    case "$(cat "$d/class")" in 0x0200*) ;; *) continue ;; esac
    echo uio_pci_generic > "$d/driver_override"
    echo "${{d##*/}}" > /sys/bus/pci/drivers_probe
done
export PS1='{PROMPT}'
echo {READY_MARK}
while true; do setsid cttyhack sh; done
"""


#: Bump when the archive's layout changes (part of the cache key).
IMAGE_LAYOUT = "2: files at real paths, other names symlinks"


class GuestImageError(Exception):
    """The guest image cannot be built here; one line naming what is missing."""


@dataclass(frozen=True)
class GuestImage:
    """A bootable guest: ``kernel`` and ``initramfs`` paths, and what is inside."""

    kernel: Path
    initramfs: Path
    kernel_version: str
    key: str
    programs: tuple[str, ...]
    size_bytes: int

    def describe(self) -> dict[str, str]:
        """For the SUT bill of materials (sysinfo.json)."""
        return {"guest_kernel": self.kernel_version, "guest_image": self.initramfs.name,
                "guest_programs": " ".join(self.programs)}


def shared_libraries(binary: Path) -> list[Path]:
    """The shared libraries ``binary`` loads (``ldd``), dynamic loader included."""
    proc = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=False, timeout=60)
    if proc.returncode != 0:
        raise GuestImageError(f"ldd {binary} failed: {(proc.stderr or proc.stdout).strip()[:200]}")
    found = []
    for line in proc.stdout.splitlines():
        parts = line.split()
        if "=>" in parts:
            target = parts[parts.index("=>") + 1]
            if target == "not":
                raise GuestImageError(f"{binary}: library {parts[0]} not found (ldd)")
            if target.startswith("/"):
                found.append(Path(target))
        elif parts and parts[0].startswith("/"):
            found.append(Path(parts[0]))
    return found


def guest_files(programs: Sequence[Path], drivers: Sequence[str] = GUEST_DPDK_DRIVERS,
                driver_dir: Path = DPDK_DRIVER_DIR) -> dict[str, Path]:
    """Guest path (relative) -> host file to copy there, for the programs, the DPDK
    drivers and the closure of their libraries."""
    files: dict[str, Path] = {}
    binaries = [(str(p).lstrip("/"), Path(p)) for p in programs]
    for driver in drivers:
        path = driver_dir / driver
        if not path.exists():
            raise GuestImageError(f"DPDK driver {path} missing (apt-get install "
                                  f"{_driver_package(driver)})")
        # the EAL loads "*.so" and "*.so.<ABI>.0" from its driver dir, not "*.so.23"
        binaries.append((str(driver_dir / (driver.split(".so")[0] + ".so")).lstrip("/"), path))
    for name, binary in binaries:
        if not binary.is_file():
            raise GuestImageError(f"{binary} not found")
        files[name] = binary
        for lib in shared_libraries(binary):
            files.setdefault(str(lib).lstrip("/"), lib)
    return files


def _driver_package(driver: str) -> str:
    """librte_net_virtio.so.23 -> librte-net-virtio23 (Debian's package naming)."""
    stem = driver.split(".so")[0]
    return stem.replace("_", "-") + "23"


def _digest(paths: Iterable[tuple[str, Path]], extra: bytes) -> str:
    digest = hashlib.sha256(extra)
    for name, path in sorted(paths):
        digest.update(name.encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:16]


def build_initramfs(files: Mapping[str, Path], modules: Sequence[Path], busybox: Path,
                    init_script: str = INIT_SCRIPT) -> bytes:
    """The uncompressed newc archive: /init, busybox, modules, then every file."""
    entries = [("init", 0o755, init_script.encode()), ("bin/busybox", 0o755, busybox.read_bytes())]
    entries += [(f"modules/{i:02d}-{m.name}", 0o644, m.read_bytes()) for i, m in enumerate(modules)]
    links = []
    stored: set[str] = set()
    # Each library is stored once, at its real path, and every other name ldd or the EAL
    # uses for it is a symlink: the dynamic loader then sees one file (one inode), never
    # two copies of a DPDK driver that would both register themselves (the EAL aborts).
    for name, path in sorted(files.items()):
        real = str(path.resolve()).lstrip("/")
        if real not in stored:
            stored.add(real)
            entries.append((real, 0o755 if os.access(path, os.X_OK) else 0o644, path.read_bytes()))
        if name != real:
            links.append((name, "/" + real))
    fixed = ["bin", "dev", "proc", "sys", "modules", "tmp", "run", "var", "var/run", "usr", "usr/bin", "sbin"]
    names = [name for name, _, _ in entries] + [name for name, _ in links]
    directories = list(dict.fromkeys(fixed + guest_boot.parent_dirs(names)))
    return guest_boot.cpio_archive(directories, entries, sorted(set(links)))


def default_cache_dir() -> Path:
    base = os.environ.get("VSBENCH_VM_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "vsbench", "vm")
    return Path(base)


def ensure_image(programs: Sequence[Path], *, cache_dir: Path | None = None,
                 kernel_version: str | None = None) -> GuestImage:
    """The cached guest image carrying ``programs`` (built when missing; ~1 s)."""
    try:
        kernel, version = guest_boot.find_kernel(kernel_version, HINT)
        busybox = guest_boot.find_busybox(HINT)
        modules = guest_boot.module_load_order(version, GUEST_MODULES)
    except guest_boot.GuestBootError as exc:
        raise GuestImageError(str(exc)) from None
    files = guest_files(programs)
    key = _digest([*files.items(), ("bin/busybox", busybox), *((f"m/{m.name}", m) for m in modules)],
                  INIT_SCRIPT.encode() + version.encode() + IMAGE_LAYOUT.encode())
    cache = cache_dir or default_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    target = cache / f"initramfs-{version}-{key}.cpio"
    if not target.is_file():
        log.info("building the VM guest image %s (%d files)", target, len(files))
        data = build_initramfs(files, modules, busybox)
        tmp = target.with_suffix(f".tmp{os.getpid()}")
        tmp.write_bytes(data)
        tmp.replace(target)
    return GuestImage(kernel=kernel, initramfs=target, kernel_version=version, key=key,
                      programs=tuple(str(p) for p in programs), size_bytes=target.stat().st_size)


def missing_pieces() -> list[tuple[str, str]]:
    """``(what, remedy)`` for each piece a guest image needs that this host lacks."""
    missing = []
    try:
        guest_boot.find_kernel(None, HINT)
    except guest_boot.GuestBootError as exc:
        missing.append((str(exc).split(" (")[0], "apt-get install linux-image-amd64"))
    try:
        guest_boot.find_busybox(HINT)
    except guest_boot.GuestBootError:
        missing.append(("static busybox", "apt-get install busybox-static"))
    for driver in GUEST_DPDK_DRIVERS:
        if not (DPDK_DRIVER_DIR / driver).exists():
            missing.append((f"DPDK driver {driver}", f"apt-get install {_driver_package(driver)}"))
    return missing


def main(argv: Sequence[str] | None = None) -> int:
    """``tools/vm-image PROGRAM...``: build (or find) the cached guest image carrying the
    programs and print where it is and what is in it."""
    import argparse
    import sys
    import time

    parser = argparse.ArgumentParser(prog="tools/vm-image", description=__doc__.splitlines()[0])
    parser.add_argument("programs", nargs="+", type=Path, help="binaries the guest carries (with their libraries)")
    parser.add_argument("--kernel", default=None, help="kernel version under /boot (default: newest)")
    parser.add_argument("--list", action="store_true", help="list every file in the image")
    args = parser.parse_args(argv)
    started = time.monotonic()
    try:
        image = ensure_image(args.programs, kernel_version=args.kernel)
    except GuestImageError as exc:
        print(f"vm-image: {exc}", file=sys.stderr)
        return 2
    print(f"kernel    {image.kernel} ({image.kernel_version})")
    print(f"initramfs {image.initramfs} ({image.size_bytes / 1e6:.1f} MB, key {image.key}, "
          f"{time.monotonic() - started:.1f} s)")
    if args.list:
        for name in sorted(guest_files(args.programs)):
            print(f"  /{name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
