"""Regression tests of what tools/bench/faults.py found (issue 28 item 4)."""

from __future__ import annotations

import errno
import json
import os
import signal

import pytest

from vsbench.cli import main as cli
from vsbench.results import space_reserve, trial_log


def _enospc(*_a, **_k):
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_trial_line_cut_by_a_full_disk_is_removed(tmp_path, monkeypatch):
    """The disk filled in the middle of a trial's line: the file keeps only whole lines."""
    path = tmp_path / "trials.jsonl"
    log = trial_log.TrialLog(path)
    os.write(log._fd, b'{"whole":1}\n')
    real_write = os.write

    def half(fd, data):  # half the line goes out, then the disk is full
        if fd == log._fd and len(data) > 4:
            real_write(fd, data[: len(data) // 2])
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(trial_log.os, "write", half)

    class Record:
        def to_json(self):
            return {"trial": 2, "padding": "x" * 100}

    with pytest.raises(OSError):
        log.append(Record())
    log.close()
    assert path.read_bytes() == b'{"whole":1}\n'


def test_the_space_reserve_is_allocated_and_released(tmp_path):
    reserve = space_reserve.SpaceReserve(tmp_path, 65536)
    assert (tmp_path / space_reserve.FILE_NAME).stat().st_size == 65536 and reserve.held
    reserve.release()
    reserve.release()
    assert not (tmp_path / space_reserve.FILE_NAME).exists()
    assert space_reserve.is_no_space(OSError(errno.ENOSPC, "x")) and not space_reserve.is_no_space(OSError(errno.EIO, "x"))


def test_final_results_are_written_into_the_reserve_on_a_full_disk(tmp_path, monkeypatch):
    """results.json said ``running`` when the disk was full at the end of a run."""
    from vsbench.runner import run as run_mod

    calls = []

    class FakeRun:
        reserve = space_reserve.SpaceReserve(tmp_path, 4096)

        def write_results(self):
            calls.append(self.reserve.held)
            if len(calls) == 1:
                _enospc()
            (tmp_path / "results.json").write_text(json.dumps({"status": "failed"}))

    fake = FakeRun()
    run_mod.Run._write_final_results(fake)
    assert calls == [True, False]  # the second write ran after the reserve was freed
    assert json.loads((tmp_path / "results.json").read_text())["status"] == "failed"
    assert not (tmp_path / space_reserve.FILE_NAME).exists()


def test_a_results_directory_without_space_is_one_line_and_no_run_dir(tmp_path, monkeypatch, capsys):
    from vsbench.runner import run as run_mod

    monkeypatch.setattr(space_reserve.os, "posix_fallocate", _enospc)
    plans_dir = tmp_path / "results"

    class Checked:
        pass

    monkeypatch.setattr(run_mod.preflight, "check_plans", lambda plans: [Checked()])
    monkeypatch.setattr(run_mod, "log_level_of", lambda plans, debug: 20)
    monkeypatch.setattr(run_mod, "Run", _FakeRunClass(plans_dir))
    from rich.console import Console

    outcome = run_mod.execute_plans([object()], plans_dir, Console(), Console(stderr=True))
    assert outcome.exit_code == 2 and outcome.run_dir is None
    err = capsys.readouterr().err.strip()
    assert err.startswith("vsbench: error: cannot write in results directory") and "No space left" in err
    assert list(plans_dir.iterdir()) == []


def _FakeRunClass(results_dir):
    from vsbench.runner import run as run_mod

    class FakeRun:
        def __init__(self, *a, **k):
            self.run_dir = results_dir / "20260101-000000-abc123"
            self.reserve = None

        prepare = run_mod.Run.prepare

        def execute(self):  # pragma: no cover - must not be reached
            raise AssertionError("executed")

    return FakeRun


@pytest.mark.parametrize("signum,code", [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_a_signal_before_the_run_is_one_line_and_128_plus_signal(monkeypatch, capsys, signum, code):
    """Before the run's own handlers, SIGTERM/SIGHUP killed vsbench silently (exit -15)."""
    monkeypatch.setattr(cli, "run_main", lambda *a: os.kill(os.getpid(), signum) or 0)
    before = signal.getsignal(signum)
    assert cli.main(["--test", "phy2phy_tput"]) == code
    assert capsys.readouterr().err.strip() == f"vsbench: error: interrupted by {signal.Signals(signum).name}"
    assert signal.getsignal(signum) is before  # main() called in-process leaves the caller's handlers


def test_a_child_forked_under_the_early_handlers_dies_of_sigterm():
    """pyroute2 forks a child to open a netns socket and ends it with SIGTERM: a child that
    raised EarlySignal instead unwound a copy of vsbench (`vsbench conformance` runs pytest
    in-process) which tore down the parent's namespaces."""
    from vsbench.cli import early_signals

    previous = early_signals.install()
    try:
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                signal.pause()
            finally:
                os._exit(3)  # reached only if the signal was turned into an exception
        _, status = os.waitpid(pid, 0)
    finally:
        early_signals.restore(previous)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGTERM, status


def test_a_dead_switch_ends_the_plan_instead_of_measuring_it():
    """ovs-vswitchd killed mid-trial: every later trial saw 100 % loss and the run ended
    ``complete``. DutGoneError from trial_begin/trial_end passes the trial runner (and the
    plugin guard, as a PluginFault's cause); any other probe failure stays a warning."""
    import subprocess
    import sys

    from plugins.vswitch.ovs.switch import OvsSwitchBase
    from vsbench.interfaces.plugin import DutGoneError, PluginError
    from vsbench.measurement import trial_runner
    from vsbench.runner.guard import PluginFault

    assert trial_runner.dut_gone(PluginFault("vswitch ovs_dpdk", "trial_begin", DutGoneError("x")))
    assert not trial_runner.dut_gone(PluginFault("vswitch ovs_dpdk", "trial_begin", PluginError("x")))

    from vsbench.system.commands import ManagedProcess

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        class Instance:
            vswitchd_proc = ManagedProcess([], dead)
            ovsdb_proc = ManagedProcess([], live)

        switch = OvsSwitchBase.__new__(OvsSwitchBase)
        switch.instance = Instance()
        with pytest.raises(DutGoneError, match=rf"ovs-vswitchd \(pid {dead.pid}\) died"):
            switch.check_alive()
        Instance.vswitchd_proc = ManagedProcess([], live)
        switch.check_alive()
    finally:
        live.kill()
        live.wait()


def test_a_dead_process_vnf_ends_the_plan_instead_of_measuring_it():
    """testpmd or l3fwd killed under a pvp search: the trial runner logged the VNF's failed
    counter read as a warning and measured the dead VNF. Now each VNF checks its process at
    the trial boundaries and DutGoneError passes the trial runner like a dead switch's."""
    import subprocess
    import sys
    from types import SimpleNamespace

    from vsbench.interfaces.plugin import DutGoneError, PluginError
    from vsbench.measurement import trial_runner
    from vsbench.system.commands import ManagedProcess
    from vsbench_plugins.vnf.l3fwd.plugin import L3fwd
    from vsbench_plugins.vnf.prox.plugin import ProxVnf
    from vsbench_plugins.vnf.testpmd.plugin import Testpmd

    class Vnf:
        name = "v"

        def __init__(self, exc):
            self.exc = exc

        def trial_begin(self):
            raise self.exc

        def trial_end(self):
            raise self.exc

    runner = trial_runner.TrialRunner.__new__(trial_runner.TrialRunner)
    runner.vnfs, runner.paths = [Vnf(PluginError("counters unreadable"))], ()
    runner._vnf_begin()  # a probe failure stays a warning
    assert runner._vnf_end(None)["vnfs"][0]["error"] == "counters unreadable"
    runner.vnfs = [Vnf(DutGoneError("l3fwd (pid 7) died"))]
    with pytest.raises(DutGoneError):
        runner._vnf_begin()
    with pytest.raises(DutGoneError):
        runner._vnf_end(None)

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        l3fwd = L3fwd.__new__(L3fwd)
        l3fwd.vm = None
        l3fwd.proc = ManagedProcess([], dead)
        with pytest.raises(DutGoneError, match=rf"l3fwd \(pid {dead.pid}\) died"):
            l3fwd.check_alive()
        l3fwd.proc = ManagedProcess([], live)
        l3fwd.check_alive()

        # PROX as a VNF: the shared DPDK-process check (it used to have none: a dead PROX
        # was measured as 100 % loss)
        prox = ProxVnf.__new__(ProxVnf)
        prox.proc = ManagedProcess([], dead)
        with pytest.raises(DutGoneError, match=rf"prox \(vnf\) \(pid {dead.pid}\) died"):
            prox.check_alive()
        prox.proc = ManagedProcess([], live)
        prox.check_alive()

        testpmd = Testpmd.__new__(Testpmd)
        testpmd.vm = None
        testpmd.console = SimpleNamespace(pid=dead.pid, child=SimpleNamespace(isalive=lambda: False))
        with pytest.raises(DutGoneError, match=rf"testpmd \(pid {dead.pid}\) died"):
            testpmd.check_alive()
        testpmd.console = SimpleNamespace(pid=live.pid, child=SimpleNamespace(isalive=lambda: True))
        testpmd.check_alive()
    finally:
        live.kill()
        live.wait()


def test_a_vnf_whose_vm_died_ends_the_plan(tmp_path):
    """testpmd or l3fwd in a VM whose QEMU was killed: the VM's console is its serial line,
    so the VNF asks the VM (its QEMU's pid at boot) and raises DutGoneError naming it."""
    import subprocess
    import sys

    from vsbench.interfaces.plugin import DutGoneError
    from vsbench.system.resources import ResourceStack
    from vsbench.system.vm.runner import VirtualMachine
    from vsbench_plugins.vnf.l3fwd.plugin import L3fwd
    from vsbench_plugins.vnf.testpmd.plugin import Testpmd

    with ResourceStack() as stack:
        vm = VirtualMachine(run_id="abc123", name="testpmd0", work_dir=tmp_path, log_dir=tmp_path, resources=stack)
        assert vm.gone() is None  # not booted: nothing to say
        live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
        try:
            vm._booted_pid = live.pid
            assert vm.gone() is None
            testpmd = Testpmd.__new__(Testpmd)
            testpmd.vm, testpmd.console = vm, None
            testpmd.check_alive()
            live.kill()
            live.wait()
            with pytest.raises(DutGoneError, match=rf"QEMU of VM vsbabc123testpmd0 \(pid {live.pid}\) died") as said:
                testpmd.check_alive()
            l3fwd = L3fwd.__new__(L3fwd)
            l3fwd.vm, l3fwd.proc = vm, None
            with pytest.raises(DutGoneError) as l3fwd_said:
                l3fwd.check_alive()
            assert str(l3fwd_said.value) == str(said.value)  # both ask the VM (VirtualMachine.gone)
        finally:
            if live.poll() is None:
                live.kill()
                live.wait()
