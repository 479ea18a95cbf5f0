"""The op2p deployment's pure parts and the preflight of overlay tests: which port is the
tunnel's, the profile's tunnel link, and every refusal (one line, before anything exists)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from vsbench.deployment import P2P, op2p
from vsbench.interfaces import PortSpec, SwitchPort, VSwitch
from vsbench.interfaces.traffic import TrafficProfile
from vsbench.runner import config as cfg
from vsbench.runner import plugins, preflight, testcases


def test_overlay_settings_default_and_refuse():
    assert op2p.overlay_settings({}) == {"operation": "both", "vni": 99, "udp_port": 4789}
    with pytest.raises(op2p.DeploymentError, match="overlay.operation"):
        op2p.overlay_settings({"overlay": {"operation": "sideways"}})
    assert op2p.dut_vtep_ip("198.18.3.1") == "198.18.3.254"


@pytest.mark.parametrize("operation, bidirectional, ok", [
    ("both", True, True), ("encap", False, True), ("decap", False, True),
    ("both", False, False), ("decap", True, False),
])
def test_operation_and_direction_agree(operation, bidirectional, ok):
    config = {"overlay": {"operation": operation}, "traffic": {"encapsulation": "vxlan", "bidirectional": bidirectional}}
    problem = op2p.check_traffic(config)
    assert (problem is None) is ok, problem
    if not ok:
        assert "\n" not in problem and "traffic.bidirectional" in problem


def test_op2p_without_vxlan_is_refused():
    assert "traffic.encapsulation: vxlan" in op2p.check_traffic({"traffic": {"bidirectional": True}})


class _Gen:
    name = "fake"
    settings = {}


def _deployment(operation: str) -> op2p.Op2p:
    return op2p.Op2p(run_id="abc123", config={"overlay": {"operation": operation}}, resources=None,
                     generator=_Gen(), make_vswitch=lambda ns: None)


@pytest.mark.parametrize("operation, port", [("decap", 0), ("both", 0), ("encap", 1)])
def test_the_tunnel_port_is_where_the_operation_needs_it(operation, port):
    # the generator sends port 0 -> 1 in a unidirectional trial: encap starts on the plain port
    d = _deployment(operation)
    assert d.tunnel_port == port
    assert d.describe()["operation"] == operation and d.describe()["switching_operations"] == 1


def test_profile_gets_the_tunnel_link():
    d = _deployment("both")
    plain = TrafficProfile(64)
    assert d.profile(plain) is plain  # nothing built yet
    d.tunnel = op2p.TunnelFields(port=0, vni=7, generator_mac="02:00:00:00:00:01", generator_ip="198.18.0.1",
                                 dut_mac="02:00:00:00:00:02", dut_ip="198.18.0.254")
    p = d.profile(plain)
    assert p.encapsulation == "vxlan" and p.tunnel.vni == 7 and p.outer_frame_size_bytes == 114


def _plan(test: str, params: str = "", vswitch: str = "linux_bridge"):
    base = cfg.load_layers(cfg.default_conf_dir(), [])
    case = testcases.find(test, testcases.default_testcase_dir())
    [plan] = testcases.build_plans(case, base, cfg.parse_test_params(params),
                                   {"vswitch": vswitch, "trafficgen": "trafgen", "vnf": None})
    return plan


@pytest.mark.parametrize("test", ["op2p_tput", "op2p_tput_encap", "op2p_tput_decap"])
def test_overlay_testcases_resolve_to_vxlan_plans(test):
    plan = _plan(test)
    assert plan.config["test"]["deployment"] == "op2p"
    assert plan.config["traffic"]["encapsulation"] == "vxlan"
    assert op2p.check_traffic(plan.config) is None
    assert plan.config["overlay"]["vni"] == 99


class NoTunnels(VSwitch):
    name = "flat"

    def start(self) -> None: ...
    def add_bridge(self, name: str) -> None: ...
    def add_port(self, bridge: str, spec: PortSpec) -> SwitchPort: ...
    def connect(self, bridge, a, b) -> None: ...
    def stop(self) -> None: ...


def test_preflight_refuses_a_switch_or_generator_without_vxlan():
    plan = _plan("op2p_tput_decap")
    deployment = op2p.Op2p
    classes = {"vswitch": NoTunnels, "trafficgen": plugins.load("trafficgen", "trafgen")}
    with pytest.raises(preflight.PreflightError) as exc:
        preflight._check_encapsulation(plan.config, deployment, classes, "t: ")
    text = str(exc.value)
    assert text.startswith("t: vswitch flat cannot terminate vxlan tunnels") and "ovs_dpdk" in text and "linux_bridge" in text
    classes = {"vswitch": plugins.load("vswitch", "ovs_dpdk"), "trafficgen": plugins.load("trafficgen", "prox")}
    with pytest.raises(preflight.PreflightError, match="trafficgen prox cannot build vxlan tunnels"):
        preflight._check_encapsulation(plan.config, deployment, classes, "")
    classes = {"vswitch": plugins.load("vswitch", "linux_bridge"), "trafficgen": plugins.load("trafficgen", "trafgen")}
    preflight._check_encapsulation(plan.config, deployment, classes, "")


def test_preflight_refuses_encapsulation_outside_op2p():
    plan = _plan("phy2phy_tput", "traffic.encapsulation=vxlan")
    classes = {"vswitch": plugins.load("vswitch", "linux_bridge"), "trafficgen": plugins.load("trafficgen", "trafgen")}
    with pytest.raises(preflight.PreflightError, match=r"needs an overlay deployment \(op2p or pvp_vxlan; this test.s is p2p\)"):
        preflight._check_encapsulation(plan.config, P2P, classes, "")


def test_cli_op2p_on_a_switch_without_tunnels_is_one_line_exit_2(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "vsbench.cli.main", "--test", "op2p_tput_decap", "--vswitch",
                           "external", "--results-dir", str(tmp_path / "r")], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = (proc.stdout + proc.stderr).strip().splitlines()
    assert len(lines) == 1 and "vswitch external cannot terminate vxlan tunnels" in lines[0], lines
    assert not (tmp_path / "r").exists() or not any((tmp_path / "r").iterdir())
