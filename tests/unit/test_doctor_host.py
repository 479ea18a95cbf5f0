"""``vsbench doctor --host`` on this very machine, as a user runs it: every line has a
status (the VM this runs on has no cpufreq, no IOMMU and maybe no hugepages -- each said,
never a traceback), the exit code follows the fail lines, and a configuration naming a
PCI device that is not there is a fail line, not a crash."""

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from vsbench.runner import config as cfg
from vsbench.runner import doctor_host
from vsbench.system import sysinfo
from vsbench.results import schema

ROOT = Path(__file__).resolve().parents[2]
STATUSES = ("ok", "warn", "fail")


def doctor_host_cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "vsbench", "doctor", "--host", *args], capture_output=True,
                          text=True, timeout=120, env=env, cwd=ROOT)


def check_lines(done: subprocess.CompletedProcess) -> list[str]:
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
    *lines, summary = done.stdout.splitlines()
    assert summary.startswith("doctor --host: "), done.stdout
    for line in lines:
        status = line.split(None, 1)[0]
        assert status in STATUSES, line
        assert (" -- fix: " in line) == (status != "ok"), line
    failed = any(line.startswith("fail") for line in lines)
    assert done.returncode == (2 if failed else 0), done.stdout
    return lines


def test_doctor_host_on_this_machine():
    lines = check_lines(doctor_host_cli())
    settings = [line.split(None, 1)[1].split(":", 1)[0] for line in lines]
    for needed in ("isolcpus (busy-polling CPUs)", "nohz_full (busy-polling CPUs)", "rcu_nocbs (busy-polling CPUs)",
                   "CPU frequency governor", "turbo/boost", "IOMMU", "irqbalance"):
        assert needed in settings, lines
    assert any(s.startswith("cores ovs_dpdk PMD") for s in settings), lines  # the default pmd_cpu_mask
    assert any(s.startswith("hugepages") for s in settings), lines


def test_a_pci_port_that_does_not_exist_is_a_fail_line_and_exit_2(tmp_path):
    conf = tmp_path / "lab.yaml"
    conf.write_text(yaml.safe_dump({"vswitch": {"ovs_dpdk": {"ports": [{"pci": "0000:fe:1f.7"}]}}}))
    done = doctor_host_cli("--conf-file", str(conf))
    lines = check_lines(done)
    assert done.returncode == 2
    assert [line for line in lines if line.startswith("fail  NIC 0000:fe:1f.7 (ovs_dpdk port 0): no such PCI device")]


def test_sysinfo_carries_the_same_lines_and_validates(tmp_path):
    config = cfg.load_layers(cfg.default_conf_dir(), [])
    doc = sysinfo.collect("abc123", host_settings=doctor_host.sysinfo_section([config]))
    schema.validate(doc, "sysinfo.schema.json")
    checks = doc["host_settings"]["checks"]
    assert {c["setting"] for c in checks} >= {"CPU frequency governor", "IOMMU", "irqbalance"}
    json.dumps(doc, allow_nan=False)
