"""phy_router_phy's router ports, the report's traffic profiles, next-hop modes and two
instances (pure: the addressing, the router model each port gets, the generator's streams,
and that every stream's frames are routed out of the port it is counted on)."""

from __future__ import annotations

import ipaddress
import struct
from collections import Counter

import jsonschema
import numpy as np
import pytest
from pyroute2.netlink.rtnl.ndmsg import ndmsg

from vsbench.deployment.base import DeploymentError
from vsbench.deployment.routed import (
    MAX_ECMP_GROUP,
    RouterPort,
    host_base,
    port_router_model,
    profile_destinations,
    route_block,
    router_plan,
    router_streams,
)
from vsbench.interfaces import router as model
from vsbench.interfaces.traffic import FlowFields, TrafficProfile
from vsbench.measurement.profiles import nominal_line_rate_fps
from vsbench.results import recompute
from vsbench_plugins.trafficgen.trafgen import flows, streamcount
from vsbench_plugins.vnf.vrouter import netlink_bulk as nl
from vsbench_plugins.vnf.vrouter.plugin import SETTINGS_SCHEMA


def _config(pairs=2, instances=1, profile=0, routes=1024, nexthops=16, mode="per_route", flows_=1024):
    return {"topology": {"port_pairs": pairs},
            "dut": {"routes": routes, "nexthops": nexthops, "nexthop_mode": mode, "router_instances": instances},
            "traffic": {"flows": flows_, "router_profile": profile}}


def _ports(n: int) -> list[RouterPort]:
    return [RouterPort(g=g, iface=f"vsbabcdefd{g}", mac=f"02:ab:cd:ef:02:{g:02x}", peer_mac=f"02:ab:cd:ef:01:{g:02x}")
            for g in range(n)]


# -- the report's traffic profiles -------------------------------------------------------------


def test_profile_0_pairs_the_ports_as_the_report_does():
    """"from interface 1 to 2 and 2 to 1; from 3 to 4 and 4 to 3" (report section 4.3.4)."""
    assert profile_destinations(0, 4) == [(1,), (0,), (3,), (2,)]
    assert profile_destinations(0, 2) == [(1,), (0,)]


def test_profile_2_sends_to_every_other_port_of_its_socket():
    assert profile_destinations(2, 4) == [(1, 2, 3), (0, 2, 3), (0, 1, 3), (0, 1, 2)]
    for i, dests in enumerate(profile_destinations(2, 8)):
        assert set(dests) == {j for j in range(8) if j // 4 == i // 4} - {i}


@pytest.mark.parametrize("profile, own, other", [(1, 0, 1), (3, 0, 4), (4, 2, 2), (5, 3, 4)])
def test_the_dual_socket_profiles_cross_as_the_report_says(profile, own, other):
    """Profile 1: one port on the other socket; 3: every port there; 4: two on each socket
    (half the frames cross); 5: every other port."""
    for i, dests in enumerate(profile_destinations(profile, 8)):
        assert i not in dests
        assert sum(1 for j in dests if j // 4 == i // 4) == own
        assert sum(1 for j in dests if j // 4 != i // 4) == other


@pytest.mark.parametrize("profile", range(6))
def test_every_port_receives_as_many_streams_as_it_sends(profile):
    dests = profile_destinations(profile, 8)
    received = Counter(j for d in dests for j in d)
    assert all(received[i] == len(dests[i]) for i in range(8))


@pytest.mark.parametrize("profile", [1, 3, 4, 5])
def test_a_dual_socket_profile_on_4_ports_is_one_line(profile):
    with pytest.raises(DeploymentError, match="8 router ports") as err:
        profile_destinations(profile, 4)
    assert "\n" not in str(err.value)


# -- the plan's checks -------------------------------------------------------------------------


@pytest.mark.parametrize("change, message", [
    ({"mode": "ecmp", "nexthops": MAX_ECMP_GROUP + 1}, "at most 8191"),
    ({"mode": "per_route", "routes": 8, "nexthops": 16}, "at least dut.nexthops"),
    ({"mode": "connected", "routes": 1024, "nexthops": 16}, "dut.routes must be 1"),
    ({"mode": "connected", "routes": 1, "nexthops": 16, "flows_": 32}, "must not exceed dut.nexthops"),
    ({"nexthops": 32769, "routes": 40000}, "from 1 to 32768"),
    ({"pairs": 3}, "port_pairs must be 1, 2 or 4"),
    ({"instances": 3}, "router_instances must be 1 or 2"),
    ({"mode": "anycast"}, "nexthop_mode must be"),
    ({"profile": 2, "pairs": 4, "routes": 1 << 22, "flows_": 1 << 22, "nexthops": 1}, "does not fit"),
])
def test_what_the_addressing_cannot_hold_is_one_line(change, message):
    with pytest.raises(DeploymentError, match=message) as err:
        router_plan(_config(**change))
    assert "\n" not in str(err.value)


def test_the_preflight_refuses_router_settings_before_anything_is_built():
    from types import SimpleNamespace

    from vsbench.deployment.pvp import Pvp
    from vsbench.deployment.routed import PhyRouterPhy

    with pytest.raises(DeploymentError, match="8 router ports"):
        PhyRouterPhy.check_config(_config(profile=4))
    PhyRouterPhy.check_config(_config(pairs=4, profile=4))
    router, forwarder = SimpleNamespace(routing=True), SimpleNamespace(routing=False)
    for key, value in (("traffic", {"router_profile": 2}), ("dut", {"nexthop_mode": "connected"}),
                       ("dut", {"router_instances": 2})):
        with pytest.raises(DeploymentError, match="is phy_router_phy's") as err:
            Pvp.check_config({key: value}, router)
        assert "\n" not in str(err.value)
        Pvp.check_config({key: value}, forwarder)  # not a router: nothing of it applies
    Pvp.check_config({"traffic": {"router_profile": 0}, "dut": {"nexthop_mode": "ecmp"}}, router)


# -- the model each router gets ----------------------------------------------------------------


def _parsed(plan, ports):
    data = port_router_model(plan, ports)
    jsonschema.validate({"config": data}, SETTINGS_SCHEMA)
    return data, model.parse(data)


def test_per_route_gives_route_k_next_hop_k_mod_n():
    plan = router_plan(_config())
    _, cfg = _parsed(plan, _ports(4))
    assert cfg.route_count == 4 * 1024 and cfg.nexthop_count == 4 * 16
    group = cfg.group("port2")
    assert group.use == model.USE_PER_ROUTE and not group.ecmp and group.size == 16
    assert str(group.hop(0).via) == "172.18.0.1" and str(group.hop(15).via) == "172.18.0.16"
    assert {group.hop(k).mac for k in range(16)} == {"02:ab:cd:ef:01:02"}  # the generator port behind it
    text = model.to_config_boot(cfg, max_routes=20)
    assert "route 10.128.0.17/32 {\n            next-hop 172.18.0.2 { }" in text  # route 17 via next hop 17 mod 16
    assert "address 172.19.255.254/16" in text


def test_connected_next_hops_are_static_arp_entries_and_no_route():
    plan = router_plan(_config(mode="connected", routes=1, nexthops=32768, flows_=32768))
    data, cfg = _parsed(plan, _ports(4))
    assert cfg.route_count == 0 and cfg.static_arp_count == 4 * 32768 and not cfg.nexthop_groups
    arp = cfg.static_arp[1]
    assert str(arp.address(0)) == "172.17.0.1" and str(arp.address(32767)) == "172.17.128.0"
    assert arp.mac == "02:ab:cd:ef:01:01"
    assert "more static ARP entries" in model.to_config_boot(cfg)


def test_ecmp_is_one_group_per_port():
    plan = router_plan(_config(mode="ecmp", nexthops=64))
    _, cfg = _parsed(plan, _ports(2))
    assert [g.ecmp for g in cfg.nexthop_groups] == [True, True] and cfg.nexthop_count == 128


@pytest.mark.parametrize("change, message", [
    ({"nexthop_range": {"start": "172.16.255.250", "count": 5, "interface": "d0"}}, "own address"),
    ({"nexthop_range": {"start": "172.16.255.255", "count": 1, "interface": "d0"}}, "subnet"),
    ({"nexthop_range": {"start": "172.17.0.1", "count": 1, "interface": "d0"}}, "subnet"),
    ({"use": "per_route"}, "no next hop"),
])
def test_inconsistent_ranges_are_one_line_errors(change, message):
    group = {"name": "g", **change}
    data = {"interfaces": [{"name": "d0", "address": "172.16.255.254/16"}], "nexthop_groups": [group]}
    with pytest.raises(model.ModelError, match=message) as err:
        model.parse(data)
    assert "\n" not in str(err.value)


# -- the streams, and where the router sends them --------------------------------------------


def _exit_port(cfg: model.RouterConfig, ports: list[RouterPort], address: str) -> int:
    """The router port a frame to ``address`` leaves by, looked up in the model as the kernel
    would: a route (longest prefix first) to its group's next hop, or a connected host."""
    addr = ipaddress.IPv4Address(address)
    by_iface = {p.iface: p.g for p in ports}
    for r in sorted(cfg.ranges, key=lambda r: -r.prefixlen):
        step = 1 << (32 - r.prefixlen)
        k = (int(addr) - int(r.start)) // step
        if 0 <= k < r.count:
            group = cfg.group(r.group)
            hop = group.hop(k % group.size if group.use == model.USE_PER_ROUTE else 0)
            return by_iface[hop.interface]
    for arp in cfg.static_arp:
        if 0 <= int(addr) - int(arp.start) < arp.count:
            return by_iface[arp.interface]
    pytest.fail(f"{address} is not routed")


@pytest.mark.parametrize("pairs, profile, mode", [(2, 0, "per_route"), (2, 2, "per_route"), (4, 5, "ecmp"),
                                                  (4, 4, "per_route"), (2, 2, "connected"), (1, 0, "ecmp")])
def test_every_flow_of_every_stream_leaves_by_the_port_it_is_counted_on(pairs, profile, mode):
    routes = 1 if mode == "connected" else 1024
    plan = router_plan(_config(pairs=pairs, profile=profile, mode=mode, routes=routes, nexthops=16 if mode != "connected"
                               else 1024))
    ports = _ports(2 * pairs)
    _, cfg = _parsed(plan, ports)
    streams = router_streams(plan, FlowFields(), ports)
    destinations = profile_destinations(profile, 2 * pairs)
    assert [(s.tx_port, s.rx_port) for s in streams] == [(i, j) for i in range(2 * pairs) for j in destinations[i]]
    for s in streams:
        port = ports[s.tx_port]
        assert s.fields.dst_mac == port.mac and s.fields.src_mac == port.peer_mac  # to the router port it enters
        plan_ = flows.plan_flows(s.fields, plan.flows)
        for k in (0, 1, plan.flows - 1):
            frame = flows.flow_values(s.fields, plan_, k)
            assert _exit_port(cfg, ports, frame.dst_ip) == s.rx_port, (s, k)


def test_two_instances_keep_each_ones_streams_on_its_own_ports():
    plan = router_plan(_config(instances=2, profile=2))
    ports = _ports(8)
    streams = router_streams(plan, FlowFields(), ports)
    assert len(streams) == 2 * 12
    assert all(s.tx_port // 4 == s.rx_port // 4 for s in streams)
    second = port_router_model(plan, ports[4:])
    assert [i["address"] for i in second["interfaces"]] == [f"172.{20 + k}.255.254/16" for k in range(4)]
    assert host_base(plan, 5) == route_block(5, 8)


def test_unidirectional_is_profile_0_from_the_even_ports_only():
    plan = router_plan(_config(profile=0))
    assert [(s.tx_port, s.rx_port) for s in router_streams(plan, FlowFields(), _ports(4), bidirectional=False)] == \
        [(0, 1), (2, 3)]
    with pytest.raises(DeploymentError, match="bidirectional"):
        router_streams(router_plan(_config(profile=2)), FlowFields(), _ports(4), bidirectional=False)


def test_line_rate_counts_every_sending_port_and_recompute_agrees():
    plan = router_plan(_config(pairs=4, profile=5))
    profile = TrafficProfile(frame_size_bytes=64, streams=router_streams(plan, FlowFields(), _ports(8)))
    assert profile.directions == 56 and profile.sending_ports == 8
    config = {"testbed": {"link_gbps": 10}, "traffic": {"bidirectional": True}, "topology": {"port_pairs": 4}}
    assert nominal_line_rate_fps(config, profile) == pytest.approx(8 * 10e9 / (84 * 8))
    # results.json records the 4 pairs of 8 router ports (describe()); a run that did not, its config's
    recorded = {"deployment": "phy_router_phy", "topology": {"port_pairs": 4}}
    older = {"deployment": "phy_router_phy", "topology": {"topology": "PHY-router-PHY"}}
    for test in (recorded, older):
        pairs = recompute.sending_port_pairs(test, config)
        assert recompute.nominal_line_rate_fps(config, 64, pairs) == pytest.approx(nominal_line_rate_fps(config, profile))
    two = {**config, "dut": {"router_instances": 2}, "topology": {"port_pairs": 2}}
    assert recompute.sending_port_pairs(older, two) == 4
    assert recompute.sending_port_pairs({"deployment": "p2p"}, config) == 1
    assert recompute.nominal_line_rate_fps(config, 64, 1) == pytest.approx(2 * 10e9 / (84 * 8))


# -- wire formats --------------------------------------------------------------------------------


def test_neighbour_messages_decode_as_the_kernel_reads_them():
    dst = np.array([int(ipaddress.IPv4Address("172.16.0.1")), int(ipaddress.IPv4Address("172.16.0.2"))],
                   dtype=np.uint32)
    msgs = nl.encode_neighbours(dst, 7, "02:ab:cd:ef:01:00")
    msgs["nl_seq"] = [5, 6]
    wire = msgs.tobytes()
    for i, expected in enumerate(("172.16.0.1", "172.16.0.2")):
        msg = ndmsg(wire[i * 48:(i + 1) * 48])
        msg.decode()
        assert msg["header"]["type"] == nl.RTM_NEWNEIGH and msg["header"]["flags"] & nl.NLM_F_REPLACE
        assert msg["ifindex"] == 7 and msg["state"] == nl.NUD_PERMANENT
        assert msg.get_attr("NDA_DST") == expected and msg.get_attr("NDA_LLADDR") == "02:ab:cd:ef:01:00"
    assert set(nl.encode_neighbours(dst, 7, None, delete=True)["nl_type"]) == {nl.RTM_DELNEIGH}


def test_next_hop_messages_carry_id_interface_and_gateway():
    wire = nl.encode_nexthops(np.array([3], dtype=np.uint32), np.array([int(ipaddress.IPv4Address("172.16.0.9"))],
                                                                         dtype=np.uint32), 11).tobytes()
    length, kind = struct.unpack_from("<IH", wire)
    assert length == len(wire) == 48 and kind == nl.RTM_NEWNEXTHOP
    attrs = {struct.unpack_from("<H", wire, off + 2)[0]: wire[off + 4:off + 8] for off in (24, 32, 40)}
    assert struct.unpack("<I", attrs[nl.NHA_ID])[0] == 3 and struct.unpack("<I", attrs[nl.NHA_OIF])[0] == 11
    assert ipaddress.IPv4Address(attrs[nl.NHA_GATEWAY]) == ipaddress.IPv4Address("172.16.0.9")
    with pytest.raises(nl.BulkError, match="8191"):
        nl.encode_nexthop(1, 9, group=[(i, 1) for i in range(nl.MAX_GROUP_MEMBERS + 1)])


def test_the_stream_counter_program_jumps_inside_itself_and_rejects_every_frame():
    code = streamcount.program(map_fd=42)
    insns = [struct.unpack_from("<BBhi", code, o) for o in range(0, len(code), 8)]
    for at, (op, _regs, off, _imm) in enumerate(insns):
        if op & 0x07 == 0x05 and op not in (0x85, 0x95):  # a conditional jump
            assert 0 < at + 1 + off < len(insns)
            assert insns[at + 1 + off][0] == 0xB7  # both jumps land on "r0 = 0" (accept nothing)
    assert insns[-1][0] == 0x95 and insns[-2] == (0xB7, 0, 0, 0)
