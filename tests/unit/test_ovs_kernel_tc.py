"""ovs_kernel / ovs_tc without a kernel datapath: prerequisites, module lookup, parsers.

The parsers run on output captured inside the kernel lab (tests/data/ovs_kernel/, from
tests/integration/test_ovs_kernel_lab.py with VSBENCH_CAPTURE_DIR): OvS 3.1.0 on Debian's
6.1 kernel, 16 src/dst-IP rules per direction, tc-policy skip_hw.
"""

import gzip
from pathlib import Path

import jsonschema
import pytest
import yaml

from vsbench.interfaces import PluginContext
from vsbench.interfaces.settings import schema_defaults
from vsbench.runner.plugin_context import RunParametersError, run_parameters
from vsbench.system.resources import ResourceStack
from vsbench_plugins.vswitch import ovs_kernel, ovs_tc
from vsbench_plugins.vswitch.ovs_kernel import OvsKernel, module_status
from vsbench_plugins.vswitch.ovs_tc import OvsTc

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "ovs_kernel"


def _fake_kernel(tmp_path, *, loaded=(), builtin=(), loadable=(), config=None):
    sys_module = tmp_path / "sys_module"
    sys_module.mkdir()
    for name in loaded:
        (sys_module / name).mkdir()
    lib = tmp_path / "lib_modules" / "9.9.9-test"
    lib.mkdir(parents=True)
    (lib / "modules.builtin").write_text("".join(f"kernel/net/{m}.ko\n" for m in builtin))
    (lib / "modules.dep").write_text("".join(f"kernel/net/{m}.ko: kernel/lib/dep.ko\n" for m in loadable))
    config_gz = tmp_path / "config.gz"
    with gzip.open(config_gz, "wt") as f:
        f.write(config or "")
    return dict(release="9.9.9-test", sys_module=sys_module, lib_modules=tmp_path / "lib_modules",
                config_gz=config_gz)


def test_module_status_reads_sysfs_modules_files_then_kernel_config(tmp_path):
    where = _fake_kernel(tmp_path, loaded=["veth"], builtin=["sch_ingress"], loadable=["openvswitch", "act-mirred"],
                         config="CONFIG_NET_CLS_FLOWER=y\n# CONFIG_NET_ACT_GACT is not set\n")
    assert module_status("veth", **where) == "loaded"
    assert module_status("sch_ingress", **where) == "builtin"
    assert module_status("openvswitch", **where) == "loadable"
    assert module_status("act_mirred", **where) == "loadable"  # '-' and '_' are one
    assert module_status("cls_flower", **where) == "builtin"   # from /proc/config.gz
    assert module_status("act_gact", **where) == "missing"
    assert module_status("no_such_module", **where) == "missing"


def test_missing_modules_are_one_prerequisite_naming_them_and_the_lab(tmp_path):
    where = _fake_kernel(tmp_path, config="# CONFIG_OPENVSWITCH is not set\n")
    prereq = ovs_kernel.missing_modules_prerequisite(["openvswitch", "cls_flower"], **where)
    assert prereq.what == "kernel modules openvswitch, cls_flower (kernel 9.9.9-test)"
    assert "linux-image-amd64" in prereq.remedy and "tools/kernel-lab/run" in prereq.remedy
    assert ovs_kernel.missing_modules_prerequisite([], **where) is None


@pytest.mark.skipif(module_status("openvswitch") != "missing", reason="this kernel has openvswitch")
def test_on_this_host_the_missing_modules_are_reported():
    kernel = "; ".join(str(p) for p in OvsKernel.check_prerequisites({}))
    assert "kernel module openvswitch" in kernel and "tools/kernel-lab/run" in kernel
    tc = "; ".join(str(p) for p in OvsTc.check_prerequisites({}))
    assert "openvswitch" in tc
    if module_status("cls_flower") == "missing":
        assert "cls_flower" in tc


def test_missing_binaries_are_reported():
    missing = [str(p) for p in OvsTc.check_prerequisites({"vswitchd": "/nonexistent/ovs-vswitchd",
                                                           "tc_binary": "no-such-tc"})]
    assert any("binary /nonexistent/ovs-vswitchd" in m and "openvswitch-switch" in m for m in missing)
    assert any("binary no-such-tc" in m and "iproute2" in m for m in missing)


@pytest.mark.parametrize("cls,name", [(OvsKernel, "ovs_kernel"), (OvsTc, "ovs_tc")])
def test_shipped_yaml_is_valid_and_equals_schema_defaults(cls, name):
    settings = yaml.safe_load((ROOT / "conf" / f"20_vswitch_{name}.yaml").read_text())["vswitch"][name]
    jsonschema.Draft202012Validator.check_schema(cls.settings_schema)
    jsonschema.validate(settings, cls.settings_schema)
    assert settings == schema_defaults(cls.settings_schema)


@pytest.mark.parametrize("bad", [{"tc_policy": "skip_both"}, {"tc_polcy": "skip_hw"}, {"offload_detail_limit": -1}])
def test_tc_schema_rejects(bad):
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, OvsTc.settings_schema)


def test_tc_other_config_turns_offload_on_with_the_policy(tmp_path):
    ctx = PluginContext(run_id="abc123", settings={"tc_policy": "none"}, log_dir=tmp_path,
                        resources=ResourceStack())
    config = OvsTc(ctx).other_config()
    assert config["hw-offload"] == "true" and config["tc-policy"] == "none"
    assert "hw-offload" not in OvsKernel(ctx).other_config()


def test_a_bad_rule_set_is_refused_before_the_switch_sees_it():
    with pytest.raises(RunParametersError, match="exceeds dut.rules=10"):
        run_parameters({"dut": {"rules": 10}, "traffic": {"flows": 20}})


def test_the_switch_is_given_the_run_rule_set(tmp_path):
    run = run_parameters({"dut": {"rules": 20}, "traffic": {"flows": 20}})
    ctx = PluginContext(run_id="abc123", settings={}, log_dir=tmp_path, resources=ResourceStack(), run=run)
    assert OvsKernel(ctx).rule_set() == run.rule_set and run.rule_set.rules == 20


# --------------------------------------------------------------------------- parsers

def test_parse_dpctl_show_on_captured_output():
    dp = ovs_kernel.parse_dpctl_show((DATA / "dpctl-show-s.txt").read_text())["system@ovs-system"]
    assert (dp["lookups_hit"], dp["lookups_missed"], dp["lookups_lost"]) == (156, 110, 0)
    assert dp["flows"] == 65
    assert (dp["masks_hit"], dp["masks_total"], dp["masks_hit_per_pkt"]) == (208, 2, 0.78)
    assert (dp["cache_hit"], dp["cache_hit_rate_pct"]) == (91, 34.21)
    port = dp["ports"]["vsbafa06dd0"]
    assert port["port_no"] == 2 and port["type"] == "system"
    assert (port["rx_packets"], port["tx_packets"], port["rx_bytes"], port["tx_bytes"]) == (138, 128, 11316, 10496)
    assert port["rx_dropped"] == 0
    assert dp["ports"]["ovs-system"]["type"] == "internal"


def test_parse_upcall_show_on_captured_output():
    kernel = ovs_kernel.parse_upcall_show((DATA / "upcall-show.kernel.txt").read_text())
    assert kernel == {"system@ovs-system": {"flows_current": 65, "flows_avg": 61, "flows_max": 65,
                                            "flows_limit": 14000, "dump_duration_ms": 1}}
    tc = ovs_kernel.parse_upcall_show((DATA / "upcall-show.tc.txt").read_text())["system@ovs-system"]
    assert tc["offloaded_flows"] == 32 and tc["flows_current"] == 0


def test_parse_dump_flows_on_captured_output():
    tc = ovs_tc.parse_dump_flows((DATA / "dump-flows-tc.txt").read_text())
    assert tc["flows"] == 32
    assert tc["packets"] == 32 * 8 and tc["bytes"] == 32 * 8 * 68
    assert tc["by_in_port"] == {"2": 16, "3": 16}
    assert ovs_tc.parse_dump_flows((DATA / "dump-flows-offloaded.txt").read_text())["flows"] == 0
    verbose = ("ufid:fb34, recirc_id(0),in_port(a0),eth_type(0x0800),ipv4(frag=no), "
               "packets:952, bytes:43792, used:1.181s, dp:tc, actions:a1\n")
    assert ovs_tc.parse_dump_flows(verbose)["by_dp"] == {"tc": 1}


def test_parse_tc_filters_on_captured_output():
    out = ovs_tc.parse_tc_filters((DATA / "tc-filter-show.txt").read_text())
    assert out["filters"] == 16  # the bare "filter ... chain 0" line is not a filter
    assert out["skip_hw"] == 16 and out["not_in_hw"] == 16 and out["in_hw"] == 0 and out["skip_sw"] == 0
    assert out["packets"] == 16 * 8 and out["bytes"] == 16 * 8 * 68


def test_parse_tc_filters_counts_only_the_first_action_of_a_filter():
    text = """filter protocol ip pref 2 flower chain 0 handle 0x1
  skip_sw
  in_hw in_hw_count 1
	action order 1: vlan  push id 5
	Action statistics:
	Sent 100 bytes 10 pkt (dropped 0, overlimits 0 requeues 0)
	action order 2: mirred (Egress Redirect to device eth1) stolen
	Action statistics:
	Sent 100 bytes 10 pkt (dropped 0, overlimits 0 requeues 0)
"""
    out = ovs_tc.parse_tc_filters(text)
    assert out == {"filters": 1, "skip_hw": 0, "skip_sw": 1, "in_hw": 1, "not_in_hw": 0, "packets": 10, "bytes": 100}


def test_offload_summary_sentence():
    assert ovs_tc.offload_summary(30, 2, "skip_hw") == "30 of 32 datapath flows were in TC (tc-policy skip_hw)"


def test_datapath_efficiency_is_the_difference_of_two_samples():
    before = {"dpctl": {"system@ovs-system": {"lookups_hit": 100, "lookups_missed": 10, "lookups_lost": 0}},
              "softirq_s": 5.0, "offload": {"tc_packets": 7}}
    after = {"dpctl": {"system@ovs-system": {"lookups_hit": 1090, "lookups_missed": 20, "lookups_lost": 0}},
             "softirq_s": 5.5, "offload": {"tc_packets": 1007}}
    eff = ovs_kernel.datapath_efficiency(before, after, forwarded_frames=1000)
    assert (eff["lookups_hit"], eff["lookups_missed"], eff["lookups_lost"]) == (990, 10, 0)
    assert eff["hit_ratio"] == pytest.approx(0.99)
    assert eff["softirq_s"] == pytest.approx(0.5)
    assert eff["softirq_ns_per_frame"] == pytest.approx(500_000)
    assert eff["upcalls_per_frame"] == pytest.approx(0.01)
    assert eff["tc_packets"] == 1000
    assert ovs_kernel.datapath_efficiency({}, {})["hit_ratio"] is None


def test_datapath_efficiency_on_captured_counters():
    dp = ovs_kernel.parse_dpctl_show((DATA / "dpctl-show-s.txt").read_text())
    eff = ovs_kernel.datapath_efficiency({"dpctl": {}, "softirq_s": 0}, {"dpctl": dp, "softirq_s": 0.25}, 256)
    assert eff["lookups_hit"] == 156 and eff["lookups_missed"] == 110
    assert eff["upcalls_per_frame"] == pytest.approx(110 / 256)


# --------------------------------------------------------------------------- VXLAN ports

def test_a_vxlan_port_gets_its_underlay_in_the_kernels_ip_stack_and_only_ovs_options(tmp_path, monkeypatch):
    """The kernel datapath's tunnel: the VTEP address and the far VTEP's neighbour go on the
    underlay interface (undone at stop), the OvS port carries only the options OvS takes."""
    from vsbench.interfaces import PortSpec
    from vsbench_plugins.vswitch.ovs import switch as base

    calls = []
    monkeypatch.setattr(ovs_kernel.commands, "run", lambda argv, **kw: calls.append((list(argv), kw.get("netns"))))
    monkeypatch.setattr(base.OvsSwitchBase, "add_port", lambda self, bridge, spec: ("added", bridge, spec.name))
    ctx = PluginContext(run_id="abc123", settings={}, log_dir=tmp_path, resources=ResourceStack(), dut_netns="vsb-abc123-dut")
    switch = OvsKernel(ctx)
    assert "vxlan" in OvsKernel.tunnel_types and "vxlan" in OvsTc.tunnel_types
    spec = PortSpec(kind="tunnel", name="vsbabc123vx0", iface="vsbabc123d0",
                    options={"type": "vxlan", "key": 99, "dst_port": 4789, "local_ip": "198.18.0.254",
                             "local_mac": "02:ab:c1:23:02:00", "prefixlen": 24, "remote_ip": "198.18.0.1",
                             "remote_mac": "02:ab:c1:23:01:00"})
    assert switch.add_port("br0", spec) == ("added", "br0", "vsbabc123vx0")
    assert [argv[1:] for argv, _ in calls] == [
        ["link", "set", "dev", "vsbabc123d0", "address", "02:ab:c1:23:02:00"],
        ["addr", "add", "198.18.0.254/24", "dev", "vsbabc123d0"],
        ["neigh", "replace", "198.18.0.1", "lladdr", "02:ab:c1:23:01:00", "dev", "vsbabc123d0", "nud", "permanent"],
        ["link", "set", "dev", "vsbabc123d0", "up"]]
    assert {netns for _, netns in calls} == {"vsb-abc123-dut"}
    name, columns = switch.interface_config(spec, 0)
    assert name == "vsbabc123vx0" and columns[0] == "type=vxlan"
    assert sorted(c.split("=")[0] for c in columns[1:]) == ["options:dst_port", "options:key", "options:local_ip",
                                                            "options:remote_ip"]
    calls.clear()
    switch.stop()
    assert sorted(argv[1] for argv, _ in calls) == ["addr", "neigh"] and all("del" in argv for argv, _ in calls)
    with pytest.raises(Exception, match="needs an underlay interface and options remote_mac"):
        switch.add_port("br0", PortSpec(kind="tunnel", name="x", iface="d1",
                                        options={"local_ip": "198.18.1.254", "remote_ip": "198.18.1.1"}))
