"""Rule-set generation: 1:1 with the generator's flows, valid ovs-ofctl syntax, clear errors."""

import ipaddress
import re
import shutil
import subprocess

import pytest

from vsbench.interfaces.traffic import FlowFields
from vsbench.measurement import rules
from vsbench.measurement.rules import Direction, RuleSetError, RuleSetSpec

RULE_RE = re.compile(
    r"^priority=100,ip,in_port=(\d+),nw_src=([\d.]+),nw_dst=([\d.]+),actions=output:(\d+)$"
)


def _rule_table(lines):
    table = {}
    for line in lines:
        m = RULE_RE.match(line)
        assert m, line
        key = (int(m.group(1)), m.group(2), m.group(3))
        assert key not in table, f"duplicate match {key}"
        table[key] = int(m.group(4))
    return table


def test_every_flow_of_both_directions_hits_exactly_its_own_rule():
    spec = RuleSetSpec("src_dst_ip", rules=300, fields=FlowFields(), flows=300)
    table = _rule_table(rules.rule_lines(spec, rules.default_directions(1, 2, True)))
    assert len(table) == 600
    for i in range(300):
        src, dst = rules.flow_addresses(spec.fields, i)
        assert table.pop((1, src, dst)) == 2
        rsrc, rdst = rules.flow_addresses(spec.fields, i, reverse=True)
        assert (rsrc, rdst) == (dst, src)
        assert table.pop((2, rsrc, rdst)) == 1
    assert not table


def test_flow_arithmetic_is_base_plus_index_carrying_across_octets():
    fields = FlowFields(src_ip="10.0.0.1", dst_ip="10.1.0.1")
    assert rules.flow_addresses(fields, 0) == ("10.0.0.1", "10.1.0.1")
    assert rules.flow_addresses(fields, 255) == ("10.0.1.0", "10.1.1.0")
    assert rules.flow_addresses(fields, 999_999) == (
        str(ipaddress.IPv4Address("10.0.0.1") + 999_999),
        str(ipaddress.IPv4Address("10.1.0.1") + 999_999),
    )


def test_a_field_not_varied_stays_at_its_base():
    fields = FlowFields(vary=("src_ip",))
    lines = list(rules.rule_lines(RuleSetSpec("src_dst_ip", 3, fields, flows=3, bidirectional=False), [Direction(1, 2)]))
    assert [RULE_RE.match(l).group(3) for l in lines] == ["10.1.0.1"] * 3
    assert [RULE_RE.match(l).group(2) for l in lines] == ["10.0.0.1", "10.0.0.2", "10.0.0.3"]


def test_in_out_template_is_one_rule_per_direction():
    spec = RuleSetSpec("in_out", rules=1)
    assert list(rules.rule_lines(spec, rules.default_directions(3, 4, True))) == [
        "priority=100,in_port=3,actions=output:4",
        "priority=100,in_port=4,actions=output:3",
    ]


def test_write_rule_file_counts_lines(tmp_path):
    spec = RuleSetSpec("src_dst_ip", rules=70_000, flows=70_000, bidirectional=False)
    path = tmp_path / "rules.flows"
    assert rules.write_rule_file(path, spec, [Direction(1, 2)]) == 70_000
    text = path.read_text()
    assert text.count("\n") == 70_000 and text.endswith("\n")
    assert spec.total_rules == 70_000


@pytest.mark.skipif(shutil.which("ovs-ofctl") is None, reason="ovs-ofctl (openvswitch-common) not installed")
def test_generated_rules_parse_as_openflow(tmp_path):
    spec = RuleSetSpec("src_dst_ip", rules=5, flows=5)
    path = tmp_path / "rules.flows"
    rules.write_rule_file(path, spec, rules.default_directions(1, 2, True))
    out = subprocess.run(["ovs-ofctl", "parse-flows", str(path)], capture_output=True, text=True, check=True)
    assert out.stdout.count("nw_src=") == 10


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(template="l7"), "rule_template must be one of"),
        (dict(rules=0), "dut.rules must be an integer"),
        (dict(rules=True), "dut.rules must be an integer"),
        (dict(rules=10, flows=11), "exceeds dut.rules=10"),
        (dict(rules=10, fields=FlowFields(vary=("src_port",))), "include src_ip or dst_ip"),
        (dict(rules=10, fields=FlowFields(src_ip="255.255.255.250")), "overflow the IPv4 range"),
        (dict(template="in_out", rules=5), "one rule per direction"),
    ],
)
def test_bad_rule_sets_are_one_line_errors(kwargs, message):
    args = dict(template="src_dst_ip", rules=10, flows=1)
    args.update(kwargs)
    with pytest.raises(RuleSetError, match=message):
        RuleSetSpec(**args)


def test_rule_set_from_config():
    assert rules.rule_set_from_config({"dut": {"rules": None}, "traffic": {"flows": 5}}) is None
    spec = rules.rule_set_from_config({
        "dut": {"rules": 1000, "rule_template": "src_dst_ip"},
        "traffic": {"flows": 1000, "bidirectional": False,
                    "fields": {"src_ip": "10.2.0.1", "vary": ["src_ip", "dst_ip"]}},
    })
    assert spec == RuleSetSpec("src_dst_ip", 1000, FlowFields(src_ip="10.2.0.1"), 1000, False)
    in_out = rules.rule_set_from_config({"dut": {"rule_template": "in_out"}, "traffic": {}})
    assert in_out.template == "in_out" and in_out.total_rules == 2
    with pytest.raises(RuleSetError, match="unknown traffic.fields"):
        rules.rule_set_from_config({"dut": {"rules": 2}, "traffic": {"fields": {"srcip": "1.2.3.4"}}})


def test_shipped_scaling_testcases_resolve_to_the_reports_rule_sets():
    from pathlib import Path

    from vsbench.runner import config as cfg
    from vsbench.runner import testcases

    root = Path(__file__).resolve().parents[2]
    base = cfg.load_layers(root / "conf", [])
    flags = {"vswitch": None, "trafficgen": None, "vnf": None}
    complexity = testcases.build_plans(testcases.find("rule_complexity", root / "testcases"), base, {}, flags)
    seen = []
    for plan in complexity:
        spec = rules.rule_set_from_config(plan.config)
        assert spec.template == "src_dst_ip" and spec.rules == spec.flows == plan.config["traffic"]["flows"]
        assert plan.config["traffic"]["frame_sizes"] == [86]
        seen.append(spec.rules)
    assert seen == [64, 1000, 8000, 64000, 128000, 1000000]
    scalability = testcases.build_plans(testcases.find("flow_scalability", root / "testcases"), base, {}, flags)
    assert [p.config["traffic"]["flows"] for p in scalability] == [1000, 1000000]
    assert all(rules.rule_set_from_config(p.config).template == "in_out" for p in scalability)


def test_rules_follow_the_trafgen_plugins_flow_plan():
    """trafgen's counters give flow k base+(k mod period) per varying field; with IPv4
    fields wide enough the period is the flow count, so flow k is base+k: our arithmetic."""
    flow_plans = pytest.importorskip("vsbench_plugins.trafficgen.trafgen.flows")
    fields = FlowFields()
    for flows in (64, 1000, 1_000_000):
        plan = flow_plans.plan_flows(fields, flows)
        reverse = plan.swapped()
        for k in (0, 1, flows // 2, flows - 1):
            src, dst = rules.flow_addresses(fields, k)
            assert src == rules.ipv4_add(fields.src_ip, plan.offset("src_ip", k))
            assert dst == rules.ipv4_add(fields.dst_ip, plan.offset("dst_ip", k))
            rsrc, rdst = rules.flow_addresses(fields, k, reverse=True)
            # reverse direction: its src_ip counts from the forward dst base, and back
            assert rsrc == rules.ipv4_add(fields.dst_ip, reverse.offset("src_ip", k))
            assert rdst == rules.ipv4_add(fields.src_ip, reverse.offset("dst_ip", k))
