"""Build DPDK's l3fwd example from the sources Debian ships, once, cached and reproducible.

Inputs, all from Debian packages: the example's sources (``dpdk-doc``:
``/usr/share/dpdk/examples/l3fwd`` and the ``common`` headers beside it), DPDK's headers and
libraries (``libdpdk-dev``, found with ``pkg-config libdpdk``), ``gcc``, ``make`` and
``pkg-config``. The example's own Makefile builds it (``make shared``) in a copy of the
sources; the result is kept under ``~/.cache/vsbench/l3fwd/<key>/`` where the key hashes
the DPDK version, the compiler's version, the compile flags and every source file: the same
inputs reuse the build, a changed package rebuilds. The build runs in a directory of fixed
name so that two builds of the same inputs give the same bytes.

Beside l3fwd, ``vsb-telemetry`` (a 40-line C client of DPDK's telemetry socket) is built
for VM guests, which have no Python to read l3fwd's counters with.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

#: Debian's DPDK example sources; ``VSBENCH_DPDK_EXAMPLES`` points elsewhere (another DPDK).
EXAMPLES_DIR = Path("/usr/share/dpdk/examples")
TELEMETRY_SOURCE = Path(__file__).with_name("telemetry_client.c")
TOOLS = {"gcc": "gcc", "make": "make", "pkg-config": "pkg-config"}
#: What a missing piece is fixed with (Debian package names).
REMEDIES = {
    "sources": "apt-get install dpdk-doc",
    "libdpdk": "apt-get install libdpdk-dev",
    "gcc": "apt-get install gcc libc6-dev",
    "make": "apt-get install make",
    "pkg-config": "apt-get install pkg-config",
}
BUILD_TIMEOUT_S = 600

#: Source changes applied to the copy before building, each ``(file, text, replacement)``.
#: l3fwd asks every port for IPv4/UDP/TCP checksum offload on receive and exits when a
#: port lacks one ("Rx offloads 0xe doesn't match Rx offloads capabilities"); virtio ports
#: (virtio-user on the host, virtio-net in a VM) have no IPv4 checksum offload. The patch
#: asks only for what the port offers; l3fwd's RFC 1812 checks do not rely on it.
PATCHES: tuple[tuple[str, str, str], ...] = (
    ("l3fwd/main.c",
     "\t\tlocal_port_conf.rx_adv_conf.rss_conf.rss_hf &=\n\t\t\tdev_info.flow_type_rss_offloads;\n",
     "\t\tlocal_port_conf.rx_adv_conf.rss_conf.rss_hf &=\n\t\t\tdev_info.flow_type_rss_offloads;\n"
     "\t\tlocal_port_conf.rxmode.offloads &= dev_info.rx_offload_capa; /* vsbench: virtio */\n"),
    ("l3fwd/main.c",
     "\t\t\trxq_conf.offloads = port_conf.rxmode.offloads;\n",
     "\t\t\trxq_conf.offloads = port_conf.rxmode.offloads & dev_info.rx_offload_capa; /* vsbench */\n"),
)


class BuildError(Exception):
    """l3fwd could not be built; one line naming the missing piece or the compiler's error."""


@dataclass(frozen=True)
class L3fwdBuild:
    """A built l3fwd: the binary, the telemetry client, and what it was built from."""

    binary: Path
    telemetry_client: Path
    key: str
    dpdk_version: str
    built_now: bool
    build_s: float


def examples_dir_in_use() -> Path:
    return Path(os.environ.get("VSBENCH_DPDK_EXAMPLES") or EXAMPLES_DIR)


def missing_toolchain(examples_dir: Path | None = None) -> list[tuple[str, str]]:
    """``(what, remedy)`` for every build input this host lacks (no side effects)."""
    examples_dir = examples_dir or examples_dir_in_use()
    missing = []
    if not (examples_dir / "l3fwd" / "Makefile").is_file() or not (examples_dir / "common").is_dir():
        missing.append((f"l3fwd sources in {examples_dir}", REMEDIES["sources"]))
    for name, binary in TOOLS.items():
        if shutil.which(binary) is None:
            missing.append((f"{binary} (to build l3fwd)", REMEDIES[name]))
    if shutil.which("pkg-config") is not None and _pkg_config("--modversion") is None:
        missing.append(("libdpdk (pkg-config libdpdk)", REMEDIES["libdpdk"]))
    return missing


def _pkg_config(*args: str) -> str | None:
    proc = subprocess.run(["pkg-config", *args, "libdpdk"], capture_output=True, text=True, check=False, timeout=30)
    return proc.stdout.strip() if proc.returncode == 0 else None


def _compiler_version() -> str:
    proc = subprocess.run(["gcc", "--version"], capture_output=True, text=True, check=False, timeout=30)
    return (proc.stdout.splitlines() or ["?"])[0]


def build_key(examples_dir: Path) -> tuple[str, str]:
    """``(key, dpdk_version)``: what decides whether a cached build can be reused."""
    version = _pkg_config("--modversion")
    if version is None:
        raise BuildError(f"pkg-config finds no libdpdk ({REMEDIES['libdpdk']})")
    digest = hashlib.sha256()
    for part in (version, _pkg_config("--cflags") or "", _pkg_config("--libs") or "", _compiler_version()):
        digest.update(part.encode() + b"\0")
    for directory in (examples_dir / "l3fwd", examples_dir / "common"):
        for path in sorted(p for p in directory.rglob("*") if p.is_file()):
            digest.update(str(path.relative_to(examples_dir)).encode() + b"\0")
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    digest.update(TELEMETRY_SOURCE.read_bytes())
    digest.update(repr(PATCHES).encode())
    return f"{version}-{digest.hexdigest()[:16]}", version


def default_cache_dir() -> Path:
    base = os.environ.get("VSBENCH_L3FWD_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "vsbench", "l3fwd")
    return Path(base)


def ensure_built(cache_dir: Path | None = None, examples_dir: Path | None = None) -> L3fwdBuild:
    """The cached build for today's inputs; built first (a few seconds) when missing."""
    examples_dir = examples_dir or examples_dir_in_use()
    missing = missing_toolchain(examples_dir)
    if missing:
        what, remedy = missing[0]
        raise BuildError(f"cannot build l3fwd: missing {what} ({remedy})")
    key, version = build_key(examples_dir)
    cache = cache_dir or default_cache_dir()
    target = cache / key
    binary, client = target / "l3fwd", target / "vsb-telemetry"
    if binary.is_file() and client.is_file():
        return L3fwdBuild(binary, client, key, version, built_now=False, build_s=0.0)
    started = time.monotonic()
    cache.mkdir(parents=True, exist_ok=True)
    work = cache / "build"  # fixed name: the same inputs give the same bytes
    lock = cache / "build.lock"
    import fcntl

    with open(lock, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # two runs building at once: one builds, one waits
        if binary.is_file() and client.is_file():
            return L3fwdBuild(binary, client, key, version, built_now=False, build_s=0.0)
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir()
        shutil.copytree(examples_dir / "l3fwd", work / "l3fwd")
        shutil.copytree(examples_dir / "common", work / "common")
        apply_patches(work)
        log.info("building l3fwd (DPDK %s) in %s", version, work)
        env = {**os.environ, "LC_ALL": "C", "SOURCE_DATE_EPOCH": "0"}
        _run(["make", "-C", str(work / "l3fwd"), "shared", f"-j{os.cpu_count() or 1}"], env, work / "make.log")
        _run(["gcc", "-O2", "-o", str(work / "vsb-telemetry"), str(TELEMETRY_SOURCE)], env, work / "make.log")
        staged = cache / f"{key}.tmp"
        shutil.rmtree(staged, ignore_errors=True)
        staged.mkdir()
        shutil.copy2(work / "l3fwd" / "build" / "l3fwd-shared", staged / "l3fwd")
        shutil.copy2(work / "vsb-telemetry", staged / "vsb-telemetry")
        shutil.copy2(work / "make.log", staged / "build.log")
        shutil.rmtree(target, ignore_errors=True)
        staged.replace(target)
        shutil.rmtree(work, ignore_errors=True)
    build_s = time.monotonic() - started
    log.info("l3fwd built in %.1f s: %s", build_s, binary)
    return L3fwdBuild(binary, client, key, version, built_now=True, build_s=build_s)


def apply_patches(tree: Path, patches: tuple[tuple[str, str, str], ...] = PATCHES) -> None:
    """Apply :data:`PATCHES` to the copied sources; a text not found (another DPDK) is an error."""
    for name, old, new in patches:
        path = tree / name
        text = path.read_text()
        if text.count(old) != 1:
            raise BuildError(f"cannot patch {name} for virtio ports: the DPDK {name} differs from 22.11's "
                             "(set vnf.l3fwd.binary to a build that runs on virtio)")
        path.write_text(text.replace(old, new))


def _run(argv: list[str], env: dict[str, str], log_path: Path) -> None:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, env=env, check=False, timeout=BUILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise BuildError(f"{argv[0]} did not finish within {BUILD_TIMEOUT_S} s") from None
    with open(log_path, "a", encoding="utf-8") as handle:
        handle.write(f"$ {' '.join(argv)}\n{proc.stdout}{proc.stderr}")
    if proc.returncode != 0:
        errors = [line for line in proc.stderr.splitlines() if "error" in line.lower()] or proc.stderr.splitlines() or ["?"]
        raise BuildError(f"building l3fwd failed ({argv[0]} exit {proc.returncode}): {errors[0][:200]}")
