"""Frame modification (dut.frame_modification): the closed setting, the OvS flows it becomes,
the Linux bridge's refusals, the preflight, and the receiver's verdict on every kind.

The receiver's checks are run two ways on frames built here with scapy as the DUT must
deliver them (and as an unmodified or wrongly modified DUT would): the Python verdict and
the classic BPF program the kernel runs, through a small interpreter that models what the
kernel does before a packet socket sees a frame (the outer VLAN tag moved into metadata).
The real kernel and switch are the integration test's (test_frame_modification_on_testbed).
"""

from __future__ import annotations

import dataclasses
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from scapy.contrib.mpls import MPLS
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Dot1Q, Ether

from vsbench.interfaces import modification as m
from vsbench.interfaces.rules import Direction, RuleSetSpec, rule_lines
from vsbench.interfaces.traffic import FlowFields
from vsbench.system.commands import which
from vsbench_plugins.trafficgen.trafgen import foreign, frames, verify
from vsbench_plugins.trafficgen.trafgen.flows import flow_values, plan_flows, reverse_fields
from vsbench_plugins.vswitch.linux_bridge import LinuxBridge
from vsbench_plugins.vswitch.ovs import flows as ovs_flows
from vsbench_plugins.vswitch.ovs.modify import modification_flow

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))

#: One example of every kind, with parameters that differ from what the generator sends.
EXAMPLES = {
    "vlan_push": {"kind": "vlan_push", "vlan_id": 100, "vlan_pcp": 5},
    "vlan_pop": {"kind": "vlan_pop"},
    "vlan_rewrite": {"kind": "vlan_rewrite", "vlan_id": 200},
    "mpls_push": {"kind": "mpls_push", "mpls_label": 1000},
    "mac_rewrite": {"kind": "mac_rewrite", "src_mac": "02:00:00:00:00:09", "dst_mac": "02:00:00:00:00:0a"},
    "dscp": {"kind": "dscp", "dscp": 46},
    "ttl_set": {"kind": "ttl_set", "ttl": 17},
    "ttl_decrement": {"kind": "ttl_decrement"},
    "ip_rewrite": {"kind": "ip_rewrite", "src_ip": "192.0.2.1", "dst_ip": "192.0.2.2"},
    "l4_rewrite": {"kind": "l4_rewrite", "src_port": 5000, "dst_port": 6000},
}
SENT_VLAN = 10


def test_every_kind_has_an_example():
    assert set(EXAMPLES) == set(m.KINDS)


@pytest.mark.parametrize("setting, error", [
    ({"kind": "vlan_pusj"}, "kind must be one of"),
    ({"kind": "vlan_push"}, "vlan_push needs vlan_id"),
    ({"kind": "vlan_push", "vlan_id": 4096}, "vlan_id must be an integer 0..4095"),
    ({"kind": "vlan_push", "vlan_id": True}, "vlan_id must be an integer"),
    ({"kind": "dscp", "dscp": 46, "ttl": 3}, "dscp takes dscp; not ttl"),
    ({"kind": "ttl_decrement", "ttl": 3}, "takes no parameters; not ttl"),
    ({"kind": "ip_rewrite"}, "needs at least one of src_ip, dst_ip"),
    ({"kind": "ip_rewrite", "src_ip": "10.0.0.256"}, "src_ip must be an IPv4 address"),
    ({"kind": "mac_rewrite", "dst_mac": "02:00"}, "dst_mac must be a MAC address"),
    ({"kind": "mpls_push", "mpls_label": 3}, "mpls_label must be an integer 16..1048575"),
    ("vlan_push", "must be a mapping"),
])
def test_the_setting_is_a_closed_schema_checked_set(setting, error):
    with pytest.raises(m.ModificationError, match=error):
        m.from_setting(setting)


def test_parsed_modifications_say_what_they_do_to_frame_sizes():
    assert m.from_setting(None) is None
    push = m.from_setting({"kind": "vlan_push", "vlan_id": 100})
    assert (push.size_delta_bytes, push.l3_shift_bytes, push.describe()) == (4, 0, "vlan_push vlan_id=100")
    assert m.from_setting({"kind": "vlan_pop"}).size_delta_bytes == -4
    mpls = m.from_setting(EXAMPLES["mpls_push"])
    assert (mpls.size_delta_bytes, mpls.l3_shift_bytes) == (4, 4)
    assert m.from_setting(EXAMPLES["mac_rewrite"]).to_dict() == EXAMPLES["mac_rewrite"]


def test_tagged_frames_are_asked_for_exactly_by_the_kinds_that_need_them():
    pop, push = m.from_setting({"kind": "vlan_pop"}), m.from_setting({"kind": "vlan_push", "vlan_id": 1})
    assert "set traffic.fields.vlan_id" in m.check_fields(pop, None)
    assert m.check_fields(pop, 10) is None
    assert "leave traffic.fields.vlan_id unset" in m.check_fields(push, 10)
    assert m.check_fields(push, None) is None and m.check_fields(None, 10) is None


# ---------------------------------------------------------------- OvS flows

OVS_ACTIONS = {
    "vlan_push": ("", "push_vlan:0x8100,mod_vlan_vid:100,mod_vlan_pcp:5"),
    "vlan_pop": ("vlan_tci=0x1000/0x1000", "strip_vlan"),
    "vlan_rewrite": ("vlan_tci=0x1000/0x1000", "mod_vlan_vid:200"),
    "mpls_push": ("ip", "push_mpls:0x8847,set_mpls_label:1000"),
    "mac_rewrite": ("", "mod_dl_src:02:00:00:00:00:09,mod_dl_dst:02:00:00:00:00:0a"),
    "dscp": ("ip", "mod_nw_tos:184"),
    "ttl_set": ("ip", "mod_nw_ttl:17"),
    "ttl_decrement": ("ip", "dec_ttl"),
    "ip_rewrite": ("ip", "mod_nw_src:192.0.2.1,mod_nw_dst:192.0.2.2"),
    "l4_rewrite": ("udp", "mod_tp_src:5000,mod_tp_dst:6000"),
}


@pytest.mark.parametrize("kind", sorted(m.KINDS))
def test_ovs_turns_every_kind_into_actions_on_both_forwarding_flows(kind):
    mod = m.from_setting(EXAMPLES[kind])
    match, modify = modification_flow(mod)
    assert (match, modify) == OVS_ACTIONS[kind]
    lines = ovs_flows.port_to_port_flows(1, 2, match=match, modify=modify)
    assert lines[0].endswith(f"in_port=1,actions={modify},output:2")
    assert lines[1].endswith(f"in_port=2,actions={modify},output:1")
    spec = RuleSetSpec("src_dst_ip", 2, FlowFields(), flows=2)
    rules = list(rule_lines(spec, [Direction(1, 2), Direction(2, 1, reverse=True)], match=match, modify=modify))
    assert len(rules) == 4 and all(r.endswith(f"actions={modify},output:{2 if 'in_port=1' in r else 1}") for r in rules)
    assert all(",ip," in r or ",udp," in r for r in rules)  # nw_src/nw_dst keep their prerequisite
    if which("ovs-ofctl") is None:
        pytest.skip("ovs-ofctl not installed")
    for line in lines + rules[:1]:
        out = subprocess.run(["ovs-ofctl", "-O", "OpenFlow13", "parse-flow", line], capture_output=True, text=True)
        assert out.returncode == 0, (line, out.stderr)


def test_without_a_modification_the_flows_are_unchanged():
    assert modification_flow(None) == ("", "")
    assert ovs_flows.port_to_port_flows(1, 2) == ["table=0,priority=10,in_port=1,actions=output:2",
                                                  "table=0,priority=10,in_port=2,actions=output:1"]


# ---------------------------------------------------------------- Linux bridge


@pytest.mark.parametrize("setting, allowed", [
    ({"kind": "vlan_push", "vlan_id": 100}, True),
    ({"kind": "vlan_pop"}, True),
    ({"kind": "vlan_push", "vlan_id": 100, "vlan_pcp": 3}, False),
    ({"kind": "vlan_push", "vlan_id": 4095}, False),
    *[(EXAMPLES[k], False) for k in sorted(m.KINDS) if not k.startswith("vlan_p")],
])
def test_the_linux_bridge_does_what_vlan_filtering_can_and_says_why_not_the_rest(setting, allowed, monkeypatch):
    from vsbench_plugins.vswitch import linux_bridge

    monkeypatch.setattr(linux_bridge, "vlan_filtering_missing", lambda: None)  # a kernel that has it
    refusal = LinuxBridge.modification_refusal(m.from_setting(setting))
    assert (refusal is None) == allowed, refusal
    if refusal:
        assert "\n" not in refusal and len(refusal) < 200


def test_on_a_kernel_without_bridge_vlan_filtering_the_linux_bridge_refuses_vlan_too(monkeypatch):
    from vsbench_plugins.vswitch import linux_bridge

    monkeypatch.setattr(linux_bridge, "vlan_filtering_missing", lambda: "'ip link add ...': Operation not supported")
    for setting in ({"kind": "vlan_push", "vlan_id": 100}, {"kind": "vlan_pop"}):
        refusal = LinuxBridge.modification_refusal(m.from_setting(setting))
        assert refusal.startswith("this kernel's bridge has no VLAN filtering") and "Operation not supported" in refusal


# ---------------------------------------------------------------- the receiver

def run_bpf(program, wire: bytes) -> int:
    """Classic BPF as the kernel runs it on a packet socket: the outer VLAN tag of the
    frame on the wire is in the metadata (ancillary loads), not in the bytes."""
    tci = None
    if int.from_bytes(wire[12:14], "big") in verify.VLAN_TPIDS:
        tci, wire = int.from_bytes(wire[14:16], "big"), wire[:12] + wire[16:]
    acc, pc = 0, 0
    while True:
        code, jt, jf, k = program[pc]
        if code == 0x06:
            return k
        if code == 0x80:
            acc = len(wire)
        elif code in (0x20, 0x28, 0x30):
            if k >= (verify.SKF_AD_OFF & 0xFFFFFFFF):
                code_ad = k - (verify.SKF_AD_OFF & 0xFFFFFFFF)
                acc = int(tci is not None) if code_ad == verify.SKF_AD_VLAN_TAG_PRESENT else (tci or 0)
            else:
                width = {0x20: 4, 0x28: 2, 0x30: 1}[code]
                if k + width > len(wire):
                    return 0
                acc = int.from_bytes(wire[k:k + width], "big")
        elif code in (0x15, 0x25, 0x35):
            taken = {0x15: acc == k, 0x25: acc > k, 0x35: acc >= k}[code]
            pc += 1 + (jt if taken else jf)
            continue
        else:  # pragma: no cover
            raise AssertionError(f"unexpected opcode {code:#x}")
        pc += 1


def _sent_fields(kind: str, reverse: bool = False) -> FlowFields:
    fields = FlowFields(vary=("src_ip", "dst_port"))
    if kind in m.NEEDS_TAGGED:
        fields = dataclasses.replace(fields, vlan_id=SENT_VLAN, vlan_pcp=2)
    return reverse_fields(fields) if reverse else fields


def dut_output(kind: str, sent: bytes, setting: dict) -> bytes:
    """What a correct DUT delivers for ``sent`` (wire bytes), built with scapy."""
    pkt = Ether(sent)
    if kind == "vlan_push":
        ip = pkt[IP]
        return bytes(Ether(src=pkt.src, dst=pkt.dst) / Dot1Q(vlan=setting["vlan_id"], prio=setting.get("vlan_pcp", 0)) / ip)
    if kind == "vlan_pop":
        return bytes(Ether(src=pkt.src, dst=pkt.dst) / pkt[IP])
    if kind == "vlan_rewrite":
        pkt[Dot1Q].vlan = setting["vlan_id"]
        return bytes(pkt)
    if kind == "mpls_push":
        return bytes(Ether(src=pkt.src, dst=pkt.dst, type=0x8847) / MPLS(label=setting["mpls_label"], s=1, ttl=64) / pkt[IP])
    if kind == "mac_rewrite":
        pkt.src, pkt.dst = setting["src_mac"], setting["dst_mac"]
    elif kind == "dscp":
        pkt[IP].tos = setting["dscp"] << 2
    elif kind == "ttl_set":
        pkt[IP].ttl = setting["ttl"]
    elif kind == "ttl_decrement":
        pkt[IP].ttl -= 1
    elif kind == "ip_rewrite":
        pkt[IP].src, pkt[IP].dst = setting["src_ip"], setting["dst_ip"]
    elif kind == "l4_rewrite":
        pkt[UDP].sport, pkt[UDP].dport = setting["src_port"], setting["dst_port"]
    if IP in pkt:
        del pkt[IP].chksum
        del pkt[UDP].chksum
    return bytes(pkt)


@pytest.mark.parametrize("kind", sorted(m.KINDS))
@pytest.mark.parametrize("direction", [0, 1])
def test_the_receiver_counts_a_correctly_modified_frame_and_an_unmodified_one_as_wrong(kind, direction):
    setting = EXAMPLES[kind]
    mod = m.from_setting(setting)
    fields = _sent_fields(kind, reverse=bool(direction))
    plan = plan_flows(_sent_fields(kind), 8)
    plan = plan.swapped() if direction else plan
    sent = [frames.bulk_template(flow_values(fields, plan, k), 64, direction=direction).data for k in range(8)]
    expected = verify.modified_frame(fields, plan, direction, mod, sent[0])
    program = verify.wrong_frame_program(expected)
    for insn in program:
        struct.pack("HBBI", *insn)  # fits struct sock_filter
    for k, frame in enumerate(sent):
        good = dut_output(kind, frame, setting)
        assert len(good) == len(frame) + mod.size_delta_bytes
        assert expected.verdict(good) is None, (k, expected.verdict(good))
        assert run_bpf(program, good) == 0, k
        # the DUT forwarded it unmodified: delivered wrong, counted
        assert run_bpf(program, frame) == verify.SAMPLE_BYTES, k
        assert expected.verdict(frame) is not None
    # the other direction's frame, modified, is wrong here too (direction byte)
    other = frames.bulk_template(fields, 64, direction=1 - direction).data
    assert "direction byte" in expected.verdict(dut_output(kind, other, setting))
    # not vsbench's: neither counted wrong nor verified
    assert run_bpf(program, bytes(Ether() / IP() / UDP(dport=53) / bytes(60))) == 0
    # foreign frames are looked for at both offsets: a modified bulk frame is ours
    foreign_prog = verify.foreign_program(sorted({expected.payload_offset, expected.other_payload_offset}))
    assert run_bpf(foreign_prog, dut_output(kind, sent[0], setting)) == 0
    assert run_bpf(foreign_prog, sent[0]) == 0


@pytest.mark.parametrize("setting, why", [
    ({"kind": "vlan_push", "vlan_id": 101}, "VLAN TCI (PCP, VID) is 0x64, expected 0x65"),
    ({"kind": "dscp", "dscp": 10}, "IPv4 TOS (DSCP) is 0xb8, expected 0x28"),
    ({"kind": "ttl_set", "ttl": 18}, "IPv4 TTL is 0x11, expected 0x12"),
    ({"kind": "l4_rewrite", "src_port": 5000, "dst_port": 6001}, "UDP destination port (rewritten) is 0x1770, expected 0x1771"),
    ({"kind": "mpls_push", "mpls_label": 999}, "MPLS label is"),
])
def test_a_wrongly_modified_frame_is_wrong_with_the_reason(setting, why):
    kind = setting["kind"]
    produced = {**EXAMPLES[kind], "vlan_pcp": 0} if kind == "vlan_push" else EXAMPLES[kind]
    fields = _sent_fields(kind)
    plan = plan_flows(fields, 1)
    sent = frames.bulk_template(fields, 64).data
    expected = verify.modified_frame(fields, plan, 0, m.from_setting(setting), sent)
    frame = dut_output(kind, sent, produced)
    assert run_bpf(verify.wrong_frame_program(expected), frame) == verify.SAMPLE_BYTES
    assert why in expected.verdict(frame)


def test_a_modification_the_receiver_could_not_tell_from_none_is_refused():
    fields = FlowFields()
    sent = frames.bulk_template(fields, 64).data
    same = m.from_setting({"kind": "ip_rewrite", "dst_ip": fields.dst_ip})
    with pytest.raises(ValueError, match="could not tell a modified frame"):
        verify.modified_frame(fields, plan_flows(fields, 1), 0, same, sent)


def test_samples_get_their_vlan_tag_back_from_the_packet_auxdata():
    frame = bytes(range(12)) + b"\x08\x00" + bytes(10)
    aux = struct.pack("IIIHHHH", foreign.TP_STATUS_VLAN_VALID, 24, 24, 0, 14, 0x2064, 0)
    tagged = foreign.with_vlan_tag(frame, [(foreign.SOL_PACKET, foreign.PACKET_AUXDATA, aux)])
    assert tagged == frame[:12] + b"\x81\x00\x20\x64" + frame[12:]
    untagged = struct.pack("IIIHHHH", 0, 24, 24, 0, 14, 0, 0)
    assert foreign.with_vlan_tag(frame, [(foreign.SOL_PACKET, foreign.PACKET_AUXDATA, untagged)]) == frame
    assert foreign.with_vlan_tag(frame, []) == frame


# ---------------------------------------------------------------- preflight

def _check(test: str, vswitch: str, params: str):
    from run_helpers import build_plans
    from vsbench.runner import preflight

    return preflight.check_plans(build_plans(test, vswitch, f"frame_sizes=[64];{params}"))


@pytest.mark.parametrize("vswitch, params, error", [
    ("linux_bridge", "dut.frame_modification={kind: dscp, dscp: 46}", "vswitch linux_bridge cannot run dut.frame_modification dscp: a bridge rewrites no headers"),
    ("linux_bridge", "dut.frame_modification={kind: vlan_push, vlan_id: 100, vlan_pcp: 3}", "PCP 0"),
    ("ovs_dpdk", "dut.frame_modification={kind: vlan_pop}", "needs VLAN-tagged frames"),
    ("ovs_dpdk", "dut.frame_modification={kind: mpls_push, mpls_label: 100}", "latency.enabled=false"),
    ("ovs_dpdk", "dut.frame_modification={kind: dscp, dscp: 99}", "dscp: 99 must be <= 63"),  # the config schema, first
])
def test_the_preflight_refuses_before_anything_is_created(vswitch, params, error):
    from vsbench.runner import plugins, preflight
    from vsbench.runner.config import ConfigError

    try:
        plugins.load("vswitch", vswitch).check_prerequisites({})
    except Exception as exc:  # pragma: no cover
        pytest.skip(str(exc))
    with pytest.raises((preflight.PreflightError, ConfigError), match=error.replace("(", r"\(").replace(")", r"\)")):
        _check("phy2phy_tput_mod_vlan", vswitch, params)


def test_the_preflight_refuses_a_modification_outside_one_switch_pass():
    from vsbench.runner import preflight

    with pytest.raises(preflight.PreflightError, match="measured through one switch pass .* not pvp"):
        _check("pvp_tput", "ovs_dpdk", "dut.frame_modification={kind: dscp, dscp: 46}")


def test_the_vlan_testcases_push_vid_100_and_pass_the_preflight_where_the_switch_can():
    """On ovs_dpdk always; on linux_bridge where the kernel's bridge filters VLANs, and
    otherwise refused with that reason (this host's kernel has no VLAN filtering)."""
    from vsbench.runner import preflight
    from vsbench_plugins.vswitch.linux_bridge import vlan_filtering_missing

    for test in ("phy2phy_tput_mod_vlan", "phy2phy_tput_mod_vlan_cont"):
        for vswitch in ("ovs_dpdk", "linux_bridge"):
            if vswitch == "linux_bridge" and vlan_filtering_missing():
                with pytest.raises(preflight.PreflightError, match="bridge has no VLAN filtering"):
                    _check(test, vswitch, "trial_duration=1")
                continue
            [checked] = _check(test, vswitch, "trial_duration=1")
            assert checked.run.frame_modification == m.FrameModification("vlan_push", vlan_id=100)
