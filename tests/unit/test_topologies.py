"""The ``topology`` section's shapes, with recording fakes (no testbed: the real testbed
path runs in tests/integration/test_topologies_on_testbed.py): p2p on several port pairs,
VNF chains with lanes, longer and mixed chains, the switchless phy_vnf_phy and what
``--vswitch none`` maps to."""

from pathlib import Path

import pytest

from vsbench import deployment
from vsbench.deployment import DeploymentError, phy_vnf
from vsbench.measurement import stages
from vsbench.runner import config as cfg
from vsbench.runner import testcases
from vsbench.system.resources import ResourceStack
from vsbench.system import testbed as tb
from vsbench_plugins.vnf.l3fwd import command as l3fwd_command
from vsbench_plugins.vnf.l3fwd import plugin as l3fwd_plugin
from vsbench_plugins.vnf.testpmd import plugin as testpmd_plugin

from test_pvp_deployments import FakeGenerator, FakeSwitch, FakeVnf


class OnePairVnf(FakeVnf):
    """A VNF that forwards one pair of ports per instance, as l3fwd does."""

    max_port_pairs = 1
    port_kinds = ("physical",)


def _deploy(name, topology, generator_ports=4, vnf_cls=FakeVnf):
    switch, vnfs = FakeSwitch(), []

    def make_vnf(_netns):
        vnfs.append(vnf_cls())
        return vnfs[-1]

    dep = deployment.get(name)(run_id="abcdef", config={"topology": topology}, resources=ResourceStack(),
                               generator=FakeGenerator(generator_ports), make_vswitch=lambda _n: switch,
                               make_vnf=make_vnf)
    return dep, switch, vnfs


def _build(name, topology, generator_ports=4, vnf_cls=FakeVnf):
    dep, switch, vnfs = _deploy(name, topology, generator_ports, vnf_cls)
    ports = dep.build()
    return dep, switch, vnfs, ports


# -- p2p on several port pairs ------------------------------------------------------------------

def test_p2p_on_two_port_pairs_is_one_bridge_per_pair_and_one_switching_operation():
    dep, switch, _, ports = _build("p2p", {"port_pairs": 2})
    assert len(ports) == 4 and dep.generator_port_count == 4 and dep.switching_operations == 1
    assert switch.bridges == ["vsbabcdefbr0", "vsbabcdefbr1"]
    assert switch.connections == [("vsbabcdefbr0", "vsbabcdefp0", "vsbabcdefp1"),
                                  ("vsbabcdefbr1", "vsbabcdefp2", "vsbabcdefp3")]
    assert [b for b, _ in switch.ports] == ["vsbabcdefbr0"] * 2 + ["vsbabcdefbr1"] * 2
    assert dep.describe() == {"topology": "PHY-PHY", "vnf_count": 0, "switching_operations": 1, "port_pairs": 2}
    # the default stays the two-port p2p
    dep, switch, _, ports = _build("p2p", {"port_pairs": 1}, generator_ports=2)
    assert len(ports) == 2 and switch.bridges == ["vsbabcdefbr0"]


def test_p2p_refuses_what_it_cannot_build_in_one_line():
    with pytest.raises(DeploymentError, match="^p2p needs 4 generator ports; fakegen has 2$"):
        _build("p2p", {"port_pairs": 2}, generator_ports=2)
    with pytest.raises(DeploymentError, match=r"^topology.lanes=2 does not apply to deployment p2p "
                                              r"\(it reads topology.port_pairs\)$"):
        deployment.get("p2p").shape({"topology": {"lanes": 2}})
    with pytest.raises(DeploymentError, match="topology.port_pairs must be an integer >= 1"):
        deployment.get("p2p").shape({"topology": {"port_pairs": 0}})
    # a setting left at its default is no request: every deployment accepts conf/00_common.yaml's section
    defaults = cfg.load_layers(cfg.default_conf_dir(), [])
    for cls in deployment.DEPLOYMENTS.values():
        cls.shape(defaults)


# -- VNF chains shaped by topology --------------------------------------------------------------

def test_pvp_with_two_lanes_is_the_pvpv_wiring():
    dep, switch, vnfs, ports = _build("pvp", {"lanes": 2})
    pvpv, pvpv_switch, _, _ = _build("pvpv", {})
    assert len(ports) == 4 and len(vnfs) == 2 and dep.switching_operations == 2
    assert switch.connections == pvpv_switch.connections and dep.paths == pvpv.paths
    assert dep.describe()["topology"] == "2 x PHY-VNF-PHY in parallel" == pvpv.describe()["topology"]
    assert [(p.tx_port, p.rx_port, [h.vnf for h in p.hops]) for p in dep.paths] == [
        (0, 1, [0]), (1, 0, [0]), (2, 3, [1]), (3, 2, [1])]


def test_a_chain_of_three_crosses_four_bridges():
    dep, switch, vnfs, ports = _build("pvp", {"vnfs_per_lane": 3}, generator_ports=2)
    assert len(ports) == 2 and len(vnfs) == 3 and dep.switching_operations == 4 and len(switch.bridges) == 4
    assert [c[1:] for c in switch.connections] == [
        ("vsbabcdefp0", "vsbabcdefu0"), ("vsbabcdefu1", "vsbabcdefu2"), ("vsbabcdefu3", "vsbabcdefu4"),
        ("vsbabcdefu5", "vsbabcdefp1")]
    assert [[p.name for p in v.ports] for v in vnfs] == [
        ["vsbabcdefu0", "vsbabcdefu1"], ["vsbabcdefu2", "vsbabcdefu3"], ["vsbabcdefu4", "vsbabcdefu5"]]
    [forward, backward] = dep.paths
    assert [h.vnf for h in forward.hops] == [0, 1, 2] and [h.vnf for h in backward.hops] == [2, 1, 0]
    assert dep.describe()["topology"] == "PHY-VNF-VNF-VNF-PHY" and dep.vnf_count() == 3


def test_mixed_lanes_a_single_vnf_beside_a_chain_of_two():
    """ONP 2.1 40 Gbps scenario 2 on four ports: lane 0 through one VNF, lane 1 through two."""
    dep, switch, vnfs, ports = _build("pvp", {"lane_vnfs": [1, 2]})
    assert len(ports) == 4 and len(vnfs) == 3 and len(switch.bridges) == 5
    assert [c[1:] for c in switch.connections] == [
        ("vsbabcdefp0", "vsbabcdefu0"), ("vsbabcdefu1", "vsbabcdefp1"),
        ("vsbabcdefp2", "vsbabcdefu2"), ("vsbabcdefu3", "vsbabcdefu4"), ("vsbabcdefu5", "vsbabcdefp3")]
    # each lane is offered the same load: (2 + 3) / 2 bridges per frame
    assert dep.switching_operations == 2.5
    assert deployment.get("pvp").shape({"topology": {"lane_vnfs": [1, 2]}}).switching_operations == 2.5
    assert [(p.tx_port, p.rx_port, [h.vnf for h in p.hops]) for p in dep.paths] == [
        (0, 1, [0]), (1, 0, [0]), (2, 3, [1, 2]), (3, 2, [2, 1])]
    described = dep.describe()
    assert described["topology"] == "PHY-VNF-PHY + PHY-VNF-VNF-PHY in parallel"
    assert described["lane_vnfs"] == [1, 2] and described["vnf_count"] == 3 and described["lanes"] == 2
    # a list of equal counts is the uniform shape
    dep, *_ = _build("pvp", {"lane_vnfs": [2, 2]})
    assert dep.lanes == 2 and dep.vnfs_per_lane == 2 and dep.switching_operations == 3
    assert "lane_vnfs" not in dep.describe()


def test_the_named_chains_keep_their_shapes_and_names():
    for name, (ports, vnf_count, ops, topology) in {
            "pvp": (2, 1, 2, "PHY-VNF-PHY"), "pvvp": (2, 2, 3, "PHY-VNF-VNF-PHY"),
            "pvpv": (4, 2, 2, "2 x PHY-VNF-PHY in parallel"),
            "pvp_multiport": (4, 1, 2, "2 x PHY-VNF-PHY through one VNF")}.items():
        dep, _, vnfs, gen_ports = _build(name, {"lanes": None, "vnfs_per_lane": None, "lane_vnfs": None})
        assert (len(gen_ports), len(vnfs), dep.switching_operations, dep.describe()["topology"]) == \
            (ports, vnf_count, ops, topology), name
        assert deployment.get(name).shape({}).switching_operations == ops
    # the generated names agree with the classes' own for their shapes
    assert deployment.pvp.chain_name([1, 1], shared=True) == "2 x PHY-VNF-PHY through one VNF"


def test_a_shared_vnf_takes_every_lane_and_refuses_a_one_pair_vnf():
    dep, _, vnfs, _ = _build("pvp_multiport", {"vnfs_per_lane": 2})
    assert len(vnfs) == 2 and dep.switching_operations == 3
    assert all(len(v.ports) == 4 for v in vnfs)
    with pytest.raises(DeploymentError, match="pvp_multiport: every lane crosses the same VNF, and vnf fakevnf "
                                              "forwards 1 port pair"):
        _build("pvp_multiport", {}, vnf_cls=OnePairVnf)
    with pytest.raises(DeploymentError, match="cannot differ between lanes"):
        deployment.get("pvp_multiport").shape({"topology": {"lane_vnfs": [1, 2]}})


@pytest.mark.parametrize("topology, message", [
    ({"lane_vnfs": [1, 2], "vnfs_per_lane": 2}, "not both"),
    ({"lane_vnfs": [1, 2], "lanes": 3}, "topology.lane_vnfs has 2 lanes but topology.lanes is 3"),
    ({"lane_vnfs": []}, "topology.lane_vnfs must be a list"),
    ({"lane_vnfs": [1, 0]}, "topology.lane_vnfs must be an integer >= 1"),
    ({"vnfs_per_lane": 0}, "topology.vnfs_per_lane must be an integer >= 1 for pvp, got 0"),
    ({"port_pairs": 2}, r"topology.port_pairs=2 does not apply to deployment pvp \(it reads topology.lanes, "
                        r"topology.vnfs_per_lane, topology.lane_vnfs\)"),
])
def test_chain_settings_are_refused_in_one_line(topology, message):
    with pytest.raises(DeploymentError, match=message):
        deployment.get("pvp").shape({"topology": topology})


def test_more_lanes_than_the_generator_has_ports_is_one_line():
    with pytest.raises(DeploymentError, match="^pvp needs 6 generator ports; fakegen has 4$"):
        _build("pvp", {"lanes": 3})


def test_a_subclass_setting_its_shape_after_init_is_built_as_set():
    """The VXLAN PVP of another branch reads VnfChain's shape from instance attributes."""
    dep, switch, vnfs = _deploy("pvp", {}, generator_ports=4)
    dep.lanes, dep.vnfs_per_lane = 2, 2
    dep.build()
    assert len(vnfs) == 4 and len(switch.bridges) == 6 and dep.switching_operations == 3
    assert [h.vnf for h in dep.paths[2].hops] == [2, 3]


def test_chain_paths_with_a_count_per_lane():
    paths = stages.chain_paths([(0, 1), (2, 3)], [2, 1])
    assert [(p.tx_port, [(h.vnf, h.in_port, h.out_port) for h in p.hops]) for p in paths] == [
        (0, [(0, 0, 1), (1, 0, 1)]), (1, [(1, 1, 0), (0, 1, 0)]), (2, [(2, 0, 1)]), (3, [(2, 1, 0)])]
    assert stages.chain_paths([(0, 1), (2, 3)], 1) == stages.chain_paths([(0, 1), (2, 3)], [1, 1])
    with pytest.raises(ValueError):
        stages.chain_paths([(0, 1)], [1, 2])


# -- phy_vnf_phy: no switch -------------------------------------------------------------------

class OnTestbedGenerator(FakeGenerator):
    def capabilities(self):
        from vsbench.interfaces.traffic import GeneratorCapabilities
        return GeneratorCapabilities(ports=self.ports, needs_testbed=True, port_streams=True)


def _fake_testbed(run_id, count, resources):
    links = tuple(tb.TestbedLink(index=i, tg_iface=f"tg{i}", tg_mac=f"02:00:00:00:00:0{i}", tg_ip=f"198.18.{i}.1",
                              dut_iface=f"d{i}", dut_mac=f"02:00:00:00:01:0{i}") for i in range(count))
    return tb.Testbed(run_id=run_id, tg_netns="vsb-tg", dut_netns="vsb-dut", links=links)


class NamespaceLog:
    """Records the namespace calls a deployment makes (no real namespace is touched)."""

    def __init__(self, monkeypatch, module):
        self.created, self.moved, self.pairs = [], [], []
        monkeypatch.setattr(module, "add_namespace", lambda name, resources: self.created.append(name))
        monkeypatch.setattr(module, "move_port", lambda ns, iface, target: self.moved.append((ns, iface, target)))
        if hasattr(module, "add_internal_pair"):
            monkeypatch.setattr(module, "add_internal_pair",
                                lambda ns, names, macs, resources: self.pairs.append((ns, names)))


def _no_switch(monkeypatch, pairs, vnf_cls, generator=OnTestbedGenerator):
    monkeypatch.setattr(phy_vnf, "create_testbed", _fake_testbed)
    made, netns = [], []

    def make_vnf(ns):
        netns.append(ns)
        made.append(vnf_cls())
        return made[-1]

    def no_switch(_ns):
        raise AssertionError("phy_vnf_phy builds no switch")

    dep = deployment.get("phy_vnf_phy")(run_id="abcdef", config={"topology": {"port_pairs": pairs}},
                                        resources=ResourceStack(), generator=generator(4),
                                        make_vswitch=no_switch, make_vnf=make_vnf)
    return dep, dep.build(), made, netns


def test_phy_vnf_phy_hands_the_links_to_one_vnf_that_forwards_every_pair(monkeypatch):
    dep, ports, vnfs, netns = _no_switch(monkeypatch, 2, FakeVnf)
    assert len(ports) == 4 and len(vnfs) == 1 and netns == ["vsb-dut"]
    assert [p.name for p in vnfs[0].ports] == ["d0", "d1", "d2", "d3"]
    assert [p.spec.kind for p in vnfs[0].ports] == ["physical"] * 4
    assert [p.spec.options["peer_mac"] for p in vnfs[0].ports] == [f"02:00:00:00:00:0{i}" for i in range(4)]
    assert dep.switching_operations == 0 and dep.vswitch is None and dep.vnfs == vnfs
    assert dep.describe() == {"topology": "PHY-VNF-PHY (no vSwitch)", "vnf_count": 1, "port_pairs": 2,
                              "switching_operations": 0, "vnf_port_kind": "physical", "pairs_per_vnf": 2}
    cls = deployment.get("phy_vnf_phy")
    assert cls.uses_vswitch is False and cls.requires_vnf is True


def test_phy_vnf_phy_runs_one_pair_vnf_per_pair_each_in_its_own_namespace(monkeypatch):
    calls = NamespaceLog(monkeypatch, phy_vnf)
    dep, ports, made, netns = _no_switch(monkeypatch, 2, OnePairVnf)
    vnfs = dep.vnfs
    assert vnfs == made[1:] and made[0].ports is None
    assert [[p.name for p in v.ports] for v in vnfs] == [["d0", "d1"], ["d2", "d3"]]
    assert dep.describe()["vnf_count"] == 2 and dep.describe()["pairs_per_vnf"] == 1
    # net_af_packet's fanout groups are per namespace: two processes' must not share one
    assert calls.created == ["vsb-abcdef-vnf0", "vsb-abcdef-vnf1"]
    assert calls.moved == [("vsb-dut", "d0", "vsb-abcdef-vnf0"), ("vsb-dut", "d1", "vsb-abcdef-vnf0"),
                           ("vsb-dut", "d2", "vsb-abcdef-vnf1"), ("vsb-dut", "d3", "vsb-abcdef-vnf1")]
    assert netns[1:] == ["vsb-abcdef-vnf0", "vsb-abcdef-vnf1"]  # netns[0]: the probe, never started
    calls = NamespaceLog(monkeypatch, phy_vnf)
    _, ports, vnfs, netns = _no_switch(monkeypatch, 1, OnePairVnf)
    assert len(ports) == 2 and [[p.name for p in v.ports] for v in vnfs] == [["d0", "d1"]]
    assert calls.created == [] and calls.moved == [] and netns == ["vsb-dut"]


def test_several_vnfs_on_veth_ends_each_get_a_namespace(monkeypatch):
    from vsbench.deployment import pvp

    monkeypatch.setattr(pvp, "create_testbed", _fake_testbed)
    calls = NamespaceLog(monkeypatch, pvp)

    def build(topology):
        switch, made, netns = FakeSwitch(), [], []
        switch.supports_vhost_user = False  # a kernel bridge: the VNFs get veth pairs

        def make_vnf(ns):
            netns.append(ns)
            made.append(FakeVnf())
            return made[-1]

        dep = deployment.get("pvp")(run_id="abcdef", config={"topology": topology}, resources=ResourceStack(),
                                    generator=OnTestbedGenerator(4), make_vswitch=lambda _n: switch,
                                    make_vnf=make_vnf)
        dep.build()
        return dep, made, netns

    dep, made, netns = build({"lanes": 2})
    assert dep.vnf_port_kind == "veth" and calls.created == ["vsb-abcdef-vnf0", "vsb-abcdef-vnf1"]
    assert netns == ["vsb-dut", "vsb-abcdef-vnf0", "vsb-abcdef-vnf1"]
    assert [m[1:] for m in calls.moved] == [("vsbabcdefv0", "vsb-abcdef-vnf0"), ("vsbabcdefv1", "vsb-abcdef-vnf0"),
                                           ("vsbabcdefv2", "vsb-abcdef-vnf1"), ("vsbabcdefv3", "vsb-abcdef-vnf1")]
    assert [[p.name for p in v.ports] for v in made[1:]] == [["vsbabcdefv0", "vsbabcdefv1"],
                                                             ["vsbabcdefv2", "vsbabcdefv3"]]
    calls.created.clear(), calls.moved.clear()
    _, made, netns = build({})  # one VNF stays in the DUT namespace, as before
    assert netns == ["vsb-dut"] and calls.created == [] and calls.moved == []


def test_phy_vnf_phy_refusals(monkeypatch):
    class Router(FakeVnf):
        routing = True
        port_kinds = ("physical",)

    class VhostOnly(FakeVnf):
        port_kinds = ("vhostuser",)

    with pytest.raises(DeploymentError, match="^vnf fakevnf routes: its deployment is phy_router_phy"):
        _no_switch(monkeypatch, 1, Router)
    with pytest.raises(DeploymentError, match="takes no kernel interfaces"):
        _no_switch(monkeypatch, 1, VhostOnly)
    with pytest.raises(DeploymentError, match="^phy_vnf_phy runs on the embedded testbed only"):
        _no_switch(monkeypatch, 1, FakeVnf, generator=FakeGenerator)
    with pytest.raises(DeploymentError, match="^phy_vnf_phy needs 6 generator ports; fakegen has 4$"):
        _no_switch(monkeypatch, 3, FakeVnf)


# -- --vswitch none ---------------------------------------------------------------------------

def test_vswitch_none_maps_p2p_to_phy_vnf_phy_as_vsperf_did():
    get = deployment.get
    assert phy_vnf.without_vswitch(get("p2p"), "none") == ("phy_vnf_phy", "testpmd")
    assert phy_vnf.without_vswitch(get("p2p"), "l3fwd") == ("phy_vnf_phy", "l3fwd")
    assert phy_vnf.without_vswitch(get("phy_router_phy"), "vrouter") == ("phy_router_phy", "vrouter")
    assert phy_vnf.without_vswitch(get("phy_vnf_phy"), "l3fwd") == ("phy_vnf_phy", "l3fwd")
    for name in ("pvp", "pvvp", "op2p"):
        with pytest.raises(DeploymentError, match=f"--vswitch none: deployment {name} needs a switch"):
            phy_vnf.without_vswitch(get(name), "testpmd")


def _plans(test, params="", **flags):
    base = cfg.load_layers(cfg.default_conf_dir(), [])
    case = testcases.find(test, testcases.default_testcase_dir())
    return testcases.build_plans(case, base, cfg.parse_test_params(params),
                                 {"vswitch": None, "trafficgen": None, "vnf": None, **flags})


def test_vswitch_none_on_the_command_line():
    assert testcases.NO_VSWITCH == phy_vnf.NO_VSWITCH == "none"
    [plan] = _plans("phy2phy_tput", vswitch="none")
    assert plan.config["test"]["deployment"] == "phy_vnf_phy" and plan.config["vnf"]["name"] == "testpmd"
    [plan] = _plans("phy2phy_tput", "port_pairs=2", vswitch="none", vnf="l3fwd")
    assert plan.config["vnf"]["name"] == "l3fwd" and plan.config["topology"]["port_pairs"] == 2
    with pytest.raises(testcases.TestcaseError, match="^test pvp_tput: --vswitch none: deployment pvp needs a switch"):
        _plans("pvp_tput", vswitch="none")
    [plan] = _plans("phy2phy_novswitch_tput")
    assert plan.config["test"]["deployment"] == "phy_vnf_phy" and plan.config["vnf"]["name"] == "l3fwd"


def test_topology_settings_by_short_name_and_in_a_matrix():
    [plan] = _plans("pvp_tput", "lanes=2;vnfs_per_lane=2")
    assert plan.config["topology"] == {"port_pairs": 1, "lanes": 2, "vnfs_per_lane": 2, "lane_vnfs": None}
    plans = _plans("pvp_tput", "topology.lane_vnfs=[[1, 1], [1, 2]]")
    assert [p.config["topology"]["lane_vnfs"] for p in plans] == [[1, 1], [1, 2]]
    with pytest.raises(cfg.ConfigError, match="topology.port_pairs: 0 must be >= 1"):
        _plans("phy2phy_tput", "port_pairs=0")


def test_preflight_refuses_a_topology_setting_the_deployment_does_not_read():
    from vsbench.runner import preflight

    [plan] = _plans("phy2phy_tput", "lanes=2")
    with pytest.raises(preflight.PreflightError, match=r"^phy2phy_tput: topology.lanes=2 does not apply to "
                                                        r"deployment p2p"):
        preflight.check_plan(plan)


# -- the VNFs' forwarding cores ---------------------------------------------------------------

def test_l3fwd_lcores_take_the_ports_in_turn():
    rules = dict(lookup="lpm", rules_v4=Path("/r/4"), rules_v6=Path("/r/6"))
    one = l3fwd_command.app_args(ports=2, lcore=1, **rules)
    assert one[one.index("--config") + 1] == "(0,0,1),(1,0,1)"
    two = l3fwd_command.app_args(ports=2, lcore=[1, 0], **rules)
    # a transmit queue per lcore on every port, so two queue pairs a port, both polled by its lcore
    assert two[two.index("--config") + 1] == "(0,0,1),(0,1,1),(1,0,0),(1,1,0)"
    with pytest.raises(ValueError, match="1 to 2 lcores, not 3"):
        l3fwd_command.app_args(ports=2, lcore=[1, 2, 3], **rules)
    argv = l3fwd_command.process_argv(Path("/b/l3fwd"), lcore=[1, 0], memory_args=[], vdevs=[], app=[])
    assert argv[:5] == ["/b/l3fwd", "-l", "1,0", "--main-lcore", "1"]


def test_l3fwd_cores_and_their_cpus():
    cfg0 = l3fwd_plugin.with_defaults({})
    assert cfg0["cores"] == 1 and l3fwd_plugin.lcore_cpus(cfg0, {0, 1}) == [1]
    assert l3fwd_plugin.lcore_errors(cfg0, {0, 1}) == []
    two = l3fwd_plugin.with_defaults({"cores": 2})
    assert l3fwd_plugin.lcore_cpus(two, {0, 1, 2, 3}) == [3, 2] and l3fwd_plugin.lcore_errors(two, {0, 1}) == []
    # the report's 4-core row cannot be placed on this 2-CPU host: one line, before anything starts
    four = l3fwd_plugin.with_defaults({"cores": 4})
    assert l3fwd_plugin.lcore_errors(four, {0, 1}) == [
        "vnf.l3fwd.cores=4 needs 4 CPUs for its lcores; this host has 2 online"]
    grouped = l3fwd_plugin.with_defaults({"cores": 2, "lcore_cpus": [2, 3, 4, 5]})
    assert [l3fwd_plugin.lcore_cpus(grouped, set(range(8)), k) for k in (0, 1, 2)] == [[2, 3], [4, 5], [2, 3]]
    assert l3fwd_plugin.lcore_errors(l3fwd_plugin.with_defaults({"cores": 2, "lcore_cpus": [1]}), {0, 1}) == [
        "vnf.l3fwd.lcore_cpus lists 1 CPU(s) for cores=2"]
    assert l3fwd_plugin.lcore_errors(l3fwd_plugin.with_defaults({"lcore_cpus": [5]}), {0, 1}) == [
        "vnf.l3fwd CPUs [5] are not online (online: [0, 1])"]
    assert l3fwd_plugin.lcore_errors(l3fwd_plugin.with_defaults({"cores": 2, "mode": "vm"}), {0, 1}) == [
        "vnf.l3fwd.cores=2: l3fwd in a VM runs one lcore (use mode: process)"]
    # more lcores than its two ports, where the CPUs are there
    assert l3fwd_plugin.lcore_errors(l3fwd_plugin.with_defaults({"cores": 3}), set(range(8))) == [
        "vnf.l3fwd.cores=3: l3fwd hands each of its 2 ports to one lcore, so at most 2 lcores per l3fwd "
        "(4 ports: topology.port_pairs=2, one l3fwd per pair)"]
    assert l3fwd_plugin.L3fwd.max_port_pairs == 1


def test_testpmd_cores():
    base = testpmd_plugin.with_defaults(testpmd_plugin.SETTINGS_SCHEMA, {})
    assert testpmd_plugin.forward_cpus({**base, "cores": 2}, {0, 1}) == (1, 0)
    assert testpmd_plugin.forward_cpus({**base, "cores": None}, {0, 1}) == (1,)
    assert testpmd_plugin.settings_errors({**base, "cores": 4}, {0, 1}) == [
        "vnf.testpmd.cores=4 needs 4 CPUs for its forwarding lcores; this host has 2 online"]
    assert testpmd_plugin.settings_errors({**base, "cores": 2, "forward_cpus": [1]}, {0, 1}) == [
        "vnf.testpmd.cores=2 but forward_cpus lists 1 CPUs"]
    assert testpmd_plugin.Testpmd.max_port_pairs is None


def test_the_line_rate_is_every_pairs():
    from vsbench.interfaces.traffic import TrafficProfile
    from vsbench.measurement import profiles
    from vsbench.results import recompute

    config = {"testbed": {"link_gbps": 10}, "traffic": {"bidirectional": True}}
    one = profiles.nominal_line_rate_fps(config, TrafficProfile(64))
    two_pairs = profiles.on_port_pairs(TrafficProfile(64), 2)
    assert two_pairs.directions == 4 and two_pairs.sending_ports == 4
    assert profiles.nominal_line_rate_fps(config, two_pairs) == pytest.approx(2 * one)
    assert recompute.nominal_line_rate_fps(config, 64, 2) == pytest.approx(2 * one)
    assert recompute.nominal_line_rate_fps(config, 64) == pytest.approx(one)
    # unidirectional: the even port of each pair sends
    uni = profiles.on_port_pairs(TrafficProfile(64, bidirectional=False), 2)
    assert [(s.tx_port, s.rx_port) for s in uni.streams] == [(0, 1), (2, 3)]
    assert profiles.nominal_line_rate_fps(config, uni) == pytest.approx(one)


def test_several_port_pairs_are_sent_as_port_to_port_streams_one_per_direction():
    from vsbench.interfaces.traffic import FlowFields, TrafficProfile
    from vsbench.measurement import profiles

    fields = FlowFields(src_ip="10.0.0.1", dst_ip="10.1.0.1", src_port=1000, dst_port=2000, vary=("src_ip",))
    one_pair = TrafficProfile(64, flows=8, fields=fields)
    assert profiles.on_port_pairs(one_pair, 1) is one_pair  # one pair: the generator's own pair, no streams
    prof = profiles.on_port_pairs(one_pair, 2)
    assert [(s.tx_port, s.rx_port) for s in prof.streams] == [(0, 1), (1, 0), (2, 3), (3, 2)]
    forward, backward = prof.streams[0].fields, prof.streams[1].fields
    assert forward == fields and prof.streams[2].fields == fields
    assert (backward.src_ip, backward.dst_ip, backward.src_port, backward.dst_port, backward.vary) == (
        "10.1.0.1", "10.0.0.1", 2000, 1000, ("dst_ip",))
    # a profile that has its streams (a router's traffic profile) is left as it is
    assert profiles.on_port_pairs(prof, 4) is prof
    # the reverse fields a routed deployment set are the backward streams'
    routed = TrafficProfile(64, fields=fields, reverse_fields=FlowFields(src_ip="10.9.9.9"))
    assert profiles.on_port_pairs(routed, 2).streams[1].fields.src_ip == "10.9.9.9"


def test_phy_router_phy_reads_port_pairs_as_its_router_ports():
    cls = deployment.get("phy_router_phy")
    assert cls.shape({"topology": {"port_pairs": 2}}).generator_port_count == 4
    assert cls.shape({"topology": {"port_pairs": 4}, "dut": {"router_instances": 2}}).generator_port_count == 16
    assert cls.shape({"topology": {"port_pairs": None}}).generator_port_count == 2
    with pytest.raises(DeploymentError, match="topology.port_pairs must be 1, 2 or 4 for phy_router_phy"):
        cls.shape({"topology": {"port_pairs": 3}})
    with pytest.raises(DeploymentError, match=r"^topology.lanes=2 does not apply to deployment phy_router_phy "
                                              r"\(it reads topology.port_pairs\)$"):
        cls.shape({"topology": {"lanes": 2}})


def test_a_generator_that_does_not_take_streams_is_refused_on_several_pairs():
    class PairOnlyGenerator(FakeGenerator):
        def capabilities(self):
            from vsbench.interfaces.traffic import GeneratorCapabilities
            return GeneratorCapabilities(ports=self.ports, needs_testbed=False)

    for name, topology in (("p2p", {"port_pairs": 2}), ("pvp", {"lanes": 2})):
        dep = deployment.get(name)(run_id="abcdef", config={"topology": topology}, resources=ResourceStack(),
                                   generator=PairOnlyGenerator(4), make_vswitch=lambda _n: FakeSwitch(),
                                   make_vnf=lambda _n: FakeVnf())
        with pytest.raises(DeploymentError, match=f"^{name} on 2 port pairs sends each pair's directions as "
                                                  r"port-to-port streams; trafficgen fakegen does not take them"):
            dep.build()
    # one pair needs no streams
    dep = deployment.get("p2p")(run_id="abcdef", config={"topology": {"port_pairs": 1}}, resources=ResourceStack(),
                                generator=PairOnlyGenerator(2), make_vswitch=lambda _n: FakeSwitch())
    assert len(dep.build()) == 2


def test_testpmd_that_lost_a_port_at_start_is_refused_not_run_on_fewer():
    startup = ("rte_pmd_init_internals(): net_af_packet0: could not set PACKET_FANOUT on AF_PACKET socket for "
               "vsbx:Invalid argument\nvdev_probe(): failed to initialize net_af_packet0 device\n")
    assert testpmd_plugin.missing_ports("io packet forwarding - ports=1 - cores=1 - streams=1", 2, startup) == (
        "forwards on 1 of its 2 ports: rte_pmd_init_internals(): net_af_packet0: could not set PACKET_FANOUT on "
        "AF_PACKET socket for vsbx:Invalid argument")
    assert testpmd_plugin.missing_ports("io packet forwarding - ports=2 - cores=1 - streams=2", 2, startup) is None
    assert testpmd_plugin.missing_ports("", 2, "") is None  # a reply it cannot read is not a verdict
