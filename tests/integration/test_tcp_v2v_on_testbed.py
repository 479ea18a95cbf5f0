"""Report 5's TC1 and TC3 on the real embedded testbed: TCP endpoints on the ports guests
attach to (deployment v2v), 2-s iperf3 runs.

* N = 2 clients sending to one server at once: both carry traffic, and each client's
  bytes are counted on their own;
* VM to VM with TSO on and off: the segments really cross the switch (OvS-DPDK's main
  thread received them -- with TSO on whole, fewer packets than MTU-sized segments would
  be --; the Linux bridge's ports counted them);
* teardown leaves nothing: no namespace, no tap, no iperf3, no ovs-vswitchd.
"""

from __future__ import annotations

import os

import pytest

from run_helpers import assert_nothing_left, build_plans, require, run

pytestmark = pytest.mark.integration

if os.geteuid() != 0:
    pytest.skip("needs root (network namespaces, hugepages)", allow_module_level=True)

SHORT = "trial_duration=2;omit=0"


@pytest.mark.parametrize("vswitch", ["ovs_dpdk", "linux_bridge"])
def test_two_clients_both_send_to_one_server(tmp_path, vswitch):
    require(("trafficgen", "iperf3"), ("vswitch", vswitch))
    plans = build_plans("tcp_many_to_one", vswitch, f"{SHORT};tcp.clients=[2];tcp.tso=[true]", trafficgen="iperf3")
    assert len(plans) == 1
    outcome = run(tmp_path, plans)
    assert outcome.code == 0, outcome.console
    [test] = outcome.results()["tests"]
    assert test["topology"]["clients"] == 2
    assert test["topology"]["endpoint_ports"] == ("tap" if vswitch == "ovs_dpdk" else "veth")
    assert any("stand in for the VMs" in n for n in test["notes"]), test["notes"]
    [fs] = test["frame_sizes"]
    assert fs["status"] == "complete", fs
    tcp = fs["tcp"]
    assert len(tcp["client_gbps"]) == 2 and min(tcp["client_gbps"]) > 0.01, tcp  # both clients carried traffic
    assert tcp["gbps"] == pytest.approx(sum(tcp["client_gbps"]), rel=0.02)
    assert tcp["options"]["clients"] == 2 and tcp["options"]["tso"] is True
    assert tcp["switch_cores"] is not None and tcp["cores_per_gbps"] > 0
    [trial] = outcome.trials()
    run_doc = trial["generator_stats"]["tcp"]
    clients = run_doc["clients"]
    assert len(clients) == 2 and all(c["received_bytes"] > 1_000_000 for c in clients), clients
    assert run_doc["received_bytes"] == sum(c["received_bytes"] for c in clients)
    assert len(run_doc["stats"]["interfaces"]) == 3  # two clients and the server, each its own port
    assert_nothing_left(outcome.run_id)


@pytest.mark.long
@pytest.mark.parametrize("vswitch", ["ovs_dpdk", "linux_bridge"])
def test_vm_to_vm_crosses_the_switch_with_tso_on_and_off(tmp_path, vswitch):
    require(("trafficgen", "iperf3"), ("vswitch", vswitch))
    plans = build_plans("tcp_vm_to_vm", vswitch, SHORT, trafficgen="iperf3")
    outcome = run(tmp_path, plans)
    assert outcome.code == 0, outcome.console
    tests = outcome.results()["tests"]
    assert [t["variant"] for t in tests] == [{"tcp.tso": True}, {"tcp.tso": False}]
    trials = outcome.trials()
    assert len(trials) == 2
    for test, trial in zip(tests, trials):
        [fs] = test["frame_sizes"]
        assert fs["status"] == "complete", fs  # TSO on is not skipped: tap ports carry its segments
        assert fs["tcp"]["gbps"] > 0.01 and fs["tcp"]["cores_per_gbps"] > 0, fs["tcp"]
        received = trial["generator_stats"]["tcp"]["received_bytes"]
        datapath = trial["switch"]["datapath"]
        if vswitch == "ovs_dpdk":
            packets = datapath["pmd"]["packets_received"]  # its main thread serves the tap ports
            assert packets > 0, datapath
            mtu_segments = received / 1448
            if test["variant"]["tcp.tso"]:  # 64 KB segments crossed whole: far fewer packets
                assert packets < mtu_segments / 2, (packets, received)
            else:
                assert packets >= mtu_segments * 0.99, (packets, received)
        else:
            ports = datapath["ports"]
            assert len(ports) == 2 and all(p["rx_packets"] > 100 for p in ports.values()), ports
    assert_nothing_left(outcome.run_id)


def test_multiqueue_on_tap_ports_is_refused_with_the_reason(tmp_path):
    require(("trafficgen", "iperf3"), ("vswitch", "ovs_dpdk"))
    plans = build_plans("tcp_vm_to_vm", "ovs_dpdk", f"{SHORT};tcp.tso=[false];vswitch.ovs_dpdk.n_rxq=2",
                        trafficgen="iperf3")
    outcome = run(tmp_path, plans)
    assert outcome.code == 1
    text = " ".join(outcome.console.split())
    assert "n_rxq 2 cannot apply to tap port" in text and "one queue" in text, text
    assert_nothing_left(outcome.run_id)
