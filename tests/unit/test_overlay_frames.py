"""VXLAN frames of the embedded generator (pure parts): the encapsulated templates, the
trafgen configuration written from them (checked against the real trafgen's output), and
the classic BPF that counts received frames that are not as the DUT should deliver them
(run here by a small cBPF interpreter against frames scapy builds, right and wrong)."""

from __future__ import annotations

import dataclasses
import struct
import subprocess

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.layers.vxlan import VXLAN
from scapy.utils import rdpcap

from vsbench.interfaces.traffic import FlowFields, TrafficProfile, TunnelFields
from vsbench.system.commands import which
from vsbench_plugins.trafficgen.trafgen import config, frames, verify
from vsbench_plugins.trafficgen.trafgen.flows import flow_values, plan_flows, reverse_fields
from vsbench_plugins.trafficgen.trafgen_probe import BULK_MAGIC, ProbeFrames

TUNNEL = TunnelFields(port=0, vni=99, generator_mac="02:aa:bb:cc:01:00", generator_ip="198.18.0.1",
                      dut_mac="02:aa:bb:cc:02:00", dut_ip="198.18.0.254")


def run_bpf(program, frame: bytes) -> int:
    """A classic BPF interpreter for what vsbench's filters use (loads, length, JEQ/JGT/JGE,
    RET): the value the kernel would return (0 = drop, >0 = snap length)."""
    acc = 0
    pc = 0
    while True:
        code, jt, jf, k = program[pc]
        if code == 0x06:
            return k
        if code == 0x80:
            acc = len(frame)
            pc += 1
        elif code in (0x20, 0x28, 0x30):
            width = {0x20: 4, 0x28: 2, 0x30: 1}[code]
            if k + width > len(frame):
                return 0  # the kernel ends the program on a load past the end
            acc = int.from_bytes(frame[k:k + width], "big")
            pc += 1
        elif code in (0x15, 0x25, 0x35):
            taken = {0x15: acc == k, 0x25: acc > k, 0x35: acc >= k}[code]
            pc += 1 + (jt if taken else jf)
        else:  # pragma: no cover
            raise AssertionError(f"unexpected opcode {code:#x}")


def test_vxlan_template_is_the_inner_frame_inside_50_bytes_of_outer_headers():
    fields = FlowFields()
    inner = frames.bulk_template(fields, 64)
    t = frames.vxlan_template(fields, 64, TUNNEL)
    assert len(t.data) == 60 + 50 and t.frame_size_bytes == 114 and t.outer_bytes == 50
    assert t.data[50:] == inner.data and t.inner == inner
    assert t.ip_offset == 64 and t.payload_offset == 92 and t.data[92:94] == b"vb"
    pkt = Ether(t.data)
    assert (pkt.src, pkt.dst) == (TUNNEL.generator_mac, TUNNEL.dut_mac)
    assert (pkt[IP].src, pkt[IP].dst, pkt[IP].ttl) == ("198.18.0.1", "198.18.0.254", 64)
    assert (pkt[UDP].sport, pkt[UDP].dport, pkt[UDP].chksum) == (49152, 4789, 0)
    assert pkt[VXLAN].vni == 99 and pkt[VXLAN].flags == 0x08
    again = pkt.copy()
    del again[IP].chksum
    assert Ether(bytes(again))[IP].chksum == pkt[IP].chksum
    assert TrafficProfile(64, encapsulation="vxlan").outer_frame_size_bytes == 114
    assert TrafficProfile(64).outer_frame_size_bytes == 64


def test_encapsulated_profiles_vary_only_inner_addresses_and_ports():
    with pytest.raises(frames.FrameError, match="src_mac"):
        frames.vxlan_template(FlowFields(vary=("src_mac",)), 64, TUNNEL)
    with pytest.raises(frames.FrameError, match="VLAN"):
        frames.vxlan_template(FlowFields(vlan_id=5), 64, TUNNEL)
    with pytest.raises(frames.FrameError, match="VNI"):
        frames.vxlan_header(1 << 24)


def test_probes_in_a_tunnel_are_stamped_in_the_inner_payload_with_a_valid_inner_checksum():
    t = frames.vxlan_template(FlowFields(), 64, TUNNEL)
    probe = ProbeFrames(t.data, t.ip_offset).stamp(7, 123)
    pkt = Ether(probe)
    inner = Ether(bytes(pkt[VXLAN].payload))
    assert bytes(inner[UDP].payload)[:2] == b"vs"
    check = inner.copy()
    del check[UDP].chksum
    assert Ether(bytes(check))[UDP].chksum == inner[UDP].chksum
    assert probe[:50] == t.data[:50]  # the outer headers are untouched (outer UDP checksum 0)


trafgen = which("trafgen")


@pytest.mark.skipif(trafgen is None, reason="trafgen missing (apt-get install netsniff-ng)")
@pytest.mark.parametrize("fields, flows", [(FlowFields(), 1), (FlowFields(vary=("src_ip", "dst_port")), 10),
                                           (FlowFields(vary=("dst_ip",)), 200)])
def test_trafgen_sends_the_encapsulated_template_of_every_flow(tmp_path, fields, flows):
    plan = plan_flows(fields, flows)
    text = config.render(frames.vxlan_template(fields, 128, TUNNEL), fields, plan, None)
    assert "eth(" not in text  # raw syntax: trafgen 0.6.8 hangs on header functions after raw bytes
    cfg, out = tmp_path / "t.cfg", tmp_path / "t.pcap"
    cfg.write_text(text)
    count = 2 * flows + 3
    # SIGKILL: trafgen ignores SIGTERM when stuck
    proc = subprocess.run(["timeout", "-s", "KILL", "30", trafgen, "--no-sock-mem", "--out", str(out), "--conf",
                           str(cfg), "--num", str(count), "--cpus", "1"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    sent = [bytes(p) for p in rdpcap(str(out))]
    assert len(sent) == count
    for k, data in enumerate(sent):  # a raw counter moves before the first frame: flow k+1
        assert data == frames.vxlan_template(flow_values(fields, plan, k + 1), 128, TUNNEL).data, k


def test_the_trafgen_engine_refuses_inner_flows_beyond_one_byte():
    fields = FlowFields(vary=("src_ip",))
    with pytest.raises(ValueError, match="engine: pacer"):
        config.render(frames.vxlan_template(fields, 64, TUNNEL), fields, plan_flows(fields, 1000), None)


def _dut_encapsulated(inner: bytes, vni: int = 99, sport: int = 51234, **outer) -> bytes:
    """A frame as the DUT's VTEP sends it to the generator."""
    o = {"src": TUNNEL.dut_mac, "dst": TUNNEL.generator_mac, "ip_src": TUNNEL.dut_ip, "ip_dst": TUNNEL.generator_ip}
    o.update(outer)
    return bytes(Ether(src=o["src"], dst=o["dst"]) / IP(src=o["ip_src"], dst=o["ip_dst"], id=1234, flags="DF")
                 / UDP(sport=sport, dport=4789, chksum=0) / VXLAN(vni=vni, flags=0x08) / inner)


def test_wrong_frame_program_counts_only_bulk_frames_delivered_wrong():
    fields = FlowFields(vary=("src_ip", "dst_port"))
    plan = plan_flows(fields, 16)
    back = reverse_fields(fields)
    # direction 1 (encap): sent plain on the plain port, must arrive encapsulated on the tunnel port
    expected = verify.expected_frame(back, plan.swapped(), 1, TUNNEL)
    program = verify.wrong_frame_program(expected)
    for insn in program:
        struct.pack("HBBI", *insn)  # fits struct sock_filter
    good = [frames.bulk_template(flow_values(back, plan.swapped(), k), 64, direction=1).data for k in range(16)]
    for k, inner in enumerate(good):
        frame = _dut_encapsulated(inner, sport=40000 + k)  # any outer source port
        assert run_bpf(program, frame) == 0, k
        assert expected.verdict(frame) is None
    wrong = {
        "VNI": _dut_encapsulated(good[0], vni=100),
        "outer destination MAC": _dut_encapsulated(good[0], dst="02:00:00:00:00:99"),
        "outer source IP": _dut_encapsulated(good[0], ip_src="198.18.0.9"),
        "direction byte": _dut_encapsulated(frames.bulk_template(back, 64, direction=0).data),
        "inner src_ip": _dut_encapsulated(frames.bulk_template(dataclasses.replace(back, src_ip="10.9.9.9"), 64, 1).data),
        "inner source MAC": _dut_encapsulated(good[0][:6] + bytes.fromhex("020000000007") + good[0][12:]),
    }
    for why, frame in wrong.items():
        assert run_bpf(program, frame) == verify.SAMPLE_BYTES, why
        assert why in expected.verdict(frame), (why, expected.verdict(frame))
    # the DUT forgot to encapsulate: the plain frame is ours, and wrong
    assert run_bpf(program, good[0]) == verify.SAMPLE_BYTES
    # a stranger's frame, a probe and a short frame are not counted
    assert run_bpf(program, bytes(Ether() / IP() / UDP(dport=53) / bytes(60))) == 0
    probe_t = frames.vxlan_template(back, 64, TUNNEL)
    assert run_bpf(program, ProbeFrames(probe_t.data, probe_t.ip_offset).stamp(1, 2)) == 0
    assert run_bpf(program, bytes(12) + b"\x08\x06" + bytes(46)) == 0


def test_wrong_frame_program_of_the_plain_side_checks_the_decapsulated_frame():
    fields = FlowFields()
    plan = plan_flows(fields, 1)
    expected = verify.expected_frame(fields, plan, 0, None)
    program = verify.wrong_frame_program(expected)
    right = frames.bulk_template(fields, 64, direction=0).data
    assert run_bpf(program, right) == 0
    still_encapsulated = frames.vxlan_template(fields, 64, TUNNEL).data
    assert run_bpf(program, still_encapsulated) > 0  # the DUT did not decapsulate
    other_port = frames.bulk_template(FlowFields(dst_port=2000), 64).data
    assert run_bpf(program, other_port) > 0 and "dst_port" in expected.verdict(other_port)


def test_foreign_program_looks_for_vsbench_frames_at_both_payload_offsets():
    program = verify.foreign_program([verify.PLAIN_PAYLOAD_OFFSET, verify.ENCAPSULATED_PAYLOAD_OFFSET])
    plain = frames.bulk_template(FlowFields(), 64).data
    tunnelled = frames.vxlan_template(FlowFields(), 64, TUNNEL).data
    probe = ProbeFrames(tunnelled, 64).stamp(3, 4)
    for ours in (plain, tunnelled, probe):
        assert run_bpf(program, ours) == 0
    arp = bytes(12) + b"\x08\x06" + bytes(46)  # 60 B: shorter than the inner payload offset
    igmp = bytes(Ether(dst="01:00:5e:00:00:16") / IP(proto=2, dst="224.0.0.22") / (b"\x22" + bytes(15)))
    for foreign in (arp, igmp, bytes(Ether() / IP() / UDP() / bytes(100))):
        assert run_bpf(program, foreign) > 0
    assert BULK_MAGIC == int.from_bytes(b"vb", "big")
