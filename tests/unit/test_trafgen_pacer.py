"""The pacer engine's pure parts: its configuration, command line and summary, and the
sender itself run without a network (its frame builder through a pipe is not reachable,
so the frames are checked on the loopback testbed: tests/integration/test_trafgen_loopback.py)."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from vsbench.interfaces.traffic import FlowFields, PacingStats
from vsbench_plugins.trafficgen.trafgen import flows, frames, pacer


def _direction_like(iface, fields, n_flows, size=64):
    class D:  # what pacer.streams_for reads of the plugin's _Direction
        pass

    d = D()
    d.tx = type("P", (), {"iface": iface})()
    d.fields = fields
    d.plan = flows.plan_flows(fields, n_flows)
    d.template = frames.bulk_template(fields, size, 0)
    return d


def test_counter_fields_are_the_flow_plan_at_the_header_offsets():
    fields = FlowFields(vary=("src_ip", "dst_port", "src_mac"))
    plan = flows.plan_flows(fields, 1000)
    counters = pacer.counter_fields(fields, plan, ip_offset=14)
    by_offset = {c.offset: c for c in counters}
    assert by_offset[26].width == 4 and by_offset[26].base == 0x0A000001  # src_ip 10.0.0.1
    assert by_offset[36].width == 2 and by_offset[36].base == 1024      # dst_port
    assert by_offset[8].width == 4 and by_offset[8].base == 0x00000001  # src_mac, last 4 bytes
    assert {c.period for c in counters} <= {1000} | {p for _, p in plan.periods}
    # a VLAN tag moves the IP fields, not the MACs
    tagged = pacer.field_offsets(18)
    assert tagged["src_ip"] == (30, 4) and tagged["dst_mac"] == (2, 4)


def test_render_config_has_one_block_per_stream():
    d0 = _direction_like("tg0", FlowFields(), 100)
    d1 = _direction_like("tg1", flows.reverse_fields(FlowFields()), 100)
    text = pacer.render_config(pacer.streams_for([d0, d1]), "a comment\nsecond line")
    lines = text.splitlines()
    assert lines[:2] == ["# a comment", "# second line"]
    assert [l.split()[1] for l in lines if l.startswith("stream ")] == ["tg0", "tg1"]
    frames_hex = [l.split()[1] for l in lines if l.startswith("frame ")]
    assert bytes.fromhex(frames_hex[0]) == d0.template.data and len(bytes.fromhex(frames_hex[0])) == 60
    assert sum(l.startswith("field ") for l in lines) == 4  # src_ip and dst_ip per direction
    with pytest.raises(ValueError):
        pacer.render_config([])


def test_argv_says_rate_count_cpu_and_priority():
    argv = pacer.argv("/x/pacer", "/w/p.cfg", 1000, 250000.0, cpu=0, tx="mmsg", batch=16,
                      ring_slots=512, fifo_priority=1, yield_period_us=500, yield_us=30, catchup_share=0.5)
    assert argv[:3] == ["/x/pacer", "-c", "/w/p.cfg"]
    opts = dict(zip(argv[3::2], argv[4::2]))
    assert opts["-n"] == "1000" and float(opts["-r"]) == 250000.0 and opts["-t"] == "mmsg"
    assert opts["-C"] == "0" and opts["-P"] == "1" and opts["-b"] == "16" and opts["-R"] == "512"
    assert opts["-Y"] == "500,30" and float(opts["-K"]) == 0.5
    assert argv[-1] == "-w"
    unpaced = pacer.argv("/x/pacer", "/w/p.cfg", 10, None, cpu=None, fifo_priority=0, wait_for_go=False)
    assert unpaced[unpaced.index("-r") + 1] == "0" and "-C" not in unpaced and "-P" not in unpaced
    assert "-K" not in pacer.argv("/x/pacer", "/w/p.cfg", 10, None, cpu=0, catchup_share=1.0)
    with pytest.raises(ValueError):
        pacer.argv("/x", "/c", 0, 1.0, cpu=0)
    with pytest.raises(ValueError):
        pacer.argv("/x", "/c", 1, 1.0, cpu=0, tx="xdp")


SUMMARY = {"sent": 20000, "asked": 20000, "streams": [{"iface": "tg0", "sent": 20000}], "rate_fps": 20000.0,
           "first_ns": 1000, "last_ns": 999_950_000, "span_s": 0.99995, "elapsed_s": 1.0, "max_frames_1ms": 21,
           "windows_10ms": 9901, "max_dev_frames_10ms": 3.0, "aligned_windows_10ms": 99,
           "max_dev_frames_aligned_10ms": 1.0, "max_late_ns": 30_000, "max_gap_ns": 40_000,
           "loops": 1, "stopped": False, "bin_ns": 100_000, "yields": 0}


def test_summary_gives_send_time_and_pacing():
    s = pacer.parse_summary("ready\nrunning\n" + json.dumps(SUMMARY) + "\n")
    assert s is not None and s.sent == 20000 and s.per_stream == {"tg0": 20000}
    assert s.send_time_s() == pytest.approx(0.99995 + 1 / 20000)
    p = s.pacing()
    assert isinstance(p, PacingStats)
    assert p.nominal_frames_per_window == pytest.approx(200) and p.windows == 99
    assert p.max_sliding_deviation_frames == 3.0
    assert p.max_window_deviation_ratio == pytest.approx(0.005)
    assert p.burst_ratio == pytest.approx(21 / 20) and p.max_late_s == pytest.approx(30e-6)
    unpaced = pacer.parse_summary(json.dumps({**SUMMARY, "rate_fps": 0.0}))
    assert unpaced.pacing() is None and unpaced.send_time_s() == pytest.approx(0.99995)
    assert pacer.parse_summary("no summary here") is None


needs_cc = pytest.mark.skipif(pacer.compiler() is None, reason="no C compiler (apt-get install gcc libc6-dev)")


@needs_cc
def test_sender_builds_once_per_source_version(tmp_path):
    first = pacer.ensure_built(tmp_path)
    assert first.name == f"vsbench-pacer-{pacer.source_digest()}" and first.stat().st_mode & 0o111
    mtime = first.stat().st_mtime_ns
    assert pacer.ensure_built(tmp_path) == first and first.stat().st_mtime_ns == mtime  # cached
    assert [p.name for p in tmp_path.iterdir()] == [first.name]  # no temporary left behind


@needs_cc
def test_sender_refuses_bad_configuration_in_one_line(tmp_path):
    binary = pacer.ensure_built(tmp_path)
    cfg = tmp_path / "bad.cfg"
    cfg.write_text("stream lo\nframe 0011\nip 14\n")
    out = subprocess.run([str(binary), "-c", str(cfg), "-n", "1"], capture_output=True, text=True, timeout=10)
    assert out.returncode == 1 and out.stderr.strip() == "vsbench-pacer: frame too short for Ethernet/IPv4/UDP"
    out = subprocess.run([str(binary), "-n", "1"], capture_output=True, text=True, timeout=10)
    assert out.returncode == 2 and "usage:" in out.stderr


def test_missing_compiler_is_one_line_with_the_fix(tmp_path, monkeypatch):
    monkeypatch.setattr(pacer, "compiler", lambda: None)
    with pytest.raises(pacer.PacerBuildError, match=r"apt-get install gcc libc6-dev"):
        pacer.ensure_built(tmp_path)


def test_plugin_prerequisites_name_the_compiler(monkeypatch, tmp_path):
    from vsbench_plugins.trafficgen.trafgen import Trafgen

    monkeypatch.setenv("VSBENCH_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(pacer, "compiler", lambda: None)
    problems = Trafgen.check_prerequisites({"engine": "pacer"})
    assert any("pacer sender" in p.what and "gcc" in p.remedy for p in problems)
    assert not any("pacer" in p.what for p in Trafgen.check_prerequisites({"engine": "trafgen"}))
    problems = Trafgen.check_prerequisites({"engine": "pacer", "pacer_binary": str(tmp_path / "nope")})
    assert any("pacer_binary" in p.what for p in problems)


def test_plugin_prerequisites_name_ethtool_for_the_xdp_engine(monkeypatch):
    """Engine xdp switches GRO on at its ports' veth peers with ethtool: without it a run
    stops before it starts, not at its first configure."""
    from vsbench_plugins.trafficgen.trafgen import Trafgen, plugin

    real_which = plugin.which
    monkeypatch.setattr(plugin, "which", lambda name: None if name == "ethtool" else real_which(name))
    problems = Trafgen.check_prerequisites({"engine": "xdp"})
    assert any("ethtool" in p.what and p.remedy == "apt-get install ethtool" for p in problems)
    assert not any("ethtool" in p.what for p in Trafgen.check_prerequisites({"engine": "trafgen"}))


def test_xdp_argv_says_rate_count_cpu_batch_and_niceness():
    argv = pacer.xdp_argv("/x/xdpgen", "/w/p.cfg", 1000, 250000.0, cpu=0, batch=8, nice=-20, catchup_share=1.0)
    assert argv[:3] == ["/x/xdpgen", "-c", "/w/p.cfg"] and argv[-1] == "-w"
    opts = dict(zip(argv[3:-1:2], argv[4:-1:2]))
    assert opts["-n"] == "1000" and float(opts["-r"]) == 250000.0 and opts["-b"] == "8"
    assert opts["-C"] == "0" and opts["-N"] == "-20" and float(opts["-K"]) == 1.0
    unpaced = pacer.xdp_argv("/x/xdpgen", "/w/p.cfg", 10, None, cpu=None, catchup_share=1.0, wait_for_go=False)
    assert unpaced[unpaced.index("-r") + 1] == "0" and "-C" not in unpaced and "-N" not in unpaced
    assert "-K" not in unpaced and "-w" not in unpaced
    with pytest.raises(ValueError):
        pacer.xdp_argv("/x", "/c", 0, 1.0, cpu=0)


def test_summary_carries_the_late_frames():
    s = pacer.parse_summary(json.dumps({**SUMMARY, "late_frames": 37}))
    assert s.late_frames == 37 and s.pacing().late_frames == 37
    assert pacer.parse_summary(json.dumps(SUMMARY)).pacing().late_frames is None  # an older sender


@needs_cc
def test_each_sender_builds_under_its_own_name_and_refuses_bad_input_alike(tmp_path):
    xdp = pacer.ensure_built(tmp_path, sender=pacer.XDPGEN)
    assert xdp.name == f"vsbench-xdpgen-{pacer.source_digest(pacer.XDPGEN)}"
    assert pacer.source_digest(pacer.XDPGEN) != pacer.source_digest(pacer.PACER)
    cfg = tmp_path / "bad.cfg"
    cfg.write_text("stream lo\nframe 0011\nip 14\n")  # the shared configuration reader's check
    out = subprocess.run([str(xdp), "-c", str(cfg), "-n", "1"], capture_output=True, text=True, timeout=10)
    assert out.returncode == 1 and out.stderr.strip() == "vsbench-xdpgen: frame too short for Ethernet/IPv4/UDP"
    out = subprocess.run([str(xdp), "-n", "1"], capture_output=True, text=True, timeout=10)
    assert out.returncode == 2 and "usage:" in out.stderr


def test_probe_failure_is_the_senders_last_line(tmp_path):
    fake = tmp_path / "fake-xdpgen"
    fake.write_text("#!/bin/sh\necho 'vsbench-xdpgen: this kernel does not run live XDP frames' >&2\nexit 1\n")
    fake.chmod(0o755)
    assert pacer.probe_xdp(str(fake)) == "vsbench-xdpgen: this kernel does not run live XDP frames"
    ok = tmp_path / "ok-xdpgen"
    ok.write_text("#!/bin/sh\necho ok\n")
    ok.chmod(0o755)
    assert pacer.probe_xdp(str(ok)) is None
