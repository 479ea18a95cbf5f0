"""The trafgen plugin on the loopback testbed (generator port 0 wired to port 1, no DUT).

Short trials at modest rates on a shared 2-core machine: exact frame counts (what was sent
is what the counters say, probes excluded), plausible probe latency, an over-ambitious rate
reported as such, and nothing left behind.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from run_helpers import processes_mentioning
from vsbench.deployment.ports import generator_ports_of
from vsbench.interfaces.plugin import PluginContext
from vsbench.interfaces.traffic import FlowFields, TrafficProfile
from vsbench.system import naming, netlink, runstate
from vsbench.system.commands import which
from vsbench.system.resources import ResourceStack
from vsbench.system.testbed import create_loopback_testbed

pytestmark = pytest.mark.integration

if os.geteuid() != 0:
    pytest.skip("needs root (network namespaces, packet sockets)", allow_module_level=True)
if which("trafgen") is None:
    pytest.skip("trafgen missing (apt-get install netsniff-ng)", allow_module_level=True)

from vsbench_plugins.trafficgen.trafgen import Trafgen  # noqa: E402


@pytest.fixture(params=["pacer", "trafgen", "xdp"])
def loopback(request, tmp_path):
    """(generator, testbed) on a fresh loopback testbed, once per engine; asserts a clean
    teardown."""
    run_id = naming.new_run_id()
    claim = runstate.claim(run_id)  # live: a concurrent `vsbench cleanup` leaves it alone
    resources = ResourceStack()
    try:
        tb = create_loopback_testbed(run_id, resources)
        ctx = PluginContext(run_id=run_id, settings={"engine": request.param}, log_dir=tmp_path / "logs",
                            resources=resources, work_dir=tmp_path / "work")
        gen = Trafgen(ctx)
        gen.start()
        yield gen, tb
    finally:
        resources.close()
        claim.release()
    assert naming.netns_name(run_id, "tg") not in os.listdir(netlink.NETNS_RUN_DIR)
    assert processes_mentioning(f"vsb{run_id}", f"vsb-{run_id}") == []


def test_unidirectional_trial_counts_exactly(loopback):
    gen, tb = loopback
    gen.configure(TrafficProfile(frame_size_bytes=64, flows=100, bidirectional=False), generator_ports_of(tb))
    r = gen.run_trial(20_000, 1.0)
    assert r.tx_frames == 20_000 and r.rx_frames == 20_000
    [d] = r.directions
    assert (d.tx_port, d.rx_port, d.tx_frames, d.rx_frames) == (0, 1, 20_000, 20_000)
    assert r.intended_load_fps == 20_000 and r.intended_duration_s == 1.0
    # trafgen: the shaper never sends faster than asked; the figure is trafgen's loop plus
    # the queue drain seen after it exited, so it may fall short by what drained while
    # trafgen exited. pacer, xdp: the schedule's t0 to the last frame plus one frame time.
    assert r.tx_duration_s is not None and r.tx_duration_s > 0.95
    if r.valid:  # the plugin's own rule (rate_tolerance, 1 %): a sender later than that is invalid
        assert r.tx_duration_s <= 1.0 * (1 + float(gen.cfg["rate_tolerance"]))
    assert r.effective_duration_s >= r.tx_duration_s
    assert r.probes is None
    # every frame arrived, so the trial did not wait out its drain (0.5 s by default)
    assert r.generator_stats["drain_s"] < 0.25, r.generator_stats["drain_s"]
    if gen.cfg["engine"] in ("pacer", "xdp"):
        p = r.pacing
        assert p is not None and p.window_s == 0.01 and p.nominal_frames_per_window == 200
        assert p.windows == 100  # the second's consecutive 10 ms windows
        # exactness is the common rules' to judge, from these figures (a shared host
        # preempts any sender now and then: tools/bench/ measures how often)
        from vsbench.measurement import validity

        undisturbed = validity.pacing_reason(r) is None
        assert undisturbed == (p.max_window_deviation_frames <= 2)
        # a 1 ms window of an undisturbed trial holds its 20 frames, plus what a late sender
        # caught up (a batch at a time): in 40 trials beside a busy loop at most 55 frames
        # against a bound of 65.7. A disturbed one is the common rules' to flag, and is: CI
        # once saw 309 frames in a 1 ms window (max_late 5.5 ms, sliding deviation 289
        # frames) in a trial the pacing rule judged invalid
        assert p.max_frames_per_burst_window >= 20, p
        if undisturbed:
            assert p.max_frames_per_burst_window <= 20 + 1e3 * (p.max_late_s or 0) * 20 + 32, p
    else:
        assert r.pacing is None


def test_bidirectional_trial_splits_the_load(loopback):
    gen, tb = loopback
    gen.configure(TrafficProfile(frame_size_bytes=128, flows=1000), generator_ports_of(tb))
    r = gen.run_trial(30_000, 1.0)
    assert [(d.tx_port, d.rx_port, d.tx_frames, d.rx_frames) for d in r.directions] == [
        (0, 1, 15_000, 15_000), (1, 0, 15_000, 15_000)]
    assert r.tx_frames == r.rx_frames == 30_000
    if gen.cfg["engine"] == "trafgen":
        # one trafgen and one shaper for both directions by default, frames redirected per port
        [stream] = r.generator_stats["streams"]
        assert stream["directions"] == [0, 1] and stream["trafgen_tx_frames"] == 30_000
    else:  # one sender (pacer, xdp) sends both directions in turn
        assert r.generator_stats["sender"]["per_port"] == {tb.links[0].tg_iface: 15_000,
                                                          tb.links[1].tg_iface: 15_000}
    # (validity is not asserted: on the shared 2-CPU machine another job can starve any
    # generator; the counts above hold whatever the timing)


def test_probes_arrive_in_order_with_plausible_latency_and_are_not_bulk(loopback):
    gen, tb = loopback
    gen.configure(TrafficProfile(frame_size_bytes=64, flows=10, bidirectional=True,
                                 fields=FlowFields(vlan_id=10)), generator_ports_of(tb))
    r = gen.run_trial(20_000, 2.0, latency=True)
    assert r.tx_frames == r.rx_frames == 40_000  # probes are counted apart
    p = r.probes
    assert p is not None and p.sent == 2000
    assert len(p.sequence) == len(p.latency_ns) == p.sent  # loopback loses nothing
    assert (p.sequence == np.arange(p.sent)).all()  # and does not reorder
    assert (p.latency_ns > 0).all()
    assert np.median(p.latency_ns) < 10_000_000
    stats = r.generator_stats["probes"]
    assert stats["latency_from_payload_timestamp"] == 0  # kernel TX timestamps throughout


def test_a_rate_the_generator_cannot_hold_is_reported_not_padded(loopback):
    gen, tb = loopback
    gen.configure(TrafficProfile(frame_size_bytes=64, bidirectional=False), generator_ports_of(tb))
    asked = 50_000_000  # far beyond one CPU's reach
    r = gen.run_trial(asked, 0.2)
    # whatever happened, the counters are the real ones: loopback delivers all that was sent
    assert r.rx_frames == r.tx_frames
    assert r.tx_frames <= asked * 0.2
    assert (not r.valid) or r.tx_frames < 0.999 * r.intended_frames
    assert r.invalid_reason


def test_frames_too_small_and_unknown_fields_are_one_line_errors(loopback):
    from vsbench.interfaces.plugin import PluginError

    gen, tb = loopback
    with pytest.raises(PluginError, match="trafgen: "):
        gen.configure(TrafficProfile(frame_size_bytes=64, fields=FlowFields(l4_proto="tcp")),
                      generator_ports_of(tb))
    with pytest.raises(PluginError, match="do not fit"):
        gen.configure(TrafficProfile(frame_size_bytes=64, flows=1 << 20,
                                     fields=FlowFields(vary=("src_port", "dst_port"))),
                      generator_ports_of(tb))
    with pytest.raises(PluginError, match="run_trial before configure"):
        gen.run_trial(1000, 1.0)


def test_ring_path_pins_one_cpu_per_direction(loopback, tmp_path):
    gen, tb = loopback
    ring = Trafgen(PluginContext(run_id=tb.run_id,
                                 settings={"engine": "trafgen", "tx_path": "ring", "cpus": [0, 1],
                                           "bidirectional_shaper": "per_port"},
                                 log_dir=tmp_path / "ring-logs", resources=gen.context.resources,
                                 work_dir=tmp_path / "ring-work"))
    ring.start()
    ring.configure(TrafficProfile(frame_size_bytes=64, flows=16), generator_ports_of(tb))
    r = ring.run_trial(20_000, 1.0)
    assert [(d.tx_frames, d.rx_frames) for d in r.directions] == [(10_000, 10_000), (10_000, 10_000)]
    assert [(st["iface"], st["cpus"]) for st in r.generator_stats["streams"]] == [
        (tb.links[0].tg_iface, [0]), (tb.links[1].tg_iface, [1])]
    assert ring.generator_cpus() == {0, 1}


def test_ring_path_spreads_one_direction_over_two_cpus(loopback, tmp_path):
    """Two workers share one direction's frames; trafgen splits the exact count."""
    gen, tb = loopback
    ring = Trafgen(PluginContext(run_id=tb.run_id, settings={"engine": "trafgen", "tx_path": "ring", "cpus": [0, 1]},
                                 log_dir=tmp_path / "ring2-logs", resources=gen.context.resources,
                                 work_dir=tmp_path / "ring2-work"))
    ring.start()
    ring.configure(TrafficProfile(frame_size_bytes=64, flows=16, bidirectional=False),
                   generator_ports_of(tb))
    r = ring.run_trial(20_001, 1.0)
    assert r.tx_frames == r.rx_frames == 20_001
    assert r.generator_stats["streams"][0]["cpus"] == [0, 1]


_CAPTURE = """
import socket, sys
iface, count = sys.argv[1], int(sys.argv[2])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 << 20)
s.bind((iface, 0))
s.settimeout(10)
print("ready", flush=True)
for _ in range(count):
    print(s.recv(4096).hex(), flush=True)
"""


def test_own_senders_frames_are_the_flow_plan_with_valid_checksums(loopback):
    """Every frame the pacer or the xdp sender sends is the template of its flow, checksums
    recomputed -- byte for byte what scapy builds for that flow (the trafgen configuration's
    contract)."""
    import subprocess
    import sys

    from vsbench_plugins.trafficgen.trafgen import flows, frames

    gen, tb = loopback
    if gen.cfg["engine"] == "trafgen":
        pytest.skip("trafgen's frames are checked against its configuration in the unit tests")
    fields = FlowFields(vary=("src_ip", "dst_ip", "src_port", "dst_port"), src_port=65000)
    gen.configure(TrafficProfile(frame_size_bytes=64, flows=1000, bidirectional=False, fields=fields),
                  generator_ports_of(tb))
    cap = subprocess.Popen(["ip", "netns", "exec", tb.tg_netns, sys.executable, "-c", _CAPTURE,
                            tb.links[1].tg_iface, "1200"], stdout=subprocess.PIPE, text=True)
    try:
        assert cap.stdout.readline().strip() == "ready"
        r = gen.run_trial(10_000, 0.12)
        assert r.tx_frames == r.rx_frames == 1200
        got = [bytes.fromhex(cap.stdout.readline().strip()) for _ in range(1200)]
    finally:
        cap.kill()
        cap.wait()
    plan = flows.plan_flows(fields, 1000)
    expected = {k: frames.bulk_template(flows.flow_values(fields, plan, k), 64, 0).data for k in range(1000)}
    assert got[:1000] == [expected[k] for k in range(1000)]  # frame k is flow k, in order
    assert got[1000:] == [expected[k] for k in range(200)]   # and the cycle starts again


def test_own_senders_send_each_direction_its_own_frames(loopback):
    """Both directions from one sender: each port's frames are its direction's flows, in
    order, byte for byte (the xdp sender writes both directions' frames into one page
    pool, so a frame must never keep a byte of the other direction's template)."""
    import subprocess
    import sys

    from vsbench_plugins.trafficgen.trafgen import flows, frames

    gen, tb = loopback
    if gen.cfg["engine"] == "trafgen":
        pytest.skip("trafgen's frames are checked against its configuration in the unit tests")
    fields = FlowFields(vary=("src_ip", "dst_port"))
    gen.configure(TrafficProfile(frame_size_bytes=200, flows=50, bidirectional=True, fields=fields),
                  generator_ports_of(tb))
    caps = [subprocess.Popen(["ip", "netns", "exec", tb.tg_netns, sys.executable, "-c", _CAPTURE,
                              tb.links[i].tg_iface, "300"], stdout=subprocess.PIPE, text=True) for i in (1, 0)]
    try:
        assert [c.stdout.readline().strip() for c in caps] == ["ready", "ready"]
        r = gen.run_trial(20_000, 0.03)
        assert r.tx_frames == r.rx_frames == 600
        got = [[bytes.fromhex(c.stdout.readline().strip()) for _ in range(300)] for c in caps]
    finally:
        for c in caps:
            c.kill()
            c.wait()
    plan = flows.plan_flows(fields, 50)
    reverse = flows.reverse_fields(fields)
    for direction, (dir_fields, dir_plan) in enumerate([(fields, plan), (reverse, plan.swapped())]):
        expected = [frames.bulk_template(flows.flow_values(dir_fields, dir_plan, k % 50), 200, direction).data
                    for k in range(300)]
        assert got[direction] == expected, f"direction {direction}"
