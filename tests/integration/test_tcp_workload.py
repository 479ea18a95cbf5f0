"""TCP workloads on the real embedded testbed: iperf3 endpoints in namespaces of their own,
real connections across the switch, 2-s runs.

Every plan must report a measured goodput with the endpoints' and the switch's CPU, the
run must end with the feature-matrix table of the plans, and nothing -- no endpoint
namespace, no iperf3 -- may be left behind.
"""

from __future__ import annotations

import os
import re
import time

import pytest

from run_helpers import assert_nothing_left, build_plans, require, run

pytestmark = pytest.mark.integration

if os.geteuid() != 0:
    pytest.skip("needs root (network namespaces, hugepages)", allow_module_level=True)


@pytest.mark.parametrize("vswitch, params", [
    ("linux_bridge", "trial_duration=2;omit=0"),                    # TSO on and off (the testcase's matrix)
    # TSO on and off: the TSO-on plan is skipped (af_packet ports), the matrix's gains are
    # against the TSO-off plan, and the table says why
    ("ovs_dpdk", "trial_duration=2;omit=0;tcp.gso=true"),
])
def test_tcp_tput_measures_goodput_and_cpu(tmp_path, vswitch, params):
    require(("trafficgen", "iperf3"), ("vswitch", vswitch))
    plans = build_plans("tcp_tput", vswitch, params, trafficgen="iperf3")
    outcome = run(tmp_path, plans)
    assert outcome.code == 0, outcome.console
    tests = outcome.results()["tests"]
    assert len(tests) == len(plans) == 2
    skipped = [t for t in tests if t["frame_sizes"][0]["status"] == "not-run"]
    if vswitch == "ovs_dpdk":
        assert [t["variant"] for t in skipped] == [{"tcp.tso": True}], tests
        assert skipped[0]["frame_sizes"][0]["notes"][0].startswith("skipped: tcp.tso=true cannot cross ovs_dpdk")
    else:
        assert skipped == []
    measured = [t for t in tests if t not in skipped]
    for test in measured:
        [fs] = test["frame_sizes"]
        assert fs["status"] == "complete" and fs["frame_size_bytes"] == 1518, fs
        tcp = fs["tcp"]
        assert tcp["gbps"] > 0.01, tcp  # a real transfer, not a handshake
        assert tcp["retransmits"] is not None and tcp["sender_cpu_percent"] > 0
        assert tcp["switch_cores"] is not None and tcp["cores_per_gbps"] > 0
        assert tcp["rtt_mean_us"] and tcp["cpu_oversubscribed"] is False
    trials = outcome.trials()
    assert [t["role"] for t in trials] == ["tcp"] * len(measured)
    assert all(t["generator_stats"]["tcp"]["received_bytes"] > 0 for t in trials)
    if vswitch == "ovs_dpdk":  # af_packet ports: the endpoints checksum in software
        assert any("tcp.tx_checksum=false" in n for n in fs["notes"]), fs["notes"]
        assert trials[0]["generator_stats"]["tcp"]["spec"]["tx_checksum"] is False
    # the table the CLI prints after the run: every variant, gains against one that ran
    from vsbench.cli.compare_cmd import load_matrices

    [fm] = load_matrices(outcome.run_dir, None)
    assert fm.metric == "tcp_gbps" and [v.settings for v in fm.variants] == [{"tcp.tso": True}, {"tcp.tso": False}]
    assert fm.cells[(1, 1518)].value is not None
    if vswitch == "ovs_dpdk":
        assert fm.baseline_of(1518) == 1 and fm.cells[(0, 1518)].gap == "skipped"
        assert any(n.startswith("baseline at 1518 B: tso=False") for n in fm.notes), fm.notes
        from io import StringIO

        from rich.console import Console

        from vsbench.cli.compare_cmd import print_matrices

        text = StringIO()
        print_matrices([fm], Console(file=text, width=250, color_system=None))
        assert "tcp_gbps against tso=False" in text.getvalue() and " skipped " in text.getvalue(), text.getvalue()
    else:
        assert fm.baseline_of(1518) == 0 and fm.cells[(1, 1518)].change.percent is not None
    assert_nothing_left(outcome.run_id)


def test_a_connection_that_cannot_cross_fails_fast_and_says_why(tmp_path):
    """Endpoints that leave their checksums to the NIC across OvS-DPDK's af_packet ports:
    every segment arrives with an unfinished checksum and is dropped. The run must fail
    within iperf3's connect timeout (not hang), saying where the connection stopped."""
    require(("trafficgen", "iperf3"), ("vswitch", "ovs_dpdk"))
    plans = build_plans("tcp_tput", "ovs_dpdk", "trial_duration=2;omit=0;tcp.tso=false;tcp.tx_checksum=true",
                        trafficgen="iperf3")
    started = time.monotonic()
    outcome = run(tmp_path, plans)
    assert outcome.code != 0
    [fs] = outcome.results()["tests"][0]["frame_sizes"]
    assert fs["status"] == "failed"
    text = " ".join(outcome.console.split())
    assert "unable to connect" in text and "the server saw no connection" in text, text
    assert re.search(r"server endpoint: (\d+) TCP segments in, \1 with bad checksums", text), text
    assert time.monotonic() - started < 25  # switch start + 5 s connect timeout, not 30 s more
    assert_nothing_left(outcome.run_id)
