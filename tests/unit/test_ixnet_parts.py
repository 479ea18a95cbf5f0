"""The ixnet plugin's pure parts: header field plans, statistics parsing, settings."""

import pytest
import yaml

from vsbench.interfaces.plugin import PluginError
from vsbench.interfaces.traffic import DirectionCounters, FlowFields
from vsbench.runner.config import ConfigError, project_root, validate
from vsbench_plugins.trafficgen.ixnet import IxNet
from vsbench_plugins.trafficgen.ixnet import stats as ixstats
from vsbench_plugins.trafficgen.ixnet.settings import (
    DEFAULTS,
    Credentials,
    PortLocation,
    Redactor,
    credentials,
    port_locations,
)
from vsbench_plugins.trafficgen.ixnet.traffic import FieldValue, field_plan, stack_types

# --------------------------------------------------------------------------- field plans


def plan_map(plan):
    return {fv.field_type_id: fv for fv in plan}


def test_one_flow_sets_single_values_from_the_profile():
    plan = plan_map(field_plan(FlowFields(), flows=1, reverse=False))
    assert plan["ipv4.header.srcIp"] == FieldValue("ipv4", "ipv4.header.srcIp", "10.0.0.1")
    assert plan["ipv4.header.dstIp"].start == "10.1.0.1"
    assert plan["ethernet.header.sourceAddress"].start == "02:00:00:00:00:01"
    assert plan["ethernet.header.destinationAddress"].start == "02:00:00:00:00:02"
    assert plan["udp.header.srcPort"].start == "1024"
    assert all(fv.count == 1 for fv in plan.values())


def test_varying_fields_increment_together_with_count_flows():
    fields = FlowFields(vary=("src_ip", "dst_port"), dst_port=5000)
    plan = plan_map(field_plan(fields, flows=1000, reverse=False))
    assert plan["ipv4.header.srcIp"] == FieldValue("ipv4", "ipv4.header.srcIp", "10.0.0.1", "0.0.0.1", 1000)
    assert plan["udp.header.dstPort"] == FieldValue("udp", "udp.header.dstPort", "5000", "1", 1000)
    assert plan["ipv4.header.dstIp"].count == 1


def test_reverse_direction_swaps_sources_and_destinations():
    fields = FlowFields(src_port=1111, dst_port=2222, vary=("src_ip", "dst_ip"))
    forward = plan_map(field_plan(fields, flows=4, reverse=False))
    reverse = plan_map(field_plan(fields, flows=4, reverse=True))
    assert reverse["ipv4.header.srcIp"].start == forward["ipv4.header.dstIp"].start == "10.1.0.1"
    assert reverse["ipv4.header.dstIp"].start == forward["ipv4.header.srcIp"].start == "10.0.0.1"
    assert reverse["ethernet.header.sourceAddress"].start == "02:00:00:00:00:02"
    assert reverse["udp.header.srcPort"].start == "2222"
    assert reverse["ipv4.header.srcIp"].count == 4


def test_tcp_and_vlan_headers():
    fields = FlowFields(l4_proto="tcp", vlan_id=100, vlan_pcp=3)
    plan = plan_map(field_plan(fields, flows=1, reverse=False))
    assert "tcp.header.dstPort" in plan and "udp.header.dstPort" not in plan
    assert plan["vlan.header.vlanTag.vlanID"].start == "100"
    assert plan["vlan.header.vlanTag.vlanUserPriority"].start == "3"
    assert stack_types(fields) == ["vlan", "ipv4", "tcp"]
    assert stack_types(FlowFields()) == ["ipv4", "udp"]


@pytest.mark.parametrize("fields, flows, message", [
    (FlowFields(src_port=65000, vary=("src_port",)), 1000, "run past"),
    (FlowFields(src_ip="255.255.255.250", vary=("src_ip",)), 10, "run past"),
    (FlowFields(l4_proto="sctp"), 1, "l4_proto"),
    (FlowFields(vary=("ttl",)), 2, "cannot vary ttl"),
    (FlowFields(src_ip="10.0.0.300"), 1, "not an IPv4 address"),
    (FlowFields(src_mac="02:00:00:00:01"), 1, "not a MAC address"),
    (FlowFields(vlan_id=5000), 1, "VLAN"),
])
def test_impossible_field_plans_are_one_line_errors(fields, flows, message):
    with pytest.raises(PluginError, match=message) as err:
        field_plan(fields, flows=flows, reverse=False)
    assert "\n" not in str(err.value) and str(err.value).startswith("ixnet: ")


# --------------------------------------------------------------------------- statistics


@pytest.mark.parametrize("unit, cells, expected", [
    ("ns", ("5000", "4500", "12500"), (4500.0, 5000.0, 12500.0)),
    ("us", ("5.000", "4.500", "12.500"), (4500.0, 5000.0, 12500.0)),
    ("µs", ("5", "4.5", "12.5"), (4500.0, 5000.0, 12500.0)),
    ("ms", ("0.005", "0.0045", "0.0125"), (4500.0, 5000.0, 12500.0)),
])
def test_latency_is_normalised_to_ns_from_the_caption_unit(unit, cells, expected):
    avg, lo, hi = cells
    row = {"Traffic Item": "t", f"Store-Forward Avg Latency ({unit})": avg,
           f"Store-Forward Min Latency ({unit})": lo, f"Store-Forward Max Latency ({unit})": hi}
    lat = ixstats.latency(row)
    assert (lat.min_ns, lat.mean_ns, lat.max_ns) == pytest.approx(expected)
    assert lat.caption_prefix == "Store-Forward"


def test_rows_without_latency_columns_have_no_latency():
    assert ixstats.latency({"Tx Frames": "10", "Rx Frames": "10"}) is None
    assert ixstats.latency({"Cut-Through Avg Latency (ns)": "", "Cut-Through Min Latency (ns)": "",
                            "Cut-Through Max Latency (ns)": ""}) is None


def test_counts_parse_ixnetwork_cells():
    assert ixstats.count("1234") == 1234
    assert ixstats.count("1,234,567") == 1234567
    assert ixstats.count("") == 0 and ixstats.count(None) == 0 and ixstats.count("N/A") == 0


def test_direction_counters_from_flow_rows():
    rows = [
        {"Tx Port": "p0", "Rx Port": "p1", "Tx Frames": "100", "Rx Frames": "90"},
        {"Tx Port": "p1", "Rx Port": "p0", "Tx Frames": "100", "Rx Frames": "100"},
        {"Tx Port": "p0", "Rx Port": "p0", "Tx Frames": "5", "Rx Frames": "5"},  # misdirected
    ]
    got = ixstats.direction_counters(rows, ["p0", "p1"], [(0, 1), (1, 0)])
    assert got == [DirectionCounters(0, 1, 105, 90), DirectionCounters(1, 0, 100, 100)]


# --------------------------------------------------------------------------- settings


def test_shipped_defaults_match_the_plugin_and_its_schema():
    shipped = yaml.safe_load((project_root() / "conf" / "30_trafficgen_ixnet.yaml").read_text())
    section = shipped["trafficgen"]["ixnet"]
    assert section == DEFAULTS
    validate(section, IxNet.settings_schema, "ixnet")


def test_schema_error_never_quotes_a_secret():
    # A typo'd key is named; a secret of an odd type is still accepted (and never echoed).
    with pytest.raises(ConfigError, match="unknown key 'pasword'"):
        validate({**DEFAULTS, "pasword": "hunter22"}, IxNet.settings_schema, "ixnet")
    validate({**DEFAULTS, "password": 123456}, IxNet.settings_schema, "ixnet")


def test_port_locations_in_every_accepted_form():
    cfg = {"chassis": "10.0.0.5", "ports": ["10.0.0.6;1;2", "2/3", {"card": 1, "port": 4},
                                            {"chassis": "c7", "card": 3, "port": 1}]}
    assert port_locations(cfg) == [PortLocation("10.0.0.6", 1, 2), PortLocation("10.0.0.5", 2, 3),
                                   PortLocation("10.0.0.5", 1, 4), PortLocation("c7", 3, 1)]
    with pytest.raises(PluginError, match="names no chassis"):
        port_locations({"ports": ["1/1"]})
    with pytest.raises(PluginError, match="is not 'chassis;card;port'"):
        port_locations({"ports": ["eth0"]})


def test_credentials_from_environment_and_redaction(monkeypatch):
    monkeypatch.setenv("IXN_PW", "pa55word!")
    creds = credentials({"username": "admin", "password_env": "IXN_PW"})
    assert creds == Credentials("admin", "pa55word!", None)
    assert "pa55word" not in repr(creds)
    monkeypatch.delenv("IXN_PW")
    with pytest.raises(PluginError, match="environment variable IXN_PW"):
        credentials({"password_env": "IXN_PW"})
    redact = Redactor(["pa55word!"])
    redact.add("0123456789abcdef")
    assert redact("login pa55word! key 0123456789abcdef") == "login *** key ***"


def test_missing_prerequisites_are_named(monkeypatch):
    monkeypatch.delenv("NO_SUCH_IXN_VAR", raising=False)
    missing = IxNet.check_prerequisites({"password_env": "NO_SUCH_IXN_VAR"})
    text = " | ".join(str(m) for m in missing)
    assert "API server address" in text and "two chassis ports" in text and "NO_SUCH_IXN_VAR" in text
    ok = IxNet.check_prerequisites({"api_host": "10.0.0.9", "ports": ["c;1;1", "c;1;2"]})
    assert ok == []
