"""Every benchmark in tools/bench/ that builds something leaves nothing behind.

Each bench runs in its own network, mount and PID namespaces (``unshare``), with fresh
tmpfs on /run/netns and /run/dpdk (a named netns or a DPDK runtime dir another run left on
the host must not be counted as this bench's) and its own empty ``TMPDIR`` (a tmpfs over /tmp would hide a checkout or a
venv that lives under /tmp, as CI's clone may): what it leaves -- a vsb* network namespace, a vsb* link (rule_install once
left its OvS bridge's tap ``vsb<id>br0``), a process, a vsb* file -- is then seen exactly,
undisturbed by whatever else runs on this machine, and vanishes with the namespaces.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]

if os.geteuid() != 0 or shutil.which("unshare") is None:
    pytest.skip("needs root and unshare", allow_module_level=True)

#: Inside the namespaces: loopback up, private netns dir, the bench, then what is left. The
#: pipelines' own ps/awk/sh/tr/sed/grep/ls are not residue, also when ps sees one exiting ("[awk]": its
#: command line already gone; the fresh-machine check caught that once).
SCRIPT = r"""
ip link set lo up
mkdir -p /run/netns && mount -t tmpfs tmpfs /run/netns
mkdir -p /run/dpdk && mount -t tmpfs tmpfs /run/dpdk
"$@" > /dev/null 2>"$TMPDIR/bench.err" || { echo "BENCH FAILED $?"; tail -5 "$TMPDIR/bench.err"; }
echo "NETNS $(ip netns list | awk '/^vsb/ {print $1}' | tr '\n' ' ')"
echo "LINKS $(ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | grep '^vsb' | tr '\n' ' ')"
echo "FILES $(ls -d "$TMPDIR"/vsb* /var/run/dpdk/vsb* 2>/dev/null | tr '\n' ' ')"
echo "PROCS $(ps -eo pid=,args= | awk -v me=$$ '$1 != me && $1 != 1 && $2 !~ /^\[?(ps|awk|sh|tr|sed|grep|ls)\]?$/ {print $2}' | tr '\n' ' ')"
"""


@pytest.fixture
def residue(tmp_path):
    """Run one bench in the namespaces with ``tmp_path`` as its TMPDIR; what is left."""
    def run(*bench_args: str) -> dict[str, str]:
        return _residue(tmp_path, bench_args)
    return run


def _residue(tmpdir: Path, bench_args: tuple[str, ...]) -> dict[str, str]:
    done = subprocess.run(
        ["unshare", "--net", "--mount", "--pid", "--fork", "--mount-proc", "--propagation", "private",
         "sh", "-c", SCRIPT, "sh", sys.executable, *bench_args],
        capture_output=True, text=True, timeout=300, cwd=ROOT, env={**os.environ, "TMPDIR": str(tmpdir)})
    assert "BENCH FAILED" not in done.stdout, done.stdout + done.stderr
    out = {}
    for line in done.stdout.splitlines():
        key, _, rest = line.partition(" ")
        if key in ("NETNS", "LINKS", "FILES", "PROCS"):
            out[key] = rest.strip()
    assert set(out) == {"NETNS", "LINKS", "FILES", "PROCS"}, done.stdout + done.stderr
    return out


def assert_clean(left: dict[str, str]) -> None:
    assert left == {"NETNS": "", "LINKS": "", "FILES": "", "PROCS": ""}, left


def test_rule_install_leaves_no_bridge_tap(residue):
    if shutil.which("ovs-vswitchd") is None:
        pytest.skip("openvswitch-switch missing (tools/setup.sh installs it)")
    assert_clean(residue("tools/bench/rule_install.py", "--rules", "200", "--repeat", "1",
                         "--warmup", "0", "--settle-s", "0"))


def test_vswitch_p2p_rate_leaves_nothing(residue):
    from vsbench_plugins.vswitch.ovs_dpdk import OvsDpdk

    if OvsDpdk.check_prerequisites({}):
        pytest.skip("ovs_dpdk prerequisites missing")
    assert_clean(residue("tools/bench/vswitch_p2p_rate.py", "--frames", "20000", "--repeat", "1"))


def test_trafgen_capacity_leaves_nothing(residue):
    if shutil.which("trafgen") is None:
        pytest.skip("netsniff-ng missing (tools/setup.sh installs it)")
    assert_clean(residue("tools/bench/trafgen_capacity.py", "--duration-s", "0.5", "--repeats", "1",
                         "--grid-kfps", "50"))


def test_vrouter_routes_leaves_nothing(residue):
    assert_clean(residue("tools/bench/vrouter_routes.py", "--routes", "100,2000", "--repeat", "1",
                         "--batch-sweep", "4", "--naive-max", "100"))
