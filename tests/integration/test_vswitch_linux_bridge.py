"""linux_bridge on a throwaway netns+veth testbed: it learns, forwards both ways (also
IPv4 with a bad checksum, i.e. br_netfilter is off in the DUT namespace), counts, and
leaves the namespace as it found it."""

from __future__ import annotations

import os
import subprocess

import pytest

from vsbench.interfaces import PluginContext, PluginError, PortSpec
from vsbench.system import naming
from vsbench.system.resources import ResourceStack
from vsbench_plugins.vswitch.linux_bridge import BRIDGE_NF_SYSCTLS, LinuxBridge

from vswitch_helpers import FrameCounter, ip, send_frames, trafgen_blast, trafgen_config, veth_testbed

pytestmark = pytest.mark.integration

if os.geteuid() != 0:
    pytest.skip("needs root (network namespaces)", allow_module_level=True)
if LinuxBridge.check_prerequisites({}):
    pytest.skip(f"missing: {LinuxBridge.check_prerequisites({})[0]}", allow_module_level=True)


def sysctl(netns: str, key: str) -> str | None:
    proc = subprocess.run(["ip", "netns", "exec", netns, "sysctl", "-n", key], capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else None


@pytest.fixture
def rig(tmp_path):
    run_id = naming.new_run_id()
    with veth_testbed(run_id, 2) as tb:
        nf_before = {k: sysctl(tb.dut_netns, k) for k in BRIDGE_NF_SYSCTLS}
        stack = ResourceStack()
        ctx = PluginContext(run_id, {}, tmp_path / "logs", stack, dut_netns=tb.dut_netns)
        switch = LinuxBridge(ctx)
        switch.start()
        switch.add_bridge("br0")
        ports = [switch.add_port("br0", PortSpec("physical", f"p{l.index}", iface=l.dut_iface)) for l in tb.links]
        switch.connect("br0", *ports)
        yield tb, switch, ports
        real = switch.bridge_name("br0")
        stack.close()
        # the bridge is gone, the veths are back to no master, sysctls as before
        assert ip("-n", tb.dut_netns, "link", "show", "dev", real, check=False).returncode != 0
        for link in tb.links:
            assert "master" not in ip("-n", tb.dut_netns, "link", "show", "dev", link.dut_iface).stdout
        assert {k: sysctl(tb.dut_netns, k) for k in BRIDGE_NF_SYSCTLS} == nf_before
    assert run_id not in ip("netns", "list").stdout


def test_learns_and_forwards_both_directions(rig):
    tb, switch, ports = rig
    a, b = tb.links
    # warm-up: one frame from each side teaches the FDB both MACs
    for src, dst in ((a, b), (b, a)):
        counter = FrameCounter(tb.tg_netns, dst.tg_iface, duration_s=2.0, expected=1)
        send_frames(tb.tg_netns, src.tg_iface, 1, src.tg_mac, dst.tg_mac)
        assert counter.result() == 1
    assert switch.stats()["bridges"]["br0"]["fdb_learned"] >= 2
    for src, dst in ((a, b), (b, a)):
        counter = FrameCounter(tb.tg_netns, dst.tg_iface, duration_s=3.0, expected=300)
        send_frames(tb.tg_netns, src.tg_iface, 300, src.tg_mac, dst.tg_mac, gap_s=0.001)
        assert counter.result() == 300
    port_stats = switch.stats()["bridges"]["br0"]["ports"]
    assert port_stats[a.dut_iface]["rx_packets"] >= 301
    assert port_stats[b.dut_iface]["tx_packets"] >= 301
    assert ports[0].number > 0 and ports[0].name == a.dut_iface


def test_forwards_ipv4_with_bad_checksum_at_rate(rig, tmp_path):
    """br_netfilter would drop these; with it off in the DUT netns they all cross."""
    tb, switch, _ = rig
    a, b = tb.links
    cfg = trafgen_config(tmp_path / "bad.cfg", a.tg_mac, b.tg_mac)
    cfg.write_text(cfg.read_text().replace("csumip(14, 33)", "0x00, 0x00"))
    result = trafgen_blast(tb, cfg, 200_000)
    assert result.received >= 0.95 * result.sent, result
    assert switch.threads() == []
    assert switch.version()["kernel"] == os.uname().release


def test_non_kernel_port_is_refused(rig):
    _, switch, _ = rig
    with pytest.raises(PluginError, match="only enslaves kernel interfaces"):
        switch.add_port("br0", PortSpec("vhostuser", "vhu0"))
