"""A port's own link speed: believed from ethtool only where a device is behind the port,
and the line rate built from it (or from testbed.link_gbps) per sending port."""

from __future__ import annotations

import pytest

from vsbench.interfaces.traffic import FlowFields, PortStream, TrafficProfile, line_rate_fps
from vsbench.measurement import profiles
from vsbench.results import line_rate_basis
from vsbench.system import link_speed
from vsbench.system.link_speed import LinkSpeed

E1000E_INFO = """driver: e1000e
version: 6.1.0-28-amd64
firmware-version: 0.13-4
expansion-rom-version:
bus-info: 0000:00:03.0
supports-statistics: yes
"""
E1000E_SETTINGS = """Settings for ens3:
	Supported ports: [ TP ]
	Speed: 1000Mb/s
	Duplex: Full
	Link detected: yes
"""
VETH_INFO = """driver: veth
version: 1.0
firmware-version:
expansion-rom-version:
bus-info:
supports-statistics: yes
"""
VETH_SETTINGS = """Settings for vsb0:
	Speed: 10000Mb/s
	Duplex: Full
"""


def test_a_nic_reports_its_negotiated_speed():
    speed = link_speed.from_ethtool("ens3", E1000E_INFO, E1000E_SETTINGS)
    assert speed.speed_bps == 1e9
    assert "e1000e" in speed.source and "0000:00:03.0" in speed.source


def test_a_veth_has_no_speed_of_its_own_whatever_it_claims():
    speed = link_speed.from_ethtool("vsb0", VETH_INFO, VETH_SETTINGS)
    assert speed.speed_bps is None
    assert "veth" in speed.source and "vsb0" in speed.source


def test_a_nic_whose_link_is_down_has_no_speed():
    speed = link_speed.from_ethtool("ens3", E1000E_INFO, "Settings for ens3:\n\tSpeed: Unknown!\n")
    assert speed.speed_bps is None and "no link speed" in speed.source


def test_an_interface_ethtool_cannot_read_has_no_speed_and_says_why():
    speed = link_speed.probe("vsbench-no-such-interface0")
    assert speed.speed_bps is None and "vsbench-no-such-interface0" in speed.source


CONFIG = {"testbed": {"link_gbps": 10}}
NIC = LinkSpeed(25e9, "ethtool (ice, 0000:3b:00.0)")
VETH = LinkSpeed(None, "vsb0 is a veth interface with no device behind it: no link speed of its own")


def test_line_rate_is_the_sending_ports_own_speeds_when_every_one_has_one():
    rate = profiles.line_rate(CONFIG, TrafficProfile(64), [NIC, LinkSpeed(10e9, "ethtool (ixgbe, x)")])
    assert rate.link_speed_source == profiles.PORT_SPEED
    assert rate.link_speeds_bps == (25e9, 10e9)
    assert rate.fps == pytest.approx(line_rate_fps(25e9, 64) + line_rate_fps(10e9, 64))


def test_one_port_without_a_speed_makes_the_line_rate_nominal():
    rate = profiles.line_rate(CONFIG, TrafficProfile(64), [NIC, VETH])
    assert rate.link_speed_source == profiles.NOMINAL_SPEED
    assert rate.fps == pytest.approx(2 * line_rate_fps(10e9, 64))
    assert "veth" in rate.reason


def test_only_the_ports_that_send_count():
    # unidirectional: port 1 only receives, its missing speed does not matter
    one_way = profiles.line_rate(CONFIG, TrafficProfile(64, bidirectional=False), [NIC, VETH])
    assert one_way.link_speed_source == profiles.PORT_SPEED and one_way.link_speeds_bps == (25e9,)
    streams = (PortStream(2, 3, FlowFields()), PortStream(3, 2, FlowFields()))
    rate = profiles.line_rate(CONFIG, TrafficProfile(64, streams=streams), [VETH, VETH, NIC, NIC])
    assert rate.link_speed_source == profiles.PORT_SPEED and rate.link_speeds_bps == (25e9, 25e9)


def test_a_generator_that_knows_no_speeds_gets_the_nominal_line_rate():
    rate = profiles.line_rate(CONFIG, TrafficProfile(64), [])
    assert rate.link_speed_source == profiles.NOMINAL_SPEED
    assert rate.link_speeds_bps == (10e9, 10e9) and "no port speed" in rate.reason


def test_the_report_says_nominal_or_the_ports_speed():
    nominal = [{"nominal_line_rate_fps": 1.0, "link_speed_source": "nominal", "link_speed_reason": VETH.source}]
    assert not line_rate_basis.from_ports(nominal)
    assert line_rate_basis.describe(nominal, 10.0).startswith("nominal: 10 Gb/s per port (testbed.link_gbps); vsb0")
    older = [{"nominal_line_rate_fps": 1.0}]  # results written before the source was recorded
    assert line_rate_basis.describe(older, 10.0) == "nominal: 10 Gb/s per port (testbed.link_gbps)"
    ports = [{"nominal_line_rate_fps": 1.0, "link_speed_source": "port", "link_speeds_bps": [25e9, 25e9],
              "link_speed_reason": NIC.source}]
    assert line_rate_basis.from_ports(ports)
    assert line_rate_basis.describe(ports, 10.0) == "the ports' own link speed, 25 Gb/s + 25 Gb/s (ethtool (ice, 0000:3b:00.0))"
