"""Report 5's TC1 and TC3 pieces without a testbed: N clients' results combined, the
point's per-client figures, the hub flows of N clients to one server, OvS-DPDK's tap
ports and userspace TSO, the v2v wiring with recording fakes, and the preflight's
refusals. (The real path runs in tests/integration/test_tcp_v2v_on_testbed.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from vsbench.deployment import DeploymentError, get as get_deployment
from vsbench.deployment import v2v as v2v_module
from vsbench.interfaces import PluginContext, PluginError, PortSpec
from vsbench.interfaces.tcp import TcpResult, TcpSpec, combine
from vsbench.interfaces.traffic import GeneratorCapabilities, TrialResult
from vsbench.interfaces.vswitch import SwitchPort
from vsbench.results.model import TrialIdentity, TrialRecord
from vsbench.runner import config as cfg
from vsbench.runner import preflight, testcases, traffic_tcp
from vsbench.runner.traffic_job import TrafficTypeError
from vsbench.system.resources import ResourceStack
from vsbench_plugins.trafficgen.iperf3.plugin import interface_deltas, total_drops
from vsbench_plugins.vswitch.ovs import flows
from vsbench_plugins.vswitch.ovs_dpdk import OvsDpdk

ROOT = Path(__file__).resolve().parents[2]


def _result(received: int, *, duration: float = 2.0, retrans: int | None = 1, cpu: float | None = 10.0,
            rtt: float = 50.0) -> TcpResult:
    return TcpResult(duration_s=duration, sent_bytes=received + 100, received_bytes=received, streams=1,
                     retransmits=retrans, sender_cpu_percent=cpu, receiver_cpu_percent=5.0,
                     rtt_min_us=rtt / 2, rtt_mean_us=rtt, rtt_max_us=rtt * 2, stats={"iperf3_version": "3.12"})


def test_clients_combine_into_sums_with_each_kept():
    a, b = _result(250_000_000, retrans=2, rtt=40.0), _result(500_000_000, duration=2.02, retrans=5, rtt=80.0)
    both = combine([a, b])
    assert both.clients == (a, b)
    assert both.received_bytes == 750_000_000 and both.sent_bytes == 750_000_200 and both.streams == 2
    assert both.duration_s == pytest.approx(2.01)
    assert both.gbps == pytest.approx(750_000_000 * 8 / 2.01 / 1e9)
    assert both.gbps == pytest.approx(a.gbps + b.gbps, rel=0.01)  # one window: the sum of the clients'
    assert both.retransmits == 7 and both.sender_cpu_percent == 20.0 and both.receiver_cpu_percent == 10.0
    assert (both.rtt_min_us, both.rtt_mean_us, both.rtt_max_us) == (20.0, 60.0, 160.0)
    assert combine([a, _result(1, retrans=None, cpu=None)]).retransmits is None  # unknown stays unknown
    assert combine([a, _result(1, cpu=None)]).sender_cpu_percent is None
    assert combine([a]) is a and a.clients == ()
    with pytest.raises(ValueError):
        combine([])


def test_interface_drops_over_a_run():
    before = [{"tx_packets": 10, "tx_dropped": 1, "rx_packets": 5, "rx_dropped": 0}, {"tx_packets": 0, "tx_dropped": 0}]
    after = [{"tx_packets": 110, "tx_dropped": 41, "rx_packets": 6, "rx_dropped": 2}, {"tx_packets": 7, "tx_dropped": 0}]
    deltas = interface_deltas(before, after)
    assert deltas == [{"tx_packets": 100, "tx_dropped": 40, "rx_packets": 1, "rx_dropped": 2},
                      {"tx_packets": 7, "tx_dropped": 0}]
    assert total_drops(deltas) == 42
    assert interface_deltas([{}], [{"tx_dropped": 1}]) == [{}] and total_drops([{}]) is None and total_drops([]) is None


def _record(clients: list[tuple[float, int]], index: int = 0) -> TrialRecord:
    tcp = {"gbps": sum(g for g, _ in clients), "retransmits": sum(r for _, r in clients),
           "sender_cpu_percent": 30.0, "receiver_cpu_percent": 20.0, "rtt_mean_us": 40,
           "spec": {"streams": 1, "tso": True, "mtu_bytes": 1500, "clients": len(clients)},
           "stats": {"interface_drops": 17},
           "clients": [{"gbps": g, "retransmits": r, "received_bytes": int(g * 1e9 / 8)} for g, r in clients]}
    result = TrialResult(0.0, 2.0, 1518, 0, 0, generator_stats={"tcp": tcp})
    return TrialRecord(TrialIdentity("abc123", 0, "tcp_many_to_one"), index, "tcp", "2026-01-01T00:00:00+00:00", False,
                       result, switch={"cpu_s": 1.0, "elapsed_s": 2.0})


def test_the_point_carries_each_clients_goodput():
    point = traffic_tcp.point_of([_record([(1.5, 2), (1.25, 0), (1.0, 7)])], False)
    assert point.gbps == pytest.approx(3.75) and point.retransmits == 9
    assert point.client_gbps == [1.5, 1.25, 1.0] and point.client_retransmits == [2, 0, 7]
    assert point.options["clients"] == 3 and point.interface_drops == 17
    assert point.cores == pytest.approx(0.3 + 0.2 + 0.5) and point.cores_per_gbps == pytest.approx(1.0 / 3.75)
    from vsbench.results.model import FrameSizeResult

    fs = FrameSizeResult(1518, tcp=point)
    line = traffic_tcp.tcp_line(fs)
    assert line.startswith("3.750 Gbit/s (3 clients: 1.500 + 1.250 + 1.000), 9 retransmits (17 packets dropped")
    single = traffic_tcp.point_of([_record([(2.0, 1)])], False)
    assert single.client_gbps == [2.0]  # a one-client record with a list says so too


def test_spec_takes_the_clients():
    assert traffic_tcp.spec_of({"tcp": {"clients": 3}, "traffic": {"trial_duration_s": 2}}).clients == 3
    assert traffic_tcp.spec_of({"tcp": {}, "traffic": {}}).clients == 1


def test_hub_flows_send_every_client_to_the_server_and_back_by_mac():
    lines = flows.hub_flows(9, [(1, "02:AA:00:00:00:01"), (2, "02:aa:00:00:00:02")])
    assert lines == [
        "table=0,priority=10,in_port=1,actions=output:9",
        "table=0,priority=10,in_port=9,dl_dst=02:aa:00:00:00:01,actions=output:1",
        "table=0,priority=10,in_port=2,actions=output:9",
        "table=0,priority=10,in_port=9,dl_dst=02:aa:00:00:00:02,actions=output:2",
    ]
    assert all("meter:1," in line for line in flows.hub_flows(3, [(1, "02:00:00:00:00:01")], meter_id=1))


def _ovs_dpdk(settings=None) -> OvsDpdk:
    ctx = PluginContext("a1b2c3", settings or {}, Path("/nonexistent"), ResourceStack(), dut_netns="vsb-a1b2c3-dut")
    switch = OvsDpdk(ctx)
    switch.name = "ovs_dpdk"
    return switch


def _with_ports(switch: OvsDpdk, *specs: PortSpec) -> OvsDpdk:
    switch._ports["br"] = [SwitchPort(s.name, i + 1, s) for i, s in enumerate(specs)]
    return switch


TAP = PortSpec("tap", "vsba1b2c3e0", iface="vsba1b2c3e0")
AF_PACKET = PortSpec("physical", "vsba1b2c3d0", iface="vsba1b2c3d0")


def test_ovs_dpdk_tap_ports_and_userspace_tso():
    switch = _ovs_dpdk()
    assert "userspace-tso-enable" not in switch.other_config()  # nothing planned: OvS's default
    assert switch.interface_config(TAP, 0) == ("vsba1b2c3e0", ["type=tap"])
    switch.plan_ports(["tap"])
    assert switch.userspace_tso and switch.other_config()["userspace-tso-enable"] == "true"
    off = _ovs_dpdk({"userspace_tso": False})
    off.plan_ports(["tap"])
    assert not off.userspace_tso and off.other_config()["userspace-tso-enable"] == "false"
    on = _ovs_dpdk({"userspace_tso": True})
    assert on.other_config()["userspace-tso-enable"] == "true"
    with pytest.raises(PluginError, match="n_rxq 2 cannot apply to tap port .*one queue"):
        _ovs_dpdk({"n_rxq": 2}).interface_config(TAP, 0)
    assert "options:n_rxq=2" in " ".join(_ovs_dpdk({"n_rxq": 2}).interface_config(AF_PACKET, 0)[1])


def test_ovs_dpdk_says_what_offloaded_frames_cross():
    tso = _ovs_dpdk()
    tso.plan_ports(["tap"])
    assert _with_ports(tso, TAP, TAP).carries_offloaded_frames() and tso.offloaded_frames_note() == ""
    plain = _with_ports(_ovs_dpdk({"userspace_tso": False}), TAP, TAP)
    assert not plain.carries_offloaded_frames() and "userspace_tso: true" in plain.offloaded_frames_note()
    mixed = _with_ports(_ovs_dpdk({"userspace_tso": True}), TAP, AF_PACKET)
    assert not mixed.carries_offloaded_frames() and "packet sockets" in mixed.offloaded_frames_note()
    # the skip note the runner writes names the switch's reason
    _, skip, _ = traffic_tcp.endpoints_for({"tcp": {"tso": True}}, "tcp", plain)
    assert "userspace_tso: true" in skip


def test_ovs_dpdk_tap_ports_start_no_pmd():
    assert _with_ports(_ovs_dpdk(), TAP, TAP).busy_poll_cpus() == {}
    assert _with_ports(_ovs_dpdk(), AF_PACKET).busy_poll_cpus() == {"ovs_dpdk pmd": {1}}  # none runs: the mask
    assert _ovs_dpdk().max_frame_bytes() == 1518


class FakeGenerator:
    name = "iperf3"

    def __init__(self, ports=17, needs_testbed=True):
        self.caps = GeneratorCapabilities(ports=ports, needs_testbed=needs_testbed)

    def capabilities(self):
        return self.caps


class FakeSwitch:
    name = "fakeswitch"

    def __init__(self, taps: bool):
        self.supports_tap_ports = taps
        self.calls: list[tuple] = []

    def plan_ports(self, kinds):
        self.calls.append(("plan_ports", tuple(kinds)))

    def start(self):
        self.calls.append(("start",))

    def stop(self):
        pass

    def add_bridge(self, name):
        self.calls.append(("add_bridge", name))

    def add_port(self, bridge, spec):
        self.calls.append(("add_port", spec.kind, spec.name, spec.iface))
        iface = spec.name if spec.kind == "tap" else spec.iface
        return SwitchPort(spec.name, len([c for c in self.calls if c[0] == "add_port"]),
                          PortSpec(spec.kind, spec.name, iface=iface))

    def connect(self, bridge, a, b):
        self.calls.append(("connect", a.name, b.name))

    def connect_many(self, bridge, hub, spokes):
        self.calls.append(("connect_many", hub.name, tuple((p.name, mac) for p, mac in spokes)))


@pytest.fixture
def no_testbed(monkeypatch):
    """The host-touching helpers of v2v, recorded instead of run."""
    done: list[tuple] = []
    monkeypatch.setattr(v2v_module, "add_namespace", lambda name, resources: done.append(("netns", name)))
    monkeypatch.setattr(v2v_module, "set_port_mac", lambda ns, iface, mac: done.append(("mac", ns, iface, mac)))
    monkeypatch.setattr(v2v_module, "add_internal_pair",
                        lambda ns, names, macs, resources: done.append(("veth", ns, names, macs)))
    return done


def _v2v(switch, clients=1, generator=None):
    return get_deployment("v2v")(run_id="abc123", config={"tcp": {"clients": clients}}, resources=ResourceStack(),
                                 generator=generator or FakeGenerator(), make_vswitch=lambda ns: switch)


def test_v2v_puts_every_endpoint_on_a_tap_port_and_the_clients_to_the_server(no_testbed):
    switch = FakeSwitch(taps=True)
    deployment = _v2v(switch, clients=2)
    ports = deployment.build()
    assert switch.calls[:2] == [("plan_ports", ("tap",)), ("start",)]  # userspace TSO is read at start
    assert [(c[1], c[2]) for c in switch.calls if c[0] == "add_port"] == [
        ("tap", "vsbabc123e0"), ("tap", "vsbabc123e1"), ("tap", "vsbabc123e2")]
    assert [(p.index, p.iface, p.netns) for p in ports] == [
        (0, "vsbabc123e0", "vsb-abc123-dut"), (1, "vsbabc123e1", "vsb-abc123-dut"), (2, "vsbabc123e2", "vsb-abc123-dut")]
    macs = [p.mac for p in ports]
    assert macs == ["02:ab:c1:23:01:60", "02:ab:c1:23:01:61", "02:ab:c1:23:01:62"]
    assert [d[2:] for d in no_testbed if d[0] == "mac"] == [(p.iface, p.mac) for p in ports]
    assert switch.calls[-1] == ("connect_many", "vsbabc123e2", (("vsbabc123e0", macs[0]), ("vsbabc123e1", macs[1])))
    description = deployment.describe()
    assert description["topology"] == "VM-VM" and description["switching_operations"] == 1
    assert description["clients"] == 2 and description["endpoint_ports"] == "tap"
    assert "tap ports stand in for the VMs" in deployment.notes()[0]


def test_v2v_gives_a_switch_without_tap_ports_veth_pairs(no_testbed):
    switch = FakeSwitch(taps=False)
    deployment = _v2v(switch)
    ports = deployment.build()
    assert not any(c[0] == "plan_ports" for c in switch.calls)
    assert [d[2] for d in no_testbed if d[0] == "veth"] == [("vsbabc123w0", "vsbabc123e0"), ("vsbabc123w1", "vsbabc123e1")]
    assert [(c[1], c[3]) for c in switch.calls if c[0] == "add_port"] == [("physical", "vsbabc123w0"),
                                                                          ("physical", "vsbabc123w1")]
    assert [p.iface for p in ports] == ["vsbabc123e0", "vsbabc123e1"]
    assert switch.calls[-1] == ("connect", "vsbabc123w0", "vsbabc123w1")  # one client: as p2p
    assert deployment.describe()["endpoint_ports"] == "veth" and "veth pairs" in deployment.notes()[0]


def test_v2v_refuses_what_it_cannot_build(no_testbed):
    with pytest.raises(DeploymentError, match="needs 4 endpoints; iperf3 has 2"):
        _v2v(FakeSwitch(True), clients=3, generator=FakeGenerator(ports=2)).build()
    with pytest.raises(DeploymentError, match="brings ports of its own"):
        _v2v(FakeSwitch(True), generator=FakeGenerator(needs_testbed=False)).build()
    assert no_testbed == []  # refused before anything was created


def _plans(test: str, params: str = "", vswitch: str = "ovs_dpdk"):
    base = cfg.load_layers(ROOT / "conf", [])
    case = testcases.find(test, ROOT / "testcases")
    return testcases.build_plans(case, base, cfg.parse_test_params(params),
                                 {"vswitch": vswitch, "trafficgen": None, "vnf": None})


def test_the_testcases_sweep_what_the_report_sweeps():
    plans = _plans("tcp_many_to_one")
    assert [(p.config["tcp"]["clients"], p.config["tcp"]["tso"]) for p in plans] == [
        (c, t) for c in (1, 2, 3, 4, 5) for t in (True, False)]
    assert {p.config["test"]["deployment"] for p in plans} == {"v2v"}
    vm = _plans("tcp_vm_to_vm", vswitch="linux_bridge")
    assert [(p.config["tcp"]["clients"], p.config["tcp"]["tso"]) for p in vm] == [(1, True), (1, False)]
    for plan in plans[:1] + vm[:1]:
        assert preflight.check_plan(plan).frame_sizes == [1518]


def test_clients_need_a_port_each_and_v2v_runs_tcp_only():
    [plan] = _plans("tcp_tput", "tcp.clients=3;tcp.tso=true", vswitch="linux_bridge")
    with pytest.raises(preflight.PreflightError, match="tcp.clients 3 needs a switch port per client"):
        preflight.check_plan(plan)
    v2v = get_deployment("v2v")
    with pytest.raises(TrafficTypeError, match="deployment v2v .* runs traffic.type tcp, not rfc2544_throughput"):
        traffic_tcp.check_deployment({"traffic": {"type": "rfc2544_throughput"}}, v2v)
    traffic_tcp.check_deployment({"traffic": {"type": "tcp"}, "tcp": {"clients": 5}}, v2v)
    traffic_tcp.check_deployment({"traffic": {"type": "tcp"}, "tcp": {"clients": 1}}, get_deployment("p2p"))
