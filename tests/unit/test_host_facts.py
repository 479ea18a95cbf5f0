"""The host-fact readers on fake /sys and /proc trees: what each reads, and what an absent
file becomes (None, said so) -- never an exception."""

from pathlib import Path

from tests.unit.host_tree import add_nic, make_host, write
from vsbench.system import host_cpu_tuning, host_nic, host_platform
from vsbench.system.cpu import format_cpu_list

FIRMWARE = {"driver": "i40e", "version": "2.22.18", "firmware-version": "9.20 0x8000d95e 1.3429.0"}


def test_a_nic_owned_by_its_kernel_driver_gives_node_driver_firmware_and_speed(tmp_path: Path):
    add_nic(tmp_path, "0000:3b:00.0", node=1, speed_mbps=25000)
    asked = []
    nic = host_nic.read_nic("0000:3b:00.0", tmp_path, ethtool=lambda iface: asked.append(iface) or FIRMWARE)
    assert (nic.present, nic.numa_node, nic.driver, nic.iface, nic.speed_mbps) == (True, 1, "i40e", "ens1f0", 25000)
    assert (nic.firmware, nic.driver_version, nic.firmware_note) == ("9.20 0x8000d95e 1.3429.0", "2.22.18", None)
    assert asked == ["ens1f0"]


def test_a_nic_bound_to_vfio_has_no_netdev_so_firmware_and_speed_say_why(tmp_path: Path):
    add_nic(tmp_path, "0000:3b:00.1", driver="vfio-pci", iface=None)
    nic = host_nic.read_nic("0000:3b:00.1", tmp_path, ethtool=lambda iface: FIRMWARE)
    assert nic.driver == "vfio-pci" and nic.iface is None and nic.speed_mbps is None and nic.firmware is None
    assert "bound to vfio-pci" in nic.firmware_note and "before binding" in nic.firmware_note


def test_unknown_node_link_down_and_no_ethtool_are_none_with_reasons(tmp_path: Path):
    add_nic(tmp_path, "0000:00:03.0", node=-1, iface="eth0", speed_mbps=-1, driver="virtio-pci")
    nic = host_nic.read_nic("0000:00:03.0", tmp_path, ethtool=lambda iface: {})
    assert nic.numa_node is None and nic.speed_mbps is None
    assert "ethtool -i eth0 gave nothing" in nic.firmware_note


def test_a_missing_or_malformed_address_is_not_present(tmp_path: Path):
    make_host(tmp_path)
    assert not host_nic.read_nic("0000:99:00.0", tmp_path).present
    assert not host_nic.read_nic("../../etc", tmp_path).present


def test_ethernet_devices_are_found_by_class(tmp_path: Path):
    add_nic(tmp_path, "0000:3b:00.0")
    write(tmp_path / "sys/bus/pci/devices/0000:00:1f.2/class", "0x010601")  # a SATA controller
    assert host_nic.ethernet_devices(tmp_path) == ["0000:3b:00.0"]
    assert host_nic.ethernet_devices(tmp_path / "nowhere") == []


def test_cpu_tuning_of_a_tuned_lab_host(tmp_path: Path):
    make_host(tmp_path, nodes={0: (0, 1, 2, 3), 1: (4, 5, 6, 7)}, governor="performance", no_turbo=1,
              cmdline="ro isolcpus=managed_irq,domain,2-3,6 nohz_full=2-3,6 rcu_nocbs=2-3,6 "
                      "intel_idle.max_cstate=0 -- init_arg=1")
    write(tmp_path / "sys/devices/system/cpu/isolated", "2-3,6")
    write(tmp_path / "sys/devices/system/cpu/nohz_full", "2-3,6")
    write(tmp_path / "sys/devices/system/cpu/cpuidle/current_driver", "intel_idle")
    tuning = host_cpu_tuning.read(tmp_path)
    assert tuning.online == tuple(range(8)) and tuning.cpu_nodes[5] == 1
    assert tuning.isolation == {"isolcpus": (2, 3, 6), "nohz_full": (2, 3, 6), "rcu_nocbs": (2, 3, 6)}
    assert tuning.governors[0] == "performance" and tuning.cpufreq_driver == "intel_pstate"
    assert (tuning.boost, tuning.boost_source) == (False, "intel_pstate/no_turbo")
    assert tuning.cpuidle_driver == "intel_idle" and tuning.cmdline_max_cstate == "0"
    assert not tuning.hypervisor


def test_cpu_tuning_of_a_vm_without_cpufreq_is_all_none(tmp_path: Path):
    make_host(tmp_path, nodes={0: (0, 1)}, hypervisor=True)
    write(tmp_path / "sys/devices/system/cpu/nohz_full", "(null)")
    tuning = host_cpu_tuning.read(tmp_path)
    assert tuning.isolation == {"isolcpus": None, "nohz_full": None, "rcu_nocbs": None}
    assert tuning.governors == {} and tuning.cpufreq_driver is None and tuning.boost is None
    assert tuning.hypervisor and tuning.cpuidle_driver is None
    assert host_cpu_tuning.read(tmp_path / "empty").online == ()  # nothing at all: no exception


def test_cpufreq_boost_switch_is_read_when_there_is_no_intel_pstate(tmp_path: Path):
    make_host(tmp_path)
    write(tmp_path / "sys/devices/system/cpu/cpufreq/boost", "1")
    assert host_cpu_tuning.boost(tmp_path / "sys/devices/system/cpu") == (True, "cpufreq/boost")


def test_hugepages_are_read_per_node_and_size(tmp_path: Path):
    make_host(tmp_path, nodes={0: (0, 1), 1: (2, 3)}, pages={(0, 1048576): 16, (1, 2048): 1024})
    pools = {(p.node, p.size_kb): p.total for p in host_platform.read(tmp_path).pages}
    assert pools == {(0, 2048): 0, (0, 1048576): 16, (1, 2048): 1024, (1, 1048576): 0}


def test_iommu_modes(tmp_path: Path):
    make_host(tmp_path, cmdline="ro intel_iommu=on iommu=pt")
    (tmp_path / "sys/class/iommu/dmar0").mkdir(parents=True)
    for group in ("0", "1"):
        (tmp_path / "sys/kernel/iommu_groups" / group).mkdir(parents=True)
    mmu = host_platform.iommu(tmp_path)
    assert (mmu.mode, mmu.units, mmu.groups) == ("passthrough", ("dmar0",), 2)
    assert mmu.parameters == {"intel_iommu": "on", "iommu": "pt"}

    bare = make_host(tmp_path / "bare")
    assert host_platform.iommu(bare).mode == "off" and host_platform.iommu(bare).vfio_noiommu is None
    write(bare / "sys/module/vfio/parameters/enable_unsafe_noiommu_mode", "Y")
    assert host_platform.iommu(bare).mode == "no-iommu"


def test_irqbalance_is_found_by_its_comm(tmp_path: Path):
    make_host(tmp_path)
    write(tmp_path / "proc/1/comm", "init")
    assert not host_platform.read(tmp_path).irqbalance_running
    write(tmp_path / "proc/812/comm", "irqbalance")
    assert host_platform.read(tmp_path).irqbalance_running


def test_cpu_list_format_is_the_kernels():
    assert format_cpu_list({0, 1, 2, 3, 6, 8, 9}) == "0-3,6,8-9"
    assert format_cpu_list([]) == "" and format_cpu_list([5]) == "5"


def test_isolation_parameter_flags_are_skipped():
    assert host_cpu_tuning.cpus_of_parameter("domain,managed_irq,1-3,7") == (1, 2, 3, 7)
    assert host_cpu_tuning.cpus_of_parameter("nohz,garbage") == ()
