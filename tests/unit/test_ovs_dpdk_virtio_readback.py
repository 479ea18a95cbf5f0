"""What OvS-DPDK says about the virtio knobs of a feature-matrix variant: userspace TSO on
ports that cannot carry it says why (its af_packet ports' own ``tx_tso_offload``, or its log),
so the runner lists the variant with that reason instead of a figure of the switch without
the feature; and how many vhost-user receive queues its PMD threads poll, on how many cores."""

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


def test_without_the_status_key_ovs_dpdks_log_says_it_and_else_the_reason_still_stands(tmp_path):
    switch = _switch(True, AF, {"dpdk0": "{driver_name=net_af_packet}"})
    assert "OvS leaves TSO off on them" in switch.setting_not_in_effect()
    (tmp_path / "ovs-vswitchd.log").write_text(
        "2026-11-28T00:57:01Z|00042|netdev_dpdk|WARN|dpdk0: Tx TSO offload is not supported.\n"
        "2026-11-28T00:57:01Z|00043|netdev_dpdk|WARN|dpdk1: Tx TSO offload is not supported.\n")
    switch.instance.paths = SimpleNamespace(log_dir=tmp_path)
    assert 'OvS logs "Tx TSO offload is not supported" for dpdk0, dpdk1' in switch.setting_not_in_effect()


def test_tso_in_effect_or_not_asked_is_no_reason():
    assert _switch(True, AF, {"dpdk0": "{tx_tso_offload=true}", "dpdk1": "{tx_tso_offload=true}"}) \
        .setting_not_in_effect() is None
    assert "dpdk1 tx_tso_offload=false" in _switch(True, AF, {"dpdk0": "{tx_tso_offload=true}",
                                                              "dpdk1": "{tx_tso_offload=false}"}).setting_not_in_effect()
    assert _switch(False, AF, {}).setting_not_in_effect() is None
    assert _switch(None, AF, {}).setting_not_in_effect() is None  # null: on with tap ports only, not asked
    assert _switch(True, VHOST, {}).setting_not_in_effect() is None  # no af_packet port


# ---------------------------------------------------------------- vhost queues on the PMDs

RXQ_SHOW = """Displaying last 60 seconds pmd usage %
pmd thread numa_id 0 core_id 1:
  isolated : false
  port: vsb606fbad0       queue-id:  0 (enabled)   pmd usage:  2 %
  port: vsb606fbau0       queue-id:  0 (enabled)   pmd usage:  8 %
  port: vsb606fbau0       queue-id:  1 (enabled)   pmd usage:  3 %
  port: vsb606fbau1       queue-id:  0 (enabled)   pmd usage:  8 %
  port: vsb606fbau1       queue-id:  1 (disabled)  pmd usage:  0 %
  overhead: 10 %
"""


def test_pmd_rxq_show_gives_each_ports_queues_and_their_pmd():
    from vsbench_plugins.vswitch.ovs.rxq import parse_pmd_rxq, rxq_label

    rxqs = parse_pmd_rxq(RXQ_SHOW)
    assert rxqs["vsb606fbau1"] == [{"queue": 0, "enabled": True, "pmd_core": 1},
                                   {"queue": 1, "enabled": False, "pmd_core": 1}]
    assert rxq_label(rxqs, ["vsb606fbau0", "vsb606fbau1"]) == {"vhost_rxqs": "3 on 1 PMD"}
    two = parse_pmd_rxq(RXQ_SHOW + "pmd thread numa_id 0 core_id 2:\n  port: vsb606fbau1  queue-id:  2 (enabled)\n")
    assert rxq_label(two, ["vsb606fbau0", "vsb606fbau1"]) == {"vhost_rxqs": "4 on 2 PMDs"}
    assert rxq_label(rxqs, ["absent"]) == {} and parse_pmd_rxq("") == {}
