"""The vrouter's model, its wire encoding and the routed deployment's addressing (pure)."""

from __future__ import annotations

import ipaddress

import jsonschema
import numpy as np
import pytest
from pyroute2.netlink.rtnl.rtmsg import rtmsg

from vsbench.deployment.routed import EAST_BASE, WEST_BASE, route_prefixlen, router_model
from vsbench.interfaces import router as model
from vsbench_plugins.vnf.vrouter import netlink_bulk as nl
from vsbench_plugins.vnf.vrouter.plugin import SETTINGS_SCHEMA

PORTS = ["vsbabcdefd0", "vsbabcdefd1"]
MACS = ["02:ab:cd:ef:01:00", "02:ab:cd:ef:01:01"]


def _model(**kw):
    args = dict(routes=1000, nexthops=4, flows=1000, ports=PORTS, peer_macs=MACS)
    args.update(kw)
    return router_model(**args)


def test_deployment_model_is_schema_valid_and_parses():
    data = _model()
    jsonschema.validate({"config": data}, SETTINGS_SCHEMA)
    cfg = model.parse(data)
    assert cfg.route_count == 2000
    assert cfg.nexthop_count == 8
    assert [g.ecmp for g in cfg.nexthop_groups] == [True, True]
    east = cfg.ranges[0]
    assert east.start == EAST_BASE and east.prefixlen == 32
    dsts = east.destinations()
    assert dsts[0] == int(EAST_BASE) and dsts[-1] == int(EAST_BASE) + 999
    assert cfg.ranges[1].start == WEST_BASE
    # next hops on the egress port's subnet, resolved to the generator port's MAC
    assert {str(h.via) for h in cfg.group("east").nexthops} == {f"198.18.1.{k}" for k in (1, 2, 3, 4)}
    assert {h.mac for h in cfg.group("east").nexthops} == {MACS[1]}


@pytest.mark.parametrize("routes,flows,plen", [(1, 1, 32), (1000, 1000, 32), (1000, 10, 32),
                                               (1, 1000, 22), (1000, 2000, 31), (64, 1000, 28)])
def test_prefixes_cover_every_flow(routes, flows, plen):
    assert route_prefixlen(routes, flows) == plen
    assert routes << (32 - plen) >= flows  # every flow has a route


@pytest.mark.parametrize("change,message", [
    ({"nexthop_groups": [{"name": "g", "nexthops": [{"via": "198.18.9.1", "interface": "d0"}]}]}, "subnet"),
    ({"nexthop_groups": [{"name": "g", "nexthops": [{"via": "198.18.0.1", "interface": "x"}]}]}, "unconfigured"),
    ({"route_ranges": [{"start": "10.0.0.1", "prefixlen": 24, "count": 1, "group": "g"}]}, "aligned"),
    ({"route_ranges": [{"start": "255.255.255.0", "prefixlen": 24, "count": 2, "group": "g"}]}, "past"),
    ({"routes": [{"prefix": "10.0.0.0/8", "group": "nope"}]}, "undefined"),
])
def test_inconsistent_models_are_one_line_errors(change, message):
    data = {"interfaces": [{"name": "d0", "address": "198.18.0.254/24"}],
            "nexthop_groups": [{"name": "g", "nexthops": [{"via": "198.18.0.1", "interface": "d0"}]}]}
    data.update(change)
    with pytest.raises(model.ModelError, match=message) as err:
        model.parse(data)
    assert "\n" not in str(err.value)


def test_config_boot_names_routes_next_hops_and_abbreviates():
    text = model.to_config_boot(model.parse(_model(routes=100, flows=100, nexthops=2)), max_routes=3)
    assert "dataplane vsbabcdefd0 {" in text and "address 198.18.0.254/24" in text
    assert "route 10.0.0.2/32 {" in text and "route 10.0.0.3/32" not in text
    assert "next-hop 198.18.1.2 { }" in text
    assert "97 more /32 routes via group east" in text
    assert "route 0.0.0.0/0 { blackhole { } }" in text


def test_route_messages_decode_as_the_kernel_reads_them():
    dst = np.array([int(ipaddress.IPv4Address("10.1.2.0")), int(ipaddress.IPv4Address("10.1.3.0"))], dtype=np.uint32)
    wire = nl.encode_routes(dst, 24, 7, seq0=41).tobytes()
    assert len(wire) == 2 * 44
    for i, expected in enumerate(("10.1.2.0", "10.1.3.0")):
        msg = rtmsg(wire[i * 44:(i + 1) * 44])
        msg.decode()
        assert msg["header"]["type"] == nl.RTM_NEWROUTE
        assert msg["header"]["sequence_number"] == 41 + i
        assert msg["header"]["flags"] & nl.NLM_F_CREATE
        assert msg["dst_len"] == 24 and msg["table"] == 254 and msg["proto"] == nl.RTPROT_STATIC
        assert msg.get_attr("RTA_DST") == expected
        # pyroute2's decoder predates RTA_NH_ID (30): check its header and value raw
        assert msg["attrs"][1][1]["header"] == {"length": 8, "type": nl.RTA_NH_ID}
        assert int.from_bytes(wire[i * 44 + 40:(i + 1) * 44], "little") == 7
    delete = nl.encode_routes(dst, 24, 7, delete=True)
    assert set(delete["nl_type"]) == {nl.RTM_DELROUTE}


def test_routed_profile_addresses_each_direction_to_the_router_port_it_enters():
    """The chain addressing (pvp with routers): each direction to the MAC of the router port
    it enters, between the two route bases."""
    from vsbench.deployment.routed import routed_profile
    from vsbench.interfaces.traffic import TrafficProfile
    from vsbench_plugins.trafficgen.trafgen import flows

    tg = [f"02:00:00:00:01:0{i}" for i in (0, 1)]
    dut = [f"02:00:00:00:02:0{i}" for i in (0, 1)]
    prof = routed_profile(TrafficProfile(frame_size_bytes=64, flows=1000), (tg[0], dut[0]), (tg[1], dut[1]))
    assert prof.fields.dst_mac == dut[0] and prof.reverse_fields.dst_mac == dut[1]
    plan = flows.plan_flows(prof.fields, prof.flows)
    last = flows.flow_values(prof.fields, plan, 999)
    assert last.dst_ip == str(EAST_BASE + 999) and last.src_ip == str(WEST_BASE + 999)
    back = flows.flow_values(prof.reverse_fields, plan.swapped(), 999)
    assert back.dst_ip == str(WEST_BASE + 999) and back.src_ip == str(EAST_BASE + 999)


def test_phy_router_phy_sends_one_stream_per_port_and_destination():
    from types import SimpleNamespace

    from vsbench.deployment.routed import PhyRouterPhy, RouterPort, router_plan
    from vsbench.interfaces.traffic import TrafficProfile

    dep = PhyRouterPhy.__new__(PhyRouterPhy)
    dep.testbed = SimpleNamespace()
    dep.plan = router_plan({"topology": {"port_pairs": 2}, "traffic": {"flows": 1000, "router_profile": 2},
                            "dut": {"routes": 1000}})
    dep.router_ports = [RouterPort(g, f"d{g}", f"02:00:00:00:02:0{g}", f"02:00:00:00:01:0{g}") for g in range(4)]
    prof = dep.profile(TrafficProfile(frame_size_bytes=64, flows=1000))
    assert prof.directions == 12 and prof.sending_ports == 4
    assert {(s.tx_port, s.rx_port) for s in prof.streams} == {(i, j) for i in range(4) for j in range(4) if i != j}
    assert all(s.fields.dst_mac == f"02:00:00:00:02:0{s.tx_port}" for s in prof.streams)
