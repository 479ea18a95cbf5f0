"""The VM's pure parts: domain XML, MACs, vCPU placement, the guest image's archive."""

import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from vsbench.system import guest_boot
from vsbench.system.vm import domain, image, runner


def spec(**kw):
    base = dict(name="vsbabc123l3fwd", kernel=Path("/boot/vmlinuz-x"), initramfs=Path("/c/i.cpio"),
                cmdline="console=ttyS0", console_socket=Path("/r/console.sock"),
                vhost_sockets=(Path("/o/v0"), Path("/o/v1")),
                macs=(domain.guest_mac("abc123", 0, 0), domain.guest_mac("abc123", 0, 1)))
    base.update(kw)
    return domain.DomainSpec(**base)


def test_domain_is_tcg_with_shared_memfd_memory_and_vhost_user_nics():
    root = ET.fromstring(domain.domain_xml(spec()))
    assert root.get("type") == "qemu"  # TCG: no KVM here
    assert root.find("memoryBacking/source").get("type") == "memfd"
    assert root.find("memoryBacking/access").get("mode") == "shared"
    assert root.find("cpu/numa/cell").get("memAccess") == "shared"
    nics = root.findall("devices/interface")
    assert [n.get("type") for n in nics] == ["vhostuser", "vhostuser"]
    assert [n.find("source").get("path") for n in nics] == ["/o/v0", "/o/v1"]
    assert all(n.find("source").get("mode") == "client" for n in nics)
    assert [n.find("address").get("slot") for n in nics] == ["0x10", "0x11"]
    assert root.find("devices/serial/source").get("path") == "/r/console.sock"
    assert root.find("os/kernel").text == "/boot/vmlinuz-x"
    assert root.find("cputune") is None  # not pinned unless asked


def test_domain_with_hugepages_and_pinned_vcpus():
    pins = domain.vcpu_placement(2, [1])
    root = ET.fromstring(domain.domain_xml(spec(memory_backing="hugepages", vcpu_cpus=pins)))
    assert root.find("memoryBacking/hugepages/page").get("size") == "2048"
    assert [(p.get("vcpu"), p.get("cpuset")) for p in root.findall("cputune/vcpupin")] == [("0", "1"), ("1", "1")]


def test_spec_rejects_inconsistent_input():
    with pytest.raises(ValueError):
        spec(macs=("52:00:00:00:00:01",))
    with pytest.raises(ValueError):
        spec(memory_backing="tmpfs")


def test_nic_addresses_and_macs():
    assert domain.nic_pci_address(0) == "0000:00:10.0" and domain.nic_pci_address(1) == "0000:00:11.0"
    mac = domain.guest_mac("abc123", 1, 2)
    assert mac == "52:ab:c1:23:01:02"
    assert domain.vcpu_placement(3, []) == ()


def test_cpio_is_deterministic_and_well_formed():
    data = guest_boot.cpio_archive(["bin"], [("bin/x", 0o755, b"hello")])
    assert data == guest_boot.cpio_archive(["bin"], [("bin/x", 0o755, b"hello")])
    assert data.startswith(b"070701") and b"TRAILER!!!" in data and len(data) % 4 == 0
    assert guest_boot.parent_dirs(["usr/lib/x/a.so", "bin/b"]) == ["bin", "usr", "usr/lib", "usr/lib/x"]


def test_guest_init_binds_virtio_and_sets_the_prompt():
    assert "uio_pci_generic" in image.INIT_SCRIPT and image.PROMPT in image.INIT_SCRIPT
    assert image.READY_MARK in image.INIT_SCRIPT


def test_driver_package_names():
    assert image._driver_package("librte_net_virtio.so.23") == "librte-net-virtio23"


def test_qemu_conf_runs_as_root_without_relabelling(tmp_path):
    text = runner.qemu_conf(tmp_path)
    assert 'user = "root"' in text and f'hugetlbfs_mount = "{tmp_path}"' in text
    assert "hugetlbfs_mount" not in runner.qemu_conf(None)


def test_vm_settings_defaults():
    cfg = runner.vm_defaults({"vcpus": 1})
    assert cfg["vcpus"] == 1 and cfg["memory_backing"] == "memfd" and cfg["boot_timeout_s"] > 0


def test_cleanup_of_a_killed_run_ends_only_its_own_qemu(tmp_path):
    """``vsbench cleanup`` after kill -9: the VM dir's pid file names a process; it is
    ended only if its command line names that dir, and the dir goes."""
    import subprocess
    import sys

    root = tmp_path / runner.root_dir_name("abc123", "l3fwd0")
    (root / "run" / "qemu").mkdir(parents=True)
    ours = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", str(root)])
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (root / "run" / "qemu" / "vsbabc123l3fwd0.pid").write_text(f"{ours.pid}\n")
        other = tmp_path / runner.root_dir_name("abc123", "l3fwd1")
        (other / "run" / "qemu").mkdir(parents=True)
        (other / "run" / "qemu" / "x.pid").write_text(f"{stranger.pid}\n")
        # until the child has exec'd, its command line is the forking pytest's, which
        # names no VM dir: a loaded host once ran the cleanup before that (ours survived)
        deadline = time.monotonic() + 10
        while str(root).encode() not in Path(f"/proc/{ours.pid}/cmdline").read_bytes():
            assert time.monotonic() < deadline, "the stand-in QEMU never started"
            time.sleep(0.01)
        done = runner.cleanup_dead_run("abc123", [tmp_path])
        ours.wait(timeout=10)  # killed (and already reaped by the cleanup: no status left)
        assert not Path(f"/proc/{ours.pid}").exists()
        assert stranger.poll() is None  # its command line does not name the VM's dir
        assert not root.exists() and not other.exists()
        assert any(f"killed QEMU {ours.pid}" in line for line in done)
        assert runner.cleanup_dead_run("ffffff", [tmp_path]) == []
    finally:
        for proc in (ours, stranger):
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def test_testpmd_in_a_guest_names_the_vm_nics_not_vdevs():
    from vsbench_plugins.vnf.testpmd import argv as argvs
    from vsbench_plugins.vnf.testpmd.guest import guest_argv

    launch = argvs.TestpmdLaunch(binary="/usr/bin/dpdk-testpmd", ports=(argvs.VirtioUserPort(Path("/s0")),
                                 argvs.VirtioUserPort(Path("/s1"))), file_prefix="vsbx", memory_mb=128)
    argv = guest_argv(launch, 2)
    assert argv[argv.index("-a") + 1] == "0000:00:10.0" and argv.count("-a") == 2
    assert "--vdev" not in argv and "--no-pci" not in argv and "-i" in argv
    assert argv[argv.index("--lcores") + 1] == "0@0,1@1"
