"""The soak (tools/bench/soak.py) end to end on the embedded testbed: a few short runs of
both switches in a row, then one verdict line per metric and the summary line last.

Short form (``--runs 3 --quick``, 60-80 s here): the 50-run soak is measured by hand and its
figures are in docs/reliability.rst. ``--lock ''``: whoever runs the integration tests holds
the testbed (tools/test.sh runs this one alone; by hand: ``flock /tmp/vsbench-testbed.lock``).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.long]

ROOT = Path(__file__).resolve().parents[2]
SUMMARY = re.compile(r"^soak_runs=(\d+) failed=(\d+) growth=(none|[a-z_]+(,[a-z_]+)*)$")
VERDICT = re.compile(r"^[a-z_]+: first=\S+ last=\S+ slope=[+-]\d+\.\d{3}/run unit=[a-z]+ tolerance=\S+ (flat|GREW)$")


def test_short_soak_ends_with_the_summary_line_and_exit_0(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root (netns, veth)")
    from vsbench_plugins.vswitch.ovs_dpdk import OvsDpdk

    if OvsDpdk.check_prerequisites({}):
        pytest.skip("ovs_dpdk prerequisites missing")
    done = subprocess.run([sys.executable, str(ROOT / "tools/bench/soak.py"), "--runs", "3", "--quick",
                           "--lock", "", "--keep", str(tmp_path / "soak")],
                          capture_output=True, text=True, timeout=170, cwd=ROOT)
    lines = done.stdout.strip().splitlines()
    assert lines, done.stderr
    summary = SUMMARY.match(lines[-1])
    assert summary, done.stdout + done.stderr
    assert summary.group(1) == "3"
    verdicts = [line for line in lines if VERDICT.match(line)]
    assert len(verdicts) >= 10, done.stdout
    assert sum(line.startswith("run ") for line in lines) == 3, done.stdout
    assert (summary.group(2), summary.group(3)) == ("0", "none"), done.stdout
    assert done.returncode == 0, done.stdout + done.stderr
