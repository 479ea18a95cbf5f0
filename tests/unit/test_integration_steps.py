"""Integration testcases: the step schema, the parser's checks and the reference syntax
(pure: no switch, no testbed), the shipped testcases, and the JUnit cases of steps."""

from pathlib import Path

import pytest
import yaml

from vsbench.results import integration_cases, junit
from vsbench.runner import config as cfg
from vsbench.runner import testcases
from vsbench.runner.integration import catalog
from vsbench.runner.integration.steps import Ref, StepError, compare, parse_ref, parse_steps, resolve

ROOT = Path(__file__).resolve().parents[2]
FLAGS = {"vswitch": "linux_bridge", "trafficgen": None, "vnf": None}

GOOD = [
    {"name": "br", "add_bridge": {"bridge": "br0"}},
    {"name": "p0", "add_port": {"bridge": "br0", "kind": "physical", "port": 0}},
    {"name": "p1", "add_port": {"bridge": "br0", "kind": "physical", "port": 1}},
    {"name": "f", "add_flow": {"bridge": "br0", "match": {"eth_dst": "02:00:00:00:00:02", "in_port": "${p0}"},
                               "output": "${p1}"}},
    {"name": "t", "send_traffic": {"rate_fps": 1000}},
    {"check_counters": {"left": "${t.rx_frames}", "op": ">=", "right": "${t.tx_frames}", "factor": 0.99}},
    {"check_dump": {"of": "state", "contains": "${br.name}"}},
    {"check_command": {"argv": ["ip", "link", "show", "dev", "${p1.iface}"], "contains": "UP"}},
    {"delete_flow": {"bridge": "br0", "flow": "${f}"}},
    {"delete_bridge": {"bridge": "br0"}},
]


def doc(steps, **extra):
    return {"name": "x", "description": "d", "deployment": "clean", "steps": steps, **extra}


def test_a_good_step_list_parses_with_its_references():
    steps = parse_steps(GOOD)
    assert [s.kind for s in steps][:3] == ["add_bridge", "add_port", "add_port"]
    assert steps[3].options["output"] == Ref("p1")
    assert steps[3].options["match"]["in_port"] == Ref("p0")
    assert steps[5].options["left"] == Ref("t", "rx_frames")
    assert steps[7].options["argv"][4] == Ref("p1", "iface")
    assert steps[5].label == "6 check_counters"
    assert steps[0].label == "1 add_bridge br"


@pytest.mark.parametrize("text, ref", [
    ("${p1}", Ref("p1")), ("${t1.rx_frames}", Ref("t1", "rx_frames")), ("p1", None), ("$p1", None),
    ("${p1.a.b}", None), ("${P1}", None), (" ${p1}", None), (3, None),
])
def test_reference_syntax(text, ref):
    assert parse_ref(text) == ref


@pytest.mark.parametrize("steps, message", [
    ([{"add_port": {"bridge": "br0", "kind": "physical", "port": 0}}], "bridge 'br0' is not added"),
    ([{"add_bridge": {"bridge": "br0"}}, {"delete_port": {"bridge": "br0", "port": "${p9}"}}],
     "${p9} names no earlier step"),
    ([{"add_bridge": {"bridge": "br0"}}, {"name": "t", "send_traffic": {}},
      {"check_counters": {"left": "${t.rx_bytes}", "op": ">", "right": 0}}], "has no field 'rx_bytes'"),
    ([{"add_bridge": {"bridge": "br0"}}, {"name": "t", "send_traffic": {}},
      {"delete_port": {"bridge": "br0", "port": "${t}"}}], "makes no object"),
    ([{"name": "b", "add_bridge": {"bridge": "br0"}}, {"name": "b", "add_bridge": {"bridge": "br1"}}],
     "already"),
    ([{"check_command": {"argv": ["sh", "-c", "true"]}}], "sh is not one of the tools"),
    ([{"check_command": {"argv": ["${x.name}"]}}], "names no earlier step"),
    ([{"check_dump": {"of": "state", "contains": "a", "lacks": "b"}}], "one of contains or lacks"),
    ([{"check_dump": {"of": "state", "contains": "("}}], "not a regular expression"),
    ([{"check_dump": {"of": "state", "contains": "x${br.name}"}}], "whole value"),
    ([{"add_bridge": {"bridge": "br0"}}, {"add_port": {"bridge": "br0", "kind": "physical", "port": 2}}],
     "the testbed has 2 port(s)"),
    ([{"add_bridge": {"bridge": "br0"}}, {"add_port": {"bridge": "br0", "kind": "vport", "port": 0}}],
     "takes no testbed port"),
    ([{"send_traffic": {"from_port": 1, "to_port": 1}}], "two of the testbed's"),
    ([{"add_bridge": {"bridge": "br0"}}, {"name": "p", "add_port": {"bridge": "br0", "kind": "vport"}},
      {"add_flow": {"bridge": "br0", "match": {"eth_dst": "02:00:00:00:00:01"}}}], "either output"),
    ([{"add_bridge": {"bridge": "br0"}}, {"name": "p", "add_port": {"bridge": "br0", "kind": "vport"}},
      {"add_flow": {"bridge": "br0", "match": {"eth_dst": "02:00:00:00:00:01"}, "output": "${p}", "drop": True}}],
     "either output"),
    ([{"add_bridge": {"bridge": "br0"}}, {"name": "p", "add_port": {"bridge": "br0", "kind": "vport"}},
      {"name": "f", "add_flow": {"bridge": "br0", "match": {"eth_dst": "02:00:00:00:00:01"}, "output": "${p}"}},
      {"connect": {"bridge": "br0", "a": "${p}", "b": "${f}"}}], "made a port"),
    ([{"check_counters": {"left": "${x}", "op": ">", "right": 0}}], "names no earlier step"),
    ([{"wait": {"seconds": 1}, "add_bridge": {"bridge": "br0"}}], "exactly one of"),
    ([{"link_counters": {"port": 3}}], "the testbed has 2 port(s)"),
    ([{"check_counters": {"left": 1, "minus": 1, "op": ">", "right": 0}}], "minus goes with a counter"),
])
def test_bad_step_lists_are_one_line_errors_naming_the_step(steps, message):
    with pytest.raises(StepError) as err:
        parse_steps(steps)
    assert message in str(err.value)
    assert "\n" not in str(err.value)
    assert str(err.value).startswith("step ")


@pytest.mark.parametrize("steps, where", [
    ([{"eval": {"code": "1"}}], "steps.0"),
    ([{"add_bridge": {"bridge": "br0", "extra": 1}}], "steps.0"),
    ([{"add_port": {"bridge": "br0", "kind": "magic"}}], "steps.0"),
    ([{"check_counters": {"left": 1, "op": "=~", "right": 1}}], "steps.0"),
    ([{"add_flow": {"bridge": "br0", "match": {"nw_src": "10.0.0.1"}, "drop": True}}], "steps.0"),
    ([], "steps"),
])
def test_the_schema_keeps_the_step_set_closed(steps, where):
    with pytest.raises(testcases.TestcaseError) as err:
        catalog.parse(doc(steps), "t.yaml")
    assert f"t.yaml: {where}" in str(err.value)


def test_resolve_looks_up_two_dicts_only():
    port = object()
    values = {"t": {"rx_frames": 5}}
    objects = {"p": ("br0", port)}
    assert resolve(Ref("t", "rx_frames"), values, objects) == 5
    assert resolve([Ref("p"), "x", {"k": Ref("t", "rx_frames")}], values, objects) == [("br0", port), "x", {"k": 5}]
    with pytest.raises(StepError, match="made nothing"):
        resolve(Ref("q"), values, objects)
    with pytest.raises(StepError, match="has no tx_frames"):
        resolve(Ref("t", "tx_frames"), values, objects)


@pytest.mark.parametrize("left, op, right, factor, holds", [
    (990, ">=", 1000, 0.99, True), (989, ">=", 1000, 0.99, False), (0, "==", 0, None, True),
    (1, "==", 0, None, False), (5, "<", 6, None, True), (5, "!=", 5, None, False), (None, ">", 0, None, False),
])
def test_compare(left, op, right, factor, holds):
    ok, text = compare(left, op, right, factor)
    assert ok is holds
    assert op in text


def test_compare_subtracts_a_baseline():
    assert compare(5100, ">=", 5000, 0.99, minus=100) == (True, "5100 - 100 (= 5000) >= 5000 * 0.99 (= 4950)")
    assert compare(5000, ">=", 5000, 0.99, minus=100)[0] is False


def test_every_shipped_integration_testcase_is_valid_and_resolves():
    base = cfg.load_layers(ROOT / "conf", [])
    cases = catalog.load_all(ROOT / "testcases" / "integration")
    names = {c.name for c in cases}
    assert {"vswitch_add_del_bridge", "vswitch_add_del_bridges", "vswitch_add_del_vport", "vswitch_add_del_vports",
            "vswitch_add_del_flow", "vswitch_add_del_flows", "vswitch_vports_add_del_flow",
            "vswitch_vports_add_del_connection", "vswitch_add_del_phy_port", "vswitch_add_del_phy_ports",
            "vswitch_overlay_vxlan", "vswitch_p2p_flow_traffic"} <= names
    for case in cases:
        (plan,) = catalog.build_plans(case, base, {}, FLAGS)
        assert plan.config["test"]["deployment"] == "clean"
        assert plan.config["test"]["steps"] == case.raw_steps
    # the performance listing does not show them
    assert not names & {c.name for c in testcases.load_all(ROOT / "testcases")}


def test_a_file_whose_name_differs_is_refused(tmp_path):
    path = tmp_path / "other.yaml"
    path.write_text(yaml.safe_dump(doc([{"add_bridge": {"bridge": "br0"}}])))
    with pytest.raises(testcases.TestcaseError, match="must match the file name"):
        catalog.load(path)


def test_junit_has_one_case_per_step_and_names_the_failing_one():
    results = {"run_id": "r", "tests": [{
        "label": "t1", "testcase": "t1", "traffic_type": "integration", "status": "failed",
        "error": "step 3 check_counters rx_ok failed: ...", "frame_sizes": [],
        "steps": [
            {"index": 1, "kind": "add_bridge", "label": "1 add_bridge", "status": "passed", "detail": "ok"},
            {"index": 2, "kind": "send_traffic", "label": "2 send_traffic t", "status": "passed"},
            {"index": 3, "kind": "check_counters", "label": "3 check_counters rx_ok", "status": "failed",
             "detail": "${t.rx_frames} >= ${t.tx_frames} * 0.99: 0 >= 1000 * 0.99 (= 990) does not hold"},
            {"index": 4, "kind": "delete_bridge", "label": "4 delete_bridge", "status": "not-run"}]}]}
    cases = integration_cases.step_cases(results)
    assert [c.status for c in cases] == ["passed", "passed", "failed", "skipped"]
    text = junit.render(cases, run_id="r")
    assert 'name="3 check_counters rx_ok"' in text
    assert 'failures="1"' in text
    assert "does not hold" in text


def test_a_skipped_test_is_skipped_in_junit():
    results = {"tests": [{"label": "t", "traffic_type": "integration", "status": "not-run",
                          "error": "skipped at step 2 add_port: linux_bridge terminates no VXLAN tunnels",
                          "steps": [{"index": 1, "kind": "add_bridge", "label": "1 add_bridge", "status": "passed"},
                                    {"index": 2, "kind": "add_port", "label": "2 add_port", "status": "skipped",
                                     "detail": "cannot"}]}]}
    cases = integration_cases.step_cases(results)
    assert [c.status for c in cases] == ["passed", "skipped"]


def test_ovs_flow_text_of_a_step_flow():
    from vsbench.interfaces.vswitch import FlowSpec, PortSpec, SwitchPort
    from vsbench_plugins.vswitch.ovs.switch import openflow_match, openflow_text

    out = SwitchPort("p1", 2, PortSpec("physical", "p1"))
    flow = FlowSpec({"in_port": 1, "eth_dst": "02:00:00:00:00:02", "eth_type": 2048}, out, priority=200)
    assert openflow_text(flow) == "priority=200,in_port=1,dl_dst=02:00:00:00:00:02,dl_type=0x0800,actions=output:2"
    assert openflow_match(flow, priority=True) == "priority=200,in_port=1,dl_dst=02:00:00:00:00:02,dl_type=0x0800"
    assert openflow_text(FlowSpec({"eth_src": "02:00:00:00:00:01"})) == \
        "priority=100,dl_src=02:00:00:00:00:01,actions=drop"


def test_the_linux_bridge_says_which_flows_it_cannot_hold(tmp_path):
    from vsbench.interfaces.plugin import PluginContext
    from vsbench.interfaces.vswitch import FlowSpec, PortSpec, SwitchCannot, SwitchPort
    from vsbench.system.resources import ResourceStack
    from vsbench_plugins.vswitch.linux_bridge import LinuxBridge

    switch = LinuxBridge(PluginContext("abcdef", {}, tmp_path, ResourceStack()))
    switch._bridges["br0"] = "vsbabcdefbr0"
    out = SwitchPort("p1", 2, PortSpec("physical", "p1"))
    assert switch._fdb_entry("br0", FlowSpec({"eth_dst": "02:00:00:00:00:AB"}, out)) == ("02:00:00:00:00:ab", "p1")
    for flow, what in ((FlowSpec({"eth_dst": "02:00:00:00:00:02", "in_port": 1}, out), "match on in_port"),
                       (FlowSpec({"eth_dst": "02:00:00:00:00:02"}), "drop"),
                       (FlowSpec({"eth_type": 2048}, out), "match on eth_type")):
        with pytest.raises(SwitchCannot, match=what):
            switch._fdb_entry("br0", flow)
