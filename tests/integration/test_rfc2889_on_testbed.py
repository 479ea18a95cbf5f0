"""RFC 2889 on the real embedded testbed: forwarding rate, address caching capacity and
address learning rate (trafgen, a real switch, short trials and small address counts).

The caching test on OvS-DPDK sets a small address table (``mac_table_size``) so the
search has a known answer: OvS holds that many entries, one of them the test port's own
address, and floods test frames to the rest, which the monitor port counts. The Linux bridge has no table limit: within a small
range its capacity is the top of the range, a lower bound. Each run is validated against
its schemas and leaves no namespace or process behind.
"""

from __future__ import annotations

import csv
import os

import pytest

from vsbench.results import recompute

from run_helpers import assert_reproducible_and_clean, build_plans, require, run

pytestmark = pytest.mark.integration

if os.geteuid() != 0:
    pytest.skip("needs root (network namespaces)", allow_module_level=True)


def _run(tmp_path, test, vswitch, params):
    require(("trafficgen", "trafgen"), ("vswitch", vswitch))
    outcome = run(tmp_path, build_plans(test, vswitch, "frame_sizes=[64];trial_duration=1;" + params))
    assert outcome.code == 0, outcome.console
    assert outcome.trials()  # every line valid against trial.schema.json
    [fs] = outcome.results()["tests"][0]["frame_sizes"]
    assert fs["status"] == "complete", fs
    row = next(csv.DictReader((outcome.run_dir / "results.csv").open()))
    assert recompute.verify(outcome.run_dir) == []  # every RFC 2889 figure from trials.jsonl
    return outcome, fs, row


def test_forwarding_rate_on_linux_bridge(tmp_path):
    outcome, fs, row = _run(tmp_path, "phy2phy_forwarding", "linux_bridge",
                            "traffic.rfc2889.load_percents=[25,50,100];traffic.generator_ceiling=false;"
                            "search.max_load_fps=100000")
    r = fs["rfc2889"]
    assert r["test"] == "forwarding" and [round(s["offered_load_fps"]) for s in r["steps"]] == [25000, 50000, 100000]
    assert 0 < r["forwarding_rate_fps"] <= r["max_forwarding_rate_fps"] <= 1.05 * 100000
    assert float(row["forwarding_rate_fps"]) == pytest.approx(r["forwarding_rate_fps"])
    assert "Forwarding rate (RFC 2889" in (outcome.run_dir / "report.html").read_text()
    assert "forwarding rate" in outcome.console
    assert_reproducible_and_clean(outcome)


def test_caching_capacity_on_ovs_dpdk_is_its_table_size(tmp_path):
    outcome, fs, row = _run(tmp_path, "phy2phy_caching", "ovs_dpdk",
                            "traffic.rfc2889.mac_table_size=64;traffic.rfc2889.min_addresses=16;"
                            "traffic.rfc2889.max_addresses=128;traffic.rfc2889.resolution_addresses=1")
    r = fs["rfc2889"]
    # 64 entries: the test port's own MAC (learned from the test frames' source) takes one,
    # so 63 learned addresses are held and a 64th evicts one (measured: 63, then 64 failed)
    assert r["bounded"] is True and r["caching_capacity_addresses"] == 63, r["iterations"]
    assert r["first_fail_addresses"] == 64 and r["flooded_frames"] >= 1
    assert row["caching_capacity_addresses"] == "63"
    assert "Address caching capacity" in (outcome.run_dir / "report.html").read_text()
    assert_reproducible_and_clean(outcome)


def test_caching_and_learning_on_linux_bridge(tmp_path):
    outcome, fs, row = _run(tmp_path, "phy2phy_caching", "linux_bridge",
                            "traffic.rfc2889.min_addresses=16;traffic.rfc2889.max_addresses=256")
    r = fs["rfc2889"]
    assert r["caching_capacity_addresses"] == 256 and r["bounded"] is False  # no table limit: a lower bound
    [it] = r["iterations"]
    assert it["passed"] and it["flooded_frames"] == 0 and it["test_rx_frames"] == 256
    assert_reproducible_and_clean(outcome)
    outcome, fs, row = _run(tmp_path / "learning", "phy2phy_learning", "linux_bridge",
                            "traffic.rfc2889.addresses=128;traffic.rfc2889.max_learning_rate_fps=50000")
    r = fs["rfc2889"]
    assert r["learning_rate_addresses_per_s"] is not None and r["learning_rate_addresses_per_s"] > 0
    assert float(row["learning_rate_addresses_per_s"]) == pytest.approx(r["learning_rate_addresses_per_s"])
    assert_reproducible_and_clean(outcome)
