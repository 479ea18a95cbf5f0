"""A pytest plugin module (``-p kit_mutants``) giving the conformance suite a prox target
whose plugin is either correct or deliberately broken (``KIT_MUTANT`` environment variable).

Used by test_conformance_kit.py to prove the kit fails for the defects it promises to catch,
and that the documented ``pytest -p <module> --pyargs vsbench.conformance`` invocation works.
"""

from __future__ import annotations

import dataclasses
import os
import time

import pytest

from generator_fakes import fake_prox_argv
from vsbench.conformance import ConformanceTarget
from vsbench.interfaces.plugin import PluginError
from vsbench.system import commands
from vsbench_plugins.trafficgen.prox import Prox


class PerDirectionLoad(Prox):
    """Treats the load as per direction (sends twice the aggregate)."""

    def run_trial(self, load_fps, duration_s, *, latency=False):
        r = super().run_trial(load_fps * 2, duration_s, latency=latency)
        return dataclasses.replace(r, intended_load_fps=load_fps)


class MicrosecondLatency(Prox):
    """Reports PROX's µs as if they were ns."""

    def run_trial(self, load_fps, duration_s, *, latency=False):
        r = super().run_trial(load_fps, duration_s, latency=latency)
        h = r.latency_histogram
        if h is None:
            return r
        return dataclasses.replace(r, latency_histogram=dataclasses.replace(
            h, min_ns=h.min_ns / 1000, max_ns=h.max_ns / 1000, mean_ns=h.mean_ns / 1000))


class ComputedCounters(Prox):
    """Reports the asked frames instead of the sent ones."""

    def run_trial(self, load_fps, duration_s, *, latency=False):
        r = super().run_trial(load_fps, duration_s, latency=latency)
        return dataclasses.replace(r, tx_frames=int(load_fps * duration_s), directions=())


class LeakySocket(Prox):
    """Forgets to close its control connection."""

    def stop(self):
        if self._conn is not None:
            self._kept, self._conn = self._conn, None  # still referenced, never closed
        self._stopped = True


class MultiLineError(Prox):
    """Lets a multi-line message escape."""

    def start(self):
        try:
            super().start()
        except PluginError as exc:
            raise PluginError(f"failed\n{exc}") from None


class LateStop(Prox):
    """Not a defect: a controller too busy to stop on time, so PROX sends 30 % longer -- and
    the plugin says so in tx_duration_s, at the asked rate."""

    def run_trial(self, load_fps, duration_s, *, latency=False):
        r = super().run_trial(load_fps, duration_s * 1.3, latency=latency)
        return dataclasses.replace(r, intended_duration_s=duration_s)


MUTANTS = {cls.__name__: cls for cls in
           (Prox, PerDirectionLoad, MicrosecondLatency, ComputedCounters, LeakySocket, MultiLineError, LateStop)}


@pytest.fixture
def conformance_generator(tmp_path):
    port_file = tmp_path / "prox.port"
    proc = commands.spawn(fake_prox_argv(["--dut-capacity-fps", "1e6", "--gen-core-max-fps", "2e6"],
                                         port_file=port_file), log_path=tmp_path / "fake.log")
    while not port_file.exists():
        assert proc.alive(), (tmp_path / "fake.log").read_text()
        time.sleep(0.01)
    port = int(port_file.read_text())
    yield ConformanceTarget(
        name="prox",
        plugin=MUTANTS[os.environ.get("KIT_MUTANT", "Prox")],
        settings={"port": port, "stats_poll_s": 0.02, "drain_s": 0.05},
        dut_capacity_fps=1e6,
        trial_duration_s=0.3,
        generator_limit_fps=4e6,
        unreachable_settings={"port": 1, "connect_timeout_s": 1},
        unreachable_address="127.0.0.1:1",
        dut_latency_ns=(10_000, 20_000),
    )
    proc.stop(grace_s=2)
