"""OvS-DPDK on PCI ports, as a lab runs it on its NICs: inside the kernel lab, whose guest
gets two pairs of emulated virtio-net NICs, each pair cabled through a QEMU hub
(``tools/kernel-lab/run --nic-pairs 2 --nic-model virtio-net-pci``, as
``tools/kernel-lab/run-tests`` boots it).

The generator's ends (end 1 of each pair) go into a namespace on their kernel driver; the
DUT's ends (end 2) are the ovs_dpdk plugin's ``ports: [{pci: ...}]``, which it binds to
uio_pci_generic itself (``bind_driver``; the guest has no IOMMU and Debian's kernel no
VFIO no-IOMMU mode) and DPDK's virtio PMD drives. Frames sent from one generator port come
out of the other through OvS-DPDK's PCI ports, both ways; after teardown every device is
back on its kernel driver and the hugepages are as they were.
"""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

from vsbench.interfaces import PluginContext, PortSpec, RunParameters
from vsbench.system import commands, naming, pci_bind
from vsbench.system.resources import ResourceStack

from lab_nics import lab_pairs, lab_skips
from vswitch_helpers import FrameCounter, send_frames

pytestmark = [pytest.mark.integration, pytest.mark.kernel_lab, *lab_skips(pairs=2)]
if commands.which("ovs-vswitchd-dpdk") is None and commands.which("ovs-vswitchd") is None:
    pytestmark.append(pytest.mark.skip(reason="no ovs-vswitchd"))

FRAMES = 200


def _nr_hugepages() -> int:
    return int(Path("/proc/sys/vm/nr_hugepages").read_text())


@pytest.fixture
def generator_netns():
    """The generator ends of both pairs in a namespace of their own, up; yields the pairs
    as found before (a moved end is no longer in this namespace's listing)."""
    netns = f"vsbpg{secrets.token_hex(3)}"
    pairs = lab_pairs()[:2]
    gens = [gen for gen, _ in pairs]
    commands.run(["ip", "netns", "add", netns])
    try:
        for gen in gens:
            commands.run(["ip", "link", "set", gen.iface, "netns", netns])
            commands.run(["ip", "link", "set", gen.iface, "up"], netns=netns)
        yield netns, pairs
    finally:
        # back by hand: deleting the namespace returns them too, but asynchronously, and the
        # next test of the same guest looks for them at once
        for nic in gens:
            commands.run(["ip", "link", "set", nic.iface, "netns", "1"], netns=netns, check=False)
        commands.run(["ip", "netns", "del", netns], check=False)


def _mac(netns: str, iface: str) -> str:
    return commands.run(["cat", f"/sys/class/net/{iface}/address"], netns=netns).stdout.strip()


def test_ovs_dpdk_forwards_between_pci_ports_it_bound_and_gives_them_back(generator_netns, tmp_path):
    from vsbench_plugins.vswitch.ovs_dpdk import OvsDpdk

    netns, pairs = generator_netns
    gens, duts = [gen for gen, _ in pairs], [dut for _, dut in pairs]
    hugepages_before = _nr_hugepages()
    run_id = naming.new_run_id()
    settings = {"ports": [{"pci": d.pci} for d in duts], "bind_driver": "uio_pci_generic",
                "socket_mem_mb": [256], "dpdk_lcore_mask": "0x1", "pmd_cpu_mask": "0x2", "start_timeout_s": 240}
    with ResourceStack() as stack:
        ctx = PluginContext(run_id, settings, tmp_path / "logs", stack, run=RunParameters(),
                            work_dir=Path("/run/vsbench-test") / run_id)
        switch = OvsDpdk(ctx)
        switch.name = "ovs_dpdk"
        switch.start()
        assert [pci_bind.driver_of(d.pci) for d in duts] == ["uio_pci_generic"] * 2
        switch.add_bridge("br0")
        ports = [switch.add_port("br0", PortSpec("physical", f"p{i}", pci=d.pci)) for i, d in enumerate(duts)]
        switch.connect("br0", *ports)
        macs = [_mac(netns, g.iface) for g in gens]
        for tx, rx in ((0, 1), (1, 0)):
            counter = FrameCounter(netns, gens[rx].iface, duration_s=60, expected=FRAMES)
            send_frames(netns, gens[tx].iface, FRAMES, macs[tx], macs[rx], gap_s=0.002)
            assert counter.result() == FRAMES, f"{gens[tx].iface} -> {gens[rx].iface} through OvS-DPDK"
    assert [pci_bind.driver_of(d.pci) for d in duts] == [d.driver for d in duts]
    # each has its interface again (the kernel may name it anew: eth0 was free meanwhile)
    for d in duts:
        (iface,) = pci_bind.netdevs_of(d.pci)
        assert Path(f"/sys/class/net/{iface}/address").read_text().strip() == f"52:54:00:00:{d.pair:02x}:02"
    assert _nr_hugepages() == hugepages_before
