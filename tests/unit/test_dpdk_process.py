"""The DPDK-process VNFs' shared part (plugins/vnf/dpdk_process.py), through l3fwd and
PROX-as-VNF: each keeps its own words in every line, its own directory and file prefix,
and counts the same way (no process, no DPDK: telemetry is faked)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from vsbench.interfaces import PluginContext, PluginError, PortSpec, ResourceStack, SwitchPort
from vsbench_plugins.vnf import dpdk_process
from vsbench_plugins.vnf.l3fwd import plugin as l3fwd_plugin
from vsbench_plugins.vnf.l3fwd.plugin import L3fwd
from vsbench_plugins.vnf.prox.plugin import ProxVnf

BOTH = pytest.mark.parametrize("cls, label", [(L3fwd, "l3fwd"), (ProxVnf, "prox (vnf)")])


def vnf_of(cls, tmp_path, settings=None):
    return cls(PluginContext(run_id="abc123", settings=settings or {}, log_dir=tmp_path, resources=ResourceStack(),
                             dut_netns="vsb-abc123-dut", work_dir=tmp_path))


def veth(*names):
    return [SwitchPort(name=n, number=i, spec=PortSpec(kind="physical", name=n, iface=n)) for i, n in enumerate(names)]


@BOTH
def test_each_refuses_ports_in_its_own_words(cls, label, tmp_path, monkeypatch):
    monkeypatch.setattr(dpdk_process, "list_links", lambda netns: ["ve0", "lo"])
    with pytest.raises(PluginError) as info:
        vnf_of(cls, tmp_path).start(veth("ve0"))
    assert str(info.value) == f"{label} forwards between one pair of ports; got 1"
    with pytest.raises(PluginError) as info:
        vnf_of(cls, tmp_path).start(veth("ve0", "nx1"))
    assert str(info.value) == f"{label}: no interface nx1 to attach net_af_packet to"
    vhost = SwitchPort(name="vh0", number=0, spec=PortSpec(kind="vhostuser", name="vh0", socket_path=tmp_path / "s"))
    with pytest.raises(PluginError) as info:
        vnf_of(cls, tmp_path).start([vhost, veth("ve0", "ve1")[1]])
    assert str(info.value) == (f"{label} attaches to two vhost-user ports or to two kernel interfaces; "
                               "got vh0 (vhostuser), ve1 (physical)")
    assert not list(tmp_path.glob("vsb-*"))  # refused before its directory (and hugepages)


def test_each_takes_its_own_directory_and_file_prefix_and_the_next_free_instance(tmp_path):
    first, second, prox = vnf_of(L3fwd, tmp_path), vnf_of(L3fwd, tmp_path), vnf_of(ProxVnf, tmp_path)
    for vnf in (first, second, prox):
        vnf._make_run_dir()
    assert [v.run_dir.name for v in (first, second, prox)] == ["vsb-abc123-l3fwd0", "vsb-abc123-l3fwd1",
                                                               "vsb-abc123-proxvnf0"]
    assert [v.file_prefix for v in (first, second, prox)] == ["vsbabc123l3f0", "vsbabc123l3f1", "vsbabc123prv0"]
    for vnf in (first, second, prox):
        vnf.stop()
    assert not list(tmp_path.glob("vsb-*"))


def test_a_killed_runs_directories_are_cleaned_up_in_each_plugins_words(tmp_path, monkeypatch):
    monkeypatch.setattr(l3fwd_plugin.vm, "cleanup_dead_run", lambda run_id, work_dirs: ["the VM first"])
    for name in ("vsb-abc123-l3fwd0", "vsb-abc123-proxvnf0", "vsb-abc999-l3fwd0"):
        (tmp_path / name).mkdir()
    assert L3fwd.cleanup_dead_run("abc123", [tmp_path]) == [
        "the VM first", f"l3fwd: released 0 hugepages, removed {tmp_path / 'vsb-abc123-l3fwd0'}"]
    assert ProxVnf.cleanup_dead_run("abc123", [tmp_path]) == [
        f"prox vnf: released 0 hugepages of {tmp_path / 'vsb-abc123-proxvnf0'}"]
    assert [p.name for p in tmp_path.iterdir()] == ["vsb-abc999-l3fwd0"]
    assert L3fwd.cleanup_dead_run("../etc", [tmp_path]) == ProxVnf.cleanup_dead_run("*", [tmp_path]) == []


@BOTH
def test_counters_and_trial_deltas_carry_each_plugins_facts(cls, label, tmp_path):
    vnf = vnf_of(cls, tmp_path)
    vnf.ports = veth("ve0", "ve1")
    assert vnf.port_counters() == [] and vnf.stats() == {}  # before it runs
    sent = {"ipackets": 10, "opackets": 20}
    vnf._telemetry = lambda query: dict(sent)
    if cls is L3fwd:
        vnf.starts = 1
    else:
        vnf.proc = SimpleNamespace(pid=7, alive=lambda: True)  # counted while its process is there
    vnf.trial_begin()
    sent = {"ipackets": 15, "opackets": 29}
    end = vnf.trial_end()
    assert [(p["port"], p["rx_frames"], p["tx_frames"]) for p in end["ports"]] == [(0, 5, 9), (1, 5, 9)]
    facts = {"mode": "process"} if cls is L3fwd else {"forward_mode": "swap"}
    assert {k: v for k, v in end.items() if k != "ports"} == facts
    assert set(vnf.stats()) == {"ports", *(("lookup", "rules", "mode", "starts") if cls is L3fwd else ("forward_mode",))}


def test_last_error_keeps_each_programs_words():
    text = "EAL: Detected 2 lcores\nPANIC in main: no port\nbye\n"
    assert dpdk_process.last_error(text, ("PANIC", "Error")) == "PANIC in main: no port"
    assert dpdk_process.last_error(text, ("EAL: Error",)) == "bye"
    assert dpdk_process.last_error("", ("x",)) == "no output"
