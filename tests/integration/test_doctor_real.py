"""``vsbench doctor`` and a run's preflight on this host, with DPDK drivers really missing.

A fresh Debian 12 host installed with --no-install-recommends had OvS-DPDK but not the
DPDK drivers it loads; runs failed minutes in with "Error attaching device". Here the
driver directory is hidden for real -- inside a private mount namespace (``unshare
--mount``) a directory holding only some of the drivers is bind-mounted over it, so
nothing outside this test's processes sees a change -- and the probe must name the
missing one, and a run must stop in seconds with exit 2 and that line.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vsbench.system import dpdk_probe

pytestmark = pytest.mark.integration

if os.geteuid() != 0 or shutil.which("unshare") is None:
    pytest.skip("needs root and unshare (private mount namespace)", allow_module_level=True)
DRIVER_DIR = dpdk_probe.driver_dir()
if DRIVER_DIR is None or dpdk_probe.findings(dpdk_probe.run_probe()):
    pytest.skip("DPDK drivers not installed here (tools/setup.sh installs them)", allow_module_level=True)

VSBENCH = [sys.executable, "-m", "vsbench.cli.main"]


def netns_list() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.startswith("vsb")}


def with_drivers(tmp_path: Path, keep: tuple[str, ...], argv: list[str]) -> subprocess.CompletedProcess:
    """Run ``argv`` with only the drivers whose file names start with ``keep`` visible.

    ``keep`` names each driver, never a family (``librte_bus_``): a host with libdpdk-dev
    has every bus driver, and one whose own dependency is hidden stops the EAL before the
    missing driver under test could be named."""
    partial = tmp_path / "pmds"
    partial.mkdir()
    for entry in DRIVER_DIR.iterdir():
        if entry.name.startswith(keep):
            shutil.copy2(entry, partial / entry.name, follow_symlinks=False)
    script = 'mount --bind "$1" "$2" && shift 2 && exec "$@"'
    return subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh",
                           str(partial), str(DRIVER_DIR), *argv],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)


def test_doctor_on_this_host_is_ready():
    done = subprocess.run([*VSBENCH, "doctor"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok       vswitch ovs_dpdk" in done.stdout


def test_doctor_names_the_missing_mempool_driver(tmp_path):
    done = with_drivers(tmp_path, ("librte_bus_pci", "librte_bus_vdev", "librte_net_af_packet"), [*VSBENCH, "doctor"])
    assert done.returncode == 2, done.stdout + done.stderr
    missing = [ln for ln in done.stdout.splitlines() if ln.startswith("MISSING")]
    assert len(missing) == 1, done.stdout
    assert "mempool_ring" in missing[0]
    assert missing[0].endswith("apt-get install --no-install-recommends librte-mempool-ring23")


def test_a_run_without_the_af_packet_pmd_stops_in_seconds_with_the_fix(tmp_path):
    before = netns_list()
    start = time.monotonic()
    done = with_drivers(tmp_path, ("librte_bus_pci", "librte_bus_vdev", "librte_mempool_ring"),
                        [*VSBENCH, "--test", "phy2phy_tput", "--vswitch", "ovs_dpdk",
                         "--results-dir", str(tmp_path / "results"),
                         "--test-params", "frame_sizes=[64];trial_duration=1"])
    elapsed = time.monotonic() - start
    assert done.returncode == 2, done.stdout + done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "net_af_packet" in line and "librte-net-af-packet23" in line, line
    assert elapsed < 30, f"preflight took {elapsed:.1f} s"
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").iterdir())
    assert netns_list() <= before


def test_link_type_check_creates_for_real_and_leaves_nothing():
    from vsbench.system import host_check

    before = netns_list()
    assert host_check.check_link_types(("veth", "bridge")) == []
    (finding,) = host_check.check_link_types(("veth", "vsbnosuchkind"))  # the kernel refuses it
    assert finding.what.startswith("vsbnosuchkind interfaces (") and finding.blocking
    assert netns_list() <= before
