"""Flow files and meters: what connect() and install_rules() hand to ovs-ofctl --bundle."""

import pytest

from vsbench_plugins.vswitch.ovs import flows


def test_port_to_port_flows_both_directions():
    assert flows.port_to_port_flows(1, 2) == [
        "table=0,priority=10,in_port=1,actions=output:2",
        "table=0,priority=10,in_port=2,actions=output:1",
    ]


def test_port_to_port_flows_through_meter():
    lines = flows.port_to_port_flows(3, 7, meter_id=1)
    assert lines == [
        "table=0,priority=10,in_port=3,actions=meter:1,output:7",
        "table=0,priority=10,in_port=7,actions=meter:1,output:3",
    ]


def test_meter_spec_has_explicit_small_burst():
    spec = flows.meter_spec(1, 250_000, flows.meter_burst_pkts(250_000, 10))
    assert spec == "meter=1,pktps,burst,stats,band=type=drop,rate=250000,burst_size=2500"


def test_meter_burst_never_below_one_batch():
    assert flows.meter_burst_pkts(1000, 10) == 32
    assert flows.meter_burst_pkts(1_000_000, 1) == 1000


def test_meter_band_rate_without_window_is_the_capacity():
    assert flows.meter_band_rate_pps(100_000, 1000, None) == 100_000


def test_meter_band_rate_leaves_room_for_the_bucket_over_the_window():
    rate = flows.meter_band_rate_pps(100_000, 1000, 2.0)
    assert rate == 99_500
    # the most any trial of the window (or longer) can pass, full bucket included
    for trial_s in (2.0, 3.0, 60.0):
        assert rate * trial_s + 1000 <= 100_000 * trial_s


def test_meter_band_rate_refuses_a_window_the_bucket_fills():
    with pytest.raises(ValueError, match="longer window"):
        flows.meter_band_rate_pps(1000, 2000, 1.0)
    with pytest.raises(ValueError):
        flows.meter_band_rate_pps(1000, 10, 0)


def test_meter_rejects_non_positive_rate():
    with pytest.raises(ValueError):
        flows.meter_spec(1, 0, 32)


def test_flow_file_round_trip_counts_rules_not_comments(tmp_path):
    path = tmp_path / "rules.flows"
    n = flows.write_flow_file(path, (f"priority=5,ip,nw_dst=10.0.{i // 256}.{i % 256},actions=output:2"
                                     for i in range(1000)))
    assert n == 1000
    with open(path, "a") as handle:
        handle.write("\n# a comment\n   \n")
    assert flows.count_rules(path) == 1000
    assert path.read_text().splitlines()[0] == "priority=5,ip,nw_dst=10.0.0.0,actions=output:2"


def test_meter_is_put_in_front_of_rule_actions(tmp_path):
    src, dst = tmp_path / "in.flows", tmp_path / "out.flows"
    src.write_text("# rules\npriority=100,in_port=1,ip,nw_src=10.0.0.1,actions=output:2\n\n"
                   "priority=100,in_port=2,actions=meter:3,output:1\n")
    assert flows.add_meter_to_rules(src, dst, 1) == 2
    assert dst.read_text().splitlines() == [
        "priority=100,in_port=1,ip,nw_src=10.0.0.1,actions=meter:1,output:2",
        "priority=100,in_port=2,actions=meter:3,output:1",
    ]
