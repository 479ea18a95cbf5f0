"""The router with 4 and 8 ports, the report's traffic profiles, 32k next hops per port and
two routers side by side, on the real embedded testbed: every stream's frames arrive on the
port the profile sends them to (and a router that sends them elsewhere is caught), a large
next-hop table installs in seconds and leaves nothing behind, each instance's throughput is
reported, and a load sweep's steps carry their latency. Short continuous trials at rates
the shared 2-CPU host keeps up with."""

from __future__ import annotations

import os
import subprocess
import time
from collections import Counter

import pytest

from vsbench.deployment.ports import generator_ports_of
from vsbench.deployment.routed import (
    RouterPort,
    port_host,
    port_router_model,
    profile_destinations,
    router_plan,
    router_streams,
)
from vsbench.interfaces import PluginContext, PortSpec, SwitchPort
from vsbench.interfaces.traffic import FlowFields, TrafficProfile
from vsbench.measurement import recheck
from vsbench.system import naming, runstate
from vsbench.system.resources import ResourceStack
from vsbench.system.testbed import create_testbed
from vsbench_plugins.vnf.vrouter import netlink_bulk as nl
from vsbench_plugins.vnf.vrouter.kernel import count_nexthops
from vsbench_plugins.vnf.vrouter.plugin import VRouter

from run_helpers import assert_nothing_left, build_plans, require, run

pytestmark = pytest.mark.integration

if os.geteuid() != 0:
    pytest.skip("needs root (network namespaces)", allow_module_level=True)

CONTINUOUS = "type=continuous;trial_duration=1;warmup_s=0;latency.enabled=false;frame_sizes=[64]"


def _continuous_trial(outcome, plan_index: int) -> dict:
    [trial] = [t for t in outcome.trials() if t["role"] == "continuous" and t["plan_index"] == plan_index]
    return trial


def _lost_by_the_host(trial: dict, point: dict) -> bool:
    """Frames lost because the shared host stalled the router's CPU past its receive
    backlog (the router counted them as missed), not misrouted: such a run is repeated."""
    missed = sum(v["rx_missed"] for v in (point.get("vnf") or {}).get("vnfs", []))
    return trial["tx_frames"] != trial["rx_frames"] and missed > 0


def _check_streams(outcome, ports: int, profiles: list[int]) -> None:
    """Each plan sent one stream per (port, destination) of its profile, every stream's
    frames arrived on its own port and nowhere else, and the router forwarded all of them."""
    tests = outcome.results()["tests"]
    assert [t["variant"]["traffic.router_profile"] for t in tests] == profiles
    for index, (test, profile) in enumerate(zip(tests, profiles)):
        topology = test["topology"]
        assert topology["router_ports"] == ports and topology["router_profile"]["profile"] == profile
        trial = _continuous_trial(outcome, index)
        expected = [(i, j) for i, dests in enumerate(profile_destinations(profile, ports)) for j in dests]
        directions = trial["directions"]
        assert [(d["tx_port"], d["rx_port"]) for d in directions] == expected
        assert trial["rx_wrong_frames"] == 0
        for port in trial["generator_stats"]["stream_ports"]:
            assert port["rx_wrong_frames"] == 0 and port["rx_uncounted_frames"] == 0, port
        for d in directions:
            assert d["tx_frames"] > 0 and d["rx_frames"] == d["tx_frames"], d
        [point] = test["frame_sizes"][0]["points"]
        [router] = point["vnf"]["vnfs"]
        assert router["tx_frames"] >= sum(d["tx_frames"] for d in directions)  # (probes cross it too)


@pytest.mark.parametrize("ports, profiles", [
    (4, [0, 2]),
    pytest.param(8, [1, 4, 5], marks=pytest.mark.long),
])
def test_each_profile_delivers_every_stream_to_its_own_port(tmp_path, ports, profiles):
    """vrouter_profiles on 4 ports (the report's profiles 0 and 2: 4 and 12 streams) and on 8
    (1, 4, 5: 8, 32 and 56 streams), one continuous 1 s trial of 40 kfps per profile."""
    require(("trafficgen", "trafgen"), ("vnf", "vrouter"))
    params = (f"topology.port_pairs={ports // 2};traffic.router_profile={profiles};rate_fps=40000;{CONTINUOUS}")
    outcome = run(tmp_path / "first", build_plans("vrouter_profiles", "linux_bridge", params))
    assert outcome.code == 0, outcome.console
    stalled = [i for i, t in enumerate(outcome.results()["tests"])
               if _lost_by_the_host(_continuous_trial(outcome, i), t["frame_sizes"][0]["points"][0])]
    if stalled:
        print(f"plans {stalled}: the router missed frames on receive (the host stalled it): repeated once")
        outcome = run(tmp_path / "again", build_plans("vrouter_profiles", "linux_bridge", params))
        assert outcome.code == 0, outcome.console
    _check_streams(outcome, ports, profiles)
    sockets = outcome.results()["tests"][0]["topology"]["sockets"]
    if ports == 8 and sockets["host"] == 1:
        assert "differ from same-socket ones only in wiring" in sockets["note"]
    assert recheck.verify(outcome.run_dir) == []  # the line rate of every sending port, recomputed
    assert_nothing_left(outcome.run_id)


@pytest.fixture
def four_port_router(tmp_path):
    """A router on a 4-port testbed and the xdp generator on its ports; both torn down."""
    from vsbench_plugins.trafficgen.trafgen import Trafgen

    require(("trafficgen", "trafgen"), ("vnf", "vrouter"))
    run_id = naming.new_run_id()
    claim = runstate.claim(run_id)
    stack = ResourceStack()
    try:
        tb = create_testbed(run_id, 4, stack)
        ctx = PluginContext(run_id, {}, tmp_path / "logs", stack, dut_netns=tb.dut_netns)
        vnf = VRouter(ctx)
        vnf.start([SwitchPort(l.dut_iface, i, PortSpec("physical", l.dut_iface, iface=l.dut_iface))
                   for i, l in enumerate(tb.links)])
        gen = Trafgen(PluginContext(run_id=run_id, settings={"engine": "xdp"}, log_dir=tmp_path / "logs",
                                    resources=stack, work_dir=tmp_path / "work"))
        gen.start()
        ports = [RouterPort(l.index, l.dut_iface, l.dut_mac, l.tg_mac) for l in tb.links]
        yield tb, vnf, gen, ports
    finally:
        stack.close()
        claim.release()
    assert_nothing_left(run_id)


def test_a_router_that_sends_a_stream_out_of_the_wrong_port_is_caught(four_port_router):
    """Profile 0 through a router whose routes to port 1 lead out of port 3: the generator
    counts stream 0->1's frames where they arrived -- on port 3, delivered wrong, not
    received -- and every other stream as received."""
    tb, vnf, gen, ports = four_port_router
    plan = router_plan({"topology": {"port_pairs": 2}, "dut": {"routes": 64, "nexthops": 1},
                        "traffic": {"flows": 64}})
    model = port_router_model(plan, ports)
    wrong = next(g for g in model["nexthop_groups"] if g["name"] == "port1")
    wrong["nexthop_range"] = {"start": str(port_host(3, 100)), "count": 1, "interface": ports[3].iface,
                              "mac": ports[3].peer_mac}
    vnf.configure_router(model)
    profile = TrafficProfile(frame_size_bytes=64, flows=64,
                             streams=router_streams(plan, FlowFields(), ports))
    gen.configure(profile, generator_ports_of(tb))
    r = gen.run_trial(8_000, 0.5)
    by_pair = {(d.tx_port, d.rx_port): d for d in r.directions}
    assert by_pair[(0, 1)].tx_frames == 1_000 and by_pair[(0, 1)].rx_frames == 0
    assert r.rx_wrong_frames == 1_000
    for pair in ((1, 0), (2, 3), (3, 2)):
        assert by_pair[pair].rx_frames == by_pair[pair].tx_frames == 1_000, pair
    ports3 = {p["rx_iface"]: p for p in r.generator_stats["stream_ports"]}[tb.links[3].tg_iface]
    assert ports3["rx_wrong_frames"] == 1_000 and ports3["stream_frames"] == 2_000


def test_32k_next_hops_per_port_install_in_seconds_and_leave_nothing(four_port_router):
    """The report's largest table: 32768 next hops on each of 4 ports, once as directly
    connected hosts (use case 2) and once each carrying a route (route k via next hop k):
    131072 neighbours and next-hop objects, installed in bulk; removed without a residue
    (a next-hop object deleted with its routes still in place would flush the whole FIB,
    131072 times)."""
    tb, vnf, _gen, ports = four_port_router
    for mode, routes in (("connected", 1), ("per_route", 32768)):
        plan = router_plan({"topology": {"port_pairs": 2}, "dut": {"routes": routes, "nexthops": 32768,
                                                                   "nexthop_mode": mode},
                            "traffic": {"flows": 32768}})
        started = time.monotonic()
        figures = vnf.configure_router(port_router_model(plan, ports))
        took = time.monotonic() - started
        assert figures["neighbours"] == 4 * 32768 and took < 20, (mode, figures, took)
        with nl.BulkSocket(tb.dut_netns) as sock:
            assert sock.count_neighbours() == 4 * 32768
            assert count_nexthops(sock) == (4 * 32768 if mode == "per_route" else 0)
            assert sock.count_routes() == (4 * 32768 if mode == "per_route" else 0) + 1  # + the blackhole
    started = time.monotonic()
    vnf.configure_router(port_router_model(router_plan({"topology": {"port_pairs": 2}}), ports))  # a reload
    assert time.monotonic() - started < 20
    with nl.BulkSocket(tb.dut_netns) as sock:
        assert sock.count_neighbours() == 4 and count_nexthops(sock) == 4


def test_next_hop_scaling_sends_to_every_connected_host(tmp_path):
    """vrouter_nexthop_scaling at 4096 next hops per port: as many host pairs per stream,
    each addressed to one of the port's hosts, all forwarded."""
    require(("trafficgen", "trafgen"), ("vnf", "vrouter"))
    outcome = run(tmp_path, build_plans("vrouter_nexthop_scaling", "linux_bridge",
                                        f"dut.nexthops=[4096];rate_fps=40000;{CONTINUOUS}"))
    assert outcome.code == 0, outcome.console
    [test] = outcome.results()["tests"]
    assert test["flows"] == 4096 and test["topology"]["nexthop_mode"] == "connected"
    router = test["topology"]["router"]
    assert router["neighbours"] == 4 * 4096 and router["routes"] == 0, router
    trial = _continuous_trial(outcome, 0)
    assert trial["rx_wrong_frames"] == 0
    [point] = test["frame_sizes"][0]["points"]
    assert point["loss_ratio"] == 0.0 or _lost_by_the_host(trial, point), point
    assert_nothing_left(outcome.run_id)


def test_two_instances_each_report_their_own_throughput(tmp_path):
    """dut.router_instances=2: a second router in a namespace of its own on ports 4-7, each
    forwarding its half; the point carries each one's rate, the CPU they share counted
    once, and the run says both are on one socket when the host has one."""
    require(("trafficgen", "trafgen"), ("vnf", "vrouter"))
    outcome = run(tmp_path, build_plans("vrouter_profiles", "linux_bridge",
                                        f"dut.router_instances=2;traffic.router_profile=0;rate_fps=40000;{CONTINUOUS}"))
    assert outcome.code == 0, outcome.console
    [test] = outcome.results()["tests"]
    topology = test["topology"]
    assert topology["router_instances"] == 2 and topology["vnf_count"] == 2
    assert [i["generator_ports"] for i in topology["instances"]] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert all(i["routes"] == 4 * 1024 for i in topology["instances"])
    if topology["sockets"]["host"] == 1:
        assert any("one socket: both instances on socket 0" in n for n in test["notes"])
    trial = _continuous_trial(outcome, 0)
    assert Counter(d["tx_port"] // 4 == d["rx_port"] // 4 for d in trial["directions"]) == {True: 8}
    [point] = test["frame_sizes"][0]["points"]
    routers = point["vnf"]["vnfs"]
    assert len(routers) == 2 and all(r["forwarded_fps"] > 0 for r in routers)
    if point["loss_ratio"] == 0.0:
        assert sum(r["forwarded_fps"] for r in routers) == pytest.approx(point["rx_fps"], rel=0.01)
    shared = {tuple(v["rx_cpus"]) for v in trial["vnf"]["vnfs"]}
    if len(shared) == 1:  # both route on the same CPU: its time counted once
        assert point["efficiency"]["switch_cpu_s"] == pytest.approx(trial["vnf"]["vnfs"][0]["cpu_s"])
    logs = list((outcome.run_dir / "logs").rglob("vrouter-*.config.boot"))
    assert sorted(p.name for p in logs) == ["vrouter-dut.config.boot", "vrouter-vnf1.config.boot"]
    assert not [ns for ns in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
                if ns.startswith(f"vsb-{outcome.run_id}")]
    assert_nothing_left(outcome.run_id)


def test_each_load_sweep_step_carries_its_latency(tmp_path):
    """vrouter_load_sweep over a few low steps: every step's latency comes from the probes
    its own trial sent, results.json holds it and report.html draws it."""
    require(("trafficgen", "trafgen"), ("vnf", "vrouter"))
    outcome = run(tmp_path, build_plans("vrouter_load_sweep", "linux_bridge",
                                        "sweep_min_percent=0.5;sweep_max_percent=0.8;trial_duration=0.5;warmup_s=0"))
    assert outcome.code == 0, outcome.console
    [test] = outcome.results()["tests"]
    [fs] = test["frame_sizes"]
    steps = fs["sweep"]
    assert [s["percent"] for s in steps] == [0.6, 0.7, 0.8]
    trials = {t["trial_index"]: t for t in outcome.trials()}
    for s in steps:
        lat = s["latency"]
        assert lat["source"] == "probes" and lat["samples"] > 0 and 0 < lat["min_ns"] <= lat["avg_ns"] <= lat["max_ns"]
        assert trials[s["trial_index"]]["latency_requested"]
    assert "one-way latency of the probes sent during each step" in (outcome.run_dir / "report.html").read_text()
    assert recheck.verify(outcome.run_dir) == []
    assert_nothing_left(outcome.run_id)
