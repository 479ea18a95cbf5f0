"""PROX as a VNF: the configuration vsbench renders (pure), the plugin's settings and its
one-line refusals, without PROX."""

from __future__ import annotations

import pytest

from vsbench.interfaces import PluginError
from vsbench_plugins.vnf.prox import config
from vsbench_plugins.vnf.prox.plugin import SETTINGS_SCHEMA, ProxVnf, with_defaults

EAL = ["--file-prefix=vsbabcdefprv0", "--vdev=net_af_packet0,iface=a", "--vdev=net_af_packet1,iface=b"]


def sections(text: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if line.startswith("["):
            current = line
            out.setdefault(current, [])
        elif current and line and not line.startswith(";"):
            out[current].append(line)
    return out


def test_swap_both_ways_on_one_worker_core():
    text = config.render(with_defaults({}), EAL)
    got = sections(text)
    assert got["[core 0]"] == ["mode=master"]
    worker = got["[core 1]"]
    assert worker == ["name=fwd01", "task=0", "mode=swap", "rx port=p0", "tx port=p1",
                      "name=fwd10", "task=1", "mode=swap", "rx port=p1", "tx port=p0"]
    assert "no-pci=yes" in got["[eal options]"] and "eal=" + " ".join(EAL) in got["[eal options]"]
    for port in (0, 1):  # no link-state interrupt on net_af_packet / net_virtio_user
        assert "lsc=no" in got[f"[port {port}]"] and f"name=p{port}" in got[f"[port {port}]"]


def test_l2fwd_addresses_each_exit_port_to_its_peer():
    text = config.render(with_defaults({"forward_mode": "l2fwd"}), EAL, ["02:00:00:00:00:0a", "02:00:00:00:00:0b"])
    worker = sections(text)["[core 1]"]
    # task 0 leaves on port 1: its peer is port 1's
    assert worker[worker.index("task=0") + 4] == "dst mac=02:00:00:00:00:0b"
    assert worker[worker.index("task=1") + 4] == "dst mac=02:00:00:00:00:0a"
    with pytest.raises(config.ConfigError, match="peer of port 1"):
        config.render(with_defaults({"forward_mode": "l2fwd"}), EAL)


def test_master_and_worker_on_one_cpu_is_refused():
    with pytest.raises(config.ConfigError, match="both 1"):
        config.render(with_defaults({"master_cpu": 1, "worker_cpu": 1}), EAL)


def test_settings_schema_defaults_and_modes():
    assert SETTINGS_SCHEMA["properties"]["forward_mode"]["enum"] == ["swap", "nop", "l2fwd"]
    assert with_defaults(None)["forward_mode"] == "swap"


def test_missing_binary_is_a_prerequisite_with_its_fix():
    [first, *_] = ProxVnf.check_prerequisites({"binary": "/nonexistent/prox"})
    assert "PROX executable" in first.what and "tools/build_prox.sh" in first.remedy


def test_entry_point_loads_the_plugin():
    from vsbench.runner import plugins

    assert plugins.load("vnf", "prox") is ProxVnf


def test_ports_of_other_kinds_are_refused_in_one_line(tmp_path):
    from pathlib import Path

    from vsbench.interfaces import PluginContext, PortSpec, ResourceStack, SwitchPort

    vnf = ProxVnf(PluginContext("abc123", {}, tmp_path, ResourceStack(), work_dir=tmp_path))
    ports = [SwitchPort("a", 1, PortSpec("vhostuser", "a", socket_path=Path("/tmp/a"))),
             SwitchPort("b", 2, PortSpec("physical", "b", iface="b"))]
    with pytest.raises(PluginError, match="two vhost-user ports or to two kernel interfaces"):
        vnf.start(ports)
    vnf.stop()
