"""A real NIC's link speed becomes the line rate: run inside the kernel lab, whose guest
gets pairs of emulated PCI NICs cabled to each other (``tools/kernel-lab/run --nic-pairs 2
--nic-model virtio-net-pci``, as ``tools/kernel-lab/run-tests`` boots it; an e1000e pair
works too, at its 1000 Mb/s).

The embedded testbed's veth have no speed of their own, so every other test sees the
nominal line rate; here the ports have a PCI device behind them and a speed (virtio-net:
the 10 Gb/s the lab gives it), and ethtool's word is read inside the network namespace a
generator would own them in.
"""

from __future__ import annotations

import secrets
import time

import pytest

from vsbench.interfaces.traffic import TrafficProfile, line_rate_fps
from vsbench.measurement import profiles
from vsbench.system import commands, link_speed

from lab_nics import lab_pairs, lab_skips

pytestmark = [pytest.mark.integration, pytest.mark.kernel_lab, *lab_skips(pairs=1)]


@pytest.fixture
def nic_netns():
    """The first lab pair's two ports moved into a namespace of their own and brought up,
    and moved back after."""
    netns = f"vsbls{secrets.token_hex(3)}"
    nics = list(lab_pairs()[0])
    commands.run(["ip", "netns", "add", netns])
    try:
        for iface in (n.iface for n in nics):
            commands.run(["ip", "link", "set", iface, "netns", netns])
            commands.run(["ip", "link", "set", iface, "up"], netns=netns)
        yield netns, nics
    finally:
        # back by hand: deleting the namespace returns them too, but asynchronously, and the
        # next test of the same guest looks for them at once
        for nic in nics:
            commands.run(["ip", "link", "set", nic.iface, "netns", "1"], netns=netns, check=False)
        commands.run(["ip", "netns", "del", netns], check=False)


def _wait_for_speed(iface: str, netns: str, timeout_s: float = 20.0) -> link_speed.LinkSpeed:
    """The speed once autonegotiation is done (emulated, it takes a moment after up)."""
    deadline = time.monotonic() + timeout_s
    speed = link_speed.probe(iface, netns)
    while speed.speed_bps is None and time.monotonic() < deadline:
        time.sleep(0.2)
        speed = link_speed.probe(iface, netns)
    return speed


def test_an_emulated_nic_reports_its_speed_and_the_line_rate_follows(nic_netns):
    netns, nics = nic_netns
    speeds = [_wait_for_speed(nic.iface, netns) for nic in nics]
    for nic, speed in zip(nics, speeds):
        assert speed.speed_bps == nic.speed_bps, speed
        assert nic.pci in speed.source, speed
    rate = profiles.line_rate({"testbed": {"link_gbps": 25}}, TrafficProfile(64), speeds)
    assert rate.link_speed_source == profiles.PORT_SPEED
    assert rate.fps == 2 * line_rate_fps(nics[0].speed_bps, 64)  # the ports', not the nominal 25 Gb/s's


def test_a_veth_beside_them_stays_nominal(nic_netns):
    netns, _ = nic_netns
    commands.run(["ip", "link", "add", "vsblsv0", "type", "veth", "peer", "name", "vsblsv1"], netns=netns)
    commands.run(["ip", "link", "set", "vsblsv0", "up"], netns=netns)
    commands.run(["ip", "link", "set", "vsblsv1", "up"], netns=netns)
    speed = link_speed.probe("vsblsv0", netns)
    assert speed.speed_bps is None and "veth" in speed.source
