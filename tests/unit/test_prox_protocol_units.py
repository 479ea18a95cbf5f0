"""PROX reply formats, rate conversion and packet/flow commands (pure functions)."""

from __future__ import annotations

import struct

import pytest

from vsbench.interfaces.plugin import PluginError
from vsbench.interfaces.traffic import FlowFields, TrafficProfile, line_rate_fps
from vsbench_plugins.trafficgen.prox import packets, rates, replies


# ----------------------------------------------------------------------------- replies

def test_lat_stats_in_all_three_generations():
    old = replies.parse_lat_stats("12,40,20,9,55,123456789,2000000000")
    mid = replies.parse_lat_stats("12,40,20,9,55,123456789,2000000000,3,0")
    new = replies.parse_lat_stats("12,40,20,9,55,123456789,2000000000,3,0,7,1,2\n")
    assert (old.fields, mid.fields, new.fields) == (7, 9, 12)
    for s in (old, mid, new):
        assert (s.min_ns, s.avg_ns, s.max_ns) == (12_000, 20_000, 40_000)  # µs -> ns
        assert (s.min_since_reset_ns, s.max_since_reset_ns) == (9_000, 55_000)
        assert s.tsc_hz == 2_000_000_000
    assert old.core is None and mid.core == 3 and new.mis_ordered == 7 and new.duplicate == 2


@pytest.mark.parametrize("line", ["error: invalid core 9, task 0",
                                  "error: core 1 task 0 is not measuring latency",
                                  "1,2,3", "1,2,3,4,5,6,7,8", "a,b,c,d,e,f,g"])
def test_lat_stats_rejects_errors_and_other_shapes(line):
    with pytest.raises(replies.ProxReplyError):
        replies.parse_lat_stats(line)


def test_tot_and_port_stats():
    t = replies.parse_tot_stats("1000,2000,555,2000000000")
    assert (t.rx, t.tx, t.last_tsc, t.tsc_hz) == (1000, 2000, 555, 2_000_000_000)
    p = replies.parse_port_stats("0,1,640,1280,10,20,100,200,0,3,999,888")
    assert (p.rx_total, p.tx_total, p.errors_total, p.last_tsc, p.prev_tsc) == (100, 200, 3, 999, 888)
    with pytest.raises(replies.ProxReplyError):
        replies.parse_port_stats("1,2,3,4")


def test_buckets_are_tsc_cycles():
    assert replies.parse_bucket("Bucket [17]: 42") == (17, 42)
    # 2**11 cycles at 2 GHz = 1024 ns; at 2.5 GHz = 819.2 ns
    assert replies.bucket_width_ns(11, 2_000_000_000) == pytest.approx(1024.0)
    assert replies.bucket_width_ns(11, 2_500_000_000) == pytest.approx(819.2)


def test_version_decoding():
    v = replies.parse_version(f"{(1 << 24) + (2 << 16)},{(22 << 24) + (11 << 16) + 1}")  # a byte-sized minor
    assert v == {"prox": "1.2.0", "dpdk": "22.11.0.1"}


# ----------------------------------------------------------------------------- rates

def test_pkt_size_excludes_the_fcs():
    assert rates.prox_pkt_size(64) == 60
    assert rates.prox_pkt_size(1518) == 1514


def test_hundred_percent_is_10g_line_rate_for_any_frame_size():
    for size in (64, 128, 512, 1518):
        fps = line_rate_fps(10e9, size)
        assert rates.speed_percent(fps, size) == pytest.approx(100.0)
        assert rates.fps_per_core(100.0, size) == pytest.approx(fps)


def test_speed_commands_split_over_directions_and_cores():
    # 1 Mfps aggregate, 2 directions, 2 cores on port 0 and 1 core on port 1, 64 B frames
    cmds, clamped = rates.speed_commands(1_000_000, 64, [[1, 5], [2]], 0)
    assert not clamped
    pct_half = 500_000 * 84 / 12_500_000
    assert cmds == [f"speed 1 0 {pct_half / 2:.9g}", f"speed 5 0 {pct_half / 2:.9g}",
                    f"speed 2 0 {pct_half:.9g}"]


def test_speed_above_1000_percent_is_clamped_and_reported():
    cmds, clamped = rates.speed_commands(200e6, 64, [[1]], 0)
    assert clamped and cmds == ["speed 1 0 1000"]


# ----------------------------------------------------------------------------- packets

def test_template_packet_is_a_valid_udp_ipv4_frame():
    pkt = packets.template_packet(FlowFields(), 64)
    assert len(pkt) == 60
    assert pkt[12:14] == b"\x08\x00"
    ip = pkt[14:34]
    total = sum(struct.unpack("!10H", ip))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    assert total == 0xFFFF  # header checksum verifies
    assert struct.unpack("!H", ip[2:4])[0] == 46  # IP total length of a 64 B frame
    assert struct.unpack("!H", pkt[38:40])[0] == 26  # UDP length


def test_flows_become_random_bits_split_over_varied_fields():
    profile = TrafficProfile(frame_size_bytes=128, flows=1024)
    cmds = packets.profile_commands(profile, profile.fields, [1], 0)
    assert cmds[0] == "pkt_size 1 0 124"
    randoms = [c for c in cmds if c.startswith("set random")]
    masks = {c.split()[4]: c.split()[5] for c in randoms}
    assert set(masks) == {"26", "30"}  # src_ip, dst_ip offsets
    assert sum(m.count("X") for m in masks.values()) == 10  # 2**10 flows
    assert all(len(m) == 32 for m in masks.values())


def test_non_power_of_two_flows_are_refused():
    with pytest.raises(PluginError, match="power of two"):
        packets.profile_commands(TrafficProfile(64, flows=1000), FlowFields(), [1], 0)


def test_reverse_direction_swaps_addresses():
    f = packets.reversed_fields(FlowFields(src_ip="10.0.0.1", dst_ip="10.1.0.1", src_port=1, dst_port=2))
    assert (f.src_ip, f.dst_ip, f.src_port, f.dst_port) == ("10.1.0.1", "10.0.0.1", 2, 1)
