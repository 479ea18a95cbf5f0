"""ovs_dpdk's tunnel route waits for ovs-vswitchd to learn the VTEP's address: the address
reaches ovs-vswitchd by a netlink notice its main loop processes, so on a loaded host
``ovs/route/add`` can come first and be refused ("Error while inserting route.", seen in a
suite run of 003). Only that refusal is retried, and only for a bounded time."""

from types import SimpleNamespace

import pytest

from vsbench.interfaces.plugin import PluginError
from vsbench_plugins.vswitch.ovs_dpdk import OvsDpdk


class FlakyCtl:
    def __init__(self, failures: int, message: str = "ovs-appctl ovs/route/add: Error while inserting route."):
        self.failures, self.message, self.calls = failures, message, []

    def appctl(self, *args):
        self.calls.append(args)
        if len(self.calls) <= self.failures:
            raise PluginError(self.message)
        return ""


def _switch(ctl):
    switch = object.__new__(OvsDpdk)
    switch.instance = SimpleNamespace(ctl=ctl)
    return switch


def test_the_route_is_added_once_vswitchd_knows_the_address():
    ctl = FlakyCtl(failures=3)
    _switch(ctl)._add_tunnel_route("198.18.0.1/32", "br1", wait_s=5)
    assert ctl.calls == [("ovs/route/add", "198.18.0.1/32", "br1")] * 4


def test_another_refusal_is_not_retried_and_a_lasting_one_ends():
    ctl = FlakyCtl(failures=5, message="ovs-appctl ovs/route/add: Invalid parameters")
    with pytest.raises(PluginError, match="Invalid parameters"):
        _switch(ctl)._add_tunnel_route("198.18.0.1/32", "br1", wait_s=5)
    assert len(ctl.calls) == 1
    ctl = FlakyCtl(failures=10**6)
    with pytest.raises(PluginError, match="Error while inserting route"):
        _switch(ctl)._add_tunnel_route("198.18.0.1/32", "br1", wait_s=0.5)
    assert 2 <= len(ctl.calls) <= 5
