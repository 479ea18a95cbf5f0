"""Integration testcases (``vsbench --integration``) on the real embedded testbed.

Every shipped one passes on ovs_dpdk and on linux_bridge (a real switch, real trafgen
traffic for the two that send), with one JUnit case per step and nothing left behind; and a
deliberately wrong step -- a flow the traffic does not take, then a counter check -- fails
the test with that step named, exit 1, the JUnit file red, and the topology torn down.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from run_helpers import assert_nothing_left, require
from vsbench.results import schema

pytestmark = pytest.mark.integration

if os.geteuid() != 0:
    pytest.skip("needs root (network namespaces)", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]
WRONG = ROOT / "tests" / "data" / "integration_wrong"
SHIPPED = sorted(p.stem for p in (ROOT / "testcases" / "integration").glob("*.yaml"))


def vsbench(tmp_path: Path, *args: str) -> tuple[int, str, Path, dict, ET.Element]:
    """Run the CLI; (exit code, its output, run dir, results.json validated, JUnit root)."""
    results_dir, junit = tmp_path / "results", tmp_path / "junit.xml"
    results_dir.mkdir()
    proc = subprocess.run([sys.executable, "-m", "vsbench", "--integration", *args, "--results-dir",
                           str(results_dir), "--junit", str(junit)], capture_output=True, text=True, timeout=900)
    [run_dir] = list(results_dir.iterdir())
    results = json.loads((run_dir / "results.json").read_text())
    schema.validate(results, "results.schema.json")
    return proc.returncode, proc.stdout + proc.stderr, run_dir, results, ET.parse(junit).getroot()


@pytest.mark.parametrize("vswitch", ["linux_bridge", "ovs_dpdk"])
def test_every_shipped_integration_testcase_passes(tmp_path, vswitch):
    require(("trafficgen", "trafgen"), ("vswitch", vswitch))
    code, output, run_dir, results, junit = vsbench(tmp_path, "--vswitch", vswitch)
    assert code == 0, output[-3000:]
    tests = {t["testcase"]: t for t in results["tests"]}
    assert sorted(tests) == SHIPPED and len(SHIPPED) >= 12
    for name, test in tests.items():
        assert test["status"] == "complete", (name, test["error"])
        assert test["steps"] and all(s["status"] == "passed" for s in test["steps"]), name
    traffic = tests["vswitch_p2p_flow_traffic"]["steps"]
    sent = next(s for s in traffic if s["kind"] == "send_traffic")["values"]
    assert sent["tx_frames"] >= 9000 and sent["rx_frames"] >= 0.99 * sent["tx_frames"]
    tunnel = tests["vswitch_overlay_vxlan"]["steps"]
    sent = next(s for s in tunnel if s["kind"] == "send_traffic")["values"]
    before, after = [s["values"] for s in tunnel if s["kind"] == "link_counters"]
    left = after["tx_packets"] - before["tx_packets"]
    assert left >= 0.99 * sent["tx_frames"] > 0
    assert (after["tx_bytes"] - before["tx_bytes"]) / left >= 174  # 124 B + the 50 B of VXLAN
    assert junit.get("failures") == "0" and junit.get("errors") == "0"
    assert int(junit.get("tests")) == sum(len(t["steps"]) for t in results["tests"])
    assert "Integration steps" in (run_dir / "report.html").read_text()
    assert_nothing_left(run_dir.name.rsplit("-", 1)[1])


@pytest.mark.parametrize("vswitch, case", [("ovs_dpdk", "vswitch_wrong_flow_nomatch"),
                                           ("linux_bridge", "vswitch_wrong_flow_ingress")])
def test_a_wrong_flow_fails_with_the_step_named(tmp_path, vswitch, case):
    require(("trafficgen", "trafgen"), ("vswitch", vswitch))
    code, output, run_dir, results, junit = vsbench(tmp_path, "--vswitch", vswitch, "--test", case,
                                                    "--testcase-dir", str(WRONG))
    assert code == 1, output[-3000:]
    [test] = results["tests"]
    assert test["status"] == "failed"
    assert "step 6 check_counters rx_ok failed" in test["error"]
    by_name = {s["name"]: s for s in test["steps"] if s["name"]}
    assert by_name["t1"]["status"] == "passed" and by_name["t1"]["values"]["tx_frames"] >= 4500
    assert by_name["t1"]["values"]["rx_frames"] < 0.01 * by_name["t1"]["values"]["tx_frames"]
    assert by_name["rx_ok"]["status"] == "failed"
    assert test["steps"][-1]["status"] == "not-run"  # the delete_bridge after it ...
    assert "rx_ok" in output  # the console names the step
    assert junit.get("failures") == "1"
    [failed] = [c for c in junit.iter("testcase") if c.find("failure") is not None]
    assert failed.get("name") == "6 check_counters rx_ok"
    assert "does not hold" in failed.find("failure").get("message")
    assert_nothing_left(run_dir.name.rsplit("-", 1)[1])  # ... yet the bridge and the switch are gone
