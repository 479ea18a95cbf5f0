"""The PVP family's wiring and the CPU plan, with recording fakes (no testbed: the real
testbed path runs in tests/integration/test_pvp_testpmd.py)."""

from dataclasses import replace
from pathlib import Path

import pytest

from vsbench import deployment
from vsbench.deployment import DeploymentError
from vsbench.interfaces.traffic import GeneratorCapabilities
from vsbench.measurement import stages
from vsbench.interfaces.vswitch import SwitchPort
from vsbench.runner import placement
from vsbench.system.resources import ResourceStack


class FakeGenerator:
    name = "fakegen"

    def __init__(self, ports=4):
        self.settings = {"ports": [{"iface": f"eth{i}", "mac": f"02:00:00:00:00:0{i}"} for i in range(ports)]}
        self.ports = ports

    def capabilities(self):  # takes port-to-port streams, as trafgen does (several port pairs)
        return GeneratorCapabilities(ports=self.ports, needs_testbed=False, port_streams=True)

    def generator_cpus(self):
        return {0}


class FakeSwitch:
    name = "fakeswitch"
    supports_vhost_user = True

    def __init__(self):
        self.bridges, self.ports, self.connections, self.started = [], [], [], False

    def start(self):
        self.started = True

    def stop(self):
        pass

    def add_bridge(self, name):
        self.bridges.append(name)

    def add_port(self, bridge, spec):
        if spec.kind == "vhostuser":
            spec = replace(spec, socket_path=Path("/run/sw") / spec.name)
        port = SwitchPort(spec.name, len(self.ports) + 1, spec)
        self.ports.append((bridge, port))
        return port

    def connect(self, bridge, a, b):
        self.connections.append((bridge, a.name, b.name))

    def busy_poll_cpus(self):
        return {"fakeswitch pmd": {1}}


class FakeVnf:
    name = "fakevnf"
    port_kinds = ("vhostuser", "physical")

    def __init__(self, server=False):
        self.server, self.ports = server, None

    def vhost_user_server(self):
        return self.server

    def start(self, ports):
        self.ports = list(ports)

    def stop(self):
        pass

    def busy_poll_cpus(self):
        return {"fakevnf lcores": {1}}


def _build(name, generator_ports=4, server=False):
    switch, vnfs = FakeSwitch(), []

    def make_vnf(_netns):
        vnfs.append(FakeVnf(server))
        return vnfs[-1]

    cls = deployment.get(name)
    dep = cls(run_id="abcdef", config={}, resources=ResourceStack(), generator=FakeGenerator(generator_ports),
              make_vswitch=lambda _netns: switch, make_vnf=make_vnf)
    ports = dep.build()
    return dep, switch, vnfs, ports


def test_pvp_is_two_bridges_of_two_ports_around_one_vnf():
    dep, switch, vnfs, ports = _build("pvp")
    assert len(ports) == 2 and len(vnfs) == 1 and dep.switching_operations == 2
    assert switch.bridges == ["vsbabcdefbr0", "vsbabcdefbr1"]
    assert switch.connections == [("vsbabcdefbr0", "vsbabcdefp0", "vsbabcdefu0"),
                                  ("vsbabcdefbr1", "vsbabcdefu1", "vsbabcdefp1")]
    started = vnfs[0].ports
    assert [p.spec.socket_path for p in started] == [Path("/run/sw/vsbabcdefu0"), Path("/run/sw/vsbabcdefu1")]
    assert [p.spec.options["vhost_server"] for p in started] == ["switch", "switch"]
    # port 0 faces generator port 0: frames leaving it are addressed to that port's MAC
    assert [p.spec.options["peer_mac"] for p in started] == ["02:00:00:00:00:00", "02:00:00:00:00:01"]
    described = dep.describe()
    assert described["topology"] == "PHY-VNF-PHY" and described["vnf_count"] == 1
    assert described["vnf_port_kind"] == "vhostuser" and len(described["paths"]) == 2


def test_pvvp_chains_two_vnfs_through_three_bridges():
    dep, switch, vnfs, _ = _build("pvvp", server=True)
    assert dep.switching_operations == 3 and len(vnfs) == 2 and len(switch.bridges) == 3
    assert [c[1:] for c in switch.connections] == [("vsbabcdefp0", "vsbabcdefu0"), ("vsbabcdefu1", "vsbabcdefu2"),
                                                    ("vsbabcdefu3", "vsbabcdefp1")]
    assert [p.name for p in vnfs[1].ports] == ["vsbabcdefu2", "vsbabcdefu3"]
    assert vnfs[0].ports[0].spec.options["vhost_server"] == "vnf"


def test_pvpv_gives_each_vnf_its_own_pair_of_generator_ports():
    dep, switch, vnfs, ports = _build("pvpv")
    assert len(ports) == 4 and len(vnfs) == 2 and dep.switching_operations == 2 and len(switch.bridges) == 4
    assert [c[1:] for c in switch.connections] == [
        ("vsbabcdefp0", "vsbabcdefu0"), ("vsbabcdefu1", "vsbabcdefp1"),
        ("vsbabcdefp2", "vsbabcdefu2"), ("vsbabcdefu3", "vsbabcdefp3")]
    assert [(p.tx_port, p.rx_port, p.hops[0].vnf) for p in dep.paths] == [(0, 1, 0), (1, 0, 0), (2, 3, 1), (3, 2, 1)]


def test_refusals_are_one_line():
    with pytest.raises(DeploymentError, match="pvpv needs 4 generator ports; fakegen has 2"):
        _build("pvpv", generator_ports=2)
    cls = deployment.get("pvp")
    dep = cls(run_id="abcdef", config={}, resources=ResourceStack(), generator=FakeGenerator(),
              make_vswitch=lambda _n: FakeSwitch(), make_vnf=None)
    with pytest.raises(DeploymentError, match="needs a VNF"):
        dep.build()
    # a switch without vhost-user on a real host: veth pairs exist only on the testbed
    switch = FakeSwitch()
    switch.supports_vhost_user = False
    dep = cls(run_id="abcdef", config={}, resources=ResourceStack(), generator=FakeGenerator(),
              make_vswitch=lambda _n: switch, make_vnf=lambda _n: FakeVnf())
    with pytest.raises(DeploymentError, match="veth pairs to the VNF exist only on the embedded testbed"):
        dep.build()


def test_cpu_plan_places_every_busy_poller_and_says_when_they_do_not_fit():
    plan = placement.cpu_plan(FakeSwitch(), FakeGenerator(), [FakeVnf()], online={0, 1})
    assert [(t.owner, t.cpus, t.role) for t in plan.threads] == [
        ("fakeswitch pmd", (1,), "vswitch"), ("fakevnf lcores", (1,), "vnf"), ("generator fakegen", (0,), "generator")]
    assert plan.busy_pollers == 3 and plan.oversubscribed
    text = plan.text()
    assert text.startswith("CPU plan: cpu0 generator fakegen; cpu1 fakeswitch pmd, fakevnf lcores")
    assert "3 busy pollers on 2 CPUs" in text
    assert any(line.startswith("CPU oversubscribed (busy_poll_overlap)") for line in placement.warning_lines(plan))
    doc = plan.to_dict()
    assert doc["oversubscribed"] is True and doc["threads"][0]["cpus"] == [1]


def test_p2p_on_two_cpus_is_tight_but_not_oversubscribed():
    plan = placement.cpu_plan(FakeSwitch(), FakeGenerator(), [], online={0, 1})
    assert not plan.oversubscribed and "oversubscribed" not in plan.text()
    roomy = placement.cpu_plan(FakeSwitch(), FakeGenerator(), [], online={0, 1, 2, 3})
    assert not roomy.oversubscribed and roomy.warnings == []


def test_pvp_multiport_runs_two_lanes_through_one_four_port_vnf():
    dep, switch, vnfs, ports = _build("pvp_multiport")
    assert len(ports) == 4 and len(vnfs) == 1 and dep.switching_operations == 2
    assert [p.name for p in vnfs[0].ports] == ["vsbabcdefu0", "vsbabcdefu1", "vsbabcdefu2", "vsbabcdefu3"]
    assert [(p.tx_port, p.rx_port, p.hops) for p in dep.paths][2:] == [
        (2, 3, (stages.VnfHop(0, 2, 3),)), (3, 2, (stages.VnfHop(0, 3, 2),))]
    assert dep.describe()["shared_vnfs"] is True and dep.describe()["vnf_count"] == 1
