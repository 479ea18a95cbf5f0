"""MoonGen output and histogram parsing, and the script/plugin/fake argument contract."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from vsbench.interfaces.traffic import TrafficProfile
from vsbench_plugins.trafficgen.moongen import output
from vsbench_plugins.trafficgen.moongen.plugin import shipped_script

# What libmoon's stats.lua and histogram.lua print (format strings of libmoon), coloured.
SAMPLE = (
    "[INFO]  Initializing DPDK. This will take a few seconds...\n"
    "\x1b[0;34m[Device: id=0] TX\x1b[0m: 0.50 Mpps, 256 Mbit/s (336 Mbit/s with framing)\n"
    "\x1b[1;36m[Device: id=1] RX\x1b[0m: 0.40 Mpps, 205 Mbit/s (269 Mbit/s with framing)\n"
    "[Latency] Samples: 980, Average: 15012.3 ns, StdDev: 2001.0 ns, Quartiles: 1.0/2.0/3.0 ns\r\n"
    "\x1b[0;34m[Device: id=0] TX\x1b[0m: 0.50 (StdDev 0.00) Mpps, 256 (StdDev 0) Mbit/s "
    "(336 Mbit/s with framing), total 500980 packets with 32062720 bytes (incl. CRC)\n"
    "\x1b[1;36m[Device: id=1] RX\x1b[0m: 0.40 (StdDev 0.01) Mpps, 205 (StdDev 1) Mbit/s "
    "(269 Mbit/s with framing), total 400980 packets with 25662720 bytes (incl. CRC)\n"
    "[REPORT] Device 0->1: Tx frames: 500000 Rx frames: 400000 frame loss: 100000\n"
    "[REPORT] Latency probes: sent 980 received 980\n"
)


def test_parse_coloured_output():
    out = output.parse_output(SAMPLE)
    assert [(r.tx_dev, r.rx_dev, r.tx_frames, r.rx_frames) for r in out.reports] == [(0, 1, 500000, 400000)]
    assert out.device_totals == {"Device: id=0 TX": 500980, "Device: id=1 RX": 400980}
    assert (out.probes_sent, out.probes_received) == (980, 980)
    assert out.latency_samples == 980 and out.latency_mean_ns == pytest.approx(15012.3)


def test_missing_reports_are_an_error():
    with pytest.raises(output.MoonGenOutputError):
        output.require_reports(output.parse_output("[INFO]  nothing\n"), 1)


def test_error_line_prefers_fatal():
    text = ("$ MoonGen x.lua\n[INFO]  Found 2 usable devices:\n"
            "\x1b[1;31m[FATAL] there are only 2 ports, tried to configure port id 7\x1b[0m\n"
            "stack traceback:\n\t[C]: in function 'error'\n")
    assert output.last_error_line(text) == "[FATAL] there are only 2 ports, tried to configure port id 7"


def test_histogram_csv_rounds_and_merges():
    lat, counts = output.parse_histogram_csv("1000.4,2\n999.6,1\n2000,5\n\n")
    assert lat == [1000, 2000] and counts == [3, 5]
    with pytest.raises(output.MoonGenOutputError):
        output.parse_histogram_csv("1000;2\n")


def _script_options() -> set[str]:
    text = shipped_script().read_text()
    return set(re.findall(r'parser:(?:option|flag)\("(--[a-z-]+)"', text))


def test_plugin_argv_uses_only_options_the_script_declares(tmp_path):
    from vsbench.interfaces.plugin import PluginContext
    from vsbench.system.resources import ResourceStack
    from vsbench_plugins.trafficgen.moongen import MoonGen

    gen = MoonGen(PluginContext("abcdef", {}, tmp_path, ResourceStack()))
    gen._script = "vsbench-trial.lua"
    argv = gen._trial_argv(TrafficProfile(64, flows=8), 1_000_000, 2.0, True, "/tmp/h.csv")
    used = {a for a in argv if a.startswith("--")}
    assert used <= _script_options()
    assert argv[argv.index("--size") + 1] == "60"  # frame size without CRC
    assert argv[argv.index("--rate-mpps") + 1] == "0.5"  # per direction
    assert "--bidirectional" in argv


def test_fake_moongen_accepts_what_the_script_declares():
    fake = (Path(__file__).resolve().parents[1] / "fakes" / "moongen" / "MoonGen").read_text()
    declared = set(re.findall(r'add_argument\("(--[a-z-]+)"', fake))
    assert declared == _script_options()


def test_shipped_script_is_valid_lua_5_1():
    """MoonGen runs LuaJIT (Lua 5.1 syntax); the script cannot run here, but it must parse."""
    import shutil
    import subprocess

    luac = shutil.which("luac5.1") or shutil.which("luac")
    if luac is None:
        pytest.skip("Debian package lua5.1 missing (tools/setup.sh --test installs it)")
    done = subprocess.run([luac, "-p", str(shipped_script())], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
