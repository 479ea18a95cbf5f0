"""OvS-DPDK's ``userspace_tso`` variant on ports that cannot carry it: the switch says why
(its af_packet ports' own ``tx_tso_offload`` where OvS reports it), so the runner lists the
variant with that reason instead of a figure of the switch without the feature."""

from types import SimpleNamespace
from pathlib import Path

from vsbench.interfaces.plugin import PluginError
from vsbench.interfaces.vswitch import PortSpec, SwitchPort
from vsbench_plugins.vswitch.ovs_dpdk import OvsDpdk


class StatusCtl:
    def __init__(self, status: dict[str, str]):
        self.status, self.calls = status, []

    def vsctl(self, *args, wait=True):
        self.calls.append(args)
        if args[2] not in self.status:
            raise PluginError("no row")
        return self.status[args[2]]


def _switch(tso, ports, status):
    switch = object.__new__(OvsDpdk)
    switch.cfg = {"userspace_tso": tso}
    switch._ports = {"br0": ports}
    switch.instance = SimpleNamespace(ctl=StatusCtl(status))
    return switch


AF = [SwitchPort("dpdk0", 1, PortSpec("physical", "dpdk0", iface="vsbxeth0")),
      SwitchPort("dpdk1", 2, PortSpec("physical", "dpdk1", iface="vsbxeth1"))]
VHOST = [SwitchPort("vhu0", 3, PortSpec("vhostuser", "vhu0", socket_path=Path("/r/vhu0")))]


def test_tso_through_af_packet_ports_says_why_with_what_ovs_reports():
    status = {"dpdk0": '{driver_name=net_af_packet, tx_tso_offload="false"}', "dpdk1": "{tx_tso_offload=false}"}
    why = _switch(True, AF + VHOST, status).setting_not_in_effect()
    assert why.startswith("vswitch.ovs_dpdk.userspace_tso=true cannot take effect here")
    assert "OvS reports dpdk0 tx_tso_offload=false, dpdk1 tx_tso_offload=false" in why and "\n" not in why


def test_without_the_status_key_the_reason_still_stands():
    why = _switch(True, AF, {"dpdk0": "{driver_name=net_af_packet}"}).setting_not_in_effect()
    assert "OvS leaves TSO off on them" in why


def test_tso_in_effect_or_not_asked_is_no_reason():
    assert _switch(True, AF, {"dpdk0": "{tx_tso_offload=true}", "dpdk1": "{tx_tso_offload=true}"}) \
        .setting_not_in_effect() is None
    assert "dpdk1 tx_tso_offload=false" in _switch(True, AF, {"dpdk0": "{tx_tso_offload=true}",
                                                              "dpdk1": "{tx_tso_offload=false}"}).setting_not_in_effect()
    assert _switch(False, AF, {}).setting_not_in_effect() is None
    assert _switch(None, AF, {}).setting_not_in_effect() is None  # null: on with tap ports only, not asked
    assert _switch(True, VHOST, {}).setting_not_in_effect() is None  # no af_packet port
