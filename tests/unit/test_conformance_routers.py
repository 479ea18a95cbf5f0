"""The kit's way to a routing VNF's forwarding (``vsbench conformance --vnf vrouter``): the
router model phy_router_phy gives, between the kit's ports, covering the kit's frames."""

from __future__ import annotations

import ipaddress
import types

import pytest

from vsbench.conformance.routers import ROUTED_FIELDS, route_to_the_kit


def test_the_kit_routes_its_own_frames_to_the_port_they_must_leave_by():
    links = [types.SimpleNamespace(dut_iface=f"dut{i}", tg_mac=f"02:00:00:00:01:0{i}") for i in (0, 1)]
    kit = types.SimpleNamespace(testbed=types.SimpleNamespace(links=links))
    given = []
    route_to_the_kit(types.SimpleNamespace(configure_router=given.append), kit)
    [model] = given
    groups = {g["name"]: g["nexthops"] for g in model["nexthop_groups"]}

    def exit_of(address: str) -> dict:
        for r in model["route_ranges"]:
            net = ipaddress.ip_network(f"{r['start']}/{r['prefixlen']}")
            if ipaddress.ip_address(address) in net:
                return groups[r["group"]][0]
        pytest.fail(f"no route covers {address}")

    assert exit_of(ROUTED_FIELDS.dst_ip) == {"via": exit_of(ROUTED_FIELDS.dst_ip)["via"], "interface": "dut1",
                                             "mac": "02:00:00:00:01:01"}
    assert exit_of(ROUTED_FIELDS.src_ip)["interface"] == "dut0"
    assert exit_of(ROUTED_FIELDS.src_ip)["mac"] == "02:00:00:00:01:00"
