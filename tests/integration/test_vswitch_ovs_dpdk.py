"""ovs_dpdk on a throwaway netns+veth testbed: frames really cross OvS-DPDK (af_packet
ports), the meter really limits the rate, rules install in one bundle, and teardown
leaves nothing: no process, no run dir, no DPDK files of our prefix, no mount,
nr_hugepages as before."""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

import pytest

from vsbench.interfaces import PluginContext, PluginError, PortSpec, RunParameters
from vsbench.system import cpu, hugepages, naming
from vsbench.system.resources import ResourceStack
from vsbench_plugins.vswitch.ovs_dpdk import OvsDpdk

from vswitch_helpers import FrameCounter, send_frames, trafgen_blast, trafgen_config, veth_testbed

pytestmark = pytest.mark.integration

if os.geteuid() != 0:
    pytest.skip("needs root (network namespaces, hugepages)", allow_module_level=True)
_missing = OvsDpdk.check_prerequisites({})
if _missing:
    pytest.skip(f"missing: {_missing[0]}", allow_module_level=True)


#: Stands in for the runner's state dir (/run/vsbench/<run id>/ is each run's work dir).
WORK_ROOT = Path("/run/vsbench-test")


def nr_hugepages() -> int:
    return int(Path("/proc/sys/vm/nr_hugepages").read_text())


class Rig:
    """A started ovs_dpdk with two af_packet ports connected on the testbed."""

    def __init__(self, testbed, stack, tmp_path, meter_pps=None, settings=None):
        self.testbed = testbed
        ctx = PluginContext(
            testbed.run_id, settings or {}, tmp_path / "logs", stack,
            run=RunParameters(meter_pps=meter_pps), dut_netns=testbed.dut_netns,
            work_dir=WORK_ROOT / testbed.run_id,  # as the runner's state dir
        )
        self.switch = OvsDpdk(ctx)
        self.switch.name = "ovs_dpdk"
        self.switch.start()
        self.switch.add_bridge("br0")
        self.ports = [self.switch.add_port("br0", PortSpec("physical", f"p{l.index}", iface=l.dut_iface))
                      for l in testbed.links]
        self.switch.connect("br0", *self.ports)


@pytest.fixture
def rig_factory(tmp_path):
    """Build rigs; afterwards check that everything they made is gone."""
    made = []
    hp_before = nr_hugepages()

    def build(**kwargs):
        run_id = naming.new_run_id()
        testbed_cm = veth_testbed(run_id, 2)
        testbed = testbed_cm.__enter__()
        stack = ResourceStack()
        made.append((testbed_cm, stack, run_id))
        rig = Rig(testbed, stack, tmp_path, **kwargs)
        rig.run_id = run_id
        made.append(rig)
        return rig

    yield build

    rigs = [m for m in made if isinstance(m, Rig)]
    facts = [(r.switch.instance.vswitchd_pid(), r.switch.instance.ovsdb_proc.pid,
              r.switch.instance.paths.run_dir, r.switch.file_prefix) for r in rigs]
    for item in reversed(made):
        if isinstance(item, tuple):
            testbed_cm, stack, run_id = item
            stack.close()
            testbed_cm.__exit__(None, None, None)
    for vswitchd_pid, ovsdb_pid, run_dir, prefix in facts:
        for pid in (vswitchd_pid, ovsdb_pid):
            assert not Path(f"/proc/{pid}").exists(), f"process {pid} left running"
        assert not run_dir.exists(), f"{run_dir} left behind"
        assert run_dir.parent == WORK_ROOT / run_dir.name.split("-")[1]
        assert not (hugepages.DPDK_RUNTIME_ROOT / prefix).exists()
        assert str(run_dir) not in Path("/proc/mounts").read_text()
    for _, _, run_id in (m for m in made if isinstance(m, tuple)):
        with contextlib.suppress(FileNotFoundError):
            (WORK_ROOT / run_id).rmdir()  # the run's work dir is the runner's to remove
    with contextlib.suppress(OSError):
        WORK_ROOT.rmdir()
    names = os.popen("ip netns list").read()
    for _, _, run_id in (m for m in made if isinstance(m, tuple)):
        assert run_id not in names
    assert nr_hugepages() == hp_before


def test_forwards_both_directions(rig_factory):
    rig = rig_factory()
    tb = rig.testbed
    a, b = tb.links
    for src, dst in ((a, b), (b, a)):
        counter = FrameCounter(tb.tg_netns, dst.tg_iface, duration_s=3.0, expected=300)
        send_frames(tb.tg_netns, src.tg_iface, 300, src.tg_mac, dst.tg_mac, gap_s=0.001)
        assert counter.result() == 300
    stats = rig.switch.stats()
    ports = stats["bridges"]["br0"]["ports"]
    assert ports["1"]["rx_packets"] >= 300 and ports["2"]["rx_packets"] >= 300
    assert stats["datapath"]["pmd"]["totals"]["packets_received"] >= 600
    assert stats["bridges"]["br0"]["flow_count"] == 2


#: Well below what OvS-DPDK forwards here even on a loaded shared machine (>= ~180 kpps).
METER_PPS = 20_000


def test_meter_caps_forwarding_at_its_rate(rig_factory, tmp_path):
    meter_pps = METER_PPS
    rig = rig_factory(meter_pps=meter_pps)
    tb = rig.testbed
    cfg = trafgen_config(tmp_path / "t64.cfg", tb.links[0].tg_mac, tb.links[1].tg_mac)
    result = trafgen_blast(tb, cfg, 600_000)
    cap = meter_pps * (result.elapsed_s + 0.3) + rig.switch.cfg["meter_burst_ms"] * meter_pps / 1000
    assert result.received <= cap * 1.1, result
    assert result.received >= meter_pps * result.elapsed_s * 0.5, result
    meter = rig.switch.stats()["bridges"]["br0"]["meters"]["1"]
    dropped = meter["bands"][0]["packet_count"]
    assert dropped > 0
    assert dropped + result.received == meter["packet_in_count"]


def test_without_meter_forwards_far_above_the_meter_rate(rig_factory, tmp_path):
    rig = rig_factory()
    tb = rig.testbed
    cfg = trafgen_config(tmp_path / "t64.cfg", tb.links[0].tg_mac, tb.links[1].tg_mac)
    result = trafgen_blast(tb, cfg, 600_000)
    assert result.rx_fps > 5 * METER_PPS, result


def test_rules_install_in_one_bundle_and_forward(rig_factory, tmp_path):
    rig = rig_factory()
    tb = rig.testbed
    a, b = tb.links
    rules = tmp_path / "rules.flows"
    lines = [f"priority=100,in_port=1,dl_type=0x88b5,dl_src=02:00:00:{i >> 8 & 0xff:02x}:{i & 0xff:02x}:01,"
             f"actions=output:2" for i in range(2000)]
    rules.write_text("# generated\n" + "\n".join(lines) + "\n")
    assert rig.switch.install_rules("br0", rules) == 2000
    assert rig.switch.flow_count("br0") == 2002
    counter = FrameCounter(tb.tg_netns, b.tg_iface, duration_s=2.0, expected=50)
    send_frames(tb.tg_netns, a.tg_iface, 50, a.tg_mac, b.tg_mac, gap_s=0.001)
    assert counter.result() == 50
    bad = tmp_path / "bad.flows"
    # a valid new rule plus one the switch rejects (no meter 99): the bundle is refused whole
    bad.write_text("priority=100,in_port=2,dl_type=0x88b5,actions=output:1\n"
                   "priority=100,in_port=1,ip,actions=meter:99,output:2\n")
    with pytest.raises(PluginError, match="ovs-ofctl add-flows: .*(meter|METER)") as err:
        rig.switch.install_rules("br0", bad)
    assert "\n" not in str(err.value)
    assert rig.switch.flow_count("br0") == 2002  # the bundle was all or nothing


def test_threads_pinning_version(rig_factory):
    rig = rig_factory()
    assert (rig.switch.instance.paths.run_dir / "hugepages.json").exists()
    threads = rig.switch.threads()
    pmds = [t for t in threads if t.name.startswith("pmd-c")]
    assert len(pmds) == 1
    assert cpu.thread_affinity(pmds[0].tid) == {1}
    assert any(t.tid == t.pid for t in threads)  # the main thread
    assert rig.switch.busy_poll_cpus() == {"ovs_dpdk pmd": {1}}
    assert rig.switch.max_frame_bytes() == 1518
    versions = rig.switch.version()
    assert versions["ovs"].startswith("3.") and "dpdk" in versions


def test_failed_start_is_one_line_and_leaves_nothing(tmp_path):
    run_id = naming.new_run_id()
    before = nr_hugepages()
    with veth_testbed(run_id, 1) as tb:
        stack = ResourceStack()
        ctx = PluginContext(run_id, {"vswitchd": "/bin/false"}, tmp_path / "logs", stack, dut_netns=tb.dut_netns)
        switch = OvsDpdk(ctx)
        with pytest.raises(PluginError) as err:
            switch.start()
        assert "\n" not in str(err.value)
        run_dir = switch.instance.paths.run_dir
        stack.close()
    assert not run_dir.exists()
    assert nr_hugepages() == before
    assert not (hugepages.DPDK_RUNTIME_ROOT / switch.file_prefix).exists()


def test_bad_settings_fail_before_anything_is_made(tmp_path):
    stack = ResourceStack()
    ctx = PluginContext("abcdef", {"dpdk_extra": ["-a", "0000:00:01.0"]}, tmp_path, stack)
    with pytest.raises(PluginError, match="dpdk_extra may not contain -a"):
        OvsDpdk(ctx).start()
    assert OvsDpdk(ctx).instance is None
    stack.close()


def test_jumbo_mtu_on_af_packet_names_the_cause(rig_factory):
    with pytest.raises(PluginError, match=r"not added: .*\[.*max frame size \(1518\)"):
        rig_factory(settings={"mtu_request": 9000, "af_packet": {"framesz": 10240, "blocksz": 16384}})


_KILLED_RUN = """
import sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from vswitch_helpers import veth_testbed
from vsbench.interfaces import PluginContext, PortSpec
from vsbench.system.resources import ResourceStack
from vsbench_plugins.vswitch.ovs_dpdk import OvsDpdk
run_id, work = sys.argv[2], Path(sys.argv[3])
with veth_testbed(run_id, 2) as tb:
    sw = OvsDpdk(PluginContext(run_id, {}, work / "logs", ResourceStack(), dut_netns=tb.dut_netns, work_dir=work))
    sw.start()
    sw.add_bridge("br0")
    sw.add_port("br0", PortSpec("physical", "p0", iface=tb.links[0].dut_iface))
    print(sw.instance.paths.run_dir, flush=True)
    time.sleep(600)
"""


def test_a_killed_run_is_cleaned_up_from_its_run_dir(tmp_path):
    """kill -9 of the process that ran ovs_dpdk leaves daemons, pages and a mount;
    cleanup_dead_run_dir removes exactly those."""
    import signal
    import subprocess
    import sys

    from vsbench_plugins.vswitch.ovs.instance import cleanup_dead_run_dir

    run_id, work = naming.new_run_id(), WORK_ROOT / "killed"
    before = nr_hugepages()
    proc = subprocess.Popen([sys.executable, "-c", _KILLED_RUN, str(Path(__file__).parent), run_id, str(work)],
                            stdout=subprocess.PIPE, text=True)
    try:
        run_dir = Path(proc.stdout.readline().strip())
        assert run_dir.is_dir()
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    try:
        assert nr_hugepages() > before  # left behind by the killed run
        pids = [int((run_dir / f).read_text()) for f in ("ovs-vswitchd.pid", "ovsdb-server.pid")]
        done = cleanup_dead_run_dir(run_dir)
        assert any("ovs-vswitchd" in d for d in done) and any("hugepages" in d for d in done)
        for pid in pids:
            state = Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] if Path(f"/proc/{pid}").exists() else None
            assert state in (None, "Z"), f"pid {pid} still running"
        assert nr_hugepages() == before
        assert not run_dir.exists()
        assert str(run_dir) not in Path("/proc/mounts").read_text()
        assert not (hugepages.DPDK_RUNTIME_ROOT / f"vsb{run_id}ovs").exists()
    finally:
        if run_dir.is_dir():  # an assertion above failed before the cleanup under test ran:
            cleanup_dead_run_dir(run_dir)  # never leave its daemons, mount and pages behind
        for role in ("tg", "dut"):
            subprocess.run(["ip", "netns", "del", naming.netns_name(run_id, role)], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
        with contextlib.suppress(OSError):
            WORK_ROOT.rmdir()


def test_vhostuser_and_vxlan_ports_are_created(rig_factory):
    """No VM here, but OvS creates the vhost-user server socket and the VXLAN vport."""
    rig = rig_factory()
    vhu = rig.switch.add_port("br0", PortSpec("vhostuser", "vhu0"))
    assert vhu.number == 3
    assert vhu.spec.socket_path == rig.switch.instance.paths.run_dir / "vhu0"
    assert vhu.spec.socket_path.is_socket()
    vx = rig.switch.add_port("br0", PortSpec("tunnel", "vx0", options={"type": "vxlan", "remote_ip": "192.0.2.2", "key": 42}))
    assert vx.number == 4
    assert rig.switch.ctl.get("Interface", "vx0", "type") == "vxlan"
    with pytest.raises(PluginError, match="run dir"):
        rig.switch.add_port("br0", PortSpec("vhostuser", "vhu1", socket_path=Path("/tmp/elsewhere.sock")))
