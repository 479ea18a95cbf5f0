"""The testpmd VNF's pure parts: its command line, its console output, its settings checks."""

from pathlib import Path

import pytest

from vsbench_plugins.vnf.testpmd import argv as argvs
from vsbench_plugins.vnf.testpmd import plugin, stats

DATA = Path(__file__).resolve().parents[1] / "data" / "testpmd"


def _launch(**kw):
    base = dict(binary="/usr/bin/dpdk-testpmd", file_prefix="vsbabcdeftp0",
                ports=(argvs.VirtioUserPort(Path("/run/x/vsbabcdefu0")), argvs.VirtioUserPort(Path("/run/x/vsbabcdefu1"))))
    base.update(kw)
    return argvs.TestpmdLaunch(**base)


def test_vhost_user_command_line_pins_lcores_and_never_probes_pci():
    argv = argvs.testpmd_argv(_launch(huge_dir=Path("/run/x/huge"), forward_cpus=(1,), main_cpu=0))
    eal, app = argv[1:argv.index("--")], argv[argv.index("--") + 1:]
    assert argv[0] == "/usr/bin/dpdk-testpmd"
    assert eal[:4] == ["--lcores", "0@0,1@1", "--main-lcore", "0"]
    assert "--no-pci" in eal and "--single-file-segments" in eal and "--huge-dir=/run/x/huge" in eal
    assert "--file-prefix=vsbabcdeftp0" in eal and "--no-huge" not in eal
    assert eal[eal.index("--vdev") + 1] == "net_virtio_user0,path=/run/x/vsbabcdefu0,queues=1,queue_size=1024"
    assert "-i" in app and "--forward-mode=io" in app and "--port-topology=paired" in app and "--nb-cores=1" in app
    total = next(a for a in app if a.startswith("--total-num-mbufs="))
    assert 4096 <= int(total.split("=")[1]) < 20000  # sized for the rings, not testpmd's ~180k default


def test_server_mode_af_packet_mac_mode_and_shared_cpus():
    launch = _launch(ports=(argvs.VirtioUserPort(Path("/s/a"), server=True, mac="02:00:00:00:00:01"),
                            argvs.AfPacketPort("vsbabcdefv1")),
                     forward_cpus=(0,), hugepages=False, forward_mode="mac",
                     peer_macs=("02:00:00:00:00:0a", None))
    argv = argvs.testpmd_argv(launch)
    assert "0@0,1@0" in argv and "--no-huge" in argv and "--single-file-segments" not in argv
    assert "net_virtio_user0,path=/s/a,queues=1,queue_size=1024,server=1,mac=02:00:00:00:00:01" in argv
    assert any(a.startswith("net_af_packet1,iface=vsbabcdefv1,qpairs=1") for a in argv)
    assert "--forward-mode=mac" in argv and "--eth-peer=0,02:00:00:00:00:0a" in argv
    assert not any(a.startswith("--eth-peer=1") for a in argv)


@pytest.mark.parametrize("change, message", [
    ({"forward_mode": "rxonly"}, "forward mode"),
    ({"forward_cpus": ()}, "at least one forwarding CPU"),
    ({"ports": (argvs.VirtioUserPort(Path("/a")),)}, "pairs of ports"),
    ({"ports": (argvs.VirtioUserPort(Path("/a b")), argvs.VirtioUserPort(Path("/c")))}, "cannot carry"),
    ({"ports": (argvs.AfPacketPort("bad name!"), argvs.AfPacketPort("x"))}, "interface name"),
    ({"file_prefix": "a/b"}, "file prefix"),
    ({"peer_macs": ("nope",)}, "MAC"),
])
def test_bad_values_are_refused_in_one_line(change, message):
    with pytest.raises(argvs.ArgvError, match=message):
        argvs.testpmd_argv(_launch(**change))


def test_port_stats_parse_every_counter_of_every_port():
    ports = stats.parse_port_stats((DATA / "show-port-stats-all.txt").read_text())
    assert sorted(ports) == [0, 1]
    assert ports[0] == {"rx_frames": 809536, "rx_missed": 12, "rx_bytes": 48572160, "rx_errors": 0, "rx_nombuf": 3,
                        "tx_frames": 512064, "tx_errors": 0, "tx_bytes": 30723840}
    assert ports[1]["tx_errors"] == 7 and ports[1]["rx_frames"] == 748800


def test_port_stats_refuse_what_is_not_a_statistics_block():
    with pytest.raises(stats.StatsParseError, match="no 'NIC statistics"):
        stats.parse_port_stats("Bad arguments\ntestpmd> ")
    truncated = "######## NIC statistics for port 0 ####\n  RX-packets: 5  RX-missed: 0\n"
    with pytest.raises(stats.StatsParseError, match="port 0: no"):
        stats.parse_port_stats(truncated)


def test_counter_deltas_and_a_reset_port_is_an_error():
    before = {0: {"rx_frames": 10, "tx_frames": 4}}
    after = {0: {"rx_frames": 15, "tx_frames": 9}, 1: {"rx_frames": 2, "tx_frames": 0}}
    assert stats.delta(before, after) == {0: {"rx_frames": 5, "tx_frames": 5}, 1: {"rx_frames": 2, "tx_frames": 0}}
    with pytest.raises(stats.StatsParseError, match="went backwards"):
        stats.delta(after, before)
    assert stats.ports_document({1: {"tx_frames": 3}, 0: {"rx_frames": 1}}) == [
        {"port": 0, "rx_frames": 1}, {"port": 1, "tx_frames": 3}]


def test_version_from_the_eal_banner():
    assert stats.parse_version("EAL: RTE Version: 'DPDK 22.11.11'\n") == "DPDK 22.11.11"
    assert stats.parse_version("nothing") is None


def test_settings_errors_and_default_forwarding_cpu():
    cfg = plugin.with_defaults(plugin.SETTINGS_SCHEMA, {})
    assert plugin.settings_errors(cfg, {0, 1}) == []
    assert plugin.forward_cpus(cfg, {0, 1, 2, 3}) == (3,)
    assert plugin.forward_cpus({**cfg, "forward_cpus": [2, 5]}, {0}) == (2, 5)
    bad = {**cfg, "forward_cpus": [7], "extra_eal": ["--no-pci"], "extra_app": ["--nb-cores=4"]}
    errors = plugin.settings_errors(bad, {0, 1})
    assert any("extra_eal may not contain --no-pci" in e for e in errors)
    assert any("extra_app may not contain --nb-cores" in e for e in errors)
    assert any("CPUs [7] are not online" in e for e in errors)


def test_settings_schema_defaults_are_valid_and_typos_are_refused():
    import jsonschema

    jsonschema.Draft202012Validator.check_schema(plugin.SETTINGS_SCHEMA)
    validator = jsonschema.Draft202012Validator(plugin.SETTINGS_SCHEMA)
    assert not list(validator.iter_errors({"forward_mode": "macswap", "vhost_server": True}))
    assert list(validator.iter_errors({"forward_mod": "io"}))
    assert list(validator.iter_errors({"forward_mode": "txonly"}))


def _fake_testpmd(tmp_path, output: str) -> str:
    script = tmp_path / "fake-testpmd"
    script.write_text("#!/bin/sh\ncat <<'OUT'\n" + output + "\nOUT\nexit 1\n")
    script.chmod(0o755)
    return str(script)


def test_driver_probe_tells_a_missing_virtio_driver_from_a_working_one(tmp_path):
    working = _fake_testpmd(tmp_path, "EAL: RTE Version: 'DPDK 22.11.11'\n"
                                      "vhost_user_setup(): connect error, No such file or directory\n"
                                      "vdev_probe(): failed to initialize net_virtio_user0 device")
    assert plugin.probe_drivers(working) == (("version", "DPDK 22.11.11"),)
    (tmp_path / "other").mkdir()
    missing = _fake_testpmd(tmp_path / "other", "EAL: RTE Version: 'DPDK 22.11.11'\n"
                                             "EAL: failed to parse device \"net_virtio_user0,path=/x\"")
    assert ("missing", "net_virtio_user") in plugin.probe_drivers(missing)
    assert plugin.probe_drivers(str(tmp_path / "absent"))[0][0] == "error"


def test_packed_ring_and_multiqueue_reach_the_vdevs_and_testpmds_queues():
    ports = (argvs.VirtioUserPort(Path("/r/a"), packed_ring=True, queues=2),
             argvs.VirtioUserPort(Path("/r/b"), server=True, packed_ring=True, queues=2))
    argv = argvs.testpmd_argv(_launch(ports=ports, queues=2))
    assert "net_virtio_user0,path=/r/a,queues=2,queue_size=1024,packed_vq=1" in argv
    assert "net_virtio_user1,path=/r/b,queues=2,queue_size=1024,server=1,packed_vq=1" in argv
    assert "--rxq=2" in argv and "--txq=2" in argv and "--rxq=1" not in argv
    split = argvs.testpmd_argv(_launch())
    assert not any("packed_vq" in a for a in split) and "--rxq=1" in split
    assert any(a.startswith("net_af_packet0,iface=v0,qpairs=3,")
               for a in argvs.testpmd_argv(_launch(ports=(argvs.AfPacketPort("v0", qpairs=3),
                                                          argvs.AfPacketPort("v1", qpairs=3)), queues=3)))
    with pytest.raises(argvs.ArgvError, match="at least one queue pair"):
        argvs.vdev_arg(0, argvs.VirtioUserPort(Path("/r/a"), queues=0))
    # the mbuf pool grows with the queues
    assert argvs.mbufs_for(_launch(queues=4)) > argvs.mbufs_for(_launch())


def test_packed_ring_settings_are_checked_and_reported():
    import jsonschema

    cfg = plugin.with_defaults(plugin.SETTINGS_SCHEMA, {"packed_ring": True, "queues": 2})
    assert plugin.settings_errors(cfg, {0, 1}) == []
    errors = plugin.settings_errors({**cfg, "mode": "vm"}, {0, 1})
    assert errors == ["vnf.testpmd.queues > 1 applies to testpmd on the host (mode: process): in a VM each queue "
                      "pair needs a vCPU polling it, and this host runs its guests under TCG on 2 CPUs"]
    assert plugin.settings_errors({**cfg, "mode": "vm", "queues": 1}, {0, 1}) == []  # packed ring: QEMU's side
    assert any("extra_app may not contain --rxq" in e
               for e in plugin.settings_errors({**cfg, "extra_app": ["--rxq=4"]}, {0, 1}))
    validator = jsonschema.Draft202012Validator(plugin.SETTINGS_SCHEMA)
    assert list(validator.iter_errors({"queues": 0})) and list(validator.iter_errors({"packed_ring": "yes"}))
