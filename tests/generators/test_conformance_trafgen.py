"""The conformance kit against the embedded ``trafgen`` generator on the real testbed.

The device under test is real, not modelled: a Linux bridge in the DUT namespace whose two
ports shape their egress with ``tbf`` to a known frame rate, so the capacity the kit checks
against is set by the kernel, not by a fake. Needs root and netsniff-ng.
"""

from __future__ import annotations

import os
import shutil

import pytest

from vsbench.deployment.ports import generator_ports_of
from vsbench.conformance import ConformanceTarget
from vsbench.conformance.suite import TrafficGeneratorConformance
from vsbench.interfaces.traffic import TrafficProfile
from vsbench.runner import config as cfg
from vsbench.runner import plugins
from vsbench.system import commands, naming
from vsbench.system.resources import ResourceStack
from vsbench.runner.plugin_context import run_parameters

pytestmark = pytest.mark.integration

FRAME_BYTES = 64
PER_PORT_FPS = 20_000  # each DUT port forwards at most this many frames/s
L2_BYTES_PER_FRAME = FRAME_BYTES - 4  # what tbf counts (no FCS)


def _trafgen_class():
    """The registered trafgen class. Skips only while the plugin is not written yet (its
    module has no ``Trafgen``); any other load error fails the test."""
    import importlib

    try:
        module = importlib.import_module("vsbench_plugins.trafficgen.trafgen")
    except ModuleNotFoundError:
        module = None
    if module is None or not hasattr(module, "Trafgen"):
        pytest.skip("the trafgen plugin is not in the tree yet (no vsbench_plugins.trafficgen.trafgen.Trafgen)")
    return plugins.load("trafficgen", "trafgen")


def shaped_bridge(netns: str, ifaces: list[str], fps: int) -> None:
    """Bridge ``ifaces`` in ``netns``; each forwards at most ``fps`` frames/s out."""
    bridge = "vsbconfbr"
    commands.run(["ip", "-n", netns, "link", "add", bridge, "type", "bridge", "stp_state", "0"])
    for iface in ifaces:
        commands.run(["ip", "-n", netns, "link", "set", iface, "master", bridge])
        rate_bit = fps * L2_BYTES_PER_FRAME * 8
        commands.run(["ip", "netns", "exec", netns, "tc", "qdisc", "replace", "dev", iface, "root",
                      "tbf", "rate", f"{rate_bit}bit", "burst", "1600", "limit", "3000"])
    commands.run(["ip", "-n", netns, "link", "set", bridge, "up"])


@pytest.fixture
def conformance_generator():
    if os.geteuid() != 0:
        pytest.skip("needs root for network namespaces")
    if shutil.which("trafgen") is None and not os.path.exists("/usr/sbin/trafgen"):
        pytest.skip("Debian package netsniff-ng missing (tools/setup.sh installs it)")
    trafgen = _trafgen_class()
    from vsbench.system.testbed import create_testbed

    resources = ResourceStack()
    run_id = naming.new_run_id()
    try:
        testbed = create_testbed(run_id, 2, resources)
        shaped_bridge(testbed.dut_netns, [l.dut_iface for l in testbed.links], PER_PORT_FPS)
        defaults = cfg.load_layers(cfg.default_conf_dir(), [])
        yield ConformanceTarget(
            name="trafgen",
            plugin=trafgen,
            settings=(defaults.get("trafficgen") or {}).get("trafgen") or {},
            dut_capacity_fps=2 * PER_PORT_FPS,
            ports=generator_ports_of(testbed),
            profile=TrafficProfile(frame_size_bytes=FRAME_BYTES),
            trial_duration_s=1.0,
            rate_tolerance=0.1,  # a real kernel and a shared, noisy machine
            loss_tolerance=0.001,
            run=run_parameters(defaults),
        )
    finally:
        resources.close()


class TestTrafgenConformance(TrafficGeneratorConformance):
    """trafgen + probe stream on the netns/veth testbed with a shaped bridge as the DUT."""
