"""``dut.rules`` on a switch that cannot install rule sets is refused before anything exists.

A switch that ignored the rules would forward by its own means and the run would publish
plain forwarding under a rule-scaling name. Whether a switch installs rule sets is a
declared capability (``VSwitch.supports_rule_sets``), so a third party's plugin answers
it the same way the built-in ones do, and a plugin that says nothing does not support them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from rich.console import Console

from vsbench.interfaces import PortSpec, SwitchPort, VSwitch
from vsbench.runner import plugins, preflight
from vsbench.runner.run import run_plans
from vsbench.system import naming, runstate

ROOT = Path(__file__).resolve().parents[2]


class Undeclared(VSwitch):
    """A plugin written before the capability existed: it says nothing."""

    def start(self) -> None: ...
    def add_bridge(self, name: str) -> None: ...
    def add_port(self, bridge: str, spec: PortSpec) -> SwitchPort: ...
    def connect(self, bridge, a, b) -> None: ...
    def stop(self) -> None: ...


def test_a_plugin_that_does_not_declare_rule_sets_does_not_support_them():
    assert VSwitch.supports_rule_sets is False
    assert Undeclared.supports_rule_sets is False


@pytest.mark.parametrize("name, expected", [
    ("ovs_dpdk", True), ("ovs_kernel", True), ("ovs_tc", True),
    ("linux_bridge", False), ("external", False),
])
def test_built_in_switches_declare_what_they_do(name, expected):
    assert plugins.load("vswitch", name).supports_rule_sets is expected


def test_rule_set_switches_lists_the_declaring_plugins():
    able = preflight.rule_set_switches()
    assert {"ovs_dpdk", "ovs_kernel", "ovs_tc"} <= set(able)
    assert "linux_bridge" not in able and "external" not in able


def _config(rules, template="src_dst_ip"):
    return {"dut": {"rules": rules, "rule_template": template}}


def test_dut_rules_on_an_undeclared_switch_is_one_line_naming_switch_and_key():
    Undeclared.name = "homebrew"
    with pytest.raises(preflight.PreflightError) as exc:
        preflight._check_rule_set_support(_config(1000), Undeclared, "case[dut.rules=1000]: ")
    text = str(exc.value)
    assert "\n" not in text
    assert text.startswith("case[dut.rules=1000]: vswitch homebrew cannot install OpenFlow rule sets")
    assert "dut.rules=1000" in text and "ovs_dpdk" in text


def test_no_dut_rules_is_fine_on_any_switch():
    # flow_scalability's in/out template with dut.rules unset is plain port-to-port
    # forwarding, which a learning bridge does too
    preflight._check_rule_set_support(_config(None, "in_out"), Undeclared, "")
    preflight._check_rule_set_support({}, Undeclared, "")


def test_a_declaring_switch_passes():
    preflight._check_rule_set_support(_config(64), plugins.load("vswitch", "ovs_dpdk"), "")


def test_a_truthy_non_bool_declaration_is_not_a_declaration():
    class Sloppy(Undeclared):
        supports_rule_sets = "yes"  # type: ignore[assignment]

    with pytest.raises(preflight.PreflightError):
        preflight._check_rule_set_support(_config(64), Sloppy, "")


# --------------------------------------------------------------- through the runner


def _run(testkit, testkit_plans, switch, params):
    plans = testkit_plans("rule_complexity", params, switch)
    out = StringIO()
    code = run_plans(plans, testkit["results"], Console(file=out, width=300))
    return code, out.getvalue()


PARAMS = "dut.rules=[64,128];trial_duration=1;search.mode=binary;relative_width=0.2"


def test_a_third_party_switch_without_the_capability_is_refused_before_it_starts(tmp_path, testkit, testkit_plans):
    code, out = _run(testkit, testkit_plans, "marker_switch", PARAMS)
    assert code == 2
    assert out.strip().count("\n") == 0, out
    assert "vswitch marker_switch cannot install OpenFlow rule sets" in out
    assert "dut.rules=64" in out
    # nothing was created: no switch instance, no generator, no run directory, no run claim
    assert list(testkit["markers"].iterdir()) == []
    assert not testkit["results"].exists() or not any(testkit["results"].iterdir())
    assert not testkit["state"].exists() or not any(testkit["state"].iterdir())


def test_a_third_party_switch_declaring_the_capability_runs_every_rule_count(tmp_path, testkit, testkit_plans):
    code, out = _run(testkit, testkit_plans, "rule_marker_switch", PARAMS)
    assert code == 0, out
    [run_dir] = list(testkit["results"].iterdir())
    assert (run_dir / "results.json").is_file()


# --------------------------------------------------------------- the command users type


def _netns() -> set[str]:
    proc = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False)
    return {line.split()[0] for line in proc.stdout.splitlines() if line.strip()}


@pytest.mark.skipif(os.geteuid() != 0, reason="listing network namespaces needs root")
@pytest.mark.parametrize("extra", [
    [],                                                   # the testcase's own matrix
    ["--test-params", "dut.rules=[64];trial_duration=1"],  # rules given on the command line
])
def test_cli_rule_complexity_on_linux_bridge_exits_2_with_one_line_and_leaves_nothing(tmp_path, extra):
    state = tmp_path / "state"
    results = tmp_path / "results"
    before = _netns()
    proc = subprocess.run(
        [sys.executable, "-m", "vsbench.cli.main", "--test", "rule_complexity", "--vswitch", "linux_bridge",
         "--results-dir", str(results), *extra],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
        env={**os.environ, runstate.STATE_DIR_ENV: str(state)},
    )
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    assert lines[0].startswith("vsbench: error: ")
    assert "vswitch linux_bridge cannot install OpenFlow rule sets" in lines[0]
    assert "dut.rules=64" in lines[0]
    # no run was claimed, so no run id exists that a namespace could carry
    assert not state.exists() or not any(state.iterdir())
    assert not results.exists() or not any(results.iterdir())
    assert _stray_netns(before) == []


def _stray_netns(before: set[str]) -> list[str]:
    """Namespaces new since ``before`` that no live run claims. Other runs (a parallel test
    worker, another engineer) may add namespaces meanwhile; every one of theirs belongs to
    a live run registered in the system's state directory, none to the command checked."""
    others = runstate.live_run_ids(runstate.DEFAULT_STATE_DIR) if runstate.DEFAULT_STATE_DIR.is_dir() else set()
    return [ns for ns in _netns() - before if naming.run_id_of(ns) not in others]


# -- the reference meter (dut.meter_pps) is a declared capability too ---------------------

@pytest.mark.parametrize("name, expected", [
    ("ovs_dpdk", True), ("ovs_kernel", True), ("ovs_tc", True),
    ("linux_bridge", False), ("external", False),
])
def test_built_in_switches_declare_whether_they_meter(name, expected):
    assert plugins.load("vswitch", name).supports_meters is expected
    assert Undeclared.supports_meters is False


def test_meter_on_a_switch_without_meters_is_one_line_exit_2_and_nothing_built():
    before = _netns()
    proc = subprocess.run(
        [sys.executable, "-m", "vsbench.cli.main", "--test", "phy2phy_meter", "--vswitch", "linux_bridge",
         "--test-params", "meter_pps=20000"],
        capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "cannot put a meter" in lines[0] and "dut.meter_pps=20000" in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    assert _stray_netns(before) == []
