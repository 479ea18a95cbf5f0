"""Scatter and burst flow patterns (``traffic.fields.pattern``; Intel's optimized-deployment
report F14): the flow plan, the frame sequence both senders really generate (trafgen into a
pcap, the pacer's own ``-D`` dump; no network, no root), the warm-up's size, and the
refusal of a generator that cannot send runs of one flow."""

from __future__ import annotations

import subprocess
from collections import Counter

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.utils import rdpcap

from vsbench.interfaces.traffic import FlowFields
from vsbench.system.commands import which
from vsbench_plugins.trafficgen.trafgen import config, frames, pacer
from vsbench_plugins.trafficgen.trafgen.flows import flow_values, plan_flows, reverse_fields

BURST = FlowFields(vary=("src_ip",), pattern="burst", burst_run=32)


def _runs(values: list) -> list[tuple[object, int]]:
    """(value, length) of each run of equal consecutive values."""
    out: list[list] = []
    for v in values:
        if out and out[-1][0] == v:
            out[-1][1] += 1
        else:
            out.append([v, 1])
    return [(v, n) for v, n in out]


def _checksums_valid(data: bytes) -> bool:
    pkt = Ether(data)
    again = pkt.copy()
    del again[IP].chksum
    del again[UDP].chksum
    again = Ether(bytes(again))
    return pkt[IP].chksum == again[IP].chksum and pkt[UDP].chksum == again[UDP].chksum


def test_burst_plan_keeps_each_flow_for_its_run_and_scatter_moves_every_frame():
    burst = plan_flows(BURST, 1000)
    assert burst.run == 32 and burst.periods == (("src_ip", 1000),)
    assert [burst.flow_of_frame(k) for k in (0, 31, 32, 63, 64, 32 * 1000 - 1, 32 * 1000)] == [0, 0, 1, 1, 2, 999, 0]
    assert burst.swapped().run == 32  # the reverse direction bursts too
    scatter = plan_flows(FlowFields(vary=("src_ip",)), 1000)
    assert scatter.run == 1 and [scatter.flow_of_frame(k) for k in (0, 1, 999, 1000)] == [0, 1, 999, 0]
    assert plan_flows(BURST, 1).run == 1  # one flow: nothing to burst
    assert FlowFields(pattern="burst", burst_run=8).frames_per_flow_run == 8
    assert FlowFields(burst_run=8).frames_per_flow_run == 1  # scatter ignores the run


def test_trafgen_config_writes_a_packet_per_frame_of_the_run():
    plan = plan_flows(BURST, 10)
    tmpl = frames.bulk_template(BURST, 64)
    text = config.render(tmpl, BURST, plan, [0])
    assert text.count("cpu(0): {") == 32 and text.count("sa=dinc(167772161, 167772170)") == 32
    assert config.render(tmpl, BURST, plan_flows(FlowFields(vary=("src_ip",)), 10), [0]).count("{\n") == 1
    with pytest.raises(ValueError, match="same burst run"):
        config.render_packets([(tmpl, BURST, plan), (tmpl, BURST, plan_flows(FlowFields(), 10))], None)


trafgen = which("trafgen")
needs_trafgen = pytest.mark.skipif(trafgen is None, reason="trafgen missing (apt-get install netsniff-ng)")
needs_cc = pytest.mark.skipif(pacer.compiler() is None, reason="no C compiler")


def _direction_frames(sent: list[bytes], ports: int) -> list[list[bytes]]:
    """Frames sent in turn for ``ports`` directions, split per direction (by the
    direction byte the bulk payload carries after its magic)."""
    out: list[list[bytes]] = [[] for _ in range(ports)]
    for k, data in enumerate(sent):
        out[k % ports].append(data)
    return out


def _check_sequence(per_direction: list[list[bytes]], plans, fields_of, size: int, run: int, flows: int) -> None:
    for d, (sent, plan, fields) in enumerate(zip(per_direction, plans, fields_of)):
        for k, data in enumerate(sent):
            expected = frames.bulk_template(flow_values(fields, plan, plan.flow_of_frame(k)), size,
                                            direction=d).data
            assert data == expected, f"direction {d} frame {k} differs"
            assert _checksums_valid(data)
        keys = [(Ether(x)[IP].src, Ether(x)[IP].dst, Ether(x)[UDP].sport, Ether(x)[UDP].dport) for x in sent]
        runs = _runs(keys)
        assert all(n == run for _, n in runs[:-1]) and runs[-1][1] <= run, runs[:5]
        assert len({s for s, _ in runs}) == min(flows, len(runs))  # each run a new flow until the wrap


@needs_trafgen
@pytest.mark.parametrize("pattern, run", [("burst", 32), ("burst", 5), ("scatter", 1)])
def test_trafgen_sends_runs_of_one_flow_in_both_directions(tmp_path, pattern, run):
    fields = FlowFields(vary=("src_ip", "dst_ip"), pattern=pattern, burst_run=max(run, 1))
    flows = 10
    plan = plan_flows(fields, flows)
    rev_fields, rev_plan = reverse_fields(fields), plan.swapped()
    packets = [(frames.bulk_template(fields, 64, direction=0), fields, plan),
               (frames.bulk_template(rev_fields, 64, direction=1), rev_fields, rev_plan)]
    cfg, out = tmp_path / "t.cfg", tmp_path / "t.pcap"
    cfg.write_text(config.render_packets(packets, None))
    count = 2 * (flows * run + 3 * run + 1)  # a whole cycle, the wrap and a partial run
    proc = subprocess.run([trafgen, "--no-sock-mem", "--out", str(out), "--conf", str(cfg),
                           "--num", str(count), "--cpus", "1"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    sent = [bytes(p) for p in rdpcap(str(out))]
    assert len(sent) == count
    _check_sequence(_direction_frames(sent, 2), [plan, rev_plan], [fields, rev_fields], 64, run, flows)


@needs_cc
@pytest.mark.parametrize("pattern, run", [("burst", 32), ("scatter", 1)])
def test_pacer_sends_runs_of_one_flow_in_both_directions(tmp_path, pattern, run):
    binary = pacer.ensure_built(tmp_path)
    fields = FlowFields(vary=("src_ip", "src_port"), pattern=pattern, burst_run=max(run, 1))
    flows = 12
    plan = plan_flows(fields, flows)
    rev_fields, rev_plan = reverse_fields(fields), plan.swapped()
    streams = []
    for d, (f, p) in enumerate(((fields, plan), (rev_fields, rev_plan))):
        t = frames.bulk_template(f, 128, direction=d)
        streams.append(pacer.StreamSpec(iface=f"p{d}", frame=t.data, ip_offset=t.ip_offset,
                                        counters=tuple(pacer.counter_fields(f, p, t.ip_offset)), run=p.run))
    text = pacer.render_config(streams)
    assert ("run 32" in text) == (pattern == "burst")
    cfg, out = tmp_path / "p.cfg", tmp_path / "p.pcap"
    cfg.write_text(text)
    per_stream = flows * run + 2 * run + 7
    proc = subprocess.run([str(binary), "-c", str(cfg), "-n", str(per_stream), "-D", str(out)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    sent = [bytes(p) for p in rdpcap(str(out))]
    assert len(sent) == 2 * per_stream
    _check_sequence(_direction_frames(sent, 2), [plan, rev_plan], [fields, rev_fields], 128, run, flows)
    # every flow equally often over whole cycles
    whole = [Ether(x)[UDP].sport for x in _direction_frames(sent, 2)[0][:flows * run]]
    assert set(Counter(whole).values()) == {run}


@needs_cc
def test_pacer_refuses_a_bad_run_in_one_line(tmp_path):
    binary = pacer.ensure_built(tmp_path)
    t = frames.bulk_template(FlowFields(), 64)
    cfg = tmp_path / "bad.cfg"
    cfg.write_text(pacer.render_config([pacer.StreamSpec("p0", t.data, t.ip_offset)]) + "run 0\n")
    out = subprocess.run([str(binary), "-c", str(cfg), "-n", "1", "-D", str(tmp_path / "x.pcap")],
                         capture_output=True, text=True, timeout=10)
    assert out.returncode == 1 and out.stderr.strip() == "vsbench-pacer: run: expected a frame count of 1 or more"


def test_warm_up_sends_a_whole_burst_cycle():
    from vsbench.measurement import warmup

    settings = warmup.WarmupSettings(passes=2, base_share=0.1, max_share=0.5, min_duration_s=0.0,
                                     max_duration_s=10.0)
    scatter = warmup.plan(settings, flows=1000, directions=2, max_load_fps=1e6, min_load_fps=1000)
    burst = warmup.plan(settings, flows=1000, directions=2, max_load_fps=1e6, min_load_fps=1000, run=32)
    # scatter: 2 passes of 1000 frames per direction; burst: one cycle of 32 frames per flow
    assert scatter.load_fps * scatter.duration_s == pytest.approx(2 * 2 * 1000)
    assert burst.load_fps * burst.duration_s == pytest.approx(2 * 32 * 1000)
    assert burst.planned_flows == 1000 and burst.frames_per_flow_run == 32 and not burst.capped
    from vsbench.interfaces.traffic import DirectionCounters, TrialResult

    half = TrialResult(frame_size_bytes=64, intended_load_fps=1.0, intended_duration_s=1.0, tx_frames=32_000, rx_frames=32_000,
                       directions=(DirectionCounters(0, 1, 16_000, 16_000), DirectionCounters(1, 0, 16_000, 16_000)))
    covered = warmup.coverage(burst, half)
    assert covered["flows_covered"] == 500 and not covered["all_flows_covered"]


def test_a_generator_without_the_pattern_is_refused_in_one_line():
    from vsbench.runner import traffic_types
    from vsbench_plugins.trafficgen.trafgen import Trafgen

    class Plain:
        name = "plain"

    traffic = {"type": "rfc2544_throughput", "fields": {"pattern": "burst"}}
    with pytest.raises(traffic_types.TrafficTypeError) as err:
        traffic_types.check_generator(traffic, Plain)
    assert str(err.value) == ("traffic.fields.pattern burst: trafficgen plain cannot send it (its flow patterns: "
                              "scatter; the embedded trafgen sends burst)")
    traffic_types.check_generator(traffic, Trafgen)  # the embedded generator sends it
    traffic_types.check_generator({"fields": {"pattern": "scatter"}}, Plain)
    assert Trafgen.flow_patterns == ("scatter", "burst")


def test_the_pattern_reaches_the_profile_and_bad_values_are_refused_by_the_schema():
    from vsbench.measurement import profiles

    p = profiles.build_profile({"flows": 1000, "fields": {"pattern": "burst", "burst_run": 16}}, 64)
    assert p.fields.pattern == "burst" and p.fields.frames_per_flow_run == 16
    from vsbench.runner.config import ConfigError, validate_config

    validate_config({"traffic": {"fields": {"pattern": "burst", "burst_run": 32}}})
    for bad in ({"pattern": "sprinkle"}, {"burst_run": 0}):
        with pytest.raises(ConfigError, match="traffic.fields"):
            validate_config({"traffic": {"fields": bad}})

