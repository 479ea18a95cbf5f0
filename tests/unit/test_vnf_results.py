"""What a VNF trial becomes in results: per-VNF figures, loss per stage, switched_fps, the
oversubscription flag, per-thread CPU, the console's cells and the CSV columns."""

from vsbench.interfaces.traffic import DirectionCounters, TrialResult
from vsbench.results import summary, writers
from vsbench.results.model import FrameSizeResult, ReportedPoint, TestResult, TrialIdentity, TrialRecord
from vsbench.runner.display import vnf_cells, vnf_lines
from vsbench.runner.run import normalise_points

STAGES = [{"tx_port": 0, "rx_port": 1, "tx_frames": 1000, "rx_frames": 990, "lost_frames": 10, "attributed": True,
           "lost_at": "vnf 0", "consistent": True,
           "stages": [{"stage": "switch", "pass": 0, "in_frames": 1000, "out_frames": 998, "lost_frames": 2},
                      {"stage": "vnf", "vnf": 0, "in_port": 0, "out_port": 1, "in_frames": 998, "out_frames": 991,
                       "lost_frames": 7},
                      {"stage": "switch", "pass": 1, "in_frames": 991, "out_frames": 990, "lost_frames": 1}]}]


def _trial(starved=False):
    result = TrialResult(intended_load_fps=1000.0, intended_duration_s=1.0, frame_size_bytes=64, tx_frames=1000,
                         rx_frames=990, directions=(DirectionCounters(0, 1, 1000, 990),))
    vnf = {"vnfs": [{"index": 0, "name": "testpmd", "cpu_s": 0.5, "elapsed_s": 1.0,
                     "ports": [{"port": 0, "rx_frames": 998, "tx_frames": 0, "rx_missed": 3},
                               {"port": 1, "rx_frames": 0, "tx_frames": 991, "rx_missed": 0}],
                     "threads": [{"tid": 7, "name": "rte-worker-1", "busy_s": 0.5, "utilization": 0.5, "last_cpu": 1}],
                     "warnings": [{"code": "busy_poll_starved", "message": "m", "oversubscribed": True}] if starved else []}],
           "stages": STAGES}
    switch = {"cpu_s": 0.4, "elapsed_s": 1.0, "threads": [{"tid": 3, "name": "pmd-c01/id:5", "busy_s": 0.4}]}
    return TrialRecord(TrialIdentity("abcdef", 0, "pvp"), 0, "search", "t", False, result, switch=switch, vnf=vnf)


def test_vnf_figures_sum_ports_and_stages():
    fig = summary.vnf_figures(_trial())
    assert fig["vnfs"] == [{"index": 0, "name": "testpmd", "rx_frames": 998, "tx_frames": 991, "rx_missed": 3,
                            "forwarded_fps": 991.0, "cpu_s": 0.5, "cores": 0.5, "starved": False}]
    assert fig["lost_frames"] == {"switch": 3, "vnf": 7} and fig["lost_at"] == ["vnf 0"]
    assert summary.vnf_figures(TrialRecord(TrialIdentity("abcdef", 0, "p2p"), 0, "search", "t", False,
                                           _trial().result)) is None
    threads = summary.thread_cpu(_trial())
    assert [(t["owner"], t["name"]) for t in threads] == [("vswitch", "pmd-c01/id:5"), ("vnf 0", "rte-worker-1")]


def test_points_carry_switched_fps_and_the_oversubscription_flag():
    test = TestResult(plan_index=0, label="pvp", testcase="pvp_tput", switching_operations=2, cpu_oversubscribed=False)
    point = ReportedPoint(name="NDR", throughput_fps=1000.0, vnf=summary.vnf_figures(_trial(starved=True)))
    fs = FrameSizeResult(64, points=[point])
    normalise_points(test, fs)
    assert point.switched_fps == 2000.0 and point.cpu_oversubscribed is True  # a starved lcore
    calm = ReportedPoint(name="NDR", throughput_fps=1000.0)
    normalise_points(test, FrameSizeResult(64, points=[calm]))
    assert calm.cpu_oversubscribed is False
    test.cpu_oversubscribed = True
    normalise_points(test, FrameSizeResult(64, points=[calm]))
    assert calm.cpu_oversubscribed is True


def test_console_and_csv_show_the_vnf_beside_the_generator():
    point = ReportedPoint(name="NDR", throughput_fps=1000.0, vnf=summary.vnf_figures(_trial()), switched_fps=2000.0,
                          cpu_oversubscribed=True)
    assert vnf_cells(point) == ("1,000/990", "998/991", "3/7")
    assert vnf_cells(ReportedPoint(name="NDR")) == ("-", "-", "-")
    assert vnf_lines(point) == ["vnf testpmd#0: rx 998, tx 991, missed 3, 0.50 cores",
                                "frames lost: switch passes 3, VNFs 7 (most at vnf 0)"]
    test = TestResult(plan_index=0, label="pvp", testcase="pvp_tput", deployment="pvp", switching_operations=2,
                      vnf="testpmd")
    row = writers.csv_row("abcdef", test, FrameSizeResult(64, points=[point]))
    assert (row["vnf"], row["switched_fps"], row["cpu_oversubscribed"], row["switch_lost_frames"],
            row["vnf_lost_frames"], row["switching_operations"]) == ("testpmd", "2000.0", "true", "3", "7", "2")
