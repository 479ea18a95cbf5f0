"""TCP workloads (traffic type tcp, the iperf3 generator): the pure parts -- iperf3's JSON
report, the run spec from the configuration, the reported point (median run, CPU per
Gbit/s), the preflight refusals, and the figures comparisons read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vsbench.interfaces.tcp import TcpSpec
from vsbench.interfaces.traffic import TrialResult
from vsbench.results import run_metrics
from vsbench.results.model import TrialIdentity, TrialRecord
from vsbench.runner import config as cfg
from vsbench.runner import plugins, preflight, testcases, traffic_tcp
from vsbench.runner.traffic_job import TrafficTypeError
from vsbench_plugins.trafficgen.iperf3.endpoints import endpoint_ip, offload_argv
from vsbench_plugins.trafficgen.iperf3.parse import ReportError, parse_report, tcp_counters

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "tests" / "data" / "iperf3" / "client_2streams.json"


def test_iperf3_report_is_summed_over_streams():
    result = parse_report(SAMPLE.read_text(), 2)
    doc = json.loads(SAMPLE.read_text())
    assert result.sent_bytes == doc["end"]["sum_sent"]["bytes"]
    assert result.received_bytes == doc["end"]["sum_received"]["bytes"]
    assert result.gbps == pytest.approx(result.received_bytes * 8 / result.duration_s / 1e9)
    assert result.retransmits == 0 and result.streams == 2
    assert result.sender_cpu_percent == pytest.approx(doc["end"]["cpu_utilization_percent"]["host_total"])
    assert result.rtt_mean_us is not None and result.rtt_min_us <= result.rtt_mean_us <= result.rtt_max_us


def test_iperf3_errors_are_one_line():
    with pytest.raises(ReportError, match="unable to connect"):
        parse_report(json.dumps({"start": {}, "intervals": [], "end": {}, "error": "unable to connect to server"}), 1)
    with pytest.raises(ReportError, match="no JSON"):
        parse_report("iperf3: error - boom\n", 1)
    with pytest.raises(ReportError, match="no end summary"):
        parse_report(json.dumps({"end": {}}), 1)


def test_tcp_counters_of_an_endpoint():
    snmp = ("Ip: Forwarding DefaultTTL\nIp: 1 64\n"
            "Tcp: RtoAlgorithm RtoMin InSegs OutSegs InCsumErrors\nTcp: 1 200 5 7 3\n")
    assert tcp_counters(snmp) == {"RtoAlgorithm": 1, "RtoMin": 200, "InSegs": 5, "OutSegs": 7, "InCsumErrors": 3}
    assert tcp_counters("Ip: a\nIp: 1\n") == {} and tcp_counters("Tcp: a b\nTcp: 1\n") == {}


def test_offloads_and_addresses():
    assert offload_argv("ethtool", "x0", TcpSpec(1, tso=False, gro=True)) == ["ethtool", "-K", "x0", "tso", "off", "gro", "on"]
    assert offload_argv("ethtool", "x0", TcpSpec(1)) is None
    assert offload_argv("ethtool", "x0", TcpSpec(1, tx_checksum=False, tso=False)) == ["ethtool", "-K", "x0", "tx", "off", "tso", "off"]


class _Switch:
    name = "ovs_dpdk"

    def __init__(self, carries: bool) -> None:
        self.carries = carries

    def carries_offloaded_frames(self) -> bool:
        return self.carries


def test_endpoints_finish_their_frames_across_a_switch_that_reads_bytes():
    """Across OvS-DPDK's af_packet ports a checksum left to the NIC arrived unfinished (every
    SYN in the server's TcpInCsumErrors): the endpoints checksum in software, and TSO-on is
    skipped; a kernel switch, or a plan that says tx_checksum, is left as asked."""
    config = {"tcp": {"tso": None, "gso": True}}
    new, skip, note = traffic_tcp.endpoints_for(config, "tcp", _Switch(False))
    assert skip is None and new["tcp"] == {"tso": False, "gso": True, "tx_checksum": False} and "software" in note
    assert traffic_tcp.spec_of(new).tx_checksum is False and config["tcp"]["tso"] is None  # the plan's own is untouched
    new, skip, note = traffic_tcp.endpoints_for({"tcp": {"tso": True}}, "tcp", _Switch(False))
    assert skip.startswith("skipped: tcp.tso=true cannot cross ovs_dpdk") and note is None
    asked = {"tcp": {"tx_checksum": True}}
    assert traffic_tcp.endpoints_for(asked, "tcp", _Switch(False)) == (asked, None, None)
    assert traffic_tcp.endpoints_for(config, "tcp", _Switch(True)) == (config, None, None)
    assert traffic_tcp.endpoints_for(config, "continuous", _Switch(False)) == (config, None, None)
    assert (endpoint_ip(0), endpoint_ip(1)) == ("198.19.255.1", "198.19.255.2")


def _plans(test: str, params: str = "", vswitch: str = "ovs_dpdk"):
    base = cfg.load_layers(ROOT / "conf", [])
    case = testcases.find(test, ROOT / "testcases")
    return testcases.build_plans(case, base, cfg.parse_test_params(params),
                                 {"vswitch": vswitch, "trafficgen": None, "vnf": None})


def test_tcp_tput_sweeps_tso_and_takes_multiqueue_from_the_command_line():
    plans = _plans("tcp_tput", "vswitch.ovs_dpdk.n_rxq=[1,2];trial_duration=3")
    assert [(p.config["tcp"]["tso"], p.config["vswitch"]["ovs_dpdk"]["n_rxq"]) for p in plans] == [
        (True, 1), (True, 2), (False, 1), (False, 2)]
    assert plans[0].config["trafficgen"]["name"] == "iperf3"
    spec = traffic_tcp.spec_of(plans[3].config)
    assert spec == TcpSpec(duration_s=3.0, streams=1, bidirectional=False, mtu_bytes=1500, tso=False, gso=True,
                           gro=True, omit_s=1.0)
    assert traffic_tcp.frame_size(plans[0].config) == 1518


def test_generators_and_traffic_types_must_fit():
    iperf3 = plugins.load("trafficgen", "iperf3")
    trafgen = plugins.load("trafficgen", "trafgen")
    traffic_tcp.check_generator({"type": "tcp"}, iperf3)
    with pytest.raises(TrafficTypeError, match="trafficgen trafgen cannot"):
        traffic_tcp.check_generator({"type": "tcp"}, trafgen)
    with pytest.raises(TrafficTypeError, match="runs TCP workloads only"):
        traffic_tcp.check_generator({"type": "rfc2544_throughput"}, iperf3)
    plan = _plans("tcp_tput", vswitch="linux_bridge")[0]
    checked = preflight.check_plan(plan)
    assert checked.frame_sizes == [1518]


def _record(index: int, gbps: float, *, cpu_s: float = 0.5, valid: bool = True) -> TrialRecord:
    tcp = {"gbps": gbps, "retransmits": 3, "sender_cpu_percent": 90.0, "receiver_cpu_percent": 60.0,
           "rtt_min_us": 20, "rtt_mean_us": 40, "rtt_max_us": 90, "spec": {"streams": 1, "tso": True, "mtu_bytes": 1500}}
    result = TrialResult(0.0, 5.0, 1518, 0, 0, valid=valid, generator_stats={"tcp": tcp})
    return TrialRecord(TrialIdentity("abc123", 0, "tcp_tput"), index, "tcp", "2026-01-01T00:00:00+00:00", False,
                       result, switch={"cpu_s": cpu_s, "elapsed_s": 5.0})


def test_the_median_run_is_reported_with_cpu_per_gbps():
    point = traffic_tcp.point_of([_record(0, 9.0), _record(1, 3.0), _record(2, 6.0, cpu_s=1.0)], False)
    assert point.trial_index == 2 and point.gbps == 6.0 and point.gbps_runs == [9.0, 3.0, 6.0]
    assert point.switch_cores == pytest.approx(0.2)
    assert point.cores == pytest.approx(0.9 + 0.6 + 0.2)
    assert point.cores_per_gbps == pytest.approx(1.7 / 6.0)
    assert point.options["tso"] is True
    with pytest.raises(TrafficTypeError):
        traffic_tcp.point_of([_record(0, 1.0, valid=False)], False)


def test_tcp_figures_are_comparable_metrics():
    point = traffic_tcp.point_of([_record(0, 9.0), _record(1, 8.0)], True)
    import dataclasses

    results = {"run_id": "abc123", "tests": [{"label": "tcp_tput[tcp.tso=True]", "plan_index": 0, "status": "complete",
                                              "frame_sizes": [{"frame_size_bytes": 1518, "status": "complete",
                                                               "tcp": dataclasses.asdict(point)}]}]}
    figures = {m.key.metric: m for m in run_metrics.extract(results).metrics}
    assert figures["tcp_gbps"].samples == [9.0, 8.0] and figures["tcp_gbps"].unit == "Gbit/s"
    assert figures["tcp_gbps"].flags == ["CPU oversubscribed"]
    assert figures["tcp_cores_per_gbps"].higher_is_better is False and figures["tcp_retransmits"].value == 3
