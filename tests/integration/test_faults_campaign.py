"""The fault-injection campaign's quick profile survives on the embedded testbed.

tools/bench/faults.py --quick kills trafgen mid-trial, sends SIGTERM at a random moment and
SIGHUP twice mid-trial, fills the results filesystem mid-run and before the first write, and
makes the state directory read-only -- each against a real linux_bridge run -- and checks
the exit code, the last line, trials.jsonl, results.json and the residue of each
(docs/reliability.rst). One fault not survived fails this test with the campaign's lines.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from run_helpers import require

pytestmark = [pytest.mark.integration, pytest.mark.long,
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root (namespaces, tmpfs mounts)")]

ROOT = Path(__file__).resolve().parents[2]


def test_quick_campaign_survives_every_fault():
    require(("vswitch", "linux_bridge"), ("trafficgen", "trafgen"))
    done = subprocess.run([sys.executable, str(ROOT / "tools/bench/faults.py"), "--quick", "--seed", "28"],
                          capture_output=True, text=True, timeout=170, cwd=ROOT)
    lines = done.stdout.strip().splitlines()
    assert lines and re.fullmatch(r"faults=(\d+) survived=\1 trials_lost=0 residue=0", lines[-1]), \
        done.stdout + done.stderr
    assert int(lines[-1].split()[0].split("=")[1]) >= 6 and done.returncode == 0
    assert lines[0].startswith("faults: seed=28 ")  # the seed is printed, first


def test_a_generator_host_reached_with_ssh_going_down_is_survived():
    """The campaign's ``generator_host/ssh`` fault, one round: a one-host lab (tools/lab:
    Debian's sshd in a rootfs of its own, host key checked) runs the MoonGen fake, vsbench
    drives it over real ssh, and every process of the host is killed after the first trial.
    The run must end exit 1 naming the host lost, with nothing of the run or the lab left."""
    for tool in ("mmdebstrap", "ssh", "scp", "ssh-keygen", "unshare"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} missing (tools/packages/test.txt)")
    done = subprocess.run([sys.executable, str(ROOT / "tools/bench/faults.py"), "--only", "generator_host/ssh",
                           "--rounds", "1", "--seed", "28"],
                          capture_output=True, text=True, timeout=900, cwd=ROOT)  # a first lab image build
    lines = done.stdout.strip().splitlines()
    assert lines and lines[-1] == "faults=1 survived=1 trials_lost=0 residue=0", done.stdout + done.stderr
    [round_line] = [line for line in lines if line.startswith("survived ")]
    assert "generator host h1 down" in round_line and "lost during trial" in round_line, round_line
    assert done.returncode == 0


def test_soak_without_soak_py_is_one_line_and_exit_2(tmp_path):
    """--soak hands over to soak.py beside faults.py; a copy of faults.py alone says so."""
    alone = tmp_path / "faults.py"
    alone.write_text((ROOT / "tools/bench/faults.py").read_text())
    done = subprocess.run([sys.executable, str(alone), "--soak", "--runs", "1"], capture_output=True, text=True,
                          timeout=60, cwd=ROOT)
    assert done.returncode == 2 and done.stderr.strip().count("\n") == 0 and "soak.py" in done.stderr
