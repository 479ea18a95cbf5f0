"""What the tests of the one-machine lab (tools/lab) and the playbook (tools/ansible) share:
their prerequisites, the lab CLI, ssh to a lab host, and what of a lab is left on the
controller after ``down``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LAB = REPO / "tools" / "lab" / "lab.py"
PLAYBOOK = REPO / "tools" / "ansible" / "site.yml"
BIN = Path(sys.executable).parent


def _need() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root (namespaces, mounts, chroot)")
    for tool in ("mmdebstrap", "ssh", "ssh-keygen", "unshare"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} missing (tools/packages/test.txt)")
    if not (BIN / "ansible-playbook").exists():
        pytest.skip("ansible-core missing: pip install -e '.[lab]'")


def _lab(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(LAB), *args], capture_output=True, text=True, timeout=timeout)


def _ssh(lab_dir: Path, host: str, command: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(["ssh", "-F", str(lab_dir / "ssh_config"), host, command],
                          capture_output=True, text=True, timeout=30, **kw)


def _leftovers(lab_dir: Path, state: dict) -> list[str]:
    """What of the lab is still on the controller: namespaces, processes, mounts, trees."""
    left = []
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    left += [f"netns {h['netns']}" for h in state["hosts"] if h["netns"] in netns]
    for entry in Path("/proc").iterdir():
        try:
            root = os.readlink(entry / "root")
        except OSError:
            continue
        if root.startswith(str(lab_dir.resolve()) + "/"):
            left.append(f"process {entry.name} rooted in {root}")
    mounts = Path("/proc/mounts").read_text()
    left += [f"mount {line.split()[1]}" for line in mounts.splitlines() if str(lab_dir.resolve()) in line]
    if (lab_dir / "hosts").exists():
        left.append(f"tree {lab_dir / 'hosts'}")
    return left
