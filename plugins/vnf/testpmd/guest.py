"""testpmd inside a VM (``vnf.testpmd.mode: vm``): the same interactive console, over the
guest's serial port instead of a host pty.

The VM (:mod:`vsbench.interfaces.host.vm`) boots with one virtio NIC per vhost-user socket
of the switch; testpmd runs in the foreground of the guest's shell on those NICs (``-a`` the
NICs' PCI addresses instead of ``--vdev``), with the application arguments the host
process gets (:func:`.argv.app_args`). :class:`GuestTestpmdConsole` is a
:class:`~.console.TestpmdConsole` whose pexpect child is the serial console: ``start``
waits for testpmd's prompt, ``quit`` for the guest shell's, and ``terminate`` interrupts a
testpmd that does not quit -- the VM itself (and every process in it) goes with the VM's
teardown. ``pid`` is QEMU's: its vCPU threads are what the VNF costs the host.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Sequence

import pexpect

from vsbench.interfaces.host.vm import PROMPT as GUEST_PROMPT
from vsbench.interfaces.host.vm import VirtualMachine, nic_pci_address

from .argv import TestpmdLaunch, app_args, lcores_arg
from .console import PROMPT, ConsoleError, TestpmdConsole


def guest_argv(launch: TestpmdLaunch, nics: int, main_cpu: int = 0, forward_cpus: Sequence[int] = (1,)) -> list[str]:
    """testpmd in the guest on its ``nics`` virtio NICs (bound to uio_pci_generic)."""
    allow = [arg for i in range(nics) for arg in ("-a", nic_pci_address(i))]
    return [launch.binary, "--lcores", lcores_arg(main_cpu, tuple(forward_cpus)), "--main-lcore", "0", *allow,
            "-m", str(int(launch.memory_mb)), "--", *app_args(launch)]


class GuestTestpmdConsole(TestpmdConsole):
    """testpmd's console on a VM's serial port."""

    def __init__(self, vm: VirtualMachine, startup_output: str) -> None:
        assert vm.console is not None
        super().__init__(vm.console.child, None, startup_output)  # the VM's console logs it
        self.vm = vm

    @property
    def pid(self) -> int:
        return int(self.vm.qemu_pid() or 0)

    @classmethod
    def start_in(cls, vm: VirtualMachine, argv: Sequence[str], start_timeout_s: float) -> "GuestTestpmdConsole":
        if vm.console is None:
            raise ConsoleError("the VM has no console")
        child = vm.console.child
        child.sendline(shlex.join(argv))
        which = child.expect_exact([PROMPT, GUEST_PROMPT, pexpect.EOF, pexpect.TIMEOUT], timeout=start_timeout_s)
        output = child.before or ""
        if which != 0:
            why = {1: "exited", 2: "lost its console", 3: f"gave no prompt within {start_timeout_s:g} s"}[which]
            raise ConsoleError(f"testpmd in the VM {why}: {' | '.join(output.strip().splitlines()[-3:])}")
        return cls(vm, output)

    def quit(self, timeout_s: float = 10.0) -> bool:
        try:
            self.child.sendline("quit")
            return self.child.expect_exact([GUEST_PROMPT, pexpect.TIMEOUT], timeout=timeout_s) == 0
        except (pexpect.ExceptionPexpect, OSError):
            return False

    def terminate(self, grace_s: float = 5.0) -> int | None:
        """Interrupt a testpmd still in the foreground (the VM's teardown ends the rest)."""
        try:
            self.child.send("\x03")
            self.child.expect_exact([GUEST_PROMPT, pexpect.TIMEOUT], timeout=grace_s)
        except (pexpect.ExceptionPexpect, OSError):
            pass
        return None


def boot_vm(*, run_id: str, instance: int, work_dir: Path, log_dir: Path, resources, settings,
            sockets: Sequence[Path], binary: str, packed_ring: bool = False) -> VirtualMachine:
    """A VM carrying testpmd, booted on ``sockets`` (registered on ``resources``)."""
    from vsbench.interfaces.host.vm import ensure_image

    image = ensure_image([Path(binary)], kernel_version=settings.get("kernel_version"))
    vm = VirtualMachine(run_id=run_id, name=f"testpmd{instance}", work_dir=work_dir, log_dir=log_dir,
                        resources=resources, settings=settings, vm_index=instance)
    vm.boot(image, list(sockets), packed_ring=packed_ring)
    return vm
