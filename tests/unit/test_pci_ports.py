"""PCI ports on a lab's cables, the pure parts: testpmd's command line with PCI devices
(allowed with ``-a``, numbered by DPDK in bus order), the order the plugin hands its ports
in, the cabled testbed's configuration and its refusals (the kernel lab runs the rest:
tests/integration/test_phy2phy_pci_kernel_lab.py)."""

from pathlib import Path

import pytest

from vsbench.deployment.base import DeploymentError
from vsbench.deployment.p2p import cabled_ifaces, dut_port_specs
from vsbench.interfaces import PluginError, PortSpec, SwitchPort
from vsbench.system import cabled_testbed
from vsbench.system import testbed
from vsbench_plugins.vnf.testpmd import argv as argvs
from vsbench_plugins.vnf.testpmd import plugin as testpmd

A, B = "0000:00:04.0", "0000:00:03.0"


def _launch(ports):
    return argvs.TestpmdLaunch(binary="dpdk-testpmd", file_prefix="vsbabcdeftp0", ports=tuple(ports))


def test_pci_ports_are_allowed_by_address_and_nothing_else_is_probed():
    argv = argvs.testpmd_argv(_launch([argvs.PciPort(A), argvs.PciPort(B)]))
    eal = argv[1:argv.index("--")]
    assert "--no-pci" not in eal and "--vdev" not in eal
    assert [eal[i + 1] for i, a in enumerate(eal) if a == "-a"] == [A, B]


def test_without_pci_ports_the_host_devices_stay_unprobed():
    argv = argvs.testpmd_argv(_launch([argvs.AfPacketPort("x0"), argvs.AfPacketPort("x1")]))
    assert "--no-pci" in argv and "-a" not in argv


def test_mixed_ports_number_vdevs_among_themselves():
    argv = argvs.testpmd_argv(_launch([argvs.AfPacketPort("x0"), argvs.PciPort(A)]))
    assert "-a" in argv and any(a.startswith("net_af_packet0,iface=x0") for a in argv)


def test_a_bad_pci_address_is_refused_in_one_line():
    with pytest.raises(argvs.ArgvError, match="not a PCI address"):
        argvs.testpmd_argv(_launch([argvs.PciPort("00:04.0;x"), argvs.PciPort(B)]))


def test_dpdk_numbers_pci_ports_by_address_before_vdevs():
    ports = [argvs.AfPacketPort("v"), argvs.PciPort(A), argvs.PciPort(B)]
    assert argvs.dpdk_port_order(ports) == [2, 1, 0]


def _port(name, pci=None, iface=None):
    return SwitchPort(name=name, number=0, spec=PortSpec(kind="physical", name=name, pci=pci, iface=iface,
                                                         options={"peer_mac": f"02:00:00:00:00:{name[-1]}0"}))


def test_testpmd_hands_its_ports_in_dpdk_order_so_counters_and_peers_line_up():
    ordered = testpmd.Testpmd._dpdk_order([_port("p0", pci=A), _port("p1", pci=B)])
    assert [p.name for p in ordered] == ["p1", "p0"]  # the same pair, its port 0 is 0000:00:03.0


def test_testpmd_refuses_an_order_that_would_pair_other_ports():
    ports = [_port("p0", pci="0000:00:01.0"), _port("p1", pci="0000:00:03.0"),
             _port("p2", pci="0000:00:02.0"), _port("p3", pci="0000:00:04.0")]
    with pytest.raises(PluginError, match="pair other ports"):
        testpmd.Testpmd._dpdk_order(ports)


def test_cabled_ifaces_must_cover_the_topology():
    config = {"testbed": {"generator_ifaces": ["eth0"]}}
    assert cabled_ifaces(config) == ["eth0"] and cabled_ifaces({}) == []
    with pytest.raises(DeploymentError, match="lists 1 interface"):
        cabled_ifaces(config, 2)


def test_a_cabled_testbed_needs_every_dut_port():
    config = {"testbed": {"generator_ifaces": ["eth0", "eth1"], "dut_ports": [{"pci": A}]}}
    with pytest.raises(DeploymentError, match="dut_ports lists 1"):
        dut_port_specs(config, "abcdef", 2, required=True)
    config["testbed"]["dut_ports"].append({"pci": B})
    specs = dut_port_specs(config, "abcdef", 2, required=True)
    assert [s.pci for s in specs] == [A, B] and all(s.kind == "physical" and s.iface is None for s in specs)


def test_an_interface_with_an_address_is_not_lent():
    # lo is up with 127.0.0.1 on every host: lending it would cut the host's own traffic
    with pytest.raises(testbed.TestbedError, match="refusing to lend lo to the generator: .*127.0.0.1"):
        cabled_testbed.check_lendable(["lo"])


def test_a_missing_or_repeated_interface_is_one_line():
    with pytest.raises(testbed.TestbedError, match="no interface vsbnosuch0"):
        cabled_testbed.check_lendable(["vsbnosuch0"])
    with pytest.raises(testbed.TestbedError, match="twice"):
        cabled_testbed.check_lendable(["vsbx", "vsbx"])


def test_the_config_schema_takes_generator_ifaces():
    import json

    import jsonschema

    schema = json.loads((Path(__file__).resolve().parents[2] / "vsbench/schemas/config.schema.json").read_text())
    prop = schema["properties"]["testbed"]["properties"]["generator_ifaces"]
    jsonschema.validate(["eth0", "enp3s0f1"], prop)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(["eth0; reboot"], prop)
