"""Settings of ovs_dpdk and linux_bridge: schema, shipped defaults, validation, EAL args."""

from pathlib import Path

import jsonschema
import pytest
import yaml

from vsbench.interfaces import PluginContext, PluginError, PortSpec
from vsbench.system.resources import ResourceStack
from vsbench_plugins.vswitch.linux_bridge import LinuxBridge
from vsbench.interfaces.settings import schema_defaults, with_defaults
from vsbench_plugins.vswitch.ovs_dpdk import OvsDpdk
from vsbench.runner.plugin_context import RunParametersError, run_parameters

ROOT = Path(__file__).resolve().parents[2]


def shipped(name: str) -> dict:
    conf = yaml.safe_load((ROOT / "conf" / f"20_vswitch_{name}.yaml").read_text())
    return conf["vswitch"][name]


@pytest.mark.parametrize("cls,name", [(OvsDpdk, "ovs_dpdk"), (LinuxBridge, "linux_bridge")])
def test_shipped_yaml_is_valid_and_equals_schema_defaults(cls, name):
    jsonschema.Draft202012Validator.check_schema(cls.settings_schema)
    settings = shipped(name)
    jsonschema.validate(settings, cls.settings_schema)
    assert settings == schema_defaults(cls.settings_schema)


@pytest.mark.parametrize("cls,bad", [
    (OvsDpdk, {"pmd_cpu_msk": "0x2"}),                 # typo
    (OvsDpdk, {"pmd_cpu_mask": "2"}),                  # not 0x-hex
    (OvsDpdk, {"ports": [{"pci": "eth0"}]}),           # not a PCI address
    (OvsDpdk, {"af_packet": {"framecnt": 1}}),
    (OvsDpdk, {"socket_mem_mb": 512}),                 # per-node list
    (LinuxBridge, {"stp": True}),
])
def test_schema_rejects(cls, bad):
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, cls.settings_schema)


def test_with_defaults_merges_nested():
    cfg = with_defaults(OvsDpdk.settings_schema, {"af_packet": {"framecnt": 4096}, "pmd_cpu_mask": "0x1"})
    assert cfg["af_packet"] == {"qpairs": 1, "framecnt": 4096, "blocksz": 4096, "framesz": 2048,
                                "qdisc_bypass": True}
    assert cfg["pmd_cpu_mask"] == "0x1" and cfg["dpdk_lcore_mask"] == "0x1"


def cfg(**over):
    return with_defaults(OvsDpdk.settings_schema, over)


@pytest.mark.parametrize("extra,word", [
    (["--no-pci"], "ports"), (["-a", "0000:01:00.0"], "ports"), (["--allow=0000:01:00.0"], "ports"),
    (["--file-prefix=x"], "run id"), (["--socket-mem=1024"], "socket_mem_mb"),
])
def test_managed_eal_args_are_refused(extra, word):
    errors = OvsDpdk.settings_errors(cfg(dpdk_extra=extra), online={0, 1})
    assert len(errors) == 1 and word in errors[0]


def test_other_config_cannot_bypass_managed_keys():
    errors = OvsDpdk.settings_errors(cfg(other_config={"dpdk-extra": "-a 0000:00:01.0"}), online={0, 1})
    assert errors == ["other_config may not set dpdk-extra; use dpdk_extra"]
    assert OvsDpdk.settings_errors(cfg(other_config={"emc-insert-inv-prob": 1}), online={0, 1}) == []


def test_masks_must_name_online_cpus():
    assert OvsDpdk.settings_errors(cfg(), online={0, 1}) == []
    errors = OvsDpdk.settings_errors(cfg(pmd_cpu_mask="0x4"), online={0, 1})
    assert "not online" in errors[0]
    assert "selects no CPU" in OvsDpdk.settings_errors(cfg(dpdk_lcore_mask="0x0"), online={0, 1})[0]


def plugin(settings=None, run_config=None):
    ctx = PluginContext("a1b2c3", settings or {}, Path("/nonexistent"), ResourceStack(),
                        run=run_parameters(run_config or {}), dut_netns="vsb-a1b2c3-dut")
    return OvsDpdk(ctx)


def test_eal_args_without_pci_never_probe():
    sw = plugin()
    args = sw.eal_extra_args()
    assert args[0] == "--no-pci"
    assert "--file-prefix=vsba1b2c3ovs" in args
    assert not any(a in ("-a", "--allow") for a in args)


def test_eal_args_with_pci_allow_exactly_those():
    sw = plugin({"ports": [{"pci": "0000:3b:00.0"}, {"pci": "0000:3b:00.1"}], "dpdk_extra": ["--log-level=8"]})
    args = sw.eal_extra_args()
    assert "--no-pci" not in args
    assert args[:4] == ["-a", "0000:3b:00.0", "-a", "0000:3b:00.1"]
    assert args[-1] == "--log-level=8"


def test_pci_port_outside_allow_list_is_refused():
    sw = plugin({"ports": [{"pci": "0000:3b:00.0"}]})
    name, columns = sw.interface_config(PortSpec("physical", "p0", pci="0000:3b:00.0"), 0)
    assert columns[:2] == ["type=dpdk", 'options:dpdk-devargs="0000:3b:00.0"']
    with pytest.raises(PluginError, match="not in vswitch.ovs_dpdk.ports"):
        sw.interface_config(PortSpec("physical", "p1", pci="0000:5e:00.0"), 1)


def test_af_packet_port_devargs():
    sw = plugin({"af_packet": {"framecnt": 4096}})
    name, columns = sw.interface_config(PortSpec("physical", "p1", iface="vsba1b2c3d1"), 1)
    assert name == "p1"
    assert columns == ["type=dpdk", 'options:dpdk-devargs="net_af_packet1,iface=vsba1b2c3d1,qpairs=1,'
                       'blocksz=4096,framesz=2048,framecnt=4096,qdisc_bypass=1"']
    with pytest.raises(PluginError):
        sw.af_packet_devargs("eth0,iface=evil", 2)


def test_other_config_carries_placement_and_memory():
    oc = plugin({"socket_mem_mb": [256, 256]}).other_config()
    assert oc["dpdk-init"] == "true"
    assert (oc["pmd-cpu-mask"], oc["dpdk-lcore-mask"]) == ("0x2", "0x1")
    assert oc["dpdk-socket-mem"] == oc["dpdk-socket-limit"] == "256,256"


@pytest.mark.parametrize("value", [0, -5, "fast", True])
def test_meter_pps_must_be_positive(value):
    with pytest.raises(RunParametersError, match="meter_pps"):
        run_parameters({"dut": {"meter_pps": value}})


def test_meter_pps_absent_means_no_meter():
    assert plugin(run_config={"dut": {"meter_pps": None}}).meter_pps() is None
    assert plugin().meter_pps() is None
    assert plugin(run_config={"dut": {"meter_pps": 500000}}).meter_pps() == 500000


def test_not_started_is_a_plugin_error():
    with pytest.raises(PluginError, match="not started"):
        plugin().add_bridge("br0")


@pytest.mark.parametrize("value", [0, -2, "2", True])
def test_meter_window_must_be_positive_seconds(value):
    with pytest.raises(RunParametersError, match="meter_window_s"):
        run_parameters({"dut": {"meter_window_s": value}})


def test_meter_window_absent_means_plain_meter():
    assert plugin().meter_window_s() is None
    assert plugin(run_config={"dut": {"meter_window_s": 2}}).meter_window_s() == 2.0
