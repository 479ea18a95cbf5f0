"""The PROX configuration vsbench renders for the embedded testbed, and what the real PROX
taught the plugin (reply formats, task addressing) -- pure functions."""

from __future__ import annotations

import pytest

from vsbench.interfaces.plugin import PluginContext, PluginError
from vsbench.interfaces.traffic import FlowFields
from vsbench.system.resources import ResourceStack
from vsbench_plugins.trafficgen.prox import genconfig, plugin, rates, replies

TWO_CPU = {"master_core": 1, "gen_cores": [[0], [0]], "lat_cores": [[0], [0]], "latency_bucket_exp": 11}


def test_real_prox_version_reply_decodes_to_its_banner():
    # the reply of the built upstream PROX (banner "prox 22.12", "Using DPDK 22.11.11")
    assert replies.parse_version("144965632,369822563") == {"prox": "22.12", "dpdk": "22.11.11.99"}


def test_one_direction_on_two_cpus_puts_every_task_on_the_worker_core():
    layout = genconfig.testbed_layout(TWO_CPU, directions=1)
    assert layout == {0: [("gen", 0), ("lat", 0), ("lat", 1)]}
    assert genconfig.task_map(layout) == {("gen", 0): (0, 0), ("lat", 0): (0, 1), ("lat", 1): (0, 2)}


def test_two_generators_on_one_core_are_refused_in_one_line():
    with pytest.raises(PluginError, match="one generator task per core") as err:
        genconfig.testbed_layout(TWO_CPU, directions=2)
    assert "\n" not in str(err.value)
    spread = {**TWO_CPU, "master_core": 0, "gen_cores": [[1], [2]], "lat_cores": [[2], [1]]}
    assert genconfig.task_map(genconfig.testbed_layout(spread, 2)) == {
        ("gen", 0): (1, 0), ("lat", 1): (1, 1), ("gen", 1): (2, 0), ("lat", 0): (2, 1)}


def test_a_task_on_the_master_core_is_refused():
    with pytest.raises(PluginError, match="master core"):
        genconfig.testbed_layout({**TWO_CPU, "master_core": 0}, 1)


def test_rendered_config_has_af_packet_ports_without_lsc_and_no_pci():
    layout = genconfig.testbed_layout(TWO_CPU, 1)
    text = genconfig.render_testbed(TWO_CPU, FlowFields(), layout,
                                    ["--file-prefix=vsbxprox", "--vdev=net_af_packet0,iface=tg0"])
    assert "no-pci=yes" in text and "eal=--file-prefix=vsbxprox --vdev=net_af_packet0,iface=tg0" in text
    assert text.count("lsc=no") == 2 and "@@" not in text
    core0 = text.split("[core 0]")[1]
    assert [line for line in core0.splitlines() if line.startswith("task=")] == ["task=0", "task=1", "task=2"]
    assert "[core 1]\nmode=master" in text and core0.count("mode=gen") == 1 and core0.count("mode=lat") == 2


def test_speed_commands_address_each_task():
    cmds, clamped = rates.speed_commands_for_tasks(12_500_000 / 84, 64, [[(0, 0)]])
    assert cmds == ["speed 0 0 1"] and not clamped
    assert rates.speed_commands(1e6, 64, [[1], [2]], 0) == rates.speed_commands_for_tasks(1e6, 64, [[(1, 0)], [(2, 0)]])


def test_start_and_stop_go_task_by_task():
    assert plugin._by_task("stop", [(0, 1), (0, 2), (3, 1)]) == ["stop 0,3 1", "stop 0 2"]


def test_prox_log_name_fits_prox_buffer(tmp_path):
    deep = tmp_path / ("d" * 80)
    deep.mkdir()
    ctx = PluginContext("abc123", {"launch": "local"}, deep, ResourceStack(), work_dir=deep)
    path = plugin.Prox(ctx)._own_log()
    assert len(path) < plugin.PROX_MAX_NAME and path.startswith("/tmp/")


def test_testbed_launch_asks_for_the_testbed_and_reports_its_cpus(tmp_path):
    ctx = PluginContext("abc123", {"launch": "testbed", **TWO_CPU}, tmp_path, ResourceStack(), work_dir=tmp_path)
    gen = plugin.Prox(ctx)
    assert gen.capabilities().needs_testbed
    assert gen.generator_cpus() == {0}
    none = plugin.Prox(PluginContext("abc123", {}, tmp_path, ResourceStack()))
    assert not none.capabilities().needs_testbed and none.generator_cpus() == set()
