"""``vsbench doctor --host`` verdicts on made-up hosts: which fact gives ok, warn or fail,
and that every line that is not ok carries its fix."""

from pathlib import Path

import pytest

from tests.unit.host_tree import add_nic, make_host, write
from vsbench.system import host_settings
from vsbench.system.host_targets import ConfiguredCores, ConfiguredNic, HostTargets

FIRMWARE = {"version": "2.22.18", "firmware-version": "9.20 0x8000d95e"}
TWO_NODES = {0: (0, 1, 2, 3), 1: (4, 5, 6, 7)}
PMD_ON_2 = ConfiguredCores("ovs_dpdk PMD", (2,), "vswitch.ovs_dpdk.pmd_cpu_mask")


def check(root: Path, **targets) -> dict[str, tuple[str, str, str]]:
    settings = host_settings.collect(HostTargets(**targets), root, ethtool=lambda iface: FIRMWARE)
    for line in settings.lines:
        assert line.status in ("ok", "warn", "fail"), line
        assert (line.status == "ok") == (line.fix == ""), line  # every warn and fail says how to fix it
    return {line.setting: (line.status, line.value, line.fix) for line in settings.lines}


def status_of(lines: dict, prefix: str) -> str:
    (found,) = [v[0] for k, v in lines.items() if k.startswith(prefix)]
    return found


def nic(pci: str, owner: str = "ovs_dpdk port 0", dpdk: bool = True) -> ConfiguredNic:
    return ConfiguredNic(owner, pci, "vswitch.ovs_dpdk.ports[0].pci", dpdk)


def test_a_pmd_on_the_other_node_than_its_nic_is_a_cross_numa_warning(tmp_path):
    make_host(tmp_path, nodes=TWO_NODES)
    add_nic(tmp_path, "0000:af:00.0", node=1, driver="vfio-pci", iface=None)
    lines = check(tmp_path, nics=(nic("0000:af:00.0"),), cores=(PMD_ON_2,))
    status, value, fix = lines["cores ovs_dpdk PMD (CPU 2) NUMA node"]
    assert status == "warn" and "cross-NUMA" in value and "0000:af:00.0 on node 1" in value
    assert "node 1: 4-7" in fix and "vswitch.ovs_dpdk.pmd_cpu_mask" in fix
    assert lines["NIC 0000:af:00.0 (ovs_dpdk port 0) NUMA node"][:2] == ("ok", "1")


def test_a_pmd_on_its_nics_node_is_ok_and_one_spanning_nodes_warns(tmp_path):
    make_host(tmp_path, nodes=TWO_NODES)
    add_nic(tmp_path, "0000:3b:00.0", node=0, driver="vfio-pci", iface=None)
    spanning = ConfiguredCores("testpmd forwarding lcores", (3, 4), "vnf.testpmd.forward_cpus")
    lines = check(tmp_path, nics=(nic("0000:3b:00.0"),), cores=(PMD_ON_2, spanning))
    assert lines["cores ovs_dpdk PMD (CPU 2) NUMA node"][0] == "ok"
    assert lines["cores testpmd forwarding lcores (CPUs 3-4) NUMA node"][0] == "warn"


def test_bad_input_is_one_fail_line_each(tmp_path):
    make_host(tmp_path, nodes={0: (0, 1)})
    add_nic(tmp_path, "0000:00:03.0", driver="vfio-pci", iface=None)
    lines = check(tmp_path, nics=(nic("0000:3b:00.0"), nic("bogus"), nic("0000:00:03.0"),
                                  nic("0000:00:03.0", "prox port 0")),
                  cores=(ConfiguredCores("ovs_dpdk PMD", (4, 5), "vswitch.ovs_dpdk.pmd_cpu_mask"),),
                  problems=("vnf.testpmd.forward_cpus: not a CPU list ('x')",))
    status, value, fix = lines["NIC 0000:3b:00.0 (ovs_dpdk port 0)"]
    assert status == "fail" and value == "no such PCI device on this host" and "ports[0].pci" in fix
    assert lines["NIC bogus (ovs_dpdk port 0)"][0] == "fail"
    assert lines["NIC 0000:00:03.0"][0] == "fail" and "ovs_dpdk port 0, prox port 0" in lines["NIC 0000:00:03.0"][1]
    assert lines["cores ovs_dpdk PMD (CPUs 4-5)"][:2] == ("fail", "CPUs 4-5 not online (online: 0-1)")
    assert lines["configuration"][0] == "fail"


def test_driver_verdicts(tmp_path):
    make_host(tmp_path)
    add_nic(tmp_path, "0000:3b:00.0", driver="i40e", iface="ens1f0")
    add_nic(tmp_path, "0000:3b:00.1", driver="vfio-pci", iface=None)
    add_nic(tmp_path, "0000:5e:00.0", driver="mlx5_core", iface="ens2f0")
    add_nic(tmp_path, "0000:5e:00.1", driver=None, iface=None)
    lines = check(tmp_path, nics=(nic("0000:3b:00.0"), nic("0000:3b:00.1"), nic("0000:5e:00.0"), nic("0000:5e:00.1"),
                                  ConfiguredNic("testbed DUT port 0", "0000:3b:00.0", "testbed.dut_ports[0].pci",
                                                dpdk=False)))
    status, _, fix = lines["NIC 0000:3b:00.0 (ovs_dpdk port 0) driver"]
    assert status == "warn" and "dpdk-devbind.py -b vfio-pci 0000:3b:00.0" in fix and "ens1f0 down" in fix
    assert lines["NIC 0000:3b:00.1 (ovs_dpdk port 0) driver"][0] == "ok"
    assert "bifurcated" in lines["NIC 0000:5e:00.0 (ovs_dpdk port 0) driver"][1]
    assert lines["NIC 0000:5e:00.1 (ovs_dpdk port 0) driver"][:2] == ("warn", "no driver bound")
    assert lines["NIC 0000:3b:00.0 (testbed DUT port 0) driver"][0] == "ok"  # a kernel switch's port


def test_firmware_and_link_speed(tmp_path):
    make_host(tmp_path)
    add_nic(tmp_path, "0000:3b:00.0", speed_mbps=1000)
    add_nic(tmp_path, "0000:3b:00.1", driver="vfio-pci", iface=None)
    lines = check(tmp_path, nics=(nic("0000:3b:00.0"), nic("0000:3b:00.1")), link_gbps=10.0)
    assert lines["NIC 0000:3b:00.0 (ovs_dpdk port 0) firmware"][:2] == ("ok", "driver 2.22.18, firmware 9.20 0x8000d95e")
    status, value, fix = lines["NIC 0000:3b:00.0 (ovs_dpdk port 0) link speed"]
    assert status == "warn" and "1000 Mb/s" in value and "testbed.link_gbps: 1" in fix
    assert lines["NIC 0000:3b:00.1 (ovs_dpdk port 0) firmware"][0] == "warn"  # bound: the kernel cannot say
    assert lines["NIC 0000:3b:00.1 (ovs_dpdk port 0) link speed"][0] == "ok"  # DPDK reads it at run time


def test_isolation_covers_the_pollers_or_names_the_boot_parameter(tmp_path):
    make_host(tmp_path, cmdline="ro isolcpus=2-3 rcu_nocbs=2-3")
    write(tmp_path / "sys/devices/system/cpu/isolated", "2-3")
    lines = check(tmp_path, cores=(PMD_ON_2, ConfiguredCores("l3fwd0 lcore", (1,), "vnf.l3fwd.lcore_cpu")))
    status, value, fix = lines["isolcpus (busy-polling CPUs)"]
    assert status == "warn" and "CPU 1 not in it" in value and "isolcpus=1-3" in fix and "/etc/default/grub" in fix
    assert lines["nohz_full (busy-polling CPUs)"][0] == "warn"
    assert check(tmp_path, cores=(PMD_ON_2,))["rcu_nocbs (busy-polling CPUs)"][0] == "ok"


def test_frequency_verdicts(tmp_path):
    lab = make_host(tmp_path / "lab", governor="performance", no_turbo=1)
    lines = check(lab, cores=(PMD_ON_2,))
    assert lines["CPU frequency governor"][0] == "ok" and lines["turbo/boost"][0] == "ok"
    laptop = make_host(tmp_path / "laptop", governor="powersave", no_turbo=0)
    lines = check(laptop, cores=(PMD_ON_2,))
    assert lines["CPU frequency governor"][0] == "warn" and "cpupower frequency-set -g performance" in \
        lines["CPU frequency governor"][2]
    assert lines["turbo/boost"][0] == "warn" and "no_turbo" in lines["turbo/boost"][2]


def test_a_vm_without_cpufreq_says_so_honestly(tmp_path):
    make_host(tmp_path, hypervisor=True)
    lines = check(tmp_path, cores=(PMD_ON_2,))
    status, value, _ = lines["CPU frequency governor"]
    assert status == "ok" and value.startswith("no cpufreq driver (a VM")
    assert lines["turbo/boost"][0] == "warn" and "not visible to the OS" in lines["turbo/boost"][1]


def test_c_states(tmp_path):
    make_host(tmp_path)
    write(tmp_path / "sys/devices/system/cpu/cpuidle/current_driver", "intel_idle")
    assert check(tmp_path)["C-states"][0] == "warn"
    limited = make_host(tmp_path / "limited", cmdline="ro intel_idle.max_cstate=0")
    write(limited / "sys/devices/system/cpu/cpuidle/current_driver", "intel_idle")
    assert check(limited)["C-states"][0] == "ok"


@pytest.mark.parametrize("nodes, expected", [(TWO_NODES, "warn"), ({0: (0, 1, 2, 3)}, "ok")])
def test_no_hugepage_where_the_pollers_are_warns_only_on_a_multi_node_host(tmp_path, nodes, expected):
    make_host(tmp_path, nodes=nodes, pages={(1, 2048): 512} if len(nodes) > 1 else {})
    lines = check(tmp_path, cores=(PMD_ON_2,))
    assert lines["hugepages node 0 2 MB"][0] == expected
    if len(nodes) > 1:
        assert lines["hugepages node 1 2 MB"][:2] == ("ok", "512 reserved, 512 free")
        assert "node0/hugepages/hugepages-2048kB/nr_hugepages" in lines["hugepages node 0 2 MB"][2]


def test_no_hugetlb_at_all_fails(tmp_path):
    make_host(tmp_path)
    (tmp_path / "sys/kernel/mm/hugepages/hugepages-2048kB").rmdir()
    (tmp_path / "sys/kernel/mm/hugepages").rmdir()
    assert check(tmp_path)["hugepages"][0] == "fail"


def test_iommu_matters_only_for_dpdk_nics(tmp_path):
    make_host(tmp_path)
    assert check(tmp_path)["IOMMU"][0] == "ok"
    add_nic(tmp_path, "0000:3b:00.0")
    status, value, fix = check(tmp_path, nics=(nic("0000:3b:00.0"),))["IOMMU"]
    assert status == "warn" and value.startswith("off") and "intel_iommu=on iommu=pt" in fix
    (tmp_path / "sys/class/iommu/dmar0").mkdir(parents=True)
    assert check(tmp_path, nics=(nic("0000:3b:00.0"),))["IOMMU"][0] == "ok"


def test_irqbalance_running_warns(tmp_path):
    make_host(tmp_path)
    write(tmp_path / "proc/900/comm", "irqbalance")
    assert check(tmp_path)["irqbalance"][0] == "warn"


def test_unconfigured_nics_and_remote_generators_are_said(tmp_path):
    make_host(tmp_path)
    add_nic(tmp_path, "0000:00:03.0", node=-1, driver="virtio-pci", iface="eth0", speed_mbps=-1, vendor="0x1af4")
    lines = check(tmp_path, remote=(("trafficgen prox", "10.0.0.2"),))
    status, value, _ = lines["PCI NIC 0000:00:03.0 (not configured)"]
    assert status == "ok" and "netdev eth0, driver virtio-pci, NUMA node unknown" in value and "speed unknown" in value
    assert lines["trafficgen prox on 10.0.0.2"][0] == "ok"


def test_the_record_is_json_for_sysinfo(tmp_path):
    make_host(tmp_path)
    add_nic(tmp_path, "0000:3b:00.0")
    doc = host_settings.collect(HostTargets(nics=(nic("0000:3b:00.0"),), cores=(PMD_ON_2,)), tmp_path,
                                ethtool=lambda iface: FIRMWARE).to_json()
    assert doc["nics"][0]["firmware"] == "9.20 0x8000d95e" and doc["cpus"]["cpu_nodes"]["2"] == 0
    assert doc["targets"]["cores"][0]["cpus"] == [2]
    assert {c["status"] for c in doc["checks"]} <= {"ok", "warn", "fail"}
