"""p2p wiring decisions that do not need a testbed (the testbed path runs in integration)."""

import pytest

from vsbench import deployment
from vsbench.deployment.p2p import P2P, dut_port_specs, generator_ports_from_settings


def test_deployments_are_looked_up_by_name_and_count_switching_operations():
    assert deployment.get("p2p") is P2P
    assert P2P.switching_operations == 1 and P2P.generator_port_count == 2
    assert deployment.get("op2p").switching_operations == 1
    with pytest.raises(deployment.UnknownDeploymentError, match="unknown deployment 'p3p'; available: clean, op2p, p2p"):
        deployment.get("p3p")


def test_generator_ports_come_from_its_settings():
    ports = generator_ports_from_settings({"ports": [0, {"iface": "eth3", "mac": "02:00:00:00:00:09"}, 7]}, 2, 10e9)
    assert [(p.index, p.iface, p.mac, p.link_bps) for p in ports] == [(0, "0", None, 10e9), (1, "eth3", "02:00:00:00:00:09", 10e9)]
    assert [p.iface for p in generator_ports_from_settings({}, 2, None)] == ["0", "1"]
    with pytest.raises(deployment.DeploymentError, match="1 port"):
        generator_ports_from_settings({"ports": ["a"]}, 2, None)


def test_dut_ports_on_a_real_host_come_from_the_testbed_section():
    specs = dut_port_specs({"testbed": {"dut_ports": ["ens1f0", {"pci": "0000:3b:00.1", "name": "nic1"}]}}, "abcdef", 2)
    assert [(s.kind, s.name, s.iface, s.pci) for s in specs] == [
        ("physical", "vsbabcdefp0", "ens1f0", None), ("physical", "nic1", None, "0000:3b:00.1")]
    # an external DUT needs no real port: placeholders named after the run
    assert [s.name for s in dut_port_specs({}, "abcdef", 2)] == ["vsbabcdefp0", "vsbabcdefp1"]
