"""CI's light run of tools/fresh-check.sh: on a clean Debian 12 rootfs (mmdebstrap),
tools/setup.sh installs everything, ``vsbench doctor`` finds nothing missing, a one-frame-size
quick start on OvS-DPDK ends with its table and exit 0, and nothing is left behind.

A few minutes (279 s once here on a loaded machine; its setup step alone took 64 s another
time; the rootfs tarball is cached under /var/tmp/vsbench-fresh for a day).
``tools/test.sh --long`` runs it (CI does, after the test command), after the long testbed
scenarios so its package installs disturb no measurement. A caller that runs it beside
other tests can make its doctor and quick start wait for a lock (VSBENCH_FRESH_TESTBED_LOCK,
a file that caller holds with flock) -- hence a timeout that covers such a wait.
Skipped inside a fresh check itself, without root, mmdebstrap or the Debian mirror, or
when VSBENCH_SKIP_FRESH_CHECK is set. The full check (the README's two commands, whole
test suite included) is ``tools/fresh-check.sh``; it takes as long as the suite.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
MIRROR_HOST = "deb.debian.org"


def _why_not() -> str | None:
    if os.environ.get("VSBENCH_SKIP_FRESH_CHECK"):
        return "VSBENCH_SKIP_FRESH_CHECK is set (or this already runs inside a fresh check)"
    if os.geteuid() != 0:
        return "needs root (mmdebstrap, unshare, chroot)"
    if shutil.which("mmdebstrap") is None:
        return "mmdebstrap missing (tools/setup.sh --test installs it)"
    try:
        socket.create_connection((MIRROR_HOST, 80), timeout=5).close()
    except OSError as exc:
        return f"Debian mirror {MIRROR_HOST} unreachable: {exc}"
    return None


def test_fresh_rootfs_setup_doctor_and_short_quickstart():
    why = _why_not()
    if why:
        pytest.skip(why)
    done = subprocess.run([str(ROOT / "tools" / "fresh-check.sh"), "--ci", "--cached"],
                          capture_output=True, text=True, timeout=2400)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    assert "doctor| doctor: ready" in out, out[-4000:]
    assert "fresh-check: == quickstart: exit 0" in out, out[-4000:]
    assert "NDR" in out and "complete" in out, out[-4000:]
    assert "no residue" in out, out[-4000:]
    (rootfs,) = re.findall(r"rootfs ready in \d+ s: (\S+)/rootfs,", out)
    assert not Path(rootfs).exists(), f"{rootfs} was not removed"
