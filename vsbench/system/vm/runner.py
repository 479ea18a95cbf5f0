"""Boot, drive and tear down one VNF VM with libvirt's embedded QEMU driver.

Generic over the VNF: a plugin hands :class:`VirtualMachine` a guest image carrying its
program (:func:`vsbench.system.vm.image.ensure_image`) and the switch's vhost-user sockets;
the VM boots Debian's kernel under TCG with one virtio NIC per socket (guest PCI addresses
:func:`~vsbench.system.vm.domain.nic_pci_address`), and the plugin drives its program over
:attr:`VirtualMachine.console`.

libvirt runs *embedded* (``qemu:///embed?root=<dir>``): the QEMU driver lives in this
process, with its configuration, state, logs and QEMU's pid file under a directory named
after the run (``vsb-<run>-vm-<name>``) -- no libvirtd, nothing shared with the system's
libvirt or another run. Every resource registers its undo on the VM's own stack the moment
it exists, and the VM registers its :meth:`~VirtualMachine.stop` on the run's stack: the
domain is destroyed, the connection closed, hugepages and their mount given back and the
directory (sockets, logs copied to the run's logs first) removed -- on success, on failure
and on SIGINT alike. A run killed with ``kill -9`` leaves QEMU running: :func:`cleanup_dead_run`
ends it by its pid file (only if its command line names the run's directory).
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import shutil
import signal
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from vsbench.system import commands, cpu, hugepages, private_files
from vsbench.system.resources import ResourceStack
from vsbench.system.vm import domain as domains
from vsbench.system.vm.console import ConsoleError, SerialConsole
from vsbench.system.vm.image import PROMPT, READY_MARK, GuestImage

log = logging.getLogger(__name__)

QEMU = "/usr/bin/qemu-system-x86_64"
LIBVIRT_QEMU_DRIVER = Path("/usr/lib/x86_64-linux-gnu/libvirt/connection-driver/libvirt_driver_qemu.so")
HUGEPAGE_RECORD = "hugepages.json"

#: The ``vm`` settings every VNF plugin with a VM mode embeds in its settings schema.
VM_SETTINGS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "description": "the VM a VNF runs in when its mode is vm",
    "properties": {
        "memory_mib": {"type": "integer", "minimum": 256, "maximum": 65536, "default": 1024,
                       "description": "guest RAM, MiB (shared with the switch for vhost-user)"},
        "vcpus": {"type": "integer", "minimum": 1, "maximum": 16, "default": 2},
        "vcpu_cpus": {"type": ["array", "null"], "items": {"type": "integer", "minimum": 0},
                      "default": None,
                      "description": "host CPU of vCPU i (cycled); null: unpinned"},
        "memory_backing": {"enum": ["memfd", "hugepages"], "default": "memfd",
                           "description": "what shares the guest RAM with the switch"},
        "hugepage_size_kb": {"type": "integer", "enum": [2048, 1048576], "default": 2048},
        "guest_hugepages_mb": {"type": "integer", "minimum": 16, "default": 256,
                               "description": "2 MB hugepages the guest kernel reserves for DPDK"},
        "boot_timeout_s": {"type": "number", "minimum": 5, "default": 180,
                           "description": "until the guest's shell answers (TCG is slow)"},
        "kernel_version": {"type": ["string", "null"], "default": None,
                           "description": "guest kernel under /boot (null: newest)"},
    },
}


class VmError(Exception):
    """The VM could not be built, booted or driven; one line for the user."""


def vm_defaults(settings: Mapping[str, Any] | None) -> dict[str, Any]:
    """``settings`` with every key of :data:`VM_SETTINGS_SCHEMA` present."""
    merged = {k: v.get("default") for k, v in VM_SETTINGS_SCHEMA["properties"].items()}
    merged.update(settings or {})
    return merged


def missing_prerequisites() -> list[tuple[str, str]]:
    """``(what, remedy)`` for what a VM needs that this host lacks (no side effects)."""
    from vsbench.system.vm import image

    import importlib.util

    missing = []
    if importlib.util.find_spec("libvirt") is None:  # not imported: see _ensure_event_loop
        missing.append(("Python module libvirt", "pip install 'vsbench[vm]' (needs libvirt-dev, "
                                                 "pkg-config, gcc, python3-dev to build)"))
    if not LIBVIRT_QEMU_DRIVER.is_file():
        missing.append(("libvirt's QEMU driver", "apt-get install libvirt-daemon-driver-qemu"))
    if not Path(QEMU).is_file():
        missing.append((QEMU, "apt-get install qemu-system-x86"))
    return missing + image.missing_pieces()


# --------------------------------------------------------------------------- event loop

_event_loop_lock = threading.Lock()
_event_loop_started = False


def _ensure_event_loop() -> None:
    """The embedded driver needs a libvirt event loop running in this process."""
    global _event_loop_started
    # libvirt's own log (warnings such as "tainted: high-privileges") would land on the
    # run's console: errors only, and those become one-line VmErrors anyway
    os.environ.setdefault("LIBVIRT_LOG_OUTPUTS", "1:file:/dev/null")
    import libvirt

    with _event_loop_lock:
        if _event_loop_started:
            return
        libvirt.registerErrorHandler(lambda _ctx, _err: None, None)
        libvirt.virEventRegisterDefaultImpl()

        def loop() -> None:
            while True:
                libvirt.virEventRunDefaultImpl()

        threading.Thread(target=loop, name="libvirt-events", daemon=True).start()
        _event_loop_started = True


def qemu_conf(hugetlbfs_mount: Path | None) -> str:
    """The embedded driver's qemu.conf (``<root>/etc/qemu.conf``): QEMU runs as root and no
    file changes owner (everything it touches is ours, under the root dir)."""
    lines = ['user = "root"', 'group = "root"', "dynamic_ownership = 0", "remember_owner = 0",
             'stdio_handler = "file"']
    if hugetlbfs_mount is not None:
        lines.append(f'hugetlbfs_mount = "{hugetlbfs_mount}"')
    return "\n".join(lines) + "\n"


_driver_lock = threading.Lock()
_driver_root: Path | None = None
_driver_hugetlbfs: Path | None = None
DRIVER_ROOT_PREFIX = "vsb-libvirt-"


def embedded_driver_root(hugepage_size_kb: int | None) -> Path:
    """The root of this process's embedded QEMU driver, made on first use.

    libvirt initialises its embedded driver once per process, with one root: a second
    root is refused ("already open with path ..."). Every VM of the process therefore
    shares ``<tmp>/vsb-libvirt-<pid>`` (configuration, QEMU's pid files and logs, probed
    capabilities), while each VM's own files -- console socket, hugepage record -- live in
    its run's directory and go with the VM. The root (and its hugetlbfs mount, made when
    the first VM asks for hugepage backing: the driver reads its mount once) is removed
    when the process exits; ``vsbench cleanup`` removes that of a killed process."""
    global _driver_root, _driver_hugetlbfs
    with _driver_lock:
        if _driver_root is None:
            # A predictable name in the shared temp dir: used only when it is a real
            # directory of this user that no other user can write (libvirt reads its
            # configuration and hooks from it and QEMU runs as root), never one made first
            # by someone else or a link to one.
            root = private_files.private_dir(Path(tempfile.gettempdir()) / f"{DRIVER_ROOT_PREFIX}{os.getpid()}")
            private_files.make_dirs(root / "etc")
            mount = None
            if hugepage_size_kb:
                try:
                    mount = hugepages.mount_private(root / "hugepages", ResourceStack(), page_size_kb=hugepage_size_kb)
                except hugepages.HugepageError as exc:
                    raise VmError(str(exc)) from None
            (root / "etc" / "qemu.conf").write_text(qemu_conf(mount))
            _seed_capabilities(root)
            atexit.register(_remove_driver_root, root)
            _driver_root, _driver_hugetlbfs = root, mount
        elif hugepage_size_kb and _driver_hugetlbfs is None:
            raise VmError("libvirt's embedded driver of this process started without hugepage backing (it reads "
                          "its configuration once per process): use vm.memory_backing: memfd here, or hugepages "
                          "for every VM of the run")
        return _driver_root


def _remove_driver_root(root: Path) -> None:
    with contextlib.suppress(Exception):
        _remove_tree(root)


def root_dir_name(run_id: str, name: str) -> str:
    return f"vsb-{run_id}-vm-{name}"


@dataclass(frozen=True)
class BootFigures:
    """How long the VM took, for the results (TCG is slow: worth reporting)."""

    boot_s: float


class VirtualMachine:
    """One VNF VM: :meth:`boot`, drive :attr:`console`, :meth:`stop` (idempotent)."""

    def __init__(self, *, run_id: str, name: str, work_dir: Path, log_dir: Path,
                 resources: ResourceStack, settings: Mapping[str, Any] | None = None,
                 vm_index: int = 0) -> None:
        self.run_id = run_id
        self.name = name
        self.domain_name = f"vsb{run_id}{name}"
        self.root = Path(work_dir) / root_dir_name(run_id, name)
        self.log_dir = Path(log_dir)
        self.settings = vm_defaults(settings)
        self.vm_index = vm_index
        self.stack = ResourceStack()
        self.console: SerialConsole | None = None
        self.image: GuestImage | None = None
        self.boot_figures: BootFigures | None = None
        self.spec: domains.DomainSpec | None = None
        self._conn: Any = None
        self._dom: Any = None
        #: QEMU's pid when the domain started (:meth:`gone`); libvirt drops its pid file when it dies.
        self._booted_pid: int | None = None
        self.driver_root: Path | None = None
        resources.register(f"VM {self.domain_name}", self.stop)

    # ------------------------------------------------------------------ lifecycle

    def boot(self, image: GuestImage, vhost_sockets: Sequence[Path], extra_cmdline: Sequence[str] = (),
             packed_ring: bool = False) -> BootFigures:
        """Create the domain on ``vhost_sockets`` and wait for the guest's shell.
        ``packed_ring``: the NICs offer the virtio 1.1 packed virtqueue (the VNF's own
        ``packed_ring`` setting, which in a VM is QEMU's side of the ring)."""
        missing = missing_prerequisites()
        if missing:
            what, remedy = missing[0]
            raise VmError(f"cannot start a VM: missing {what} ({remedy})")
        _ensure_event_loop()  # first: it also keeps libvirt's log off the console
        import libvirt

        self.image = image
        cfg = self.settings
        self.root.mkdir(parents=True, exist_ok=False)
        self.stack.register(f"VM dir {self.root}", _remove_tree, self.root)
        if cfg["memory_backing"] == "hugepages":
            self._hugepages(int(cfg["memory_mib"]), int(cfg["hugepage_size_kb"]))
        driver_root = embedded_driver_root(int(cfg["hugepage_size_kb"]) if cfg["memory_backing"] == "hugepages" else None)
        self.driver_root = driver_root
        self.stack.register("VM logs", self._keep_logs)
        pins = domains.vcpu_placement(int(cfg["vcpus"]), cfg["vcpu_cpus"])
        online = cpu.online_cpus()
        if any(not set(p) <= online for p in pins):
            raise VmError(f"vm.vcpu_cpus {cfg['vcpu_cpus']} names CPUs that are not online ({sorted(online)})")
        guest_pages = max(1, int(cfg["guest_hugepages_mb"]) // 2)
        self.spec = domains.DomainSpec(
            name=self.domain_name, kernel=image.kernel, initramfs=image.initramfs,
            cmdline=("console=ttyS0,115200 panic=-1 rdinit=/init loglevel=3 tsc=reliable no_timer_check "
                     f"mitigations=off nokaslr hugepagesz=2M hugepages={guest_pages}"),
            console_socket=self.root / "console.sock",
            vhost_sockets=tuple(Path(s) for s in vhost_sockets),
            macs=tuple(domains.guest_mac(self.run_id, self.vm_index, i) for i in range(len(vhost_sockets))),
            memory_mib=int(cfg["memory_mib"]), vcpus=int(cfg["vcpus"]), vcpu_cpus=pins,
            memory_backing=cfg["memory_backing"], hugepage_size_kb=int(cfg["hugepage_size_kb"]),
            emulator=QEMU, extra_cmdline=tuple(extra_cmdline), packed_ring=bool(packed_ring))
        xml = domains.domain_xml(self.spec)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        (self.log_dir / f"{self.name}.domain.xml").write_text(xml)
        started = time.monotonic()
        try:
            self._conn = libvirt.open(f"qemu:///embed?root={driver_root}")
        except libvirt.libvirtError as exc:
            raise VmError(f"libvirt embedded QEMU driver: {_one_line(exc)}") from None
        self.stack.register("libvirt connection", self._close_connection)
        try:
            self._dom = self._conn.createXML(xml, 0)
        except libvirt.libvirtError as exc:
            raise VmError(f"cannot start VM {self.domain_name}: {_one_line(exc)}") from None
        self.stack.register(f"domain {self.domain_name}", self._destroy)
        _save_capabilities(driver_root)
        pid = self.qemu_pid()
        self._booted_pid = pid
        if pid is not None:  # beside the VM's own files, for vsbench cleanup after kill -9
            (self.root / "qemu.pid").write_text(f"{pid}\n")
        log.info("VM %s started (pid %s), booting %s", self.domain_name, self.qemu_pid(), image.kernel_version)
        try:
            self.console = SerialConsole(self.spec.console_socket, self.log_dir / f"{self.name}.console.log")
            self.stack.register("VM console", self.console.close)
            self.console.expect(READY_MARK, float(cfg["boot_timeout_s"]))
            self.console.expect(PROMPT, 30.0)
        except ConsoleError as exc:
            raise VmError(f"VM {self.domain_name} did not boot: {exc}") from None
        self.boot_figures = BootFigures(boot_s=time.monotonic() - started)
        log.info("VM %s booted in %.1f s", self.domain_name, self.boot_figures.boot_s)
        return self.boot_figures

    def stop(self) -> None:
        self.stack.close()

    # ------------------------------------------------------------------ pieces

    def _hugepages(self, memory_mib: int, page_kb: int) -> None:
        """Pages for the guest RAM (given back at teardown); QEMU takes them from the
        process's embedded driver's hugetlbfs mount."""
        try:
            hugepages.reserve(hugepages.pages_for_mb(memory_mib, page_kb), self.stack,
                              page_size_kb=page_kb, record=self.root / HUGEPAGE_RECORD)
        except hugepages.HugepageError as exc:
            raise VmError(str(exc)) from None

    def _destroy(self) -> None:
        import libvirt

        if self._dom is None:
            return
        with contextlib.suppress(libvirt.libvirtError):
            if self._dom.isActive():
                self._dom.destroy()
        pid = self.qemu_pid()
        self._dom = None
        if pid is not None:  # destroy() waits for QEMU; belt and braces for a stuck one
            _kill_if_ours(pid, self.root)

    def _close_connection(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.close()
            self._conn = None

    def _keep_logs(self) -> None:
        """QEMU's own log (command line, errors) into the run's logs before the dir goes."""
        path = self.driver_root / "log" / "qemu" / f"{self.domain_name}.log"
        with contextlib.suppress(OSError):
            shutil.copyfile(path, self.log_dir / f"{self.name}.qemu.log")
            path.unlink()

    # ------------------------------------------------------------------ facts

    def qemu_pid(self) -> int | None:
        if self.driver_root is None:
            return None
        return _read_pid(self.driver_root / "run" / "qemu" / f"{self.domain_name}.pid")

    def gone(self) -> str | None:
        """Why the VM no longer runs (its QEMU died or was killed), or None while it runs or
        before it booted. A VNF in a VM asks at trial boundaries: libvirt forgets a dead
        QEMU's pid file, and the guest's counters then fail in ways that do not say why."""
        pid = self._booted_pid
        if pid is None:
            return None
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            state = "X"
        if state in ("Z", "X"):
            return f"QEMU of VM {self.domain_name} (pid {pid}) died"
        return None

    def vcpu_threads(self) -> list[tuple[int, int, str]]:
        """``(pid, tid, name)`` of QEMU's vCPU threads (``CPU n/TCG``): the VNF's CPU time."""
        pid = self.qemu_pid()
        if pid is None:
            return []
        return [(pid, tid, name) for tid, name in cpu.task_names(pid).items() if name.startswith("CPU ")]

    def describe(self) -> dict[str, str]:
        """For the SUT bill of materials."""
        cfg = self.settings
        facts = {"vm_accelerator": "tcg", "vm_memory_mib": str(cfg["memory_mib"]), "vm_vcpus": str(cfg["vcpus"]),
                 "vm_memory_backing": cfg["memory_backing"],
                 "vm_vcpu_cpus": ",".join(map(str, cfg["vcpu_cpus"] or [])) or "unpinned"}
        if self.image is not None:
            facts.update(self.image.describe())
        if self.boot_figures is not None:
            facts["vm_boot_s"] = f"{self.boot_figures.boot_s:.1f}"
        return facts


# --------------------------------------------------------------------------- helpers

def _capabilities_cache() -> Path:
    from vsbench.system.vm.image import default_cache_dir

    return default_cache_dir() / "libvirt-qemu-capabilities"


def _seed_capabilities(root: Path) -> None:
    """libvirt probes QEMU's capabilities (~4 s of QEMU runs) into ``<root>/cache``; it
    checks a cached probe against QEMU's binary and its own version, so one kept from an
    earlier run is reused safely."""
    cache = _capabilities_cache()
    if cache.is_dir():
        with contextlib.suppress(OSError):
            shutil.copytree(cache, root / "cache" / "qemu" / "capabilities", dirs_exist_ok=True)


def _save_capabilities(root: Path) -> None:
    probed = root / "cache" / "qemu" / "capabilities"
    if probed.is_dir():
        with contextlib.suppress(OSError):
            shutil.copytree(probed, _capabilities_cache(), dirs_exist_ok=True)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300]


def _read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _kill_if_ours(pid: int, root: Path) -> bool:
    """SIGKILL ``pid`` only if its command line names ``root``; True when it was ours."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return False
    if str(root) not in cmdline:
        return False
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        time.sleep(0.05)
    return True


def _in_use(root: Path) -> bool:
    """Whether a live process's command line names ``root`` (a QEMU of that driver)."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if str(root).encode() in (entry / "cmdline").read_bytes():
                    return True
    return False


def _remove_tree(root: Path) -> None:
    """Remove the VM's directory, never across a mount point below it."""
    mounts = [m for m in _mount_points() if m == str(root) or m.startswith(str(root) + "/")]
    for mount in sorted(mounts, reverse=True):
        commands.run(["umount", mount], check=False)
    if any(m.startswith(str(root)) for m in _mount_points()):
        raise VmError(f"{root} still has a mount below it; not removed")
    shutil.rmtree(root, ignore_errors=True)


def _mount_points() -> list[str]:
    try:
        return [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()]
    except OSError:
        return []


def cleanup_dead_run(run_id: str, work_dirs: Sequence[Path]) -> list[str]:
    """Undo what the VMs of a killed run left: QEMU (by pid file, if its command line names
    the VM's dir), hugepages (record), the private hugetlbfs mount and the dir."""
    done: list[str] = []
    for work_dir in work_dirs:
        for root in sorted(Path(work_dir).glob(f"vsb-{run_id}-vm-*")):
            if not root.is_dir() or root.is_symlink():
                continue
            for pid_file in sorted([root / "qemu.pid", *(root / "run" / "qemu").glob("*.pid")]):
                pid = _read_pid(pid_file)
                if pid is not None and _kill_if_ours(pid, root):
                    done.append(f"killed QEMU {pid} of {root.name}")
            record = root / HUGEPAGE_RECORD
            if record.is_file():
                pages = hugepages.release_recorded(record)
                done.append(f"released {pages} hugepages of {root.name}")
            _remove_tree(root)
            done.append(f"removed {root}")
    for stale in sorted(Path(tempfile.gettempdir()).glob(f"{DRIVER_ROOT_PREFIX}*")):
        owner = stale.name[len(DRIVER_ROOT_PREFIX):]
        if owner.isdigit() and not Path(f"/proc/{owner}").exists() and not _in_use(stale):
            _remove_tree(stale)
            done.append(f"removed {stale} (libvirt driver root of dead process {owner})")
    return done
