"""What results.json and report.html make of a router run: each instance's own throughput,
the routers' CPU counted once when two route on the same CPU, and the load sweep's latency
per step drawn beside its rate and loss."""

from __future__ import annotations

import pytest

from vsbench.interfaces.traffic import TrialResult
from vsbench.results import report_traffic, summary
from vsbench.results.model import TrialIdentity, TrialRecord


def _record(vnfs: list[dict]) -> TrialRecord:
    result = TrialResult(intended_load_fps=80_000, intended_duration_s=2.0, frame_size_bytes=64, tx_frames=160_000,
                         rx_frames=160_000)
    return TrialRecord(identity=TrialIdentity("abc123", 0, "t"), trial_index=3, role="continuous",
                       started_at="2026-01-01T00:00:00.000+00:00", latency_requested=False, result=result,
                       vnf={"vnfs": vnfs})


def _router(index: int, tx_per_port: int, cpus: list[int], cpu_s: float) -> dict:
    ports = [{"port": p, "rx_frames": tx_per_port, "tx_frames": tx_per_port, "rx_missed": 0} for p in range(4)]
    return {"index": index, "name": "vrouter", "ports": ports, "cpu_s": cpu_s, "elapsed_s": 2.0,
            "cpu_source": "softirq of rx_cpus", "rx_cpus": cpus}


def test_each_instance_reports_what_it_forwarded_per_second():
    figures = summary.vnf_figures(_record([_router(0, 25_000, [1], 0.4), _router(1, 15_000, [1], 0.4)]))
    assert [v["forwarded_fps"] for v in figures["vnfs"]] == [50_000, 30_000]  # 100k and 60k frames in 2 s
    assert sum(v["forwarded_fps"] for v in figures["vnfs"]) == 80_000


def test_two_routers_on_the_same_cpu_count_its_softirq_once():
    shared = summary.efficiency(_record([_router(0, 20_000, [1], 0.4), _router(1, 20_000, [1], 0.4)]))
    assert shared["switch_cpu_s"] == pytest.approx(0.4) and shared["switch_cores"] == pytest.approx(0.2)
    apart = summary.efficiency(_record([_router(0, 20_000, [1], 0.4), _router(1, 20_000, [0], 0.3)]))
    assert apart["switch_cpu_s"] == pytest.approx(0.7)


def _sweep_test(latency: bool) -> dict:
    steps = []
    for i, pct in enumerate((1.0, 10.0, 50.0, 90.0)):
        lat = {"source": "probes", "samples": 100, "min_ns": 800.0 + i, "avg_ns": 20_000.0 * (i + 1),
               "max_ns": 90_000.0 * (i + 1), "probes_sent": 100} if latency else None
        steps.append({"percent": pct, "offered_load_fps": pct * 1e4, "tx_fps": pct * 1e4, "rx_fps": pct * 1e4,
                      "loss_ratio": 0.0, "lost_frames": 0, "trial_index": i, "valid": True, "latency": lat})
    return {"frame_sizes": [{"frame_size_bytes": 64, "sweep": steps}]}


def test_the_sweep_figure_has_a_latency_panel_when_the_steps_carried_probes(monkeypatch):
    drawn = {}

    def keep(fig):
        drawn["titles"] = [ax.get_title() for ax in fig.axes]
        drawn["latency"] = [list(line.get_ydata()) for ax in fig.axes if ax.get_title() == "Latency per step"
                            for line in ax.get_lines()]
        return "data:image/svg+xml;base64,"

    monkeypatch.setattr(report_traffic.report_plots, "_data_uri", keep)
    report_traffic.sweep_figure(_sweep_test(latency=True))
    assert drawn["titles"] == ["Forwarded vs offered", "Loss per step", "Latency per step"]
    assert drawn["latency"] == [[20.0, 40.0, 60.0, 80.0]]  # the average, in microseconds, step by step
    report_traffic.sweep_figure(_sweep_test(latency=False))
    assert drawn["titles"] == ["Forwarded vs offered", "Loss per step"]
