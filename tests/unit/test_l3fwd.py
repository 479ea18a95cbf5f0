"""l3fwd's pure parts: routes and rules from the profile's flows, its command line, the
build's inputs (no build, no process)."""

import dataclasses
import ipaddress
from pathlib import Path

import pytest

from vsbench.interfaces import FlowFields, TrafficProfile
from vsbench_plugins.vnf.l3fwd import build, command, routes
from vsbench_plugins.vnf.l3fwd.plugin import L3fwd, SETTINGS_SCHEMA, with_defaults


def profile(flows=1, vary=("src_ip", "dst_ip"), bidirectional=True, **fields):
    return TrafficProfile(64, flows=flows, bidirectional=bidirectional,
                          fields=FlowFields(vary=tuple(vary), **fields))


def covered(lines, port):
    nets = [ipaddress.ip_network(line[1:].split()[0]) for line in lines if line.split()[1] == str(port)]
    return lambda ip: any(ipaddress.ip_address(ip) in n for n in nets)


def test_lpm_one_flow_routes_each_direction_to_its_exit_port():
    tables = routes.lpm_tables(profile())
    assert tables.ipv4 == ("R10.1.0.1/32 1", "R10.0.0.1/32 0")
    assert tables.ipv6 == (routes.IPV6_PLACEHOLDER,)


def test_lpm_covers_exactly_every_flow_destination():
    tables = routes.lpm_tables(profile(flows=1000))
    east, west = covered(tables.ipv4, 1), covered(tables.ipv4, 0)
    first = int(ipaddress.IPv4Address("10.1.0.1"))
    assert all(east(ipaddress.IPv4Address(first + k)) for k in range(1000))
    assert not east(ipaddress.IPv4Address(first - 1)) and not east(ipaddress.IPv4Address(first + 1000))
    assert all(west(ipaddress.IPv4Address(int(ipaddress.IPv4Address("10.0.0.1")) + k)) for k in range(1000))
    assert len(tables.ipv4) < 40  # prefixes, not one route per flow


def test_lpm_unidirectional_has_one_direction_only():
    assert routes.lpm_tables(profile(bidirectional=False)).ipv4 == ("R10.1.0.1/32 1",)


def test_lpm_uses_the_reverse_fields_of_a_shaped_profile():
    p = profile()
    p = dataclasses.replace(p, reverse_fields=FlowFields(src_ip="10.9.0.1", dst_ip="10.8.0.1"))
    assert "R10.8.0.1/32 0" in routes.lpm_tables(p).ipv4


def test_lpm_refuses_overlapping_directions():
    with pytest.raises(routes.RouteError, match="overlap"):
        routes.lpm_tables(profile(flows=1000, src_ip="10.1.0.100", dst_ip="10.1.0.1"))


def test_lpm_refuses_non_ipv4_and_address_overflow():
    with pytest.raises(routes.RouteError, match="IPv4"):
        routes.lpm_tables(profile(dst_ip="fe80::1"))
    with pytest.raises(routes.RouteError, match="past 255.255.255.255"):
        routes.lpm_tables(profile(flows=10, dst_ip="255.255.255.250"))


def test_em_one_rule_per_flow_and_direction_in_lock_step():
    tables = routes.em_tables(profile(flows=3))
    assert tables.lookup == "em"
    assert tables.ipv4[:3] == ("R10.1.0.1 10.0.0.1 1024 1024 17 1", "R10.1.0.2 10.0.0.2 1024 1024 17 1",
                               "R10.1.0.3 10.0.0.3 1024 1024 17 1")
    assert tables.ipv4[3] == "R10.0.0.1 10.1.0.1 1024 1024 17 0"
    assert len(tables.ipv4) == 6


def test_em_varying_ports_and_constant_flows():
    tables = routes.em_tables(profile(flows=2, vary=("dst_port",), l4_proto="tcp"))
    assert tables.ipv4 == ("R10.1.0.1 10.0.0.1 1024 1024 6 1", "R10.1.0.1 10.0.0.1 1025 1024 6 1",
                           "R10.0.0.1 10.1.0.1 1024 1024 6 0", "R10.0.0.1 10.1.0.1 1024 1025 6 0")
    # only MACs vary: one 5-tuple per direction
    assert len(routes.em_tables(profile(flows=50, vary=("src_mac",))).ipv4) == 2


def test_em_refuses_what_it_cannot_match_exactly():
    with pytest.raises(routes.RouteError, match="65535"):
        routes.em_tables(profile(flows=100, vary=("src_port",), src_port=65500))
    with pytest.raises(routes.RouteError, match="udp and tcp"):
        routes.em_tables(profile(l4_proto="icmp"))
    with pytest.raises(routes.RouteError, match="same 5-tuple"):
        routes.em_tables(profile(src_ip="10.0.0.1", dst_ip="10.0.0.1", vary=()))


def test_tables_for_rejects_unknown_lookup():
    with pytest.raises(routes.RouteError):
        routes.tables_for(profile(), "acl")


def test_process_argv_never_probes_pci_and_pins_one_lcore():
    app = command.app_args(ports=2, lcore=1, lookup="lpm", rules_v4=Path("/r/routes.v4"),
                           rules_v6=Path("/r/routes.v6"), eth_dest=["02:00:00:00:00:aa"], rx_desc=512)
    argv = command.process_argv(Path("/c/l3fwd"), lcore=1, memory_args=["--file-prefix=vsbx", "-m", "256"],
                                vdevs=["--vdev=net_virtio_user0,path=/s0", "--vdev=net_virtio_user1,path=/s1"],
                                app=app)
    assert argv[:5] == ["/c/l3fwd", "-l", "1", "--main-lcore", "1"]
    assert "--no-pci" in argv and "--single-file-segments" in argv
    tail = argv[argv.index("--") + 1:]
    assert tail[:4] == ["-p", "0x3", "--config", "(0,0,1),(1,0,1)"] and "-P" not in tail
    assert "--parse-ptype" in tail and tail[tail.index("--lookup") + 1] == "lpm"
    assert "--eth-dest=0,02:00:00:00:00:aa" in tail and tail[tail.index("--rx-queue-size") + 1] == "512"


def test_guest_argv_allows_only_the_vnf_nics():
    argv = command.guest_argv("/x/l3fwd", lcore=1, pci=["0000:00:10.0", "0000:00:11.0"], memory_mb=128,
                              app=["-p", "0x3"])
    assert argv[argv.index("-a") + 1] == "0000:00:10.0" and argv.count("-a") == 2
    assert "--no-pci" not in argv and argv[-2:] == ["-p", "0x3"]


def test_settings_defaults_and_vm_section():
    cfg = with_defaults({"mode": "vm", "vm": {"memory_mib": 2048}})
    assert cfg["lookup"] == "lpm" and cfg["vm"]["memory_mib"] == 2048 and cfg["vm"]["memory_backing"] == "memfd"
    assert set(SETTINGS_SCHEMA["properties"]) >= {"mode", "lookup", "vm", "lcore_cpu", "memory_mb"}


def test_missing_toolchain_names_the_package(tmp_path):
    missing = build.missing_toolchain(tmp_path)
    assert any("dpdk-doc" in remedy for _, remedy in missing)


def test_prerequisites_of_a_missing_binary_are_one_line():
    [missing] = [m for m in L3fwd.check_prerequisites({"binary": "/nonexistent/l3fwd"}) if "binary" in m.what]
    assert "/nonexistent/l3fwd" in str(missing)


def test_missing_sources_stop_the_run_in_preflight_with_one_line(tmp_path):
    """No dpdk-doc: exit 2, one line naming the package, nothing created."""
    import os
    import subprocess
    import sys

    results = tmp_path / "results"
    env = {**os.environ, "VSBENCH_DPDK_EXAMPLES": str(tmp_path / "none")}
    proc = subprocess.run([sys.executable, "-m", "vsbench.cli.main", "--test", "phy2phy_tput", "--vnf", "l3fwd",
                           "--results-dir", str(results)], capture_output=True, text=True, env=env, timeout=120)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert "vnf l3fwd" in lines[0] and "apt-get install dpdk-doc" in lines[0]
    assert not results.exists()


def test_patches_apply_once_to_debians_sources_and_refuse_others(tmp_path):
    main = build.EXAMPLES_DIR / "l3fwd" / "main.c"
    if not main.is_file():
        pytest.skip("dpdk-doc not installed")
    (tmp_path / "l3fwd").mkdir()
    (tmp_path / "l3fwd" / "main.c").write_text(main.read_text())
    build.apply_patches(tmp_path)
    text = (tmp_path / "l3fwd" / "main.c").read_text()
    assert text.count("dev_info.rx_offload_capa") >= 2
    with pytest.raises(build.BuildError, match="cannot patch"):
        build.apply_patches(tmp_path)  # already applied: the original text is gone


def test_pvp_family_configures_every_vnf_with_the_profile_it_sends():
    from vsbench.deployment.pvp import Pvvp
    from vsbench.system.resources import ResourceStack

    class Recorder:
        def __init__(self):
            self.seen = []

        def configure(self, p):
            self.seen.append(p)

    deployment = Pvvp(run_id="abc123", config={}, resources=ResourceStack(), generator=None,
                      make_vswitch=lambda netns: None)
    deployment.vnfs = [Recorder(), Recorder()]
    sent = profile(flows=10)
    assert deployment.profile(sent) is sent
    assert [v.seen for v in deployment.vnfs] == [[sent], [sent]]


# ---------------------------------------------------------------- veth ends (net_af_packet)

def l3fwd_on(tmp_path, settings=None, netns="vsb-abc123-dut"):
    from vsbench.interfaces import PluginContext, ResourceStack

    return L3fwd(PluginContext(run_id="abc123", settings=settings or {}, log_dir=tmp_path, resources=ResourceStack(),
                               dut_netns=netns, work_dir=tmp_path))


def veth_ports(*names, peer_macs=("02:00:00:00:01:00", "02:00:00:00:01:01")):
    from vsbench.interfaces import PortSpec, SwitchPort

    return [SwitchPort(name=name, number=i, spec=PortSpec(kind="physical", name=name, iface=name,
                                                          options={"peer_mac": peer_macs[i]}))
            for i, name in enumerate(names)]


def test_veth_ends_are_net_af_packet_ports_in_port_order(tmp_path):
    """A switch without vhost-user (linux_bridge, the conformance kit) gives l3fwd veth ends:
    one net_af_packet vdev each, numbered as the ports are, frames addressed to the peers."""
    vnf = l3fwd_on(tmp_path)
    vnf.ports = veth_ports("vsb-abc123-ve0", "vsb-abc123-ve1")
    vdevs = vnf._vdevs()
    assert [v.split(",")[:2] for v in vdevs] == [["--vdev=net_af_packet0", "iface=vsb-abc123-ve0"],
                                                  ["--vdev=net_af_packet1", "iface=vsb-abc123-ve1"]]
    assert vnf._eth_dest() == ["02:00:00:00:01:00", "02:00:00:00:01:01"]
    assert "physical" in L3fwd.port_kinds and "vhostuser" in L3fwd.port_kinds


def test_an_interface_name_a_device_argument_cannot_carry_is_one_line(tmp_path):
    vnf = l3fwd_on(tmp_path)
    vnf.ports = veth_ports("a,iface=b", "ve1")
    from vsbench.interfaces import PluginError

    with pytest.raises(PluginError, match="not an interface name") as info:
        vnf._vdevs()
    assert "\n" not in str(info.value)


def test_a_veth_end_that_is_not_there_is_refused_at_start_in_one_line(tmp_path, monkeypatch):
    """l3fwd starts only at configure(): without this check start() would accept a missing
    interface, reserve hugepages, and the EAL would fail later."""
    from vsbench.interfaces import PluginError
    from vsbench_plugins.vnf import dpdk_process

    asked = []
    monkeypatch.setattr(dpdk_process, "list_links", lambda netns: asked.append(netns) or ["vsb-abc123-ve0", "lo"])
    vnf = l3fwd_on(tmp_path)
    with pytest.raises(PluginError) as info:
        vnf.start(veth_ports("vsb-abc123-ve0", "vsb-abc123-nx1"))
    assert str(info.value) == "l3fwd: no interface vsb-abc123-nx1 to attach net_af_packet to"
    assert asked == ["vsb-abc123-dut"] and vnf.ports == [] and not list(tmp_path.glob("vsb-abc123-l3fwd*"))
    vnf.stop()


def test_ports_of_two_kinds_or_veth_to_a_vm_are_refused(tmp_path, monkeypatch):
    from vsbench.interfaces import PluginError, PortSpec, SwitchPort
    from vsbench_plugins.vnf import dpdk_process

    monkeypatch.setattr(dpdk_process, "list_links", lambda netns: ["ve0", "ve1"])
    vhost = SwitchPort(name="vh0", number=0, spec=PortSpec(kind="vhostuser", name="vh0", socket_path=tmp_path / "s"))
    with pytest.raises(PluginError, match="two vhost-user ports or to two kernel interfaces"):
        l3fwd_on(tmp_path).start([vhost, veth_ports("ve0", "ve1")[1]])
    with pytest.raises(PluginError, match="in a VM attaches to vhost-user ports only"):
        l3fwd_on(tmp_path, {"mode": "vm"}).start(veth_ports("ve0", "ve1"))


def test_the_conformance_kits_profile_is_routed_back_to_the_kit():
    """What the kit gives configure(): each direction's destination routed out of the port
    the kit receives it on, addressed to the l3fwd port it enters."""
    from vsbench.conformance.bench import KitTestbed
    from vsbench.system.resources import ResourceStack
    from vsbench.system.testbed import Testbed, TestbedLink

    links = tuple(TestbedLink(index=i, tg_iface=f"tg{i}", tg_mac=f"02:00:00:00:01:0{i}", tg_ip=f"10.9.{i}.1",
                              dut_iface=f"dut{i}", dut_mac=f"02:00:00:00:02:0{i}") for i in (0, 1))
    kit = KitTestbed(Testbed("abc123", "tg", "dut", links), ResourceStack())
    sent = kit.profile(FlowFields(), to="port")
    assert (sent.fields.dst_mac, sent.reverse_fields.dst_mac) == ("02:00:00:00:02:00", "02:00:00:00:02:01")
    assert (sent.fields.src_mac, sent.reverse_fields.src_mac) == ("02:00:00:00:01:00", "02:00:00:00:01:01")
    assert routes.lpm_tables(sent).ipv4 == ("R10.1.0.1/32 1", "R10.0.0.1/32 0")
    assert routes.em_tables(sent).ipv4 == ("R10.1.0.1 10.0.0.1 1024 1024 17 1", "R10.0.0.1 10.1.0.1 1024 1024 17 0")
