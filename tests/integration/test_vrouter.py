"""The vrouter on the real embedded testbed: it routes by its table (a routed host pair
arrives, an unrouted one is blackholed), ECMP groups and reloads are real kernel objects,
every route and next hop is gone after stop, and the vrouter testcase runs end to end.

Small tables only (1000 routes); the million-route figure is tools/bench/vrouter_routes.py.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import json
import os
import struct
import subprocess
import sys
import textwrap
import time

import pytest

from vsbench.deployment.routed import EAST_BASE, WEST_BASE, router_model
from vsbench.interfaces import PluginContext, PluginError, SwitchPort, PortSpec
from vsbench.runner import config as cfg
from vsbench.runner import testcases
from vsbench.system import naming
from vsbench.system.netlink import netns_exists, read_link_counters
from vsbench.system.resources import ResourceStack
from vsbench.system.testbed import create_testbed
from vsbench_plugins.vnf.vrouter import netlink_bulk as nl
from vsbench_plugins.vnf.vrouter.kernel import count_nexthops
from vsbench_plugins.vnf.vrouter.plugin import VRouter

from run_helpers import assert_nothing_left, build_plans, require, run

pytestmark = pytest.mark.integration

if os.geteuid() != 0:
    pytest.skip("needs root (network namespaces)", allow_module_level=True)

_SENDER = textwrap.dedent("""
    import socket, struct, sys
    iface, src_mac, dst_mac, src_ip, dst_ip, count = sys.argv[1:7]
    def csum(b):
        s = sum(struct.unpack("!10H", b))
        s = (s & 0xFFFF) + (s >> 16); s = (s & 0xFFFF) + (s >> 16)
        return ~s & 0xFFFF
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 46, 0, 0, 64, 17, 0,
                     socket.inet_aton(src_ip), socket.inet_aton(dst_ip))
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    frame = (bytes.fromhex(dst_mac.replace(":", "")) + bytes.fromhex(src_mac.replace(":", ""))
             + b"\\x08\\x00" + ip + struct.pack("!HHHH", 1024, 1024, 26, 0) + bytes(18))
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    for _ in range(int(count)):
        s.send(frame)
""")


def send(netns, iface, src_mac, dst_mac, src_ip, dst_ip, count):
    subprocess.run(["ip", "netns", "exec", netns, sys.executable, "-c", _SENDER, iface, src_mac, dst_mac,
                    src_ip, dst_ip, str(count)], check=True, timeout=30)


def rx_packets(netns, iface):
    return read_link_counters(netns, [iface])[iface].rx_packets


@pytest.fixture
def router(tmp_path):
    run_id = naming.new_run_id()
    stack = ResourceStack()
    try:
        tb = create_testbed(run_id, 2, stack)
        ctx = PluginContext(run_id, {}, tmp_path / "logs", stack, dut_netns=tb.dut_netns)
        vnf = VRouter(ctx)
        ports = [SwitchPort(l.dut_iface, i, PortSpec("physical", l.dut_iface, iface=l.dut_iface))
                 for i, l in enumerate(tb.links)]
        vnf.start(ports)
        yield tb, vnf
        with nl.BulkSocket(tb.dut_netns) as sock:  # stop() verified this too; check independently
            vnf.stop()
            assert sock.count_routes(protocol=None) == 0  # not even the kernel's connected routes
            assert count_nexthops(sock) == 0
        for link in tb.links:
            out = subprocess.run(["ip", "-n", tb.dut_netns, "-o", "addr", "show", "dev", link.dut_iface],
                                 capture_output=True, text=True).stdout
            assert "198.18." not in out
            flags = subprocess.run(["ip", "-n", tb.dut_netns, "link", "show", "dev", link.dut_iface],
                                   capture_output=True, text=True).stdout
            assert "NOARP" in flags  # the testbed's port as it was
    finally:
        stack.close()
    assert not netns_exists(naming.netns_name(run_id, "dut"))


def _model(tb, routes, nexthops):
    return router_model(routes=routes, nexthops=nexthops, flows=routes,
                        ports=[l.dut_iface for l in tb.links], peer_macs=[l.tg_mac for l in tb.links])


def test_routes_what_its_table_covers_and_blackholes_the_rest(router):
    tb, vnf = router
    figures = vnf.configure_router(_model(tb, routes=1000, nexthops=4))
    assert figures["routes"] == 2000 and figures["nexthops"] == 8 and figures["ecmp_groups"] == 2
    with nl.BulkSocket(tb.dut_netns) as sock:
        assert sock.count_routes() == 2001  # both directions + the blackhole default
        assert count_nexthops(sock) == 10  # 2 x 4 next hops + 2 groups
    a, b = tb.links
    routed, unrouted = str(EAST_BASE + 999), str(EAST_BASE + 5000)
    for dst, expected in ((routed, 200), (unrouted, 0)):
        before = rx_packets(tb.tg_netns, b.tg_iface)
        send(tb.tg_netns, a.tg_iface, a.tg_mac, a.dut_mac, str(WEST_BASE + 1), dst, 200)
        time.sleep(0.2)
        assert rx_packets(tb.tg_netns, b.tg_iface) - before == expected, dst
    # and back, through the west table
    before = rx_packets(tb.tg_netns, a.tg_iface)
    send(tb.tg_netns, b.tg_iface, b.tg_mac, b.dut_mac, routed, str(WEST_BASE + 7), 100)
    time.sleep(0.2)
    assert rx_packets(tb.tg_netns, a.tg_iface) - before == 100


def test_reload_replaces_the_table(router, tmp_path):
    tb, vnf = router
    vnf.configure_router(_model(tb, routes=1000, nexthops=2))
    figures = vnf.configure_router(_model(tb, routes=10, nexthops=1))
    assert figures["routes"] == 20 and figures["ecmp_groups"] == 0
    with nl.BulkSocket(tb.dut_netns) as sock:
        assert sock.count_routes() == 21
        assert count_nexthops(sock) == 2
    assert "route 10.0.0.9/32" in (tmp_path / "logs" / "vrouter-dut.config.boot").read_text()


def test_bad_model_is_a_one_line_error(router):
    tb, vnf = router
    bad = _model(tb, routes=1, nexthops=1)
    bad["nexthop_groups"][0]["nexthops"][0]["via"] = "192.0.2.1"
    with pytest.raises(PluginError, match="not in .* subnet") as err:
        vnf.configure_router(bad)
    assert "\n" not in str(err.value)


def test_vrouter_testcase_end_to_end(tmp_path):
    """The testcase through the runner (config layers, phy_router_phy with 4 router ports,
    the vrouter through its entry point, trafgen host pairs to the router's MACs), as one
    continuous 2 s trial at 50 kfps: the router's softirq time is sampled in 10 ms ticks, and
    at 20 kfps it read 0 ticks once in 1 s and once in 2 s (a fresh-machine check), its
    efficiency with it: 256 host pairs per stream, each to one of 256 hosts per port
    (vrouter_nexthop_scaling: the next hops are the hosts), arrive, none lost."""
    require(("trafficgen", "trafgen"), ("vnf", "vrouter"))
    rate_fps = 50_000
    plans = build_plans(
        "vrouter_nexthop_scaling", "linux_bridge",
        "frame_sizes=[64];dut.nexthops=[256];type=continuous;"
        f"rate_fps={rate_fps};trial_duration=2;warmup_s=0;latency.trial_duration_s=1")
    outcome = run(tmp_path / "first", plans)
    if host_stalled_the_router(outcome):
        outcome = run(tmp_path / "again", plans)
    assert outcome.code == 0, outcome.console
    [test] = outcome.results()["tests"]
    [fs] = test["frame_sizes"]
    [point] = fs["points"]
    assert fs["status"] == "complete" and measured_every_frame(outcome, point), fs
    assert point["offered_load_fps"] == rate_fps
    assert point["loss_ratio"] == 0.0 and point["rx_fps"] > 0, fs
    assert test["vswitch"] == "none"  # no switch in this topology: not built, not checked
    assert test["flows"] == 256  # the testcase's link: a host pair per next hop
    router = test["topology"]["router"]
    assert router["neighbours"] == 4 * 256 and router["routes"] == 0 and router["install_s"] > 0, router
    # the router is the DUT: its CPU (softirq of the CPUs it routes on) is the point's efficiency
    assert point["efficiency"]["cpu_source"] == "vnf softirq of rx_cpus"
    assert point["efficiency"]["switch_cores"] > 0 and point["efficiency"]["fps_per_core"] > 0
    [vnf] = point["vnf"]["vnfs"]
    assert vnf["rx_frames"] == vnf["tx_frames"] >= rate_fps * 2 * 0.99  # aggregate of all 4 streams, 2 s
    assert list((outcome.run_dir / "logs").rglob("vrouter-dut.config.boot"))
    assert_nothing_left(outcome.run_id)


def host_stalled_the_router(outcome) -> bool:
    """True when the run lost frames and the router's own port counters say its receive
    backlog overflowed (``rx_missed``): the CPU it routes on did not run its softirq for
    the backlog's length (1000 frames, 25 ms at this load) -- a busy shared host (a CI run:
    1,033 of 40,000 lost, 1,003 of them missed by the router, a perfectly paced trial). That
    loss is real but the host's, not a routing fault; such a run is repeated once, and the
    repetition must lose nothing. A routing fault loses frames the router never counts as
    missed, and fails at once."""
    if outcome.code != 0:
        return False
    [test] = outcome.results()["tests"]
    [point] = test["frame_sizes"][0]["points"]
    missed = sum(v["rx_missed"] for v in point.get("vnf", {}).get("vnfs", []))
    if point["loss_ratio"] > 0 and missed > 0:
        print(f"router missed {missed} frames on receive (loss {point['loss_ratio']:.2%}): repeated once")
        return True
    return False


def measured_every_frame(outcome, point: dict) -> bool:
    """The point's trial is valid, or invalid only for how it was sent while every frame it
    asked for went out: the vrouter testcases send with the xdp engine, whose trials carry
    10 ms pacing windows, and a host task that preempts the sender for a few ms (a CI run:
    3.5 ms behind, 4 frames off in one window at 20 kfps) makes the trial disturbed; on a
    busier shared host it fell 0.5 s behind and finished late (2.49 s for a 2 s trial) --
    every frame still sent and counted, which is what these tests check."""
    if point["valid"]:
        return True
    trials = [json.loads(line) for line in (outcome.run_dir / "trials.jsonl").read_text().splitlines()]
    [trial] = [t for t in trials if t["trial_index"] == point["trial_index"]]
    reasons = trial["invalid_reasons"]
    late = [r for r in reasons if not r.startswith("pacing:")]
    sent_all = trial["tx_frames"] >= round(trial["intended_load_fps"] * trial["intended_duration_s"])
    return reasons != [] and sent_all and all(r.startswith("generator:") and " needed " in r for r in late)


def _check_routed_pvp(outcome, deployment: str, routers: int, switching_operations: int) -> dict:
    """A continuous trial through ``routers`` routers behind a switch: every frame arrived,
    each router counted what it routed, the loss is attributed per stage, the routers'
    configuration is on record and their namespaces are gone."""
    assert outcome.code == 0, outcome.console
    [test] = outcome.results()["tests"]
    assert test["deployment"] == deployment and test["vnf"] == "vrouter"
    assert test["switching_operations"] == switching_operations
    topology = test["topology"]
    assert topology["vnf_count"] == routers and topology["vnf_port_kind"] == "veth"
    assert topology["router"]["routes"] == 2 * 256 and topology["router"]["routers"] == routers
    assert topology["router"]["nexthops"] == 2 * 4 and topology["router"]["ecmp_groups"] == 2
    [fs] = test["frame_sizes"]
    [point] = fs["points"]
    assert fs["status"] == "complete" and measured_every_frame(outcome, point), fs
    assert point["loss_ratio"] == 0.0 and point["rx_fps"] > 0, fs
    for direction in point["vnf"]["stages"]:
        assert direction["attributed"] and direction["lost_frames"] == 0, direction
        routed = [s for s in direction["stages"] if s["stage"] == "vnf"]
        assert len(routed) == routers and all(s["out_frames"] == direction["rx_frames"] for s in routed)
    owners = [t["owner"] for t in test["cpu_plan"]["threads"]]
    assert "vrouter kernel forwarding (RPS)" in owners
    assert len(list((outcome.run_dir / "logs").rglob("vrouter-vnf*.config.boot"))) == routers
    assert not [ns for ns in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
                if ns.startswith(f"vsb-{outcome.run_id}")]
    assert_nothing_left(outcome.run_id)
    return test


def test_pvp_with_the_router_as_the_vnf_on_linux_bridge(tmp_path):
    """pvp_tput with --vnf vrouter on the Linux bridge: the router in a namespace of its own
    on veth pairs, host pairs addressed to its west port, 256 routes and 4 ECMP next hops
    per direction; one continuous 1 s trial."""
    require(("trafficgen", "trafgen"), ("vswitch", "linux_bridge"), ("vnf", "vrouter"))
    outcome = run(tmp_path, build_plans(
        "pvp_tput", "linux_bridge",
        "vnf.name=vrouter;frame_sizes=[64];dut.nexthops=4;dut.routes=256;traffic.flows=256;type=continuous;"
        "rate_fps=20000;trial_duration=1;warmup_s=0;latency.enabled=false"))
    _check_routed_pvp(outcome, "pvp", routers=1, switching_operations=2)


def test_pvvp_with_two_routers_in_series_on_ovs_dpdk(tmp_path):
    """pvvp_tput with two routers in series on OvS-DPDK (af_packet on the veth pairs): each
    router's next hops are the other's port on the segment between them."""
    require(("trafficgen", "trafgen"), ("vswitch", "ovs_dpdk"), ("vnf", "vrouter"))
    outcome = run(tmp_path, build_plans(
        "pvvp_tput", "ovs_dpdk",
        "vnf.name=vrouter;frame_sizes=[64];dut.nexthops=4;dut.routes=256;traffic.flows=256;type=continuous;"
        "rate_fps=20000;trial_duration=1;warmup_s=0;latency.enabled=false"))
    test = _check_routed_pvp(outcome, "pvvp", routers=2, switching_operations=3)
    boots = sorted((outcome.run_dir / "logs").rglob("vrouter-vnf*.config.boot"))
    texts = [p.read_text() for p in boots]
    assert any("address 198.18.1.253/24" in t for t in texts) and any("address 198.18.1.254/24" in t for t in texts)
    assert test["vswitch"] == "ovs_dpdk"


def test_a_router_in_parallel_lanes_is_refused_in_one_line(tmp_path):
    require(("trafficgen", "trafgen"), ("vswitch", "linux_bridge"), ("vnf", "vrouter"))
    outcome = run(tmp_path, build_plans(
        "pvpv_cont", "linux_bridge", "vnf.name=vrouter;frame_sizes=[64];trial_duration=1;warmup_s=0"))
    assert outcome.code == 1
    [test] = outcome.results()["tests"]
    assert test["status"] == "failed" and "one lane only" in test["error"] and "\n" not in test["error"]
    assert_nothing_left(outcome.run_id)


def test_route_scaling_through_pvp_reconfigures_the_router_per_plan_and_reports_the_curve(tmp_path):
    """vrouter_route_scaling moved into the PVP family (Linux bridge, the router as the VNF):
    two plans (1 and 4096 routes per direction, as many host pairs), each a short binary
    search capped at 20 kfps with 0.5 s trials. Each plan's router holds its own table, both
    plans are one curve in report.html (the seed's table and its drop row) and in
    ``vsbench compare``; every namespace is gone."""
    require(("trafficgen", "trafgen"), ("vswitch", "linux_bridge"), ("vnf", "vrouter"))
    case = dataclasses.replace(testcases.find("vrouter_route_scaling", testcases.default_testcase_dir()),
                               deployment="pvp")
    # the testcase's 4 router ports (topology.port_pairs: 2) are phy_router_phy's: pvp refuses them
    params = cfg.parse_test_params(
        "frame_sizes=[64];dut.routes=[1,4096];trial_duration=0.5;warmup_s=0;search.mode=binary;"
        "search.max_load_fps=20000;search.relative_width=0.5;latency.enabled=false;topology.port_pairs=1")
    plans = testcases.build_plans(case, cfg.load_layers(cfg.default_conf_dir(), []), params,
                                  {"vswitch": "linux_bridge", "trafficgen": "trafgen", "vnf": None})
    outcome = run(tmp_path, plans)
    assert outcome.code == 0, outcome.console
    tests = outcome.results()["tests"]
    assert [t["variant"] for t in tests] == [{"dut.routes": 1}, {"dut.routes": 4096}]
    for test, routes in zip(tests, (1, 4096)):
        assert test["deployment"] == "pvp" and test["vnf"] == "vrouter" and test["vswitch"] == "linux_bridge"
        assert test["flows"] == routes  # the testcase's link: a host pair per route
        router = test["topology"]["router"]
        assert router["routes"] == 2 * routes and router["install_s"] > 0, router
        [fs] = test["frame_sizes"]
        assert fs["status"] == "complete", fs
        [ndr] = [p for p in fs["points"] if p["name"] == "NDR"]
        assert 0 < ndr["throughput_fps"] <= 20000 and ndr["loss_ratio"] == 0.0, ndr
    assert len(list((outcome.run_dir / "logs").rglob("vrouter-vnf*.config.boot"))) == 2  # one router per plan
    html = (outcome.run_dir / "report.html").read_text()
    assert "routes per router port versus frame rate" in html and "drop 1 route → 4,096 routes" in html
    compared = subprocess.run([sys.executable, "-m", "vsbench.cli.main", "compare", str(outcome.run_dir),
                               str(outcome.run_dir), "--format", "json"], capture_output=True, text=True, timeout=120,
                              cwd=tmp_path)
    assert compared.returncode == 0, compared.stderr
    [curve] = json.loads(compared.stdout)["scaling"]
    assert curve["axis"] == "dut.routes" and curve["counts"] == [1, 4096] and curve["frame_sizes_bytes"] == [64], curve
    assert all(v["value"] and v["value"] > 0 for v in curve["values"]), curve
    assert_nothing_left(outcome.run_id)
