"""Streams built from a TrafficProfile: templates, field-engine flows, stream JSON.

The field-engine programs are run by the fake's independent interpreter
(``tests/fakes/trex/vm.py``) to check the frames they would really produce.
"""

import base64

import pytest
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Dot1Q, Ether

from tests.fakes.trex import vm as fe
from vsbench.interfaces.traffic import FlowFields, TrafficProfile
from vsbench_plugins.trafficgen.trex import streams


def frames(profile, direction, count):
    tpl = streams.build_template(profile, direction)
    program = fe.compile_vm(streams.flow_vm(profile, tpl, direction), len(tpl.packet))
    return [Ether(fe.packet_at(program, tpl.packet, k)) for k in range(count)]


@pytest.mark.parametrize("size", [64, 128, 1518, 9000])
def test_template_is_frame_size_minus_fcs(size):
    tpl = streams.build_template(TrafficProfile(size), 0)
    assert len(tpl.packet) == size - 4
    pkt = Ether(tpl.packet)
    assert pkt[IP].src == "10.0.0.1" and pkt[IP].dst == "10.1.0.1"
    assert pkt[UDP].sport == 1024


def test_reverse_direction_swaps_addresses_and_ports():
    fields = FlowFields(src_port=1000, dst_port=2000)
    fwd = Ether(streams.build_template(TrafficProfile(64, fields=fields), 0).packet)
    rev = Ether(streams.build_template(TrafficProfile(64, fields=fields), 1).packet)
    assert (rev.src, rev.dst) == (fwd.dst, fwd.src)
    assert (rev[IP].src, rev[IP].dst) == (fwd[IP].dst, fwd[IP].src)
    assert (rev[UDP].sport, rev[UDP].dport) == (2000, 1000)


@pytest.mark.parametrize("vary", [("src_ip", "dst_ip"), ("src_port",), ("dst_mac", "src_ip"),
                                  ("src_ip", "dst_ip", "src_port", "dst_port")])
@pytest.mark.parametrize("direction", [0, 1])
def test_field_engine_makes_exactly_n_flows_each_equally_often(vary, direction):
    n = 37
    profile = TrafficProfile(64, flows=n, fields=FlowFields(vary=vary))
    pkts = frames(profile, direction, 3 * n)
    keys = [(p.src, p.dst, p[IP].src, p[IP].dst, p[UDP].sport, p[UDP].dport) for p in pkts]
    assert len(set(keys)) == n
    assert all(keys.count(k) == 3 for k in set(keys))  # uniform: 1/n of the frames each
    for p in pkts[:n]:
        original = p[IP].chksum
        del p[IP].chksum
        assert IP(bytes(p[IP])).chksum == original  # the program fixed the IPv4 checksum


def test_flows_vary_from_the_base_values_and_ip_checksums_stay_valid():
    profile = TrafficProfile(64, flows=4, fields=FlowFields(vary=("src_ip",)))
    pkts = frames(profile, 0, 4)
    assert [p[IP].src for p in pkts] == ["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"]
    for p in pkts:
        original = p[IP].chksum
        del p[IP].chksum
        assert IP(bytes(p[IP])).chksum == original
    # the reverse direction varies the *destination*: its flows mirror the forward ones
    rev = frames(profile, 1, 4)
    assert [p[IP].dst for p in rev] == ["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"]


def test_base_above_2_pow_31_is_sent_as_a_negative_int32_and_wraps_right():
    fields = FlowFields(src_ip="192.168.1.250", vary=("src_ip",))
    profile = TrafficProfile(64, flows=10, fields=fields)
    tpl = streams.build_template(profile, 0)
    write = streams.flow_vm(profile, tpl, 0)["instructions"][1]
    assert -(1 << 31) <= write["add_value"] < 0
    assert [p[IP].src for p in frames(profile, 0, 10)][-1] == "192.168.2.3"


def test_tcp_flows_get_hardware_checksum_fix_and_valid_tcp_checksums():
    profile = TrafficProfile(64, flows=5, fields=FlowFields(l4_proto="tcp", vary=("src_port",)))
    tpl = streams.build_template(profile, 0)
    vm = streams.flow_vm(profile, tpl, 0)
    assert vm["instructions"][-1] == {"type": "fix_checksum_hw", "l2_len": 14, "l3_len": 20, "l4_type": 13}
    for p in frames(profile, 0, 5):
        original = p[TCP].chksum
        del p[TCP].chksum
        assert Ether(bytes(p))[TCP].chksum == original


def test_vlan_and_vxlan_templates_put_offsets_on_the_inner_headers():
    vlan = TrafficProfile(64, flows=3, fields=FlowFields(vlan_id=42, vary=("dst_ip",)))
    pkts = frames(vlan, 0, 3)
    assert pkts[0][Dot1Q].vlan == 42
    assert [p[IP].dst for p in pkts] == ["10.1.0.1", "10.1.0.2", "10.1.0.3"]
    vx = TrafficProfile(128, flows=3, encapsulation="vxlan", fields=FlowFields(vary=("src_ip",)))
    pkts = frames(vx, 0, 3)
    assert all(p[IP].src == "192.168.100.1" for p in pkts)  # outer untouched
    assert [p.getlayer(IP, nb=2).src for p in pkts] == ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
    assert len(bytes(pkts[0])) == 124


def test_one_flow_has_no_field_engine_program():
    profile = TrafficProfile(64)
    assert streams.flow_vm(profile, streams.build_template(profile, 0), 0)["instructions"] == []


def test_profile_errors_are_one_line():
    with pytest.raises(streams.ProfileError, match="too small"):
        streams.build_template(TrafficProfile(64, encapsulation="vxlan"), 0)
    with pytest.raises(streams.ProfileError, match="do not fit in src_port"):
        p = TrafficProfile(64, flows=70000, fields=FlowFields(vary=("src_port",)))
        streams.flow_vm(p, streams.build_template(p, 0), 0)
    with pytest.raises(streams.ProfileError, match="cannot vary"):
        p = TrafficProfile(64, flows=2, fields=FlowFields(vary=("ttl",)))
        streams.flow_vm(p, streams.build_template(p, 0), 0)
    with pytest.raises(streams.ProfileError, match="l4_proto"):
        streams.build_template(TrafficProfile(64, fields=FlowFields(l4_proto="sctp")), 0)


def test_stream_json_has_the_fields_add_stream_parses():
    s = streams.stream_json(b"\x00" * 60, pps=1234.5,
                            flow_stats=streams.latency_flow_stats(7))
    assert s["mode"] == {"type": "continuous", "rate": {"type": "pps", "value": 1234.5}}
    assert base64.b64decode(s["packet"]["binary"]) == b"\x00" * 60
    assert s["flags"] == 3  # both MACs from the packet, not from the port config
    assert s["flow_stats"] == {"enabled": True, "rule_type": "latency", "stream_id": 7}
    for key in ("enabled", "self_start", "isg", "action_count", "next_stream_id", "vm"):
        assert key in s
