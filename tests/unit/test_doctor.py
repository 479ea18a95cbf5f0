"""The decisions of ``vsbench doctor`` and of the DPDK probe, on given inputs.

The probe itself (EAL start, vdev attach, mbuf pool) and the netns/veth check are run for
real in tests/integration/test_doctor_real.py; here: which outcome gives which line.
"""

from pathlib import Path

from vsbench.runner import doctor
from vsbench.system import host_check
from vsbench.system.dpdk_probe import ProbeResult, findings

DIR = "/usr/lib/x86_64-linux-gnu/dpdk/pmds-23.0"
ALL = ["librte_bus_pci.so.23", "librte_bus_vdev.so.23", "librte_mempool_ring.so.23",
       "librte_net_af_packet.so.23"]


def ok_result(**changes) -> ProbeResult:
    base = dict(libraries_ok=True, eal_init_ok=True, vdev_ok=True, ports=1, mempool_ok=True,
                driver_dir=DIR, driver_files=list(ALL))
    base.update(changes)
    return ProbeResult(**base)


def test_a_probe_that_did_everything_has_no_finding():
    assert findings(ok_result()) == []


def test_missing_af_packet_names_its_package_and_the_command():
    files = [f for f in ALL if "af_packet" not in f]
    (what, remedy), = findings(ok_result(vdev_ok=False, ports=0, driver_files=files))
    assert "net_af_packet" in what and DIR in what
    assert remedy == "apt-get install --no-install-recommends librte-net-af-packet23"


def test_missing_vdev_bus_and_pmd_name_both_packages():
    files = [f for f in ALL if "vdev" not in f and "af_packet" not in f]
    (what, remedy), = findings(ok_result(vdev_ok=False, ports=0, driver_files=files))
    assert remedy.endswith("librte-bus-vdev23 librte-net-af-packet23")


def test_a_failed_attach_with_every_file_present_still_blocks():
    """Files present but the attach failed (wrong ABI, broken lib): still a finding."""
    (what, remedy), = findings(ok_result(vdev_ok=False, ports=0))
    assert "cannot be attached" in what and "librte-net-af-packet23" in remedy


def test_attach_reporting_success_without_a_port_is_not_trusted():
    assert findings(ok_result(ports=0))


def test_missing_mempool_ring_is_its_own_line():
    files = [f for f in ALL if "mempool" not in f]
    (what, remedy), = findings(ok_result(mempool_ok=False, driver_files=files))
    assert "mempool_ring" in what
    assert remedy.endswith("librte-mempool-ring23")


def test_both_missing_gives_two_lines():
    files = ["librte_bus_pci.so.23"]
    lines = findings(ok_result(vdev_ok=False, ports=0, mempool_ok=False, driver_files=files))
    assert len(lines) == 2


def test_no_dpdk_libraries_points_at_openvswitch_switch_dpdk():
    (what, remedy), = findings(ProbeResult(libraries_ok=False, error="librte_eal.so.23: cannot open"))
    assert "librte_eal.so.23" in what and remedy.endswith("openvswitch-switch-dpdk")


def test_eal_that_does_not_start_quotes_its_last_log_line():
    (what, remedy), = findings(ok_result(eal_init_ok=False, eal_log=["EAL: a", "EAL: Cannot init memory"]))
    assert "Cannot init memory" in what and "librte-mempool-ring23" in remedy


def test_cpus_one_is_a_warning_two_is_fine():
    assert host_check.check_cpus([0, 1]) == []
    (finding,) = host_check.check_cpus([0])
    assert not finding.blocking and "1 CPU" in finding.what


def test_package_list_parsing(tmp_path: Path):
    lst = tmp_path / "runtime.txt"
    lst.write_text("# comment\n\nfoo  # why\n bar\n")
    assert host_check.read_package_list(lst) == ["foo", "bar"]


def test_missing_packages_are_one_line_with_the_install_command(tmp_path, monkeypatch):
    lst = tmp_path / "runtime.txt"
    lst.write_text("a\nb\nc\n")
    monkeypatch.setattr(host_check, "missing_packages", lambda pkgs: [p for p in pkgs if p != "b"])
    (finding,) = host_check.check_packages([lst])
    assert finding.remedy.startswith("apt-get install --no-install-recommends a c")


def test_exit_code_is_2_only_for_blocking_findings():
    warn = host_check.Finding("x", "y", blocking=False)
    block = host_check.Finding("x", "y")
    assert doctor.exit_code([doctor.CheckLine("a", (), 0.0), doctor.CheckLine("b", (warn,), 0.0)]) == 0
    assert doctor.exit_code([doctor.CheckLine("a", (block,), 0.0)]) == 2


def test_each_finding_is_one_line_with_its_remedy():
    line = doctor.CheckLine("vswitch ovs_dpdk", (host_check.Finding("DPDK driver x", "apt-get install y"),), 0.1)
    assert line.lines() == ["MISSING  vswitch ovs_dpdk: DPDK driver x: apt-get install y"]
    assert doctor.CheckLine("CPUs", (), 0.04).lines() == ["ok       CPUs (0.0 s)"]


def test_selected_plugins_follow_flags_over_config():
    config = {"vswitch": {"name": "ovs_dpdk"}, "trafficgen": {"name": "trafgen"}, "vnf": {"name": "none"}}
    got = doctor.selected_plugins(config, {"vswitch": "linux_bridge"}, every=False)
    assert got == [("vswitch", "linux_bridge"), ("trafficgen", "trafgen"), ("vnf", "none")]


def test_no_driver_directory_at_all_is_said_and_both_drivers_named():
    """What a --no-install-recommends install of openvswitch-switch-dpdk looks like."""
    lines = findings(ok_result(vdev_ok=False, ports=0, mempool_ok=False, driver_dir=None, driver_files=[]))
    assert [remedy.split()[-1] for _, remedy in lines] == ["librte-net-af-packet23", "librte-mempool-ring23"]
    assert all("no driver directory /usr/lib/*/dpdk/pmds-23*" in what for what, _ in lines)


def test_only_a_binary_linked_against_the_shared_dpdk_is_probed(tmp_path):
    from vsbench.system.dpdk_probe import links_shared_dpdk

    dynamic = tmp_path / "dyn"
    dynamic.write_bytes(b"\x7fELF....libnuma.so.1\0librte_eal.so.23\0libc.so.6\0")
    other = tmp_path / "other"
    other.write_bytes(b"\x7fELF....librte_eal.so.24\0librte_eal.so.23.1\0")
    assert links_shared_dpdk(dynamic)
    assert not links_shared_dpdk(other)
    assert not links_shared_dpdk(tmp_path / "missing")
    assert links_shared_dpdk("/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk") or \
        not Path("/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk").exists()
