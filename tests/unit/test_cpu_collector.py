"""The cpu collector measures real /proc/stat deltas around a busy interval."""

import time

from vsbench.interfaces import PluginContext
from vsbench.runner import plugins
from vsbench.system.resources import ResourceStack


def test_cpu_collector_sees_this_process_burning_cpu(tmp_path):
    cls = plugins.load("collector", "cpu")
    collector = cls(PluginContext("abcdef", {}, tmp_path, ResourceStack()))
    collector.begin()
    deadline = time.monotonic() + 0.3
    while time.monotonic() < deadline:  # keep one core busy
        pass
    got = collector.end()
    assert 0.25 <= got["elapsed_s"] < 5
    # Busy time over all CPUs includes at least most of our 0.3 s spin (10 ms ticks).
    assert got["cpu_busy_s"]["cpu"] >= 0.2
    assert set(got["softirq_s"]) >= {"cpu"}
    # steal: what a hypervisor took from each CPU (0 on bare metal), never negative
    assert set(got["steal_s"]) == set(got["cpu_busy_s"]) and min(got["steal_s"].values()) >= 0
