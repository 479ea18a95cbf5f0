"""Frame mixes (IMIX): the mix itself, how the config names it, how trafgen's two engines
send it (frames written to a pcap, no network) and the per-size figures of a point."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections import Counter

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.utils import rdpcap

from vsbench.interfaces.frame_mix import FrameMix, FrameMixError, from_weights, imix, named_mixes
from vsbench.interfaces.traffic import DirectionCounters, FlowFields, TrialResult, l1_bps
from vsbench.measurement import profiles
from vsbench.results import frame_mix_figures
from vsbench.results.model import ReportedPoint, TrialIdentity, TrialRecord
from vsbench_plugins.trafficgen.trafgen import config, flows, frames, pacer

needs_cc = pytest.mark.skipif(pacer.compiler() is None, reason="no C compiler")


def test_imix_is_7_4_1_interleaved_never_in_runs():
    m = imix()
    assert m.sizes_bytes == (64, 570, 1518) and m.weights == (7, 4, 1)
    cycle = m.cycle
    assert Counter(cycle) == {64: 7, 570: 4, 1518: 1}
    assert cycle[:4] == (64, 570, 64, 64)  # smooth weighted round robin
    longest = max(len(run) for run in "".join("a" if s == 64 else "b" for s in cycle * 2).split("b"))
    assert longest <= 2  # 64 B frames never run longer than two: 7 of 12 spread over the cycle
    assert m.mean_frame_size_bytes == pytest.approx((7 * 64 + 4 * 570 + 1518) / 12)
    assert m.representative_bytes == 354
    assert m.frames_of_size(12 * 5 + 3) == {64: 5 * 7 + 2, 570: 5 * 4 + 1, 1518: 5}


def test_custom_mix_weights_reduce_and_malformed_ones_are_refused():
    m = from_weights("mymix", {"1518": 2, 64: 6})
    assert m.sizes_bytes == (64, 1518) and m.reduced_weights == (3, 1) and len(m.cycle) == 4
    with pytest.raises(FrameMixError, match="positive integer"):
        from_weights("x", {64: 0.5})
    with pytest.raises(FrameMixError, match="not a frame size"):
        from_weights("x", {"big": 1})
    with pytest.raises(FrameMixError, match="at most 64"):
        from_weights("x", {64: 50, 128: 51})
    with pytest.raises(FrameMixError, match="cannot be redefined"):
        named_mixes({"IMIX": {64: 1}})
    assert FrameMix.from_json(m.to_json()) == m


def test_frame_sizes_take_imix_and_named_mixes_by_word():
    traffic = {"frame_sizes": [64, "IMIX", 1518, "mymix"], "frame_mixes": {"mymix": {64: 1, 1518: 1}}}
    assert profiles.frame_sizes(traffic) == [64, 354, 1518, 791]
    profile = profiles.build_profile(traffic, 354)
    assert profile.frame_mix == imix() and profile.mean_frame_size_bytes == pytest.approx(353.8333, rel=1e-5)
    assert profiles.build_profile(traffic, 64).frame_mix is None
    assert profiles.build_profile(traffic, 791).frame_mix.name == "mymix"
    # the line rate of a mix is at its mean wire size, exactly
    config = {"testbed": {"link_gbps": 10}, "traffic": traffic}
    assert profiles.nominal_line_rate_fps(config, profile) == pytest.approx(2 * 10e9 / ((4246 / 12 + 20) * 8))


@pytest.mark.parametrize("sizes, message", [
    ([64, "jumbo"], "neither a frame size nor a frame mix"),
    ([354, "imix"], "both filed under 354 B"),
])
def test_bad_frame_size_words_are_one_line_errors(sizes, message):
    with pytest.raises(profiles.ProfileError, match=message) as info:
        profiles.frame_sizes({"frame_sizes": sizes})
    assert "\n" not in str(info.value)


def test_a_mix_with_a_size_out_of_range_is_refused():
    traffic = {"frame_sizes": ["tiny"], "frame_mixes": {"tiny": {32: 1, 64: 1}}}
    with pytest.raises(profiles.ProfileError, match="32 B .in frame mix tiny. outside"):
        profiles.build_profile(traffic, profiles.frame_sizes(traffic)[0])


def _mix_stream(direction: int, fields: FlowFields, plan, mix: FrameMix) -> pacer.StreamSpec:
    by_size = {s: frames.bulk_template(fields, s, direction=direction) for s in mix.sizes_bytes}
    big = by_size[mix.largest_bytes]
    return pacer.StreamSpec(iface=f"p{direction}", frame=big.data, ip_offset=big.ip_offset,
                            counters=tuple(pacer.counter_fields(fields, plan, big.ip_offset)),
                            sizes=tuple(len(by_size[s].data) for s in mix.cycle))


def _check_valid(frame: bytes) -> None:
    """Lengths and checksums as scapy computes them for the same headers."""
    pkt = Ether(frame)
    ip, udp = pkt[IP], pkt[UDP]
    assert ip.len == len(frame) - 14 and udp.len == ip.len - 20
    again = Ether(bytes(pkt))
    del again[IP].chksum
    del again[UDP].chksum
    rebuilt = Ether(bytes(again))
    assert rebuilt[IP].chksum == ip.chksum and rebuilt[UDP].chksum == udp.chksum


@needs_cc
def test_pacer_sends_the_mix_cycle_with_valid_lengths_and_checksums(tmp_path):
    binary = pacer.ensure_built(tmp_path)
    mix = imix()
    fields = FlowFields(vary=("src_ip", "src_port"))
    plan = flows.plan_flows(fields, 5)
    rev = flows.reverse_fields(fields)
    streams = [_mix_stream(0, fields, plan, mix), _mix_stream(1, rev, plan.swapped(), mix)]
    text = pacer.render_config(streams)
    assert "sizes 60 566 60 60 566 60 1514" in text  # no FCS on the wire from software
    cfg, out = tmp_path / "m.cfg", tmp_path / "m.pcap"
    cfg.write_text(text)
    per_stream = 3 * 12 + 5
    proc = subprocess.run([str(binary), "-c", str(cfg), "-n", str(per_stream), "-D", str(out)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    sent = [bytes(p) for p in rdpcap(str(out))]
    assert len(sent) == 2 * per_stream
    for d in (0, 1):
        mine = sent[d::2]
        assert [len(f) + 4 for f in mine] == [mix.cycle[k % 12] for k in range(per_stream)]
        assert Counter(len(f) + 4 for f in mine) == mix.frames_of_size(per_stream)
        for frame in mine:
            _check_valid(frame)
            assert bytes(Ether(frame)[UDP].payload)[2] == d  # the direction byte survives the cut
        # every flow as usual: frame k carries flow k mod 5
        keys = [(Ether(f)[IP].src, Ether(f)[IP].dst, Ether(f)[UDP].sport, Ether(f)[UDP].dport) for f in mine[:10]]
        assert len(set(keys[:5])) == 5 and keys[5:] == keys[:5]


@needs_cc
def test_pacer_refuses_a_mix_length_beyond_its_frame_in_one_line(tmp_path):
    binary = pacer.ensure_built(tmp_path)
    t = frames.bulk_template(FlowFields(), 64)
    cfg = tmp_path / "bad.cfg"
    cfg.write_text(pacer.render_config([pacer.StreamSpec("p0", t.data, t.ip_offset)]) + "sizes 60 1514\n")
    out = subprocess.run([str(binary), "-c", str(cfg), "-n", "1", "-D", str(tmp_path / "x.pcap")],
                         capture_output=True, text=True, timeout=10)
    assert out.returncode == 1
    assert out.stderr.strip() == "vsbench-pacer: sizes: a length outside the frame's headers..its length"


@pytest.mark.skipif(shutil.which("trafgen") is None, reason="netsniff-ng trafgen not installed")
def test_trafgen_engine_sends_the_cycle_as_packets_in_turn(tmp_path):
    mix = imix()
    fields = FlowFields(vary=("src_ip",))
    plan = flows.plan_flows(fields, 3)
    by_size = {s: frames.bulk_template(fields, s, direction=0) for s in mix.sizes_bytes}
    packets = [(by_size[s], fields, plan) for s in mix.cycle]
    cfg, out = tmp_path / "t.cfg", tmp_path / "t.pcap"
    cfg.write_text(config.render_packets(packets, None))
    count = 2 * 12 + 7
    proc = subprocess.run(["trafgen", "--no-sock-mem", "--out", str(out), "--conf", str(cfg),
                           "--num", str(count), "--cpus", "1"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    sent = [bytes(p) for p in rdpcap(str(out))]
    assert [len(f) + 4 for f in sent] == [mix.cycle[k % 12] for k in range(count)]
    for frame in sent:
        _check_valid(frame)


def _record(index: int, tx: list[int], rx: list[int], stats: dict | None = None) -> TrialRecord:
    result = TrialResult(
        intended_load_fps=1000.0, intended_duration_s=1.0, frame_size_bytes=354, tx_frames=sum(tx),
        rx_frames=sum(rx), directions=tuple(DirectionCounters(i, 1 - i, t, r) for i, (t, r) in enumerate(zip(tx, rx))),
        generator_stats=stats or {})
    return TrialRecord(TrialIdentity("r", 0, "p"), index, "search", "2026-01-01T00:00:00Z", False, result)


def test_per_size_figures_are_shares_of_the_point_and_counts_of_its_trial():
    mix = imix()
    point = ReportedPoint(name="NDR", throughput_fps=1200.0, trial_index=0)
    rows = frame_mix_figures.per_size(mix, point, _record(0, [600, 605], [600, 605]))
    by = {r["frame_size_bytes"]: r for r in rows}
    assert by[64]["frame_share"] == pytest.approx(7 / 12) and by[64]["throughput_fps"] == pytest.approx(700.0)
    assert by[1518]["throughput_l1_mbps"] == pytest.approx(l1_bps(100.0, 1518) / 1e6)
    # frames sent per size: each direction's stream from the start of the cycle
    assert by[64]["tx_frames"] == 350 + (350 + 3) and by[1518]["tx_frames"] == 50 + 50
    assert sum(r["tx_frames"] for r in rows) == 1205
    assert all(r["rx_frames"] is None for r in rows)  # trafgen does not count them by size
    # the per-size fps add up to the aggregate, the L1 bit rates to the mix's
    assert sum(r["throughput_fps"] for r in rows) == pytest.approx(1200.0)
    assert sum(r["throughput_l1_mbps"] for r in rows) == pytest.approx(mix.l1_bps(1200.0) / 1e6)
    counted = frame_mix_figures.per_size(mix, point, _record(0, [12], [12], {"rx_frames_by_size": {"64": 7}}))
    assert counted[0]["rx_frames"] == 7


@needs_cc
def test_the_xdp_sender_refuses_a_mix_in_one_line(tmp_path):
    binary = pacer.ensure_built(tmp_path, sender=pacer.XDPGEN)
    t = frames.bulk_template(FlowFields(), 128)
    cfg = tmp_path / "mix.cfg"
    cfg.write_text(pacer.render_config([pacer.StreamSpec("lo", t.data, t.ip_offset, sizes=(60, len(t.data)))]))
    out = subprocess.run([str(binary), "-c", str(cfg), "-n", "1", "-r", "0"], capture_output=True, text=True,
                         timeout=10)
    assert out.returncode == 1
    assert out.stderr.strip() == "vsbench-xdpgen: a frame mix (sizes) is sent by the pacer, not the xdp sender"


def test_render_config_refuses_a_mix_length_beyond_the_frame():
    t = frames.bulk_template(FlowFields(), 64)
    with pytest.raises(ValueError, match="none longer than its frame"):
        pacer.render_config([pacer.StreamSpec("p0", t.data, t.ip_offset, sizes=(60, 1514))])


def test_the_shaper_bucket_of_a_mix_holds_its_largest_frame():
    from vsbench_plugins.trafficgen.trafgen import shaper

    # 100 fps of IMIX: a bucket of 1 frame at the mean (350 B) would never pass a 1514 B frame
    assert shaper.tbf_burst_bytes(100, 353.83, 0.005, largest_frame_bytes=1518) == 1514
    assert shaper.tbf_burst_bytes(100, 353.83, 0.005) < 1514
    argv = shaper.tbf_argv("p0", 1000.0, 353.83, 0.005, 1518)
    assert argv[argv.index("rate") + 1] == f"{round(1000 * 349.83 * 8)}bit"


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None, reason="needs root and unshare")
def test_size_counter_counts_received_bulk_frames_of_each_size_in_the_kernel(tmp_path):
    """On the loopback of a network namespace of its own: what a packet socket sends on lo
    arrives on lo; bulk frames are counted by size, anything else is not."""
    script = tmp_path / "count.py"
    script.write_text(
        "import socket, subprocess, time\n"
        "from vsbench.interfaces.traffic import FlowFields\n"
        "from vsbench_plugins.trafficgen.trafgen import frames\n"
        "from vsbench_plugins.trafficgen.trafgen.sizecount import SizeCounter\n"
        "subprocess.run(['ip', 'link', 'set', 'lo', 'up'], check=True)\n"
        "c = SizeCounter(None, ['lo'], {64: 60, 570: 566})\n"
        "c.read()\n"
        "s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)\n"
        "s.bind(('lo', 0))\n"
        "for size, n in ((64, 5), (570, 3), (1518, 2)):\n"
        "    t = frames.bulk_template(FlowFields(), size)\n"
        "    for _ in range(n):\n"
        "        s.send(t.data)\n"
        "s.send(frames.build_template(FlowFields(), 64).data)  # no bulk magic: not counted\n"
        "time.sleep(0.2)\n"
        "print(c.read())\n"
        "print(c.read())\n")
    out = subprocess.run(["unshare", "-n", sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["{64: 5, 570: 3}", "{64: 0, 570: 0}"]  # a read resets the counts


def test_terminal_lines_of_a_mix_name_each_size_with_what_was_sent_and_received():
    from vsbench.results.model import FrameSizeResult, TestResult
    from vsbench.runner import display_mix

    mix = imix()
    point = ReportedPoint(name="NDR", throughput_fps=1200.0, trial_index=0)
    point.per_size = frame_mix_figures.per_size(
        mix, point, _record(0, [12], [12], {"rx_frames_by_size": {"64": 7, "570": 4, "1518": 1}}))
    fs = FrameSizeResult(354, status="complete", points=[point], frame_mix=mix.to_json())
    test = TestResult(plan_index=0, label="t", testcase="t", traffic_type="rfc2544_throughput", frame_sizes=[fs])
    assert display_mix.frame_label(fs) == "imix (354)"
    lines = display_mix.mix_lines(test)
    assert lines[0] == "imix: 7:4:1 of 64/570/1518 B, mean 353.8 B (filed under 354 B)"
    assert lines[1].startswith("  NDR 1,200 fps: 64 B 58.3% 700 fps") and "1518 B 8.3% 100 fps" in lines[1]
    assert "sent 7 received 7" in lines[1] and "sent 1 received 1" in lines[1]
    assert display_mix.fixed_rate_lines(test) == []  # a search, not a fixed rate
