"""Loss attributed to the stage that lost it, from the generator's and the VNFs' counters."""

from vsbench.measurement import stages
from vsbench.measurement.stages import TrafficPath, VnfHop


def test_chain_paths_of_pvp_pvvp_and_pvpv():
    assert stages.chain_paths([(0, 1)], 1) == [TrafficPath(0, 1, (VnfHop(0, 0, 1),)), TrafficPath(1, 0, (VnfHop(0, 1, 0),))]
    pvvp = stages.chain_paths([(0, 1)], 2)
    assert pvvp[0].hops == (VnfHop(0, 0, 1), VnfHop(1, 0, 1)) and pvvp[0].switch_passes == 3
    assert pvvp[1].hops == (VnfHop(1, 1, 0), VnfHop(0, 1, 0))
    pvpv = stages.chain_paths([(0, 1), (2, 3)], 1)
    assert [(p.tx_port, p.rx_port, p.hops[0].vnf) for p in pvpv] == [(0, 1, 0), (1, 0, 0), (2, 3, 1), (3, 2, 1)]


def test_each_stage_loss_is_a_difference_of_two_measured_counters():
    directions = [{"tx_port": 0, "rx_port": 1, "tx_frames": 1000, "rx_frames": 900},
                  {"tx_port": 1, "rx_port": 0, "tx_frames": 1000, "rx_frames": 1000}]
    # VNF port 0 received 980 of direction 0->1 and sent 1000 of 1->0; port 1 the other way round
    vnf = [{0: {"rx_frames": 980, "tx_frames": 1000, "rx_missed": 5}, 1: {"rx_frames": 1000, "tx_frames": 950}}]
    forward, backward = stages.attribute(directions, vnf, stages.chain_paths([(0, 1)], 1))
    assert [s["lost_frames"] for s in forward["stages"]] == [20, 30, 50]
    assert forward["stages"][1]["rx_missed"] == 5
    assert forward["lost_at"] == "switch pass 1" and forward["consistent"] and forward["attributed"]
    assert sum(s["lost_frames"] for s in forward["stages"]) == forward["lost_frames"] == 100
    assert [s["lost_frames"] for s in backward["stages"]] == [0, 0, 0] and backward["lost_at"] is None


def test_two_vnfs_in_series_and_an_inconsistent_count_is_kept():
    directions = [{"tx_port": 0, "rx_port": 1, "tx_frames": 100, "rx_frames": 100}]
    vnfs = [{0: {"rx_frames": 100, "tx_frames": 0}, 1: {"rx_frames": 0, "tx_frames": 90}},
            {0: {"rx_frames": 90, "tx_frames": 0}, 1: {"rx_frames": 0, "tx_frames": 100}}]
    (d,) = stages.attribute(directions, vnfs, stages.chain_paths([(0, 1)], 2))
    assert [stages.stage_name(s) for s in d["stages"]] == ["switch pass 0", "vnf 0", "switch pass 1", "vnf 1",
                                                           "switch pass 2"]
    assert [s["lost_frames"] for s in d["stages"]] == [0, 10, 0, -10, 0]
    assert d["consistent"] is False and d["lost_at"] == "vnf 0"


def test_a_vnf_without_counters_leaves_the_direction_unattributed():
    directions = [{"tx_port": 0, "rx_port": 1, "tx_frames": 10, "rx_frames": 8}]
    (d,) = stages.attribute(directions, [{}], stages.chain_paths([(0, 1)], 1))
    assert d["attributed"] is False and d["stages"] == [] and d["lost_frames"] == 2
    (p2p,) = stages.attribute(directions, [], [])
    assert p2p["attributed"] is False


def test_latency_probes_are_counted_with_the_direction_that_carried_them():
    directions = [{"tx_port": 0, "rx_port": 1, "tx_frames": 100, "rx_frames": 100, "probe_frames": (50, 49)}]
    vnf = [{0: {"rx_frames": 150, "tx_frames": 0}, 1: {"rx_frames": 0, "tx_frames": 150}}]
    (d,) = stages.attribute(directions, vnf, stages.chain_paths([(0, 1)], 1))
    assert (d["tx_frames"], d["rx_frames"], d["probe_frames"]) == (150, 149, 50)
    assert [s["lost_frames"] for s in d["stages"]] == [0, 0, 1] and d["consistent"]
