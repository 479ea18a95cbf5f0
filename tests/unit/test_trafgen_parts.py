"""trafgen plugin parts without a testbed: command line, exit summary, shaper, probes,
settings, CPU split, testbed addressing."""

from __future__ import annotations

import struct
from pathlib import Path

import jsonschema
import pytest
import yaml
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from vsbench.interfaces.traffic import FlowFields
from vsbench.system import testbed
from vsbench.system.netlink import LinkCounters
from vsbench_plugins.trafficgen import trafgen_probe
from vsbench_plugins.trafficgen.trafgen import frames, process, shaper
from vsbench_plugins.trafficgen.trafgen.plugin import Trafgen, split_cpus
from vsbench_plugins.trafficgen.trafgen.settings import DEFAULTS, SETTINGS_SCHEMA

ROOT = Path(__file__).resolve().parents[2]

SUMMARY = """     1 packets to schedule
    60 bytes in total
Running! Hang up with ^C!


     2000000 packets outgoing
   120000000 bytes outgoing
           2 sec, 19010 usec on CPU0 (0 packets)
           1 sec, 998032 usec on CPU1 (2000000 packets)
"""


def test_argv_is_paced_by_the_kernel_and_leaves_the_host_alone():
    argv = process.trafgen_argv("/usr/sbin/trafgen", "vsbabcdeftg0", "/w/a.cfg", 1234, [1])
    assert argv[0] == "/usr/sbin/trafgen"
    assert argv[argv.index("--num") + 1] == "1234"
    assert argv[argv.index("--cpus") + 1] == "2"  # worker 1 pinned to CPU 1
    for flag in ("--no-sock-mem", "--notouch-irq", "--qdisc-path"):
        assert flag in argv
    assert "--rate" not in argv
    assert "--gap" in process.trafgen_argv("t", "i", "c", 1, None, tx_path="sendto")
    assert "--ring-size" in process.trafgen_argv("t", "i", "c", 1, None, tx_path="ring")
    assert "--jumbo-support" in process.trafgen_argv("t", "i", "c", 1, None, wire_len_bytes=9212)
    with pytest.raises(ValueError, match="forever"):
        process.trafgen_argv("t", "i", "c", 0, None)
    with pytest.raises(ValueError, match="CPU 0"):
        process.trafgen_argv("t", "i", "c", 5, [1], tx_path="sendto")


def test_exit_summary_is_parsed():
    report = process.parse_report(SUMMARY)
    assert report.tx_packets == 2_000_000 and report.tx_bytes == 120_000_000
    assert report.worker_packets == {0: 0, 1: 2_000_000}
    assert report.send_time_s == pytest.approx(1.998032)  # idle worker 0 does not count
    assert report.started
    empty = process.parse_report("")
    assert empty.tx_packets is None and empty.send_time_s is None and not empty.started
    assert process.parse_version("trafgen 0.6.8 (Flutternozzle), Git id: (none)") == "0.6.8"


def test_shaper_rate_counts_frames_without_fcs():
    argv = shaper.tbf_argv("eth9", 1_000_000, 64, 0.002)
    assert argv[:7] == ["tc", "qdisc", "replace", "dev", "eth9", "root", "tbf"]
    assert argv[argv.index("rate") + 1] == f"{1_000_000 * 60 * 8}bit"
    assert int(argv[argv.index("burst") + 1]) == 2000 * 60  # 2 ms of frames
    small = shaper.tbf_argv("eth9", 10, 1518, 0.002)
    assert int(small[small.index("burst") + 1]) == 1514  # room for one whole frame, no more
    slow = shaper.tbf_argv("eth9", 20, 64, 0.005)  # 10 frames in 0.5 s must not leave at once
    assert int(slow[slow.index("burst") + 1]) == 60
    medium = shaper.tbf_argv("eth9", 10_000, 64, 0.0005)  # 5 frames of bucket: floor of 16
    assert int(medium[medium.index("burst") + 1]) == 16 * 60
    with pytest.raises(ValueError):
        shaper.tbf_argv("eth9", 0, 64, 0.002)


@pytest.mark.parametrize("vlan", [None, 7])
def test_probe_frames_carry_sequence_and_time_with_valid_checksums(vlan):
    t = frames.build_template(FlowFields(vlan_id=vlan), 64, payload=bytes(14))
    pf = trafgen_probe.ProbeFrames(t.data, t.ip_offset)
    for seq, ns in ((0, 1), (41, 1_700_000_000_123_456_789), (0xFFFFFFFF, 2**63 - 1)):
        data = pf.stamp(seq, ns)
        assert len(data) == 60
        assert trafgen_probe.parse_probe(data, t.payload_offset) == (seq, ns)
        pkt = Ether(data)
        again = pkt.copy()
        del again[UDP].chksum
        assert pkt[UDP].chksum == Ether(bytes(again))[UDP].chksum
        assert pkt[IP].dst == "10.1.0.1"  # flow 0 of the bulk stream
    assert trafgen_probe.parse_probe(t.data, t.payload_offset) is None  # bulk is no probe


def _run_bpf(program, frame: bytes, pkttype: int) -> int:
    """A tiny classic-BPF interpreter for the opcodes the probe filter uses."""
    acc, pc = 0, 0
    while True:
        code, jt, jf, k = program[pc]
        if code == 0x06:
            return k
        if code in (0x20, 0x28, 0x30):
            if k == trafgen_probe._SKF_AD_PKTTYPE:
                acc = pkttype
            else:
                width = {0x20: 4, 0x28: 2, 0x30: 1}[code]
                if k + width > len(frame):
                    return 0
                acc = int.from_bytes(frame[k:k + width], "big")
            pc += 1
        elif code == 0x15:
            pc += 1 + (jt if acc == k else jf)
        else:  # pragma: no cover
            raise AssertionError(f"unexpected opcode {code:#x}")


def test_receive_filter_accepts_only_incoming_probes():
    prog = trafgen_probe.probe_filter()
    t = frames.build_template(FlowFields(), 64, payload=bytes(14))
    probe = trafgen_probe.ProbeFrames(t.data, t.ip_offset).stamp(3, 5)
    assert _run_bpf(prog, probe, 0) > 0
    assert _run_bpf(prog, probe, 4) == 0  # PACKET_OUTGOING
    assert _run_bpf(prog, t.data, 0) == 0  # bulk frame
    assert _run_bpf(prog, b"\x00" * 10, 0) == 0
    arp = bytes(12) + b"\x08\x06" + bytes(46)
    assert _run_bpf(prog, arp, 0) == 0
    for insn in prog:  # every packed instruction fits struct sock_filter
        struct.pack("HBBI", *insn)


def test_foreign_filter_counts_only_what_vsbench_did_not_send():
    prog = trafgen_probe.foreign_filter()
    bulk = frames.bulk_template(FlowFields(), 64).data
    probe_t = frames.build_template(FlowFields(), 64, payload=bytes(14))
    probe = trafgen_probe.ProbeFrames(probe_t.data, probe_t.ip_offset).stamp(1, 2)
    assert _run_bpf(prog, bulk, 0) == 0
    assert _run_bpf(prog, probe, 0) == 0
    igmp = bytes(Ether(dst="01:00:5e:00:00:16") / IP(proto=2, dst="224.0.0.22") / (b"\x22" + bytes(15)))
    arp = bytes(12) + b"\x08\x06" + bytes(46)
    other_udp = bytes(Ether() / IP() / UDP(dport=53) / bytes(18))
    for frame in (igmp, arp, other_udp):
        assert _run_bpf(prog, frame, 0) > 0


def test_shared_shaper_classifier_sends_each_direction_to_its_port():
    from vsbench_plugins.trafficgen.trafgen.plugin import direction_match_bytecode

    def program(text):
        count, *insns = text.split(",")
        parsed = [tuple(int(x) for x in insn.split()) for insn in insns]
        assert len(parsed) == int(count)
        return parsed

    for vlan in (None, 9):  # the kernel moves a VLAN tag out of the data before tc ingress
        f = FlowFields(vlan_id=vlan)
        fwd = frames.bulk_template(f, 64, direction=0).data
        rev = frames.bulk_template(f, 64, direction=1).data
        if vlan is not None:  # as tc sees them: untagged
            fwd, rev = fwd[:12] + fwd[16:], rev[:12] + rev[16:]
        assert _run_bpf(program(direction_match_bytecode(0)), fwd, 0) > 0
        assert _run_bpf(program(direction_match_bytecode(0)), rev, 0) == 0
        assert _run_bpf(program(direction_match_bytecode(1)), rev, 0) > 0
        assert _run_bpf(program(direction_match_bytecode(1)), fwd, 0) == 0


def test_yaml_defaults_equal_code_defaults_and_pass_the_schema():
    data = yaml.safe_load((ROOT / "conf" / "30_trafficgen_trafgen.yaml").read_text())
    section = data["trafficgen"]["trafgen"]
    assert section == DEFAULTS
    jsonschema.validate(section, SETTINGS_SCHEMA)
    assert Trafgen.settings_schema is SETTINGS_SCHEMA
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**section, "cpu": [0]}, SETTINGS_SCHEMA)  # a typo is an error
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**section, "tx_path": "fast"}, SETTINGS_SCHEMA)


def test_cpu_split_between_directions():
    assert split_cpus([0], 1) == [(0,)]
    assert split_cpus([0], 2) == [(0,), (0,)]
    assert split_cpus([0, 1], 2) == [(0,), (1,)]
    assert split_cpus([0, 1, 2, 3], 2) == [(0, 1), (2, 3)]
    assert split_cpus([3, 1, 2], 2) == [(1, 2), (3,)]
    assert split_cpus([2, 3], 1) == [(2, 3)]


def test_testbed_addresses_are_deterministic_and_local():
    mac = testbed.port_mac("a1b2c3", testbed.TG_ROLE, 1)
    assert mac == "02:a1:b2:c3:01:01"
    assert int(mac[:2], 16) & 0x02 and not int(mac[:2], 16) & 0x01  # local, unicast
    assert testbed.port_mac("a1b2c3", testbed.DUT_ROLE, 0) == "02:a1:b2:c3:02:00"
    assert testbed.generator_ip(1) == "198.18.1.1"
    assert testbed.cpu_mask([1]) == "2" and testbed.cpu_mask([0, 1, 4]) == "13"
    with pytest.raises(ValueError):
        testbed.port_mac("xyz", testbed.TG_ROLE, 0)


def test_sendto_path_cannot_be_pinned_elsewhere():
    problems = Trafgen.check_prerequisites({"engine": "trafgen", "tx_path": "sendto", "cpus": [1]})
    assert any("tx_path sendto" in str(p) for p in problems)
    assert not any("tx_path" in str(p) for p in Trafgen.check_prerequisites({"tx_path": "ring", "cpus": [0]}))


def test_capabilities_come_from_settings():
    from vsbench.interfaces.plugin import PluginContext
    from vsbench.system.resources import ResourceStack

    ctx = PluginContext(run_id="abcdef", settings={"max_rate_fps": 123456, "cpus": [1], "tx_path": "ring"},
                        log_dir=Path("/nonexistent"), resources=ResourceStack())
    gen = Trafgen(ctx)
    caps = gen.capabilities()
    assert caps.ports == 16 and caps.latency and caps.per_packet_latency and caps.needs_testbed
    assert caps.port_streams  # a router's traffic profiles: port-to-port streams
    assert caps.max_rate_fps == 123456 and caps.max_flows == DEFAULTS["max_flows"]
    assert gen.generator_cpus() == {1}


class _Port:
    def __init__(self, iface: str) -> None:
        self.iface = iface


class _Dir:
    def __init__(self, tx: str, rx: str) -> None:
        self.tx, self.rx = _Port(tx), _Port(rx)


def _draining(arrivals: list[dict[str, tuple[int, int, int]]]) -> Trafgen:
    """A trafgen whose ports' counters read ``arrivals`` in turn (the last one for ever):
    per interface (tx_packets, tx_dropped, rx_packets) since the trial began."""
    gen = Trafgen.__new__(Trafgen)
    gen._probe = None
    gen._directions = [_Dir("a", "b"), _Dir("b", "a")]
    reads = iter(arrivals)
    current = arrivals[0]

    def read():
        nonlocal current
        current = next(reads, current)
        return {i: LinkCounters(tx_packets=t, tx_dropped=d, rx_packets=r) for i, (t, d, r) in current.items()}

    gen._read_counters = read
    return gen


def test_the_drain_ends_once_every_frame_sent_has_arrived():
    gen = _draining([{"a": (100, 0, 90), "b": (100, 0, 100)},  # 10 of a->b still on their way
                     {"a": (100, 0, 100), "b": (100, 0, 100)}])
    assert gen._drain({"a": LinkCounters(), "b": LinkCounters()}, 2.0) < 0.5


def test_a_frame_short_or_one_too_many_waits_the_whole_drain():
    for counts in ({"a": (100, 1, 101), "b": (100, 0, 100)},  # one dropped by b's veth: never arrives
                   {"a": (100, 0, 100), "b": (100, 0, 99)},   # one lost
                   {"a": (100, 0, 100), "b": (100, 0, 101)}):  # one the DUT made itself
        gen = _draining([counts])
        assert gen._drain({"a": LinkCounters(), "b": LinkCounters()}, 0.2) >= 0.2, counts


def test_with_probes_the_drain_is_waited_out():
    gen = _draining([{"a": (100, 0, 100), "b": (100, 0, 100)}])
    gen._probe = object()  # the probe helper listens for the whole drain
    assert gen._drain({"a": LinkCounters(), "b": LinkCounters()}, 0.2) >= 0.2


class _StreamPort:
    def __init__(self, iface: str, index: int) -> None:
        self.iface, self.index = iface, index


class _Stream:
    def __init__(self, index: int, tx: _StreamPort, rx: _StreamPort) -> None:
        self.index, self.tx, self.rx = index, tx, rx


class _Counts:
    def __init__(self, reading: dict[str, list[int]]) -> None:
        self.reading = reading

    def read(self) -> dict[str, list[int]]:
        return self.reading


def _streams_gen(after_counts: dict[str, list[int]]) -> Trafgen:
    """Port a sends to b and c (streams 0, 1), b to a (stream 2); c only receives."""
    a, b, c = _StreamPort("a", 0), _StreamPort("b", 1), _StreamPort("c", 2)
    gen = Trafgen.__new__(Trafgen)
    gen._probe = None
    gen._directions = [_Stream(0, a, b), _Stream(1, a, c), _Stream(2, b, a)]
    gen._streams_before = {"a": [0, 0, 5], "b": [5, 0, 0], "c": [0, 0, 0]}
    gen._streamcount = _Counts(after_counts)
    return gen


def test_a_streams_profile_counts_each_stream_on_its_own_port_and_the_rest_as_wrong():
    gen = _streams_gen({"a": [0, 0, 105], "b": [102, 3, 0], "c": [0, 97, 0]})
    before = {i: LinkCounters() for i in "abc"}
    after = {"a": LinkCounters(tx_packets=201, rx_packets=100), "b": LinkCounters(tx_packets=100, rx_packets=100),
             "c": LinkCounters(rx_packets=97)}
    stats: dict = {"directions": []}
    dirs, wrong = gen._stream_counters(before, after, {}, None, stats)
    # a's 201 frames shared over its two streams (the senders send them in turn); b's 100 its one
    assert [(d.tx_port, d.rx_port, d.tx_frames) for d in dirs] == [(0, 1, 101), (0, 2, 100), (1, 0, 100)]
    # received: each stream on its own port only; stream 1's 3 frames that arrived on b went wrong
    assert [d.rx_frames for d in dirs] == [97, 97, 100] and wrong == 3
    ports = {p["rx_iface"]: p for p in stats["stream_ports"]}
    assert ports["b"]["rx_wrong_frames"] == 3 and ports["b"]["rx_uncounted_frames"] == 0


def test_a_streams_profile_drains_until_the_ports_together_received_what_they_sent():
    gen = _streams_gen({"a": [0] * 3, "b": [0] * 3, "c": [0] * 3})
    counts = [{"a": (200, 0, 100), "b": (100, 0, 60), "c": (0, 0, 100)},   # 40 still on their way
              {"a": (200, 0, 100), "b": (100, 0, 100), "c": (0, 0, 100)}]
    reads = iter(counts)
    current = counts[0]

    def read():
        nonlocal current
        current = next(reads, current)
        return {i: LinkCounters(tx_packets=t, tx_dropped=d, rx_packets=r) for i, (t, d, r) in current.items()}

    gen._read_counters = read
    assert gen._drain({i: LinkCounters() for i in "abc"}, 2.0) < 0.5


def test_several_port_pairs_without_streams_are_refused_in_one_line():
    """Several pairs come as port-to-port streams (the runner's on_port_pairs); a profile
    without them is one pair's, and four ports for it are refused before anything is set up."""
    from vsbench.interfaces.plugin import PluginContext, PluginError
    from vsbench.interfaces.traffic import GeneratorPort, TrafficProfile
    from vsbench.measurement.profiles import on_port_pairs
    from vsbench.system.resources import ResourceStack

    for engine in ("trafgen", "pacer", "xdp"):
        gen = Trafgen(PluginContext(run_id="abcdef", settings={"engine": engine}, log_dir=Path("/nonexistent"),
                                    resources=ResourceStack()))
        ports = [GeneratorPort(index=i, iface=f"p{i}", netns="vsb-x") for i in range(4)]
        with pytest.raises(PluginError, match=r"^trafgen sends a profile without streams between one pair of "
                                              r"ports, got 4 \(several pairs come as port-to-port streams"):
            gen.configure(TrafficProfile(64), ports)
        assert on_port_pairs(TrafficProfile(64), 2).directions == 4  # what the runner gives it instead
