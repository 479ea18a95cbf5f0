"""tools/bench/faults.py's VNF and iperf3 faults: what they run, what they kill, and a last
line check that can fail (every pvp line names its VNF, so "testpmd" alone would pass)."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _faults():
    spec = importlib.util.spec_from_file_location("faults_bench", ROOT / "tools/bench/faults.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["faults_bench"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_vnf_and_iperf3_kills_are_in_the_campaign_with_their_testcases():
    faults = _faults()
    labels = {f.label: f for f in faults.catalogue(quick=False)}
    for label in ("kill/testpmd/configure/linux_bridge/pvp_tput", "kill/testpmd/trial/linux_bridge/pvp_tput",
                  "kill/l3fwd/configure/ovs_dpdk/pvp_tput/l3fwd", "kill/l3fwd/trial/ovs_dpdk/pvp_tput/l3fwd",
                  "kill/iperf3/trial/linux_bridge/tcp_tput"):
        assert label in labels, label
    assert labels["kill/iperf3/trial/linux_bridge/tcp_tput"].trafficgen == "iperf3"
    assert "trial_duration=1" in labels["kill/l3fwd/trial/ovs_dpdk/pvp_tput/l3fwd"].params
    assert len(labels) == len(faults.catalogue(quick=False))  # labels stay unique for --only


def test_the_last_line_must_say_the_vnf_died_not_merely_name_it():
    faults = _faults()
    _codes, _statuses, word = faults.expectations(faults.Fault("kill", "linux_bridge", "trial", "testpmd"))
    assert re.search(word, "run x: failed: pvp_tput: vnf testpmd: trial_end: testpmd (pid 42) died; results in d")
    assert re.search(word, "run x: failed: pvp_tput: vnf testpmd: start: testpmd: testpmd exited: EAL: ...")
    assert not re.search(word, "run x: failed: pvp_tput: vnf testpmd: trial_begin: counters unreadable")
    _codes, _statuses, word = faults.expectations(faults.Fault("kill", "ovs_dpdk", "trial", "l3fwd"))
    assert re.search(word, "vnf l3fwd: configure: l3fwd exited at start (exit -9): EAL")
    assert not re.search(word, "run x: complete; results in /r/vnf-l3fwd")


def test_a_dpdk_driver_probe_is_not_the_vnf():
    """The first configure-time kill hit testpmd's 0.2 s driver probe, and the run rightly
    went on: the campaign must aim at the VNF itself."""
    faults = _faults()
    tracker = faults.Tracker.__new__(faults.Tracker)
    import threading
    tracker._lock = threading.Lock()
    me = faults._read_proc(__import__("os").getpid())[2]
    probe = faults.Proc(me.pid, me.start, "dpdk-testpmd", "/usr/bin/dpdk-testpmd -v --file-prefix=vsbprobeab12")
    real = faults.Proc(me.pid, me.start, "dpdk-testpmd", "/usr/bin/dpdk-testpmd --file-prefix=vsbc2eaf6tp0 -- -i")
    tracker.seen = {(1, "a"): probe}
    assert tracker.live("testpmd") == []
    tracker.seen = {(1, "a"): real}
    assert tracker.live("testpmd") == [real]


def test_every_fault_of_the_campaign_has_its_expectations():
    """Each fault knows its exit codes, statuses and the words of its last line (the QEMU
    kill, added after the others, once had none and crashed the campaign)."""
    faults = _faults()
    for fault in faults.catalogue(quick=False) + faults.catalogue(quick=True):
        codes, statuses, _word = faults.expectations(fault)
        assert codes and statuses, fault.label
    _codes, _statuses, word = faults.expectations(faults.Fault("kill", "linux_bridge", "trial", "qemu-system-x86_64"))
    assert re.search(word, "run x: failed: pvp_tput: vnf testpmd: trial_end: QEMU of VM vsbx1testpmd0 (pid 9) died")
    assert not re.search(word, "run x: failed: pvp_tput: vnf testpmd: trial_end: guest console timed out")


def test_a_generator_host_gone_mid_run_is_a_fault_of_the_campaign():
    """Both ways a remote generator host goes: the TRex fake (its own process on TRex's wire
    protocol) killed, and a lab host reached with ssh going down under MoonGen, each after
    the first trial. The last line must say the generator or its host stopped answering,
    not that the generator itself failed."""
    faults = _faults()
    gone = {f.target: f for f in faults.catalogue(quick=False) if f.kind == "generator_host"}
    assert sorted(gone) == ["ssh", "trex"]
    trex, ssh = gone["trex"], gone["ssh"]
    assert (trex.trafficgen, trex.switch, trex.moment) == ("trex", "external", "mid_run")
    assert (ssh.trafficgen, ssh.switch, ssh.moment) == ("moongen", "external", "mid_run")
    for fault in (trex, ssh):
        codes, statuses, _ = faults.expectations(fault)
        assert codes == {1} and statuses == ("failed",)
    word = faults.expectations(trex)[2]
    assert re.search(word, "run x: failed: phy2phy_tput: trafficgen trex: run_trial: trex generator at "
                           "tcp://127.0.0.1:31515: trial at 2976190 fps: no reply to get_stats within 2 s")
    assert not re.search(word, "run x: failed: phy2phy_tput: trafficgen trex: configure: bad port")
    word = faults.expectations(ssh)[2]
    assert re.search(word, "run x: failed: phy2phy_tput: trafficgen moongen: run_trial: moongen: generator "
                           "host h1:22 lost during trial 2 (ssh exit 255): Connection to 10.231.1.2 closed.")
    assert not re.search(word, "run x: failed: phy2phy_tput: trafficgen moongen: run_trial: moongen on h1:22: "
                               "MoonGen exited with code 1: [FATAL] no such port")
