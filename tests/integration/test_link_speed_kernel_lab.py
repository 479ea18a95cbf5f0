"""A real NIC's link speed becomes the line rate: run inside the kernel lab, whose guest
gets a pair of emulated e1000e NICs cabled to each other (``tools/kernel-lab/run
--nic-pairs 1``, as ``tools/kernel-lab/run-tests`` boots it).

The embedded testbed's veth have no speed of their own, so every other test sees the
nominal line rate; here the ports have a PCI device behind them and negotiate 1000 Mb/s,
and ethtool's word is read inside the network namespace a generator would own them in.
"""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path

import pytest

from vsbench.interfaces.traffic import TrafficProfile, line_rate_fps
from vsbench.measurement import profiles
from vsbench.system import commands, link_speed

pytestmark = [pytest.mark.integration, pytest.mark.kernel_lab]

SYS_NET = Path("/sys/class/net")


def _nics(driver: str) -> list[str]:
    """Interfaces in this namespace whose device is driven by ``driver``, by name."""
    found = []
    for iface in sorted(os.listdir(SYS_NET)):
        link = SYS_NET / iface / "device" / "driver"
        if link.exists() and os.path.basename(os.readlink(link)) == driver:
            found.append(iface)
    return found


if os.geteuid() != 0:
    pytestmark.append(pytest.mark.skip(reason="needs root"))
elif len(_nics("e1000e")) < 2:
    pytestmark.append(pytest.mark.skip(reason="no pair of e1000e NICs: run inside tools/kernel-lab/run --nic-pairs 1"))


@pytest.fixture
def nic_netns():
    """The two e1000e ports moved into a namespace of their own and brought up; deleting
    the namespace hands physical devices back to the initial one."""
    netns = f"vsbls{secrets.token_hex(3)}"
    nics = _nics("e1000e")[:2]
    commands.run(["ip", "netns", "add", netns])
    try:
        for iface in nics:
            commands.run(["ip", "link", "set", iface, "netns", netns])
            commands.run(["ip", "link", "set", iface, "up"], netns=netns)
        yield netns, nics
    finally:
        commands.run(["ip", "netns", "del", netns], check=False)


def _wait_for_speed(iface: str, netns: str, timeout_s: float = 20.0) -> link_speed.LinkSpeed:
    """The speed once autonegotiation is done (emulated, it takes a moment after up)."""
    deadline = time.monotonic() + timeout_s
    speed = link_speed.probe(iface, netns)
    while speed.speed_bps is None and time.monotonic() < deadline:
        time.sleep(0.2)
        speed = link_speed.probe(iface, netns)
    return speed


def test_an_emulated_nic_reports_its_negotiated_speed_and_the_line_rate_follows(nic_netns):
    netns, nics = nic_netns
    speeds = [_wait_for_speed(iface, netns) for iface in nics]
    for iface, speed in zip(nics, speeds):
        assert speed.speed_bps == 1e9, speed
        assert "e1000e" in speed.source and "0000:" in speed.source, speed
    rate = profiles.line_rate({"testbed": {"link_gbps": 10}}, TrafficProfile(64), speeds)
    assert rate.link_speed_source == profiles.PORT_SPEED
    assert rate.fps == 2 * line_rate_fps(1e9, 64)  # 2 x 1.488 Mpps, not the nominal 10 Gb/s's


def test_a_veth_beside_them_stays_nominal(nic_netns):
    netns, _ = nic_netns
    commands.run(["ip", "link", "add", "vsblsv0", "type", "veth", "peer", "name", "vsblsv1"], netns=netns)
    commands.run(["ip", "link", "set", "vsblsv0", "up"], netns=netns)
    commands.run(["ip", "link", "set", "vsblsv1", "up"], netns=netns)
    speed = link_speed.probe("vsblsv0", netns)
    assert speed.speed_bps is None and "veth" in speed.source
