"""The embedded testbed on the real kernel: namespaces, veth pairs, quietness, teardown."""

from __future__ import annotations

import os
import time

import pytest

from vsbench.deployment.ports import generator_ports_of
from vsbench.system import naming, netlink, runstate
from vsbench.system.commands import run
from vsbench.system.resources import ResourceStack
from vsbench.system.testbed import create_loopback_testbed, create_testbed

pytestmark = pytest.mark.integration

if os.geteuid() != 0:
    pytest.skip("needs root (network namespaces)", allow_module_level=True)


def _namespaces() -> set[str]:
    return set(os.listdir(netlink.NETNS_RUN_DIR)) if os.path.isdir(netlink.NETNS_RUN_DIR) else set()


def test_testbed_is_built_quiet_and_fully_removed():
    run_id = naming.new_run_id()
    with runstate.claim(run_id), ResourceStack() as resources:
        tb = create_testbed(run_id, 2, resources)
        assert {tb.tg_netns, tb.dut_netns} <= _namespaces()
        assert [p.iface for p in generator_ports_of(tb)] == [naming.iface_name(run_id, "tg", i) for i in (0, 1)]
        tg_links = set(netlink.list_links(tb.tg_netns))
        dut_links = set(netlink.list_links(tb.dut_netns))
        assert {l.tg_iface for l in tb.links} <= tg_links
        assert {l.dut_iface for l in tb.links} <= dut_links
        assert not any(name.startswith(f"vsb{run_id}") for name in netlink.list_links(None))

        with netlink.open_netns(tb.tg_netns) as ipr:
            for link in tb.links:
                msg = ipr.get_links(ipr.link_lookup(ifname=link.tg_iface)[0])[0]
                assert msg.get("IFLA_ADDRESS") == link.tg_mac
                assert msg["flags"] & 0x80  # NOARP
                assert msg.get("IFLA_OPERSTATE") == "UP"
        for ns, ifaces in ((tb.tg_netns, [l.tg_iface for l in tb.links]),
                           (tb.dut_netns, [l.dut_iface for l in tb.links])):
            out = run(["sysctl", "-n", *[f"net.ipv6.conf.{i}.disable_ipv6" for i in ifaces]], netns=ns)
            assert out.stdout.split() == ["1"] * len(ifaces)

        # Quiet: nothing sends a frame of its own on any port.
        before_tg = netlink.read_link_counters(tb.tg_netns, [l.tg_iface for l in tb.links])
        before_dut = netlink.read_link_counters(tb.dut_netns, [l.dut_iface for l in tb.links])
        time.sleep(3)
        after_tg = netlink.read_link_counters(tb.tg_netns, [l.tg_iface for l in tb.links])
        after_dut = netlink.read_link_counters(tb.dut_netns, [l.dut_iface for l in tb.links])
        for before, after in ((before_tg, after_tg), (before_dut, after_dut)):
            for iface in before:
                delta = after[iface] - before[iface]
                assert delta.tx_packets == 0 and delta.rx_packets == 0, (iface, delta)
    assert not {tb.tg_netns, tb.dut_netns} & _namespaces()


def test_loopback_testbed_joins_two_generator_ports():
    run_id = naming.new_run_id()
    with runstate.claim(run_id), ResourceStack() as resources:
        tb = create_loopback_testbed(run_id, resources)
        assert tb.loopback and tb.namespaces == (tb.tg_netns,)
        a, b = tb.links
        assert a.dut_iface == b.tg_iface and b.dut_iface == a.tg_iface
        ports = generator_ports_of(tb)
        assert [p.netns for p in ports] == [tb.tg_netns] * 2
    assert tb.tg_netns not in _namespaces()


def test_a_leftover_namespace_is_refused_not_reused():
    run_id = naming.new_run_id()
    with runstate.claim(run_id), ResourceStack() as outer:
        create_loopback_testbed(run_id, outer)
        with ResourceStack() as inner, pytest.raises(Exception, match="already exists"):
            create_loopback_testbed(run_id, inner)
        assert naming.netns_name(run_id, "tg") in _namespaces()  # the first one is untouched
    assert naming.netns_name(run_id, "tg") not in _namespaces()
