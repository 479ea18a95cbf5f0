"""The whole playbook on the one-machine lab: two hosts, install, the matrix, one store, one page.

This module runs what a nightly lab job runs (tools/ansible/site.yml end to end over real
ssh) and then the failure a lab meets most: a host that stops answering. One lab (one
``up``, one install) serves every check, because each costs minutes on the shared 2-core
host:

0. the lab itself: each host is its own machine over ssh (its name, its address, its own
   rootfs without vsbench), host key checking is on (a wrong key is refused), Ansible
   pings both;
1. the whole playbook: vsbench installed on both hosts from the wheelhouse (on the
   ``preinstalled`` image: a clean rootfs with runtime.txt's packages, no vsbench), the
   two-item phy2phy_tput matrix (one fixed-rate trial each) split one run per host, both runs fetched and imported into
   one SQLite store tagged by host, one compare page naming both hosts;
2. h2 unreachable mid-campaign: the campaign (``--tags campaign,collect``) starts, and
   while h1's run is under way (runs go one host at a time) every sshd of h2 (its
   listener, whose pid the lab recorded, and the session processes Ansible's ControlPersist
   keeps) is killed; the play must still fetch and store h1's run, print one line naming
   h2, and fail.

Then ``down`` must leave no namespace, process, mount or tree of the lab on the controller.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from lab_helpers import BIN, PLAYBOOK, _lab, _leftovers, _need, _ssh

pytestmark = [pytest.mark.integration, pytest.mark.long]

#: phy2phy_tput at one fixed rate (one trial, no search): a host's run costs ~20 s instead of
#: the search's ~90 s, and the playbook's path (run, pack, fetch, import, compare) is the same;
#: docs/lab.rst has the whole search's figures, measured by hand.
MATRIX_ITEM = {"test": "phy2phy_tput", "vswitch": "linux_bridge", "trafficgen": "trafgen",
               "params": "frame_sizes=[64];trial_duration=1", "args": ["--rate", "20kpps"]}


def _playbook_argv(inventory: Path, out: Path, *extra: str) -> list[str]:
    """site.yml on the lab's inventory with this test's matrix, results under ``out``."""
    matrix = json.dumps({"vsbench_matrix": [MATRIX_ITEM, MATRIX_ITEM]})
    return [str(BIN / "ansible-playbook"), "-i", str(inventory), str(PLAYBOOK),
            "-e", f"lab_out={out}", "-e", "vsbench_doctor=false",
            "-e", "vsbench_trend_metric=continuous_fps", "-e", matrix, *extra]


def _playbook(inventory: Path, out: Path, *extra: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(_playbook_argv(inventory, out, *extra), capture_output=True, text=True, timeout=timeout)


def _playbook_started(inventory: Path, out: Path, *extra: str) -> subprocess.Popen:
    """:func:`_playbook`, started and not waited for."""
    return subprocess.Popen(_playbook_argv(inventory, out, *extra), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _wait_for_run(netns: str, play: subprocess.Popen, timeout_s: float = 180) -> bool:
    """Wait until a ``vsbench --test`` runs in host ``netns`` (its share under way)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and play.poll() is None:
        got = subprocess.run(["ip", "netns", "pids", netns], capture_output=True, text=True)
        for pid in got.stdout.split():
            try:
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if any(a.endswith(b"/vsbench") for a in argv[:2]) and b"--test" in argv:
                return True
        time.sleep(0.2)
    return False


def _stored_hosts(store: Path) -> list[str]:
    """The ``host`` tag of every run in the controller's store (one row per run)."""
    with sqlite3.connect(store) as conn:
        return sorted(v for (v,) in conn.execute("SELECT value FROM run_tags WHERE key = 'host'"))


def _sshd_pids(netns: str) -> list[int]:
    """Every sshd process in a host's network namespace: the listener and its sessions."""
    got = subprocess.run(["ip", "netns", "pids", netns], capture_output=True, text=True, check=True)
    pids = []
    for pid in map(int, got.stdout.split()):
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == "sshd":
                pids.append(pid)
        except OSError:
            continue
    return pids


def test_playbook_on_two_hosts_then_one_host_unreachable(tmp_path: Path) -> None:
    _need()
    built = _lab("image", "--image", "preinstalled", timeout=900)
    assert built.returncode == 0, built.stderr
    lab_dir = tmp_path / "lab"
    inventory = lab_dir / "inventory.ini"
    up = _lab("up", "--hosts", "2", "--image", "preinstalled", "--dir", str(lab_dir), timeout=120)
    state = json.loads((lab_dir / "lab.json").read_text()) if (lab_dir / "lab.json").exists() else {"hosts": []}
    try:
        assert up.returncode == 0, up.stderr
        h1, h2 = state["hosts"]

        # 0. each host is its own machine: its name, its address on its own eth0, its own rootfs
        for host in (h1, h2):
            got = _ssh(lab_dir, host["name"], "hostname; ip -4 -o addr show eth0; test ! -e /opt/vsbench && echo clean")
            assert got.returncode == 0, got.stderr
            assert got.stdout.split()[0] == host["name"]
            assert f"inet {host['address']}/24" in got.stdout
            assert got.stdout.strip().endswith("clean"), "vsbench must come from the playbook, not the image"
        # host key checking is on: h2's key presented for h1's address is refused
        wrong = tmp_path / "wrong_known_hosts"
        h2_key = next(line for line in (lab_dir / "known_hosts").read_text().splitlines()
                      if line.startswith(h2["address"] + " "))
        wrong.write_text(h2_key.replace(h2["address"], h1["address"], 1) + "\n")
        refused = subprocess.run(["ssh", "-i", str(lab_dir / "id_ed25519"), "-o", f"UserKnownHostsFile={wrong}",
                                  "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes",
                                  f"root@{h1['address']}", "true"], capture_output=True, text=True, timeout=30)
        assert refused.returncode != 0 and "Host key verification failed" in refused.stderr
        ping = subprocess.run([str(BIN / "ansible"), "-i", str(inventory), "dut", "-m", "ping"],
                              capture_output=True, text=True, timeout=60)
        assert ping.returncode == 0, ping.stdout + ping.stderr
        assert ping.stdout.count('"ping": "pong"') == 2

        # 1. the whole playbook: install, one run per host, fetch, one store, one compare page
        out = tmp_path / "out"
        whole = _playbook(inventory, out)
        assert whole.returncode == 0, whole.stdout[-4000:] + whole.stderr[-2000:]
        assert _stored_hosts(out / "store.sqlite") == ["h1", "h2"]
        for host in ("h1", "h2"):
            runs = [p for p in (out / "runs" / host).iterdir() if p.is_dir()]
            assert len(runs) == 1 and (runs[0] / "results.json").exists(), runs
        page = (out / "compare.html").read_text()
        # the runs differ in their system under test by the host's name (sysinfo.json)
        named = re.search(r"host\.hostname</td>(<td[^>]*>h[12]</td>){2}", page)
        assert named and {"h1", "h2"} <= set(re.findall(r">(h[12])<", named.group(0))), \
            "the compare page must name both hosts"
        assert (out / "trend.html").exists()

        # 2. h2 stops answering mid-campaign: while h1's run is under way (runs go one host
        #    at a time), kill h2's sshd listener (the lab's recorded pid) and the sessions
        #    ControlPersist keeps open, by pid; h2's share then meets an unreachable host
        out2 = tmp_path / "out-unreachable"
        cut = _playbook_started(inventory, out2, "--tags", "campaign,collect")
        try:
            assert _wait_for_run(h1["netns"], cut), "h1's run never started"
            pids = _sshd_pids(h2["netns"])
            assert h2["sshd_pid"] in pids, (h2, pids)
            for pid in pids:
                os.kill(pid, signal.SIGKILL)
            deadline = time.monotonic() + 10
            while _sshd_pids(h2["netns"]) and time.monotonic() < deadline:
                time.sleep(0.2)
            assert _sshd_pids(h2["netns"]) == []
            stdout, stderr = cut.communicate(timeout=600)
        finally:
            if cut.poll() is None:
                cut.kill()
                cut.communicate()
        cut = subprocess.CompletedProcess(cut.args, cut.returncode, stdout, stderr)
        text = cut.stdout + cut.stderr
        assert cut.returncode != 0, text[-4000:]
        lines = [line for line in text.splitlines() if "vsbench lab: host h2:" in line]
        assert len(lines) == 1, text[-4000:]
        assert "h1" not in lines[0].split("vsbench lab: host h2:", 1)[1].split("collected")[0]
        assert _stored_hosts(out2 / "store.sqlite") == ["h1"]
        assert "shares failed on: h2" in text
    finally:
        down = _lab("down", "--dir", str(lab_dir), timeout=120)
    assert down.returncode == 0, down.stderr
    assert _leftovers(lab_dir, state) == []
