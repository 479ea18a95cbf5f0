"""The Debian package lists tools/setup.sh installs name every driver a run loads.

tools/setup.sh installs with --no-install-recommends, so a DPDK driver that is only
Recommended (by the ``dpdk`` package) is never installed unless runtime.txt names it.
"""

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LISTS = ROOT / "tools" / "packages"

#: The DPDK libraries ovs-vswitchd-dpdk's EAL must find in its driver dir on the
#: embedded testbed: the vdev bus, the af_packet PMD of every port, the ring mempool.
TESTBED_DRIVERS = ("librte_bus_vdev.so", "librte_net_af_packet.so", "librte_mempool_ring.so")


def read_list(name: str) -> list[str]:
    """The packages of one list, as tools/setup.sh reads it ('#' comments, blank lines)."""
    out = []
    for line in (LISTS / name).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            out.append(line)
    return out


def test_lists_are_plain_package_names_without_duplicates():
    for name in ("runtime.txt", "test.txt"):
        packages = read_list(name)
        assert packages, name
        assert all(p.replace("-", "").replace(".", "").replace("+", "").isalnum() for p in packages), packages
        assert len(set(packages)) == len(packages), f"{name} lists a package twice"
    assert not set(read_list("runtime.txt")) & set(read_list("test.txt"))


def test_setup_sh_reads_the_lists():
    text = (ROOT / "tools" / "setup.sh").read_text()
    assert "tools/packages/runtime.txt" in text and "tools/packages/test.txt" in text
    assert "--no-install-recommends" in text  # so the lists must be complete


def test_every_testbed_dpdk_driver_is_named():
    packages = set(read_list("runtime.txt"))
    assert {"librte-bus-vdev23", "librte-net-af-packet23", "librte-mempool-ring23",
            "openvswitch-switch-dpdk"} <= packages


@pytest.mark.skipif(shutil.which("dpkg-query") is None, reason="no dpkg on this machine")
def test_installed_driver_files_belong_to_listed_packages():
    """Ask dpkg which package owns each driver on this machine: a DPDK version bump that
    renames a package (librte-*24) fails here instead of on a user's fresh machine. Only
    the versioned file counts (``.so.23``): the unversioned ``.so`` link beside it belongs
    to ``libdpdk-dev``, which a build of DPDK programs installs and no run needs."""
    packages = set(read_list("runtime.txt"))
    for lib in TESTBED_DRIVERS:
        found = subprocess.run(["dpkg-query", "-S", f"*/dpdk/pmds-*/{lib}.*"],
                               capture_output=True, text=True)
        if found.returncode != 0:
            pytest.skip(f"{lib} not installed here (tools/setup.sh installs it)")
        owners = {line.split(":", 1)[0] for line in found.stdout.splitlines()}
        assert owners <= packages, f"{lib} is shipped by {owners}, not all in runtime.txt"
