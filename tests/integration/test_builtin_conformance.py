"""The conformance kit on the built-in plugins that can run on this machine's testbed.

Each plugin is checked the way a vendor's is (``vsbench conformance``'s suites, the kit's
own netns testbed): the switches linux_bridge and ovs_dpdk, the VNF vrouter (given routes to
the kit's testbed, as its deployment gives them), testpmd and l3fwd on net_af_packet (l3fwd
routing the kit's frames by the routes it builds from the kit's profile), the placeholder
VNF none, and trafgen against the kit's reference DUT. ovs_kernel and ovs_tc need kernel modules this kernel lacks
(their class checks still run; the kernel lab runs them for real); ``external`` manages no
DUT, so only its class is checked.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from vsbench.conformance import VnfTarget, VSwitchTarget
from vsbench.conformance.contract import PluginContractChecks
from vsbench.conformance.routers import ROUTED_FIELDS, route_to_the_kit
from vsbench.conformance.switch_suite import VSwitchConformance
from vsbench.conformance.vnf_suite import VnfConformance
from vsbench.runner import config as cfg
from vsbench.runner import plugins

pytestmark = pytest.mark.integration
#: The suites of the switches and VNFs that forward in the kernel time nothing (frame counts,
#: life cycle, leftovers): tools/test.sh runs them beside the unit tests. ovs_dpdk, testpmd
#: and l3fwd busy-poll a CPU, so they stay in the one-at-a-time phase.
parallel = pytest.mark.integration_parallel

if os.geteuid() != 0:
    pytest.skip("the kit's testbed needs root", allow_module_level=True)


def settings(kind: str, name: str) -> dict:
    """The plugin's settings as a run would give them (conf/ defaults)."""
    config = cfg.load_layers(cfg.default_conf_dir(), [])
    return dict(((config.get(kind) or {}).get(name)) or {})


def switch_target(name: str, **extra) -> VSwitchTarget:
    return VSwitchTarget(name=name, plugin=plugins.load("vswitch", name), settings=settings("vswitch", name), **extra)


@parallel
class TestLinuxBridge(VSwitchConformance):
    @pytest.fixture
    def conformance_vswitch(self):
        return switch_target("linux_bridge")


class TestOvsDpdk(VSwitchConformance):
    @pytest.fixture
    def conformance_vswitch(self):
        return switch_target("ovs_dpdk")


@parallel
class TestOvsKernel(VSwitchConformance):
    """Skips what needs the openvswitch module on a kernel without it (the class checks run)."""

    @pytest.fixture
    def conformance_vswitch(self):
        return switch_target("ovs_kernel")


@parallel
class TestOvsTc(VSwitchConformance):
    @pytest.fixture
    def conformance_vswitch(self):
        return switch_target("ovs_tc")


@parallel
class TestExternalClass(PluginContractChecks):
    """A DUT vsbench does not manage forwards nothing on the kit's testbed: its class only."""

    kind = "vswitch"

    @pytest.fixture
    def target(self):
        return switch_target("external")


@parallel
class TestVRouter(VnfConformance):
    @pytest.fixture
    def conformance_vnf(self):
        return VnfTarget(name="vrouter", plugin=plugins.load("vnf", "vrouter"), settings=settings("vnf", "vrouter"),
                         fields=ROUTED_FIELDS, prepare=route_to_the_kit, to_port_mac=True)


class TestTestpmd(VnfConformance):
    """testpmd as the pvp family runs it on a Linux bridge: net_af_packet on the VNF's ends of
    veth pairs, io forwarding (frames pass as they are, so they are addressed to the far port)."""

    @pytest.fixture
    def conformance_vnf(self):
        return VnfTarget(name="testpmd", plugin=plugins.load("vnf", "testpmd"), settings=settings("vnf", "testpmd"),
                         to_port_mac=False)


def dpdk_leftovers(prefix_glob: str):
    """A leak check for a DPDK VNF: runtime directories (its file prefix) that appeared and
    hugepages not given back, measured against now."""
    runtime = Path("/var/run/dpdk")
    pages = Path("/proc/sys/vm/nr_hugepages")
    runtime_before, pages_before = set(runtime.glob(prefix_glob)), int(pages.read_text())

    def check() -> list[str]:
        found = [f"DPDK runtime directory {d}" for d in sorted(set(runtime.glob(prefix_glob)) - runtime_before)]
        if int(pages.read_text()) != pages_before:
            found.append(f"nr_hugepages {pages.read_text().strip()}, was {pages_before}")
        return found

    return check


class TestL3fwd(VnfConformance):
    """l3fwd as the pvp family runs it on a Linux bridge: net_af_packet on the VNF's ends of
    veth pairs, LPM routes built by its configure() from the kit's profile (the kit's frames
    are addressed to the l3fwd port they enter; l3fwd addresses what it routes to the peer
    port's MAC, the generator port it faces)."""

    @pytest.fixture
    def conformance_vnf(self):
        return VnfTarget(name="l3fwd", plugin=plugins.load("vnf", "l3fwd"), settings=settings("vnf", "l3fwd"),
                         to_port_mac=True, leak_check=dpdk_leftovers("vsb*l3f*"))


@parallel
class TestNoVnf(VnfConformance):
    @pytest.fixture
    def conformance_vnf(self):
        return VnfTarget(name="none", plugin=plugins.load("vnf", "none"), settings={}, forwards=False)
