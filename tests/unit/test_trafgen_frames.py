"""Frame templates (scapy) and the trafgen configuration written from them.

The strongest check runs the real trafgen binary into a pcap file (no NIC, no root needed)
and compares every frame it generated with the scapy template of the flow it should be:
same bytes, so same fields and valid checksums, flow after flow and across the wrap.
"""

from __future__ import annotations

import subprocess

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Dot1Q, Ether
from scapy.utils import rdpcap

from vsbench.interfaces.traffic import FlowFields
from vsbench.system.commands import which
from vsbench_plugins.trafficgen.trafgen import config, frames
from vsbench_plugins.trafficgen.trafgen.flows import flow_values, plan_flows, reverse_fields


def _checksums_valid(data: bytes) -> bool:
    pkt = Ether(data)
    again = pkt.copy()
    del again[IP].chksum
    del again[UDP].chksum
    again = Ether(bytes(again))
    return pkt[IP].chksum == again[IP].chksum and pkt[UDP].chksum == again[UDP].chksum


@pytest.mark.parametrize("size", [64, 65, 128, 512, 1518, 9216])
@pytest.mark.parametrize("vlan", [None, 100])
def test_template_has_the_frame_size_minus_fcs_and_valid_checksums(size, vlan):
    t = frames.build_template(FlowFields(vlan_id=vlan, vlan_pcp=5 if vlan else 0), size)
    assert len(t.data) == size - 4
    pkt = t.packet
    assert pkt[IP].ttl == 64 and pkt[IP].ihl == 5 and pkt[UDP].dport == 1024
    assert t.ip_offset == (18 if vlan else 14)
    assert t.payload_offset == t.ip_offset + 28
    if vlan:
        assert pkt[Dot1Q].vlan == 100 and pkt[Dot1Q].prio == 5
    assert _checksums_valid(t.data)


def test_bulk_frames_carry_the_bulk_magic():
    t = frames.bulk_template(FlowFields(vlan_id=3), 64)
    assert t.data[t.payload_offset:t.payload_offset + 2] == b"vb"
    assert set(t.data[t.payload_offset + 2:]) == {0}
    assert "0x76, 0x62, fill(0x00, 12)" in config.render(t, FlowFields(vlan_id=3), plan_flows(FlowFields(), 1), None)


def test_too_small_frame_and_tcp_are_refused():
    with pytest.raises(frames.FrameError, match="too small"):
        frames.build_template(FlowFields(vlan_id=1), 64, payload=bytes(15))
    with pytest.raises(frames.FrameError, match="UDP"):
        frames.build_template(FlowFields(l4_proto="tcp"), 64)
    # 64 B holds a probe (14 B of payload) even with a VLAN tag
    assert frames.build_template(FlowFields(vlan_id=1), 64, payload=bytes(14))


def test_config_text_counts_the_varying_fields():
    fields = FlowFields(vary=("src_ip", "dst_port"))
    plan = plan_flows(fields, 1000)
    text = config.render(frames.build_template(fields, 64), fields, plan, [1], comment="x")
    assert text.startswith("# x\ncpu(1): {")
    assert "sa=10.0.0.1, sa=dinc(167772161, 167773160)" in text
    assert "dp=1024, dp=dinc(1024, 2023)" in text
    assert "da=10.1.0.1)" in text  # the constant field has no counter
    assert "fill(0x00, 18)" in text
    two = config.render(frames.build_template(fields, 64), fields, plan, [1, 0])
    assert two.count("cpu(") == 1 and "cpu(0-1): {" in two  # one block: separate ones hang trafgen
    with pytest.raises(ValueError, match="contiguous"):
        config.render(frames.build_template(fields, 64), fields, plan, [0, 2])


trafgen = which("trafgen")
needs_trafgen = pytest.mark.skipif(trafgen is None, reason="trafgen missing (apt-get install netsniff-ng)")


def _trafgen_frames(tmp_path, cfg_text: str, count: int) -> list[bytes]:
    cfg = tmp_path / "t.cfg"
    out = tmp_path / "t.pcap"
    cfg.write_text(cfg_text)
    proc = subprocess.run([trafgen, "--no-sock-mem", "--out", str(out), "--conf", str(cfg),
                           "--num", str(count), "--cpus", "1"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return [bytes(p) for p in rdpcap(str(out))]


@needs_trafgen
@pytest.mark.parametrize("fields, flows", [
    (FlowFields(), 1),
    (FlowFields(), 64),
    (FlowFields(vlan_id=100, vlan_pcp=3, vary=("src_mac", "dst_ip", "src_port")), 7),
    (FlowFields(vary=("src_port", "dst_port")), 70000),
    (FlowFields(src_mac="02:00:00:00:ff:ff", vary=("src_mac", "dst_mac")), 300),
])
@pytest.mark.parametrize("size", [64, 1518])
def test_trafgen_sends_exactly_the_template_of_each_flow(tmp_path, fields, flows, size):
    plan = plan_flows(fields, flows)
    count = min(2 * flows + 3, 400)  # a full cycle and the wrap where it fits
    for dir_fields, dir_plan in ((fields, plan), (reverse_fields(fields), plan.swapped())):
        text = config.render(frames.bulk_template(dir_fields, size), dir_fields, dir_plan, None)
        sent = _trafgen_frames(tmp_path, text, count)
        assert len(sent) == count
        for k, data in enumerate(sent):
            expected = frames.bulk_template(flow_values(dir_fields, dir_plan, k), size).data
            assert data == expected, f"frame {k} differs"
            assert _checksums_valid(data)


@needs_trafgen
def test_a_million_flows_cycle_exactly(tmp_path):
    """1M flows at full length: frame k carries flow k mod 1M, all checked from the pcap."""
    import numpy as np

    fields = FlowFields(vary=("src_ip", "dst_ip"))
    flows = 1_000_000
    plan = plan_flows(fields, flows)
    tmpl = frames.build_template(fields, 64)
    cfg = tmp_path / "m.cfg"
    out = tmp_path / "m.pcap"
    cfg.write_text(config.render(tmpl, fields, plan, None))
    count = flows + 2
    proc = subprocess.run([trafgen, "--no-sock-mem", "--out", str(out), "--conf", str(cfg),
                           "--num", str(count), "--cpus", "1"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    raw = np.fromfile(out, dtype=np.uint8)[24:].reshape(count, 16 + 60)[:, 16:]
    src = raw[:, 26:30].astype(np.uint32) @ np.array([1 << 24, 1 << 16, 1 << 8, 1], dtype=np.uint32)
    dst = raw[:, 30:34].astype(np.uint32) @ np.array([1 << 24, 1 << 16, 1 << 8, 1], dtype=np.uint32)
    k = np.arange(count, dtype=np.uint32) % flows
    assert (src == 0x0A000001 + k).all() and (dst == 0x0A010001 + k).all()
    assert len(np.unique(src[:flows])) == flows
    for i in (0, 123_456, flows - 1, flows, flows + 1):
        assert _checksums_valid(raw[i].tobytes()), i
