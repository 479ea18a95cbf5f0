"""The pvp_vxlan deployment's wiring (recording fakes on a fake testbed), the profile's tunnel
link per generator port, the generator's per-port encapsulation and verification, the
preflight's refusals and the PVP scaling testcases (the real testbed runs in
tests/integration/test_pvp_vxlan_testbed.py)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from vsbench import deployment
from vsbench.deployment import DeploymentError, pvp_vxlan
from vsbench.interfaces.traffic import FlowFields, GeneratorCapabilities, GeneratorPort, TrafficProfile, TunnelFields
from vsbench.runner import config as cfg
from vsbench.runner import plugins, preflight, testcases
from vsbench.system.resources import ResourceStack
from vsbench.system import testbed as tb
from vsbench_plugins.trafficgen.trafgen import frames
from vsbench_plugins.trafficgen.trafgen.flows import plan_flows
from vsbench_plugins.trafficgen.trafgen.plugin import Trafgen, _Direction

from test_pvp_deployments import FakeSwitch, FakeVnf

RUN = "abcdef"


class TestbedGenerator:
    """A generator that wants the embedded testbed (its ports are the testbed's)."""

    name = "fakegen"
    settings: dict = {}

    def capabilities(self):
        return GeneratorCapabilities(ports=4, needs_testbed=True, port_streams=True)


class VtepSwitch(FakeSwitch):
    tunnel_types = ("vxlan",)


def _testbed(run_id, n_links, resources, **_):
    links = tuple(tb.TestbedLink(index=i, tg_iface=f"vsb{run_id}t{i}", tg_mac=f"02:ab:cd:ef:01:0{i}",
                              tg_ip=f"198.18.{i}.1", dut_iface=f"vsb{run_id}d{i}", dut_mac=f"02:ab:cd:ef:02:0{i}")
                  for i in range(n_links))
    return tb.Testbed(run_id=run_id, tg_netns=f"vsb-{run_id}-tg", dut_netns=f"vsb-{run_id}-dut", links=links)


@pytest.fixture
def fake_testbed(monkeypatch):
    monkeypatch.setattr("vsbench.deployment.pvp.create_testbed", _testbed)


def _build(switch=None, config=None, vnf=FakeVnf):
    switch = switch if switch is not None else VtepSwitch()
    vnfs = []

    def make_vnf(_netns):
        vnfs.append(vnf())
        return vnfs[-1]

    dep = deployment.get("pvp_vxlan")(run_id=RUN, config=config or {}, resources=ResourceStack(),
                                      generator=TestbedGenerator(), make_vswitch=lambda _ns: switch,
                                      make_vnf=make_vnf)
    ports = dep.build()
    return dep, switch, vnfs, ports


def test_each_generator_port_is_a_vxlan_port_of_its_own_vni_around_the_vnf(fake_testbed):
    dep, switch, vnfs, ports = _build(config={"overlay": {"vni": 5000, "udp_port": 8472}})
    assert [p.index for p in ports] == [0, 1] and len(vnfs) == 1
    assert switch.bridges == [f"vsb{RUN}br0", f"vsb{RUN}br1"]
    # the chain's wiring, with a VXLAN port where pvp has the physical port
    assert switch.connections == [(f"vsb{RUN}br0", f"vsb{RUN}vx0", f"vsb{RUN}u0"),
                                  (f"vsb{RUN}br1", f"vsb{RUN}u1", f"vsb{RUN}vx1")]
    tunnels = [port.spec for _, port in switch.ports if port.spec.kind == "tunnel"]
    assert [(t.iface, t.options["key"], t.options["dst_port"]) for t in tunnels] == [
        (f"vsb{RUN}d0", 5000, 8472), (f"vsb{RUN}d1", 5001, 8472)]
    assert [(t.options["local_ip"], t.options["local_mac"], t.options["remote_ip"], t.options["remote_mac"])
            for t in tunnels] == [("198.18.0.254", "02:ab:cd:ef:02:00", "198.18.0.1", "02:ab:cd:ef:01:00"),
                                  ("198.18.1.254", "02:ab:cd:ef:02:01", "198.18.1.1", "02:ab:cd:ef:01:01")]
    assert all(t.options["prefixlen"] == 24 and t.options["type"] == "vxlan" for t in tunnels)
    # the VNF sits between the two VTEPs on vhost-user ports, as on pvp
    assert [p.spec.kind for p in vnfs[0].ports] == ["vhostuser", "vhostuser"]
    described = dep.describe()
    assert described["topology"] == "PHY-VTEP-VNF-VTEP-PHY" and described["switching_operations"] == 2
    assert described["encapsulation"] == "vxlan" and described["vnf_count"] == 1
    assert [(v["port"], v["vni"], v["dut_ip"]) for v in described["vteps"]] == [
        (0, 5000, "198.18.0.254"), (1, 5001, "198.18.1.254")]


def test_the_profile_carries_every_ports_tunnel_link_and_the_vnfs_see_the_inner_flows(fake_testbed):
    seen = []

    class ConfiguredVnf(FakeVnf):
        def configure(self, profile):
            seen.append(profile)

    dep, _, _, _ = _build(vnf=ConfiguredVnf)
    plain = TrafficProfile(64, flows=8, encapsulation="vxlan")
    out = dep.profile(plain)
    assert out.encapsulation == "vxlan" and out.outer_frame_size_bytes == 114
    assert [t.port for t in out.tunnel_links()] == [0, 1] and out.tunnel == out.tunnels[0]
    assert out.tunnel_on(1).vni == 100 and out.tunnel_on(1).generator_ip == "198.18.1.1"
    assert out.tunnel_on(2) is None
    assert seen and seen[0].flows == 8 and seen[0].tunnels == ()  # the VNF forwards the inner frames


def test_a_profile_with_one_link_keeps_the_op2p_meaning():
    link = TunnelFields(port=1, vni=7, generator_mac="02:00:00:00:00:01", generator_ip="198.18.1.1",
                        dut_mac="02:00:00:00:00:02", dut_ip="198.18.1.254")
    p = TrafficProfile(64, encapsulation="vxlan", tunnel=link)
    assert p.tunnel_links() == (link,) and p.tunnel_on(1) is link and p.tunnel_on(0) is None
    assert TrafficProfile(64).tunnel_links() == ()


def test_refusals_are_one_line(fake_testbed):
    with pytest.raises(DeploymentError, match="vswitch fakeswitch has no VXLAN tunnel ports"):
        _build(switch=FakeSwitch())

    class Router(FakeVnf):
        routing = True
        port_kinds = ("physical",)

    with pytest.raises(DeploymentError, match="routing VNF rewrites the inner frames' MACs"):
        _build(vnf=Router)
    with pytest.raises(DeploymentError, match="VNI vni \\+ i, up to 16777216"):
        _build(config={"overlay": {"vni": 16777215}})


def test_not_on_a_generator_of_its_own_ports():
    from test_pvp_deployments import FakeGenerator

    dep = deployment.get("pvp_vxlan")(run_id=RUN, config={}, resources=ResourceStack(), generator=FakeGenerator(2),
                                      make_vswitch=lambda _ns: VtepSwitch(), make_vnf=lambda _ns: FakeVnf())
    with pytest.raises(DeploymentError, match="runs on the embedded testbed"):
        dep.build()


@pytest.mark.parametrize("config, problem", [
    ({"traffic": {"encapsulation": "vxlan"}}, None),
    ({"traffic": {"encapsulation": "vxlan", "bidirectional": False}}, None),
    ({"traffic": {}}, "set traffic.encapsulation: vxlan"),
    ({"traffic": {"encapsulation": "vxlan"}, "overlay": {"operation": "decap"}}, "overlay.operation decap is op2p's"),
    ({"traffic": {"encapsulation": "vxlan"}, "overlay": {"operation": "sideways"}}, "overlay.operation must be"),
])
def test_check_traffic(config, problem):
    got = pvp_vxlan.PvpVxlan.check_traffic(config)
    if problem is None:
        assert got is None
    else:
        assert problem in got and "\n" not in got


# -- the generator: VXLAN out of and into every port with a tunnel link -----------------------

def _links():
    return tuple(TunnelFields(port=i, vni=99 + i, generator_mac=f"02:aa:00:00:01:0{i}", generator_ip=f"198.18.{i}.1",
                              dut_mac=f"02:aa:00:00:02:0{i}", dut_ip=f"198.18.{i}.254") for i in (0, 1))


def _direction(index, tx, rx, fields):
    ports = [GeneratorPort(index=i, iface=f"t{i}", netns="ns", mac=f"02:aa:00:00:01:0{i}", ip=f"198.18.{i}.1")
             for i in (0, 1)]
    plan = plan_flows(fields, 4)
    return _Direction(index=index, tx=ports[tx], rx=ports[rx], fields=fields, plan=plan,
                      template=frames.bulk_template(fields, 64, direction=index)), ports


def test_trafgen_encapsulates_for_the_sending_port_and_verifies_with_the_receiving_ports_link():
    links = _links()
    profile = TrafficProfile(64, flows=4, encapsulation="vxlan", tunnel=links[0], tunnels=links)
    gen = Trafgen.__new__(Trafgen)
    fields = FlowFields()
    d, ports = _direction(0, 0, 1, fields)
    assert gen._tunnels_of(profile, ports) == links
    out = gen._through_tunnel(d, profile)
    assert out.template.data == frames.encapsulate(d.template, links[0]).data  # sent into port 0's VTEP
    assert out.expected.encapsulated
    # what port 1's VTEP must deliver: its own outer addresses and VNI 100 around the inner frame
    good = frames.encapsulate(d.template, links[1])
    good = _from_dut(good.data)
    assert out.expected.verdict(good) is None
    wrong_vni = _from_dut(frames.encapsulate(d.template, dataclasses.replace(links[1], vni=99)).data)
    assert "VNI is 0x6300, expected 0x6400" in out.expected.verdict(wrong_vni)
    port0_vtep = _from_dut(frames.encapsulate(d.template, links[0]).data)
    assert "outer" in out.expected.verdict(port0_vtep)
    assert out.expected.verdict(d.template.data) is not None  # the DUT forgot to encapsulate
    with pytest.raises(Exception, match="the tunnel is on port 1"):
        gen._tunnels_of(profile, ports[:1])


def _from_dut(sent: bytes) -> bytes:
    """A frame the generator sent into a VTEP (generator -> DUT outer headers) turned round:
    as the DUT's VTEP sends it back to that generator port."""
    data = bytearray(sent)
    data[0:6], data[6:12] = sent[6:12], sent[0:6]
    data[26:30], data[30:34] = sent[30:34], sent[26:30]
    return bytes(data)


# -- testcases and preflight --------------------------------------------------------------------

def _plan(test: str, params: str = "", vswitch: str = "ovs_dpdk", vnf: str | None = None):
    base = cfg.load_layers(cfg.default_conf_dir(), [])
    case = testcases.find(test, testcases.default_testcase_dir())
    return testcases.build_plans(case, base, cfg.parse_test_params(params),
                                 {"vswitch": vswitch, "trafficgen": "trafgen", "vnf": vnf})


@pytest.mark.parametrize("test, deployment_name, sizes, matrix, encapsulated", [
    ("pvp_vxlan_tput", "pvp_vxlan", [64, 72, 128, 256, 512, 768, 1024, 1280, 1418], None, True),
    ("pvp_flow_scalability", "pvp", [64, 128, 256, 512, 1024, 1280, 1518], ("traffic.flows", [1000, 1000000]), False),
    ("pvp_vxlan_flow_scalability", "pvp_vxlan", [64, 128, 256, 512, 1024, 1280, 1468], ("traffic.flows", [1000, 1000000]), True),
    ("pvp_rule_complexity", "pvp", [86], ("dut.rules", [64, 1000, 8000, 64000, 128000, 1000000]), False),
    ("pvp_vxlan_rule_complexity", "pvp_vxlan", [130], ("dut.rules", [64, 1000, 8000, 64000, 128000, 1000000]), True),
])
def test_pvp_testcases_carry_the_reports_parameters(test, deployment_name, sizes, matrix, encapsulated):
    plans = _plan(test)
    first = plans[0].config
    assert first["test"]["deployment"] == deployment_name and first["vnf"]["name"] == "testpmd"
    assert first["traffic"]["frame_sizes"] == sizes and first["traffic"]["bidirectional"] is True
    assert (first["traffic"].get("encapsulation") == "vxlan") is encapsulated
    if matrix:
        key, values = matrix
        section, name = key.split(".")
        assert [p.config[section][name] for p in plans] == values
        if key == "dut.rules":  # 1:1 rules and flows, each matching one source and destination
            assert all(p.config["traffic"]["flows"] == p.config["dut"]["rules"] for p in plans)
            assert first["dut"]["rule_template"] == "src_dst_ip"
        else:
            assert first["dut"]["rule_template"] == "in_out" and first["dut"]["rules"] is None
    else:
        assert first["traffic"]["flows"] == 1
    assert [g["loss_ratio"] for g in first["search"]["goals"]] == [0.0]
    for plan in plans:  # every plan passes the checks that need no host
        assert deployment.get(deployment_name).check_traffic(plan.config) is None


def test_preflight_refuses_a_router_behind_a_vtep_and_vxlan_into_plain_pvp():
    [plan] = _plan("pvp_vxlan_tput", "frame_sizes=[64]")
    classes = {"vswitch": plugins.load("vswitch", "ovs_dpdk"), "trafficgen": plugins.load("trafficgen", "trafgen"),
               "vnf": plugins.load("vnf", "testpmd")}
    preflight._check_encapsulation(plan.config, pvp_vxlan.PvpVxlan, classes, "")
    with pytest.raises(preflight.PreflightError, match="vnf vrouter routes, rewriting the inner frames' MACs"):
        preflight._check_encapsulation(plan.config, pvp_vxlan.PvpVxlan,
                                       {**classes, "vnf": plugins.load("vnf", "vrouter")}, "")
    [plain] = _plan("pvp_tput", "frame_sizes=[64];traffic.encapsulation=vxlan")
    with pytest.raises(preflight.PreflightError, match=r"needs an overlay deployment \(op2p or pvp_vxlan; this test's is pvp\)"):
        preflight._check_encapsulation(plain.config, deployment.get("pvp"), classes, "")
    [decap] = _plan("pvp_vxlan_tput", "frame_sizes=[64];overlay.operation=decap")
    with pytest.raises(preflight.PreflightError, match="overlay.operation decap is op2p's"):
        preflight._check_encapsulation(decap.config, pvp_vxlan.PvpVxlan, classes, "")


def test_the_vxlan_scaling_testcases_use_a_sender_that_varies_more_than_one_inner_byte():
    """The trafgen engine writes a tunnelled frame byte by byte and varies one byte per field
    (test_overlay_frames.py): 1000 flows need the pacer or xdp engine."""
    for test in ("pvp_vxlan_flow_scalability", "pvp_vxlan_rule_complexity"):
        engine = _plan(test)[0].config["trafficgen"]["trafgen"]["engine"]
        assert engine in ("pacer", "xdp"), (test, engine)


def test_schema_lists_the_deployment():
    import json

    schema = json.loads((Path(deployment.__file__).parents[1] / "schemas" / "testcase.schema.json").read_text())
    # clean is an integration testcase's (integration_testcase.schema.json), never a performance one's
    assert set(schema["properties"]["deployment"]["enum"]) == set(deployment.DEPLOYMENTS) - {"clean"}


# -- rule sets on a chain of bridges (OvS) ------------------------------------------------------

class _Ctl:
    """What OvsSwitchBase asks ovs-ofctl for when it installs a rule set: the bundles it
    is handed, and a dump-aggregate counting their lines."""

    def __init__(self):
        self.bundles: dict[str, list[str]] = {}

    def add_flows_bundle(self, bridge, path, timeout_s=None):
        self.bundles.setdefault(bridge, []).extend(Path(path).read_text().splitlines())

    def ofctl(self, command, bridge, *args):
        assert command == "dump-aggregate"
        return f"NXST_AGGREGATE reply (xid=0x4): packet_count=0 byte_count=0 flow_count={len(self.bundles[bridge])}"


def test_every_connected_bridge_of_a_chain_holds_the_rule_set_and_the_count_is_their_sum(tmp_path):
    from types import SimpleNamespace

    from vsbench.interfaces.plugin import PluginContext, RunParameters
    from vsbench.interfaces.rules import RuleSetSpec
    from vsbench.interfaces.vswitch import PortSpec, SwitchPort
    from vsbench_plugins.vswitch.ovs_dpdk import OvsDpdk

    spec = RuleSetSpec(template="src_dst_ip", rules=16, fields=FlowFields(), flows=16)
    switch = OvsDpdk(PluginContext(run_id=RUN, settings={}, log_dir=tmp_path, resources=ResourceStack(),
                                   run=RunParameters(rule_set=spec)))
    ctl = _Ctl()
    switch.instance = SimpleNamespace(ctl=ctl, paths=SimpleNamespace(run_dir=tmp_path))
    switch._bridges = {"b0": "vsbabcdefbr0", "b1": "vsbabcdefbr1"}

    def port(name, number):
        return SwitchPort(name, number, PortSpec(kind="physical", name=name, iface=name))

    switch.connect("b0", port("vx0", 1), port("u0", 2))  # the VTEP's frames to the VNF, and back
    switch.connect("b1", port("u1", 1), port("vx1", 2))  # the VNF's frames to the VTEP, and back
    assert switch.rules_installed == 2 * 2 * 16
    for real in ("vsbabcdefbr0", "vsbabcdefbr1"):
        lines = ctl.bundles[real]
        assert len(lines) == 32 and not any("priority=10," in line for line in lines)  # no port-to-port flow
        forward = [line for line in lines if "in_port=1," in line]
        assert forward[0] == "priority=100,ip,in_port=1,nw_src=10.0.0.1,nw_dst=10.1.0.1,actions=output:2"
        assert forward[-1].endswith("nw_src=10.0.0.16,nw_dst=10.1.0.16,actions=output:2")
        reverse = [line for line in lines if "in_port=2," in line]
        assert reverse[0] == "priority=100,ip,in_port=2,nw_src=10.1.0.1,nw_dst=10.0.0.1,actions=output:1"


def test_several_lanes_of_vnfs_behind_the_vteps_get_a_tunnel_per_generator_port(fake_testbed):
    """What 001/F2's many guests become once the chain's lanes are configurable: each lane's
    pair of generator ports is a pair of VTEPs, each lane's VNF between them."""

    class TwoLanes(pvp_vxlan.PvpVxlan):
        lanes = 2
        generator_port_count = 4

    switch, vnfs = VtepSwitch(), []

    def make_vnf(_netns):
        vnfs.append(FakeVnf())
        return vnfs[-1]

    dep = TwoLanes(run_id=RUN, config={}, resources=ResourceStack(), generator=TestbedGenerator(),
                   make_vswitch=lambda _ns: switch, make_vnf=make_vnf)
    ports = dep.build()
    assert len(ports) == 4 and len(vnfs) == dep.vnf_count() == 2
    assert [(t.port, t.vni) for t in dep.tunnels] == [(0, 99), (1, 100), (2, 101), (3, 102)]
    assert [c[1:] for c in switch.connections] == [
        (f"vsb{RUN}vx0", f"vsb{RUN}u0"), (f"vsb{RUN}u1", f"vsb{RUN}vx1"),
        (f"vsb{RUN}vx2", f"vsb{RUN}u2"), (f"vsb{RUN}u3", f"vsb{RUN}vx3")]
    assert [(p.tx_port, p.rx_port) for p in dep.paths] == [(0, 1), (1, 0), (2, 3), (3, 2)]
    for vnf in vnfs:
        vnf.configure = lambda profile: None
    out = dep.profile(TrafficProfile(64))
    assert [out.tunnel_on(i).dut_ip for i in range(4)] == [f"198.18.{i}.254" for i in range(4)]


def test_the_flow_limit_turning_flows_away_is_a_figure_of_the_trial(tmp_path):
    """OvS-DPDK at 8000 rules through a PVP (32,000 megaflows) on this machine: the datapath
    flow limit was 13,000 and turned ~23k upcalls a second away (measured, upcall/show and
    coverage/read-counter); the trial's datapath says so, and the point's datapath phrase."""
    from types import SimpleNamespace

    from vsbench.interfaces.plugin import PluginContext
    from vsbench.results import switch_figures
    from vsbench_plugins.vswitch.ovs_dpdk import OvsDpdk

    answers = iter(["339782\n", "netdev@ovs-netdev:\n  flows         : (current 13119) (avg 10545) (max 12973) (limit 13000)\n"
                    "  dump duration : 107ms\n  ufid enabled : true\n"])
    switch = OvsDpdk(PluginContext(run_id=RUN, settings={}, log_dir=tmp_path, resources=ResourceStack()))
    switch.instance = SimpleNamespace(ctl=SimpleNamespace(appctl=lambda *args: next(answers)))
    after = switch.flow_limit_sample()
    # the delta also reads back the datapath implementations: listings with nothing in them here
    switch.instance = SimpleNamespace(ctl=SimpleNamespace(appctl=lambda *args: ""))
    assert after == {"flow_limit_hits": 339782, "flows_limit": 13000, "flows_current": 13119}
    delta = switch.datapath_delta({"flow_limit": {"flow_limit_hits": 100}}, {"flow_limit": after})
    assert (delta["flow_limit_hits"], delta["flows_limit"], delta["flows_current"]) == (339682, 13000, 13119)
    assert switch_figures.flow_limit_text({"datapath": delta}) == "flow limit 13,000 flows: 339,682 upcalls not installed (slow path)"
    assert switch_figures.flow_limit_text({"datapath": {**delta, "flow_limit_hits": 0}}) is None
    assert "flow limit 13,000" in switch_figures.datapath_text({"datapath": delta})


def test_trafgen_sends_an_encapsulated_profile_on_several_port_pairs_one_stream_per_port():
    """pvp_vxlan with lanes: the pairs' directions as streams, each port sending and
    receiving one of them through its own tunnel link (so the verifier of each receiving port
    counts its stream); streams sharing a port cannot be told apart inside VXLAN."""
    from vsbench.interfaces.traffic import GeneratorPort, PortStream
    from vsbench.interfaces.plugin import PluginError
    from vsbench.measurement.profiles import on_port_pairs
    from vsbench_plugins.trafficgen.trafgen import Trafgen

    ports = [GeneratorPort(index=i, iface=f"t{i}", netns="ns") for i in range(4)]
    profile = on_port_pairs(TrafficProfile(64, encapsulation="vxlan"), 2)
    specs = Trafgen._stream_specs(profile, ports)
    assert [(a.index, b.index) for a, b, _, _ in specs] == [(0, 1), (1, 0), (2, 3), (3, 2)]
    shared = dataclasses.replace(profile, streams=(PortStream(tx_port=0, rx_port=1, fields=profile.fields),
                                                   PortStream(tx_port=0, rx_port=3, fields=profile.fields)))
    with pytest.raises(PluginError, match="a port of their own"):
        Trafgen._stream_specs(shared, ports)
