"""CI gates on the real embedded testbed: a baseline run of the reference DUT (OvS-DPDK with an
OpenFlow meter of known rate on its forwarding path), a run made worse on purpose (a 25 %
lower meter) that ``--baseline --max-regression 5%`` fails with exit 3 and a JUnit failure,
and an unchanged run that passes with exit 0; then ``vsbench compare`` of the two, from the
results store by run id.

The meter, not the switch, sets the figures here, so the verdicts are stable on this noisy
2-core machine: the meter rates are far below what trafgen sends even when loaded (it
delivered ~5.5 kfps of 64 B at worst here, with QEMU guests of other work on both cores).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from lxml import etree

from run_helpers import assert_nothing_left, require
from vsbench.cli.main import main

pytestmark = pytest.mark.integration

if os.geteuid() != 0:
    pytest.skip("needs root (network namespaces, hugepages)", allow_module_level=True)

XSD = Path(__file__).resolve().parents[1] / "data" / "junit" / "jenkins-junit.xsd"
METER_PPS = 4_000
TRIAL_S = 1


@pytest.fixture(autouse=True)
def _needs_plugins():
    require(("trafficgen", "trafgen"), ("vswitch", "ovs_dpdk"))


def meter_run(results: Path, meter_pps: int, *extra: str, capsys) -> tuple[int, dict]:
    # A binary search with 1 s trials: ~10 trials a run (the default multi search spent 21
    # deciding between neighbouring loads at the meter's edge); the gates, not the search,
    # are under test here.
    params = (f"meter_pps={meter_pps};search.max_load_fps={3 * METER_PPS};warmup_s=1;search.mode=binary;"
              f"relative_width=0.02;traffic.trial_duration_s={TRIAL_S};dut.meter_window_s={TRIAL_S};latency.enabled=false")
    code = main(["--test", "phy2phy_meter", "--vswitch", "ovs_dpdk", "--test-params", params,
                 "--results-dir", str(results), "--store", "--json", *extra])
    summary = json.loads(capsys.readouterr().out)
    assert_nothing_left(summary["run_id"])
    return code, summary


@pytest.mark.long  # tools/test.sh --long (CI runs it after the test command): see setup.cfg
def test_baseline_gate_fails_a_worse_run_and_passes_an_unchanged_one(tmp_path, capsys):
    results = tmp_path / "results"
    code, base = meter_run(results, METER_PPS, capsys=capsys)
    assert code == 0 and base["status"] == "complete", base

    junit = tmp_path / "worse.xml"
    gate = ["--baseline", base["run_id"], "--max-regression", "5%"]
    code, worse = meter_run(results, int(METER_PPS * 0.75), *gate, "--junit", str(junit), capsys=capsys)
    assert code == 3, worse
    [case] = worse["gates"]["cases"]
    assert case["status"] == "failed" and "ndr_fps" in case["failures"][0] and "significant" in case["failures"][0]
    doc = etree.parse(str(junit))
    etree.XMLSchema(etree.parse(str(XSD))).assertValid(doc)
    assert doc.getroot().get("failures") == "1"

    code, same = meter_run(results, METER_PPS, *gate, capsys=capsys)
    assert code == 0, same["gates"]
    assert same["gates"]["summary"]["passed"] == 1

    assert main(["compare", base["run_id"], worse["run_id"], "--results-dir", str(results),
                 "--format", "json", "--metric", "ndr_fps"]) == 0
    [row] = json.loads(capsys.readouterr().out)["rows"]
    change = row["changes"][1]
    assert -30 < change["percent"] < -20 and change["significance"] == "significant" and change["better"] is False
