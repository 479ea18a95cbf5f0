"""Reachability of remote generators (issue 26 item 4): ``vsbench doctor`` said ``ok`` for
TRex with no server listening, and a run with the server down created its directory and
failed only at its first trial.

Each remote generator plugin probes its configured address with a TCP connect
(``Plugin.check_reachable``); doctor and the run's preflight ask it. The ok cases listen on
a real socket, the failures use a port that was bound and closed (nothing listens there).
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import yaml

from vsbench.cli.main import main
from vsbench.interfaces import Plugin, tcp_unreachable
from vsbench.runner import config as cfg
from vsbench.runner import doctor, preflight, testcases
from vsbench.system import host_check
from vsbench_plugins.trafficgen.ixnet.plugin import IxNet
from vsbench_plugins.trafficgen.moongen.plugin import MoonGen
from vsbench_plugins.trafficgen.prox.plugin import Prox
from vsbench_plugins.trafficgen.trex.plugin import Trex

FAKE_SSH = Path(__file__).resolve().parents[1] / "fakes" / "ssh" / "fake_ssh"


@pytest.fixture
def listening():
    """``listen()``: the port of a socket listening on 127.0.0.1 (closed after the test)."""
    socks = []

    def listen() -> int:
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.listen(8)
        socks.append(s)
        return s.getsockname()[1]

    yield listen
    for s in socks:
        s.close()


def closed_port() -> int:
    """A port nothing listens on: bound, then closed without listening."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_tcp_probe_tells_a_listener_from_a_closed_port(listening):
    assert tcp_unreachable("127.0.0.1", listening()) is None
    assert tcp_unreachable("127.0.0.1", closed_port()) == "connection refused"


def test_the_hook_is_optional_and_reaches_nothing_by_default():
    assert Plugin.check_reachable({}) == []


def test_trex_probes_both_its_sync_and_its_async_port(listening):
    sync, async_ = listening(), listening()
    assert Trex.check_reachable({"host": "127.0.0.1", "sync_port": sync, "async_port": async_}) == []
    closed = closed_port()
    [missing] = Trex.check_reachable({"host": "127.0.0.1", "sync_port": sync, "async_port": closed})
    assert f"tcp://127.0.0.1:{closed}" in missing.what and "async" in missing.what
    assert "connection refused" in missing.what
    assert "t-rex-64 -i" in missing.remedy and "trafficgen.trex" in missing.remedy


def test_ixnet_probes_its_api_server(listening):
    port = listening()
    assert IxNet.check_reachable({"api_host": "127.0.0.1", "api_port": port}) == []
    closed = closed_port()
    [missing] = IxNet.check_reachable({"api_host": "127.0.0.1", "api_port": closed})
    assert f"127.0.0.1:{closed}" in missing.what and "trafficgen.ixnet.api_host" in missing.remedy
    assert IxNet.check_reachable({"api_host": None}) == []  # check_prerequisites says that one


def test_prox_probes_its_control_port_when_it_runs_already(listening):
    port = listening()
    assert Prox.check_reachable({"launch": "none", "host": "127.0.0.1", "port": port}) == []
    closed = closed_port()
    [missing] = Prox.check_reachable({"launch": "none", "host": "127.0.0.1", "port": closed})
    assert f"127.0.0.1:{closed}" in missing.what and "-t" in missing.remedy
    # started by vsbench, or on a UNIX socket: nothing remote to probe
    assert Prox.check_reachable({"launch": "local", "host": "127.0.0.1", "port": closed}) == []
    assert Prox.check_reachable({"launch": "none", "unix_socket": "/tmp/prox.sock", "port": closed}) == []


@pytest.mark.parametrize("plugin, key", [(Prox, "trafficgen.prox.ssh"), (MoonGen, "trafficgen.moongen.ssh")])
def test_a_generator_over_ssh_probes_the_ssh_port(listening, plugin, key):
    extra = {"launch": "ssh"} if plugin is Prox else {}
    port = listening()
    assert plugin.check_reachable({**extra, "ssh": {"host": "127.0.0.1", "port": port}}) == []
    closed = closed_port()
    [missing] = plugin.check_reachable({**extra, "ssh": {"host": "127.0.0.1", "port": closed}})
    assert f"127.0.0.1:{closed}" in missing.what and "connection refused" in missing.what
    assert key in missing.remedy
    # a jump host, or a command that is not ssh itself: nothing here can connect directly
    jump = {"host": "127.0.0.1", "port": closed, "ssh_command": ["ssh", "-J", "jump.example"]}
    assert plugin.check_reachable({**extra, "ssh": jump}) == []
    wrapped = {"host": "gen1.example", "port": closed, "ssh_command": [str(FAKE_SSH)]}
    assert plugin.check_reachable({**extra, "ssh": wrapped}) == []


@pytest.fixture
def plugin_checks_only(monkeypatch):
    """doctor without its host-wide checks (they create namespaces on this machine)."""
    for name in ("check_cpus", "check_testbed_kernel", "check_hugepages"):
        monkeypatch.setattr(host_check, name, lambda: [])


def test_doctor_fails_naming_the_trex_address_and_the_fix(plugin_checks_only):
    closed = closed_port()
    config = {"trafficgen": {"name": "trex", "trex": {"host": "127.0.0.1", "sync_port": closed,
                                                      "async_port": closed}}}
    checks = doctor.run_checks(config, {})
    assert doctor.exit_code(checks) == 2
    lines = [line for c in checks for line in c.lines() if "trex" in line]
    assert lines[0].startswith("ok       trafficgen trex")  # its prerequisites
    missing = [line for line in lines if line.startswith("MISSING")]
    assert missing and all(f"tcp://127.0.0.1:{closed}" in line and "t-rex-64 -i" in line for line in missing)


def test_doctor_says_ok_when_trex_listens(plugin_checks_only, listening):
    config = {"trafficgen": {"name": "trex", "trex": {"host": "127.0.0.1", "sync_port": listening(),
                                                      "async_port": listening()}}}
    checks = doctor.run_checks(config, {})
    assert doctor.exit_code(checks) == 0
    assert any(line.startswith("ok       trafficgen trex: reachable") for c in checks for line in c.lines())


def _trex_layer(tmp_path: Path, sync: int, async_: int) -> Path:
    conf = tmp_path / "trex.yaml"
    conf.write_text(yaml.safe_dump({"trafficgen": {"trex": {"host": "127.0.0.1", "sync_port": sync,
                                                            "async_port": async_}}}))
    return conf


def test_a_run_with_trex_down_refuses_to_start_and_creates_nothing(tmp_path, capsys):
    closed = closed_port()
    results = tmp_path / "results"
    code = main(["--test", "phy2phy_tput", "--trafficgen", "trex", "--vswitch", "external",
                 "--conf-file", str(_trex_layer(tmp_path, closed, closed)), "--results-dir", str(results),
                 "--test-params", "frame_sizes=[64];trial_duration=1"])
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1, err
    assert f"tcp://127.0.0.1:{closed}" in err and "not reachable" in err and "Traceback" not in err
    assert not results.exists()


def test_preflight_passes_when_trex_listens_and_probes_once_per_run(tmp_path, listening, monkeypatch):
    conf = _trex_layer(tmp_path, listening(), listening())
    base = cfg.load_layers(cfg.default_conf_dir(), [conf])
    case = testcases.find("phy2phy_tput", testcases.default_testcase_dir())
    plans = testcases.build_plans(case, base, cfg.parse_test_params("frame_sizes=[64,128]"),
                                  {"trafficgen": "trex", "vswitch": "external"})
    calls = []
    original = Trex.check_reachable.__func__
    monkeypatch.setattr(Trex, "check_reachable",
                        classmethod(lambda cls, settings: calls.append(1) or original(cls, settings)))
    checked = preflight.check_plans(plans + plans)
    assert [c.classes["trafficgen"].name for c in checked] == ["trex"] * len(plans) * 2
    assert len(calls) == 1
