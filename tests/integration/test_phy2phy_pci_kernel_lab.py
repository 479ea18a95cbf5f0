"""phy2phy_tput through the vsbench CLI on PCI ports, as a lab runs it on its NICs: inside
the kernel lab, whose guest has two pairs of emulated virtio-net NICs, each pair cabled
through a QEMU hub (``tools/kernel-lab/run-tests`` boots it so).

The DUT's ends (end 2 of each pair) are ``testbed.dut_ports: [{pci: ...}]``, which the
forwarder binds to uio_pci_generic itself (``bind_driver``; the guest has no IOMMU and
Debian's kernel no VFIO no-IOMMU mode): OvS-DPDK with ``ports: [{pci: ...}]``, and testpmd
as the ``--vswitch none`` forwarder (phy_vnf_phy). The generator (trafgen) is lent the
other ends (``testbed.generator_ifaces``; vsbench.system.cabled_testbed). In CI (``tools/test.sh
--long``) each forwarder gets one 1 s trial at a fixed rate the emulated generator sends
(``--rate``): every frame sent must come back; with ``VSBENCH_LAB_PHY2PHY=1`` a short NDR/PDR
search instead (64 B, 0.5 s trials, loads capped at a few kfps) must find a throughput above
its floor with no frame lost at the NDR. Either way, afterwards every
device is on the driver it had, every generator interface back in the host's namespace
in the state it had, the hugepages as they were and nothing of the run left running.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from vsbench.system import commands, pci_bind

from lab_nics import lab_pairs, lab_skips

# A whole search under TCG took 6-8 min a run here (OvS-DPDK's start, a dozen trials of the
# emulated generator): over CI's budget, so CI runs one fixed-rate trial per forwarder and
# the search runs when asked for: VSBENCH_LAB_PHY2PHY=1 tools/kernel-lab/run-tests -m long -k phy2phy_pci
WHOLE_SEARCH = os.environ.get("VSBENCH_LAB_PHY2PHY") == "1"
pytestmark = [pytest.mark.integration, pytest.mark.kernel_lab, pytest.mark.long, *lab_skips(pairs=2)]
if commands.which("dpdk-testpmd") is None:
    pytestmark.append(pytest.mark.skip(reason="no dpdk-testpmd (apt-get install dpdk-dev)"))

MIN_LOAD_FPS = 200
MAX_LOAD_FPS = 3000
#: 64 B, short trials, a coarse search between loads the emulated generator can send,
#: no latency stage (each of its points is another trial under TCG).
PARAMS = (f"frame_sizes=[64];trial_duration=0.5;warmup_s=0.5;search.mode=binary;"
          f"search.min_load_fps={MIN_LOAD_FPS};search.max_load_fps={MAX_LOAD_FPS};search.relative_width=0.3;"
          "latency.enabled=false")
#: CI's profile: one trial at a rate the search found loss-free with a wide margin.
FIXED_RATE = "1kpps"
FIXED_PARAMS = "frame_sizes=[64];trial_duration=1;warmup_s=0.5;latency.enabled=false"
SWITCH = {"bind_driver": "uio_pci_generic", "socket_mem_mb": [256], "dpdk_lcore_mask": "0x1",
          "pmd_cpu_mask": "0x2", "start_timeout_s": 240}
TESTPMD = {"bind_driver": "uio_pci_generic", "main_cpu": 0, "forward_cpus": [1], "memory_mb": 256,
           "start_timeout_s": 120, "command_timeout_s": 30}


def _states() -> dict[str, int]:
    """Every host-namespace interface's flags by MAC: a generator end may come back under
    another name (the kernel gives its old one to a DUT NIC back on its driver first)."""
    return {(net / "address").read_text().strip(): int((net / "flags").read_text(), 16)
            for net in Path("/sys/class/net").iterdir() if (net / "address").exists()}


def _nr_hugepages() -> int:
    return int(Path("/proc/sys/vm/nr_hugepages").read_text())


@pytest.mark.parametrize("forwarder", ["ovs_dpdk", "testpmd"])
def test_phy2phy_tput_on_pci_ports_loses_nothing_and_leaves_every_device_as_found(tmp_path, monkeypatch, forwarder):
    from vsbench.cli.main import main
    from vsbench.runner.run import Run

    monkeypatch.setattr(Run, "write_report", lambda self: None)  # rendered on the host; 20-40 s under TCG
    pairs = lab_pairs()[:2]
    gens, duts = [g for g, _ in pairs], [d for _, d in pairs]
    before = {mac: flags for mac, flags in _states().items() if mac in {f"52:54:00:00:{g.pair:02x}:01" for g in gens}}
    assert len(before) == 2
    hugepages_before = _nr_hugepages()
    conf = {"testbed": {"generator_ifaces": [g.iface for g in gens], "dut_ports": [{"pci": d.pci} for d in duts]}}
    if forwarder == "ovs_dpdk":
        conf["vswitch"] = {"ovs_dpdk": {**SWITCH, "ports": [{"pci": d.pci} for d in duts]}}
        selection = ["--vswitch", "ovs_dpdk"]
    else:
        conf["vnf"] = {"testpmd": TESTPMD}
        selection = ["--vswitch", "none", "--vnf", "testpmd"]
    conf_file = tmp_path / "lab.yaml"
    conf_file.write_text(yaml.safe_dump(conf))
    results = tmp_path / "results"
    how = ["--test-params", PARAMS] if WHOLE_SEARCH else ["--test-params", FIXED_PARAMS, "--rate", FIXED_RATE]
    code = main(["--test", "phy2phy_tput", *selection, "--trafficgen", "trafgen", "--conf-file", str(conf_file),
                 *how, "--results-dir", str(results), "--no-store"])
    [run_dir] = [p for p in results.iterdir() if p.is_dir()]
    assert code == 0, (run_dir / "trials.jsonl").read_text() if (run_dir / "trials.jsonl").exists() else code

    trials = [json.loads(line) for line in (run_dir / "trials.jsonl").read_text().splitlines()]
    document = json.loads((run_dir / "results.json").read_text())
    if WHOLE_SEARCH:
        [size] = document["tests"][0]["frame_sizes"]
        ndr = next(p for p in size["points"] if p["name"] == "NDR")
        # the search found a rate above its floor at which nothing was lost, through the PCI ports
        assert ndr["throughput_fps"] > MIN_LOAD_FPS, ndr
        lossless = trials[ndr["trial_index"]]
    else:  # the one trial carried every frame through the PCI ports
        [lossless] = [t for t in trials if t["role"] != "warmup"]
        assert lossless["tx_frames"] >= 0.9 * 1000, lossless
    assert lossless["tx_frames"] > 0 and lossless["rx_frames"] == lossless["tx_frames"], lossless
    if forwarder == "ovs_dpdk":  # the switch's ports were the PCI devices
        ctl_log = "".join(p.read_text() for p in (run_dir / "logs").rglob("ovs-ctl.log"))
        assert all(f'dpdk-devargs="{d.pci}"' in ctl_log for d in duts)

    # as found: drivers, the generator ends (namespace, MAC, up/down, ARP), hugepages, processes
    assert [pci_bind.driver_of(d.pci) for d in duts] == [d.driver for d in duts]
    assert {mac: flags for mac, flags in _states().items() if mac in before} == before
    assert _nr_hugepages() == hugepages_before
    run_id = run_dir.name.rsplit("-", 1)[1]
    assert not [ns for ns in commands.run(["ip", "netns", "list"]).stdout.split() if run_id in ns]
    assert commands.run(["pgrep", "-f", f"vsb{run_id}"], check=False).stdout.strip() == ""
