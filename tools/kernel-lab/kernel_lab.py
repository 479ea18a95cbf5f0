"""Run one command under Debian's stock kernel in QEMU (TCG), seeing the host's userland.

Why: the development and CI machines run a kernel without the ``openvswitch`` and
``cls_flower`` modules, so the kernel-datapath switches (``ovs_kernel``, ``ovs_tc``) cannot
be measured on them. Debian's ``linux-image-amd64`` has both. This lab boots that kernel in
``qemu-system-x86_64`` with software emulation and runs the command inside it, with the
host's root filesystem as the guest's root, so the same OvS, trafgen, Python venv and
vsbench run inside.

How:

* The guest root is the host's ``/`` exported read-only over virtio-9p, under an overlay
  whose upper layer is a tmpfs: the guest can write anywhere, and nothing reaches the host
  except through the read-write shares (the working directory by default, ``--rw`` for
  more) and the exchange directory.
* A tiny initramfs (busybox-static plus the handful of modules needed to mount 9p) is
  built once per kernel and cached. Every other module (openvswitch, cls_flower, ...) is
  loaded by the guest from the host's ``/lib/modules/<guest kernel>``, which the
  ``linux-image-amd64`` package installed there.
* The exchange directory (a fresh host temp dir, shared read-write) carries the job
  (argv, cwd, environment), the guest agent, and back the exit code. The command's stdout
  and stderr are two virtio consoles wired to this process's stdout and stderr; the kernel
  console goes to ``boot.log`` in the exchange directory, shown when the guest fails.
* The run time is bounded (``--timeout``): on expiry the QEMU process this tool started is
  killed by its pid and the exit code is 124.

Only Debian packages are needed: ``qemu-system-x86 linux-image-amd64 busybox-static``
(``tools/kernel-lab/setup`` installs them). Standard library only, so it runs before any
venv exists.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Sequence

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))  # the repository root: vsbench/system/guest_boot.py
from vsbench.system import guest_boot  # noqa: E402 - standard library only
from vsbench.system.guest_boot import QBOOT, is_static as _is_static, version_key as _version_key  # noqa: E402,F401
GUEST_AGENT = HERE / "guest_agent.py"
INIT_SCRIPT = HERE / "initramfs_init.sh"

#: Modules the initramfs must load itself, before the 9p root is mounted. Their
#: dependencies are resolved with ``modprobe --show-depends`` against the guest kernel.
INITRAMFS_MODULES = ("virtio_pci", "virtio_console", "9pnet_virtio", "9p", "overlay", "virtio_rng")

#: Modules the guest agent loads before running the command (kernel datapath + TC offload
#: path + the testbed's veth + tun, which OvS's userspace datapath opens for a bridge's
#: internal port); more with ``--modules``.
DEFAULT_GUEST_MODULES = (
    "openvswitch", "cls_flower", "act_mirred", "act_gact", "sch_ingress", "veth", "tun",
)

#: The guest module that drives each ``--nic-model``.
NIC_MODULES = {"e1000e": "e1000e", "virtio-net-pci": "virtio_net"}

EXIT_TIMEOUT = 124
EXIT_LAB_FAILURE = 125
EXIT_USAGE = 2

PACKAGES_HINT = "apt-get install qemu-system-x86 linux-image-amd64 busybox-static (tools/kernel-lab/setup)"


class LabError(Exception):
    """The lab itself could not run (missing package, boot failure); one line for the user."""


# --------------------------------------------------------------------------- discovery
# Kernel, busybox, module and cpio helpers are shared with the VNF VMs (vsbench/system/
# guest_boot.py, standard library only); LabError keeps this tool's one-line messages.

def find_kernel(version: str | None = None) -> tuple[Path, str]:
    """The Debian kernel image to boot and its version (newest installed unless given)."""
    try:
        return guest_boot.find_kernel(version, PACKAGES_HINT)
    except guest_boot.GuestBootError as exc:
        raise LabError(str(exc)) from None


def find_qemu() -> str:
    qemu = shutil.which("qemu-system-x86_64")
    if not qemu:
        raise LabError(f"qemu-system-x86_64 not found ({PACKAGES_HINT})")
    return qemu


def find_busybox() -> Path:
    try:
        return guest_boot.find_busybox(PACKAGES_HINT)
    except guest_boot.GuestBootError as exc:
        raise LabError(str(exc)) from None


def module_load_order(kernel_version: str, modules: Sequence[str]) -> list[Path]:
    """Module files to insmod, dependencies first, each once (built-ins contribute none)."""
    try:
        return guest_boot.module_load_order(kernel_version, modules)
    except guest_boot.GuestBootError as exc:
        raise LabError(str(exc)) from None


# --------------------------------------------------------------------------- initramfs

def build_initramfs_bytes(busybox: Path, modules: Sequence[Path], init_script: bytes) -> bytes:
    """An uncompressed newc archive: /init, /bin/busybox, /modules/NN-name.ko, mount points."""
    files = [("init", 0o755, init_script), ("bin/busybox", 0o755, busybox.read_bytes())]
    files += [(f"modules/{index:02d}-{module.name}", 0o644, module.read_bytes())
              for index, module in enumerate(modules)]
    return guest_boot.cpio_archive(
        ("bin", "dev", "proc", "sys", "modules", "lower", "upper", "newroot", "xchg"), files)


def cache_dir() -> Path:
    base = os.environ.get("VSBENCH_KERNEL_LAB_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "vsbench", "kernel-lab"
    )
    path = Path(base)
    path.mkdir(parents=True, exist_ok=True)
    return path


def ensure_initramfs(kernel_version: str) -> Path:
    """Build (once per kernel, busybox and init script) and return the cached initramfs."""
    busybox = find_busybox()
    modules = module_load_order(kernel_version, INITRAMFS_MODULES)
    init_script = INIT_SCRIPT.read_bytes()
    digest = hashlib.sha256()
    digest.update(init_script)
    for path in (busybox, *modules):
        st = path.stat()
        digest.update(f"{path}:{st.st_size}:{st.st_mtime_ns}".encode())
    target = cache_dir() / f"initramfs-{kernel_version}-{digest.hexdigest()[:12]}.cpio"
    if not target.is_file():
        data = build_initramfs_bytes(busybox, modules, init_script)
        tmp = target.with_suffix(".tmp")
        tmp.write_bytes(data)
        tmp.replace(target)
    return target


# --------------------------------------------------------------------------- the run

@dataclasses.dataclass
class LabConfig:
    argv: list[str]
    cwd: Path
    rw_dirs: list[Path]
    memory_mib: int = 2048
    cpus: int = 2
    timeout_s: float = 1800.0
    kernel_version: str | None = None
    modules: tuple[str, ...] = DEFAULT_GUEST_MODULES
    env: dict[str, str] = dataclasses.field(default_factory=dict)
    verbose: bool = False
    kernel_args: tuple[str, ...] = ()
    #: Pairs of emulated PCI NICs (``nic_model``), each pair cabled to each other through
    #: a QEMU hub of its own: ports with a device behind them, as a lab's NICs are.
    nic_pairs: int = 0
    nic_model: str = "e1000e"


def qemu_argv(qemu: str, kernel: Path, initramfs: Path, xchg: Path, config: LabConfig,
              rw_tags: Sequence[tuple[str, Path]], out_fd: int, err_fd: int) -> list[str]:
    """The QEMU command line: no display, 9p shares, two virtio-serial ports writing the
    guest command's stdout and stderr into the pipes ``out_fd``/``err_fd``, and no NIC
    unless ``config.nic_pairs`` asks for pairs of them."""
    cmdline = " ".join([
        "console=ttyS0", "loglevel=4", "panic=-1", "rdinit=/init",
        f"vsbench_lab_9p={2 + len(rw_tags)}",  # 9p devices the initramfs waits for
        "tsc=reliable", "no_timer_check", "mitigations=off", "nokaslr", "edd=off",
        *config.kernel_args,
    ])
    argv = [
        qemu, "-nodefaults", "-no-user-config", "-no-reboot", "-nographic",
        "-machine", "q35", "-accel", "tcg,thread=multi", "-cpu", "max",
        "-smp", str(config.cpus), "-m", f"{config.memory_mib}M",
        *(["-bios", QBOOT] if Path(QBOOT).is_file() else []),
        "-kernel", str(kernel), "-initrd", str(initramfs), "-append", cmdline,
        "-serial", f"file:{xchg / 'boot.log'}",
        "-device", "virtio-rng-pci",
        "-device", "virtio-serial-pci",
        "-chardev", f"file,id=out,path=/proc/self/fd/{out_fd}",
        "-device", "virtserialport,chardev=out,name=stdout",
        "-chardev", f"file,id=err,path=/proc/self/fd/{err_fd}",
        "-device", "virtserialport,chardev=err,name=stderr",
        "-virtfs", "local,path=/,mount_tag=hostroot,security_model=passthrough,readonly=on,multidevs=remap",
        "-virtfs", f"local,path={xchg},mount_tag=xchg,security_model=passthrough,multidevs=remap",
    ]
    for tag, path in rw_tags:
        argv += ["-virtfs", f"local,path={path},mount_tag={tag},security_model=passthrough,multidevs=remap"]
    return argv + nic_argv(config.nic_pairs, config.nic_model)


def nic_argv(pairs: int, model: str) -> list[str]:
    """QEMU options for ``pairs`` pairs of ``model`` NICs, the two of pair k on hub k (a
    cable between them): MACs 52:54:00:00:0k:0{1,2}. A virtio-net NIC is given a link
    speed (10 Gb/s, as ethtool then reports it); an e1000e negotiates 1000 Mb/s itself."""
    speed = ",speed=10000,duplex=full" if model == "virtio-net-pci" else ""
    argv: list[str] = []
    for k in range(pairs):
        for end in (1, 2):
            netdev = f"nic{k}p{end}"
            argv += ["-netdev", f"hubport,id={netdev},hubid={k}",
                     "-device", f"{model},netdev={netdev},mac=52:54:00:00:{k:02x}:{end:02x}{speed}"]
    return argv


def _rw_shares(dirs: Sequence[Path]) -> list[tuple[str, Path]]:
    """Distinct existing directories, outermost first, each with a 9p tag (tags <= 31 chars)."""
    unique: list[Path] = []
    for d in sorted({d.resolve() for d in dirs}, key=lambda p: len(p.parts)):
        if not d.is_dir():
            raise LabError(f"--rw {d}: not a directory")
        if d == Path("/"):
            raise LabError("refusing to share / read-write with the guest; run from a project "
                           "directory (the working directory is shared) or name directories with --rw")
        if any(d == u or u in d.parents for u in unique):
            continue
        unique.append(d)
    return [(f"rw{i}", d) for i, d in enumerate(unique)]


def run_in_lab(config: LabConfig) -> int:
    """Boot the lab, run ``config.argv`` in it, return its exit code (124 timeout, 125 lab)."""
    qemu = find_qemu()
    kernel, version = find_kernel(config.kernel_version)
    initramfs = ensure_initramfs(version)
    shares = _rw_shares([config.cwd, *config.rw_dirs])
    xchg = Path(tempfile.mkdtemp(prefix="vsbench-kernel-lab-"))
    started = time.monotonic()
    proc: subprocess.Popen | None = None
    try:
        shutil.copy(GUEST_AGENT, xchg / "agent.py")
        (xchg / "mounts").write_text("".join(f"{tag} {path}\n" for tag, path in shares))
        job = {
            "argv": config.argv,
            "cwd": str(config.cwd),
            "env": config.env,
            "modules": list(config.modules),
            "timeout_s": config.timeout_s,
            "verbose": config.verbose,
        }
        (xchg / "job.json").write_text(json.dumps(job))
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        argv = qemu_argv(qemu, kernel, initramfs, xchg, config, shares, out_w, err_w)
        if config.verbose:
            print(f"kernel-lab: kernel {version}, {config.cpus} vCPU, {config.memory_mib} MiB, "
                  f"rw: {', '.join(str(p) for _, p in shares)}", file=sys.stderr)
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, start_new_session=True,
                                pass_fds=(out_w, err_w))
        os.close(out_w)
        os.close(err_w)
        relays = [_relay(out_r, sys.stdout), _relay(err_r, sys.stderr)]
        # The guest bounds the command itself; this is the backstop for a hung guest.
        deadline = config.timeout_s + 120.0
        try:
            proc.wait(timeout=deadline)
        except subprocess.TimeoutExpired:
            _kill(proc)
            print(f"kernel-lab: guest did not finish within {deadline:g} s; killed", file=sys.stderr)
            return EXIT_TIMEOUT
        finally:
            for relay in relays:
                relay.join(timeout=10)
        result_file = xchg / "result.json"
        if not result_file.is_file():
            tail = _tail(xchg / "boot.log", 15)
            print(f"kernel-lab: the guest ended without a result (qemu exit {proc.returncode}); "
                  f"kernel log tail:\n{tail}", file=sys.stderr)
            return EXIT_LAB_FAILURE
        result = json.loads(result_file.read_text())
        if config.verbose:
            print(f"kernel-lab: boot {result.get('boot_s', 0):.2f} s (guest clock), command "
                  f"{result.get('command_s', 0):.2f} s, total {time.monotonic() - started:.2f} s; "
                  f"guest/host clock {result.get('clock_ratio', 0):.3f}, "
                  f"clocksource {result.get('clocksource', '?')}", file=sys.stderr)
        if result.get("error"):
            print(f"kernel-lab: {result['error']}", file=sys.stderr)
        return int(result["returncode"])
    finally:
        if proc is not None and proc.poll() is None:
            _kill(proc)
        if os.environ.get("VSBENCH_KERNEL_LAB_KEEP"):
            print(f"kernel-lab: kept {xchg}", file=sys.stderr)
        else:
            shutil.rmtree(xchg, ignore_errors=True)


def _relay(fd: int, stream) -> threading.Thread:
    """Copy what the guest writes into pipe ``fd`` to ``stream`` until QEMU closes it."""

    def copy() -> None:
        with os.fdopen(fd, "rb", buffering=0) as source:
            target = stream.buffer
            while chunk := source.read(65536):
                target.write(chunk)
                target.flush()

    thread = threading.Thread(target=copy, name=f"kernel-lab-relay-{fd}", daemon=True)
    thread.start()
    return thread


def _kill(proc: subprocess.Popen) -> None:
    """End the QEMU process this tool started, by its process group id."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def _tail(path: Path, lines: int) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no kernel log)"


# --------------------------------------------------------------------------- CLI

def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="tools/kernel-lab/run",
        description="Run a command under Debian's stock kernel in QEMU (TCG) with the host's "
                    "userland; the working directory is shared read-write.",
    )
    parser.add_argument("--memory-mib", type=int, default=2048, help="guest memory (default 2048)")
    parser.add_argument("--cpus", type=int, default=2, help="guest vCPUs (default 2)")
    parser.add_argument("--timeout", type=float, default=1800.0, help="bound on the command's run time, s")
    parser.add_argument("--kernel", default=None, help="kernel version under /boot (default: newest)")
    parser.add_argument("--rw", action="append", default=[], type=Path,
                        help="another host directory the guest may write (repeatable)")
    parser.add_argument("--modules", default=",".join(DEFAULT_GUEST_MODULES),
                        help="modules to load before the command, comma separated")
    parser.add_argument("--kernel-args", default="", help="extra kernel command line words")
    parser.add_argument("--nic-pairs", type=int, default=0,
                        help="pairs of emulated PCI NICs cabled to each other (default 0)")
    parser.add_argument("--nic-model", default="e1000e", choices=("e1000e", "virtio-net-pci"),
                        help="the emulated NIC (default e1000e; its module is loaded in the guest)")
    parser.add_argument("-v", "--verbose", action="store_true", help="print boot and run times")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND [ARGS...]")
    args = parser.parse_args(argv)
    if args.command and args.command[0] == "--":
        args.command = args.command[1:]
    if not args.command:
        parser.error("no command given (tools/kernel-lab/run -- COMMAND ...)")
    if not 256 <= args.memory_mib <= 16384:
        parser.error("--memory-mib must be between 256 and 16384")
    if not 1 <= args.cpus <= 8:
        parser.error("--cpus must be between 1 and 8")
    if not 0 <= args.nic_pairs <= 4:
        parser.error("--nic-pairs must be between 0 and 4")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if os.geteuid() != 0:
        print("kernel-lab: needs root (9p passthrough shares keep file ownership)", file=sys.stderr)
        return EXIT_USAGE
    config = LabConfig(
        argv=list(args.command),
        cwd=Path.cwd(),
        rw_dirs=list(args.rw),
        memory_mib=args.memory_mib,
        cpus=args.cpus,
        timeout_s=args.timeout,
        kernel_version=args.kernel,
        modules=tuple(m for m in args.modules.split(",") if m)
        + ((NIC_MODULES[args.nic_model],) if args.nic_pairs else ()),
        env=dict(os.environ),
        verbose=args.verbose,
        kernel_args=tuple(args.kernel_args.split()),
        nic_pairs=args.nic_pairs,
        nic_model=args.nic_model,
    )
    # A TERM to this tool must still end the guest it started (finally: in run_in_lab).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    try:
        return run_in_lab(config)
    except LabError as exc:
        print(f"kernel-lab: {exc}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
