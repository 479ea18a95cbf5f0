"""The packed virtqueue (virtio 1.1) beyond testpmd on the host: l3fwd's virtio-user ports
offer it (``packed_vq=1``), a VNF's VM offers it on QEMU's side (libvirt ``<driver
packed="on">``), and a veth end -- which has no virtqueue -- refuses it in one line."""

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from vsbench.interfaces import PluginContext, PluginError, PortSpec, ResourceStack, SwitchPort
from vsbench.system import dpdk_app
from vsbench.system.vm import domain
from vsbench_plugins.vnf import dpdk_process
from vsbench_plugins.vnf.l3fwd.plugin import L3fwd


def _l3fwd(tmp_path, settings):
    return L3fwd(PluginContext(run_id="abc123", settings=settings, log_dir=tmp_path, resources=ResourceStack(),
                               dut_netns="vsb-abc123-dut", work_dir=tmp_path))


def _vhost(tmp_path, n=2):
    return [SwitchPort(f"vh{i}", i, PortSpec("vhostuser", f"vh{i}", socket_path=tmp_path / f"s{i}")) for i in range(n)]


def test_virtio_user_vdevs_offer_the_packed_ring_only_when_asked():
    split = dpdk_app.virtio_user_vdevs([Path("/r/a")])
    assert split == ["--vdev=net_virtio_user0,path=/r/a,queues=1,queue_size=1024"]
    assert dpdk_app.virtio_user_vdevs([Path("/r/a"), Path("/r/b")], packed_ring=True) == [
        "--vdev=net_virtio_user0,path=/r/a,queues=1,queue_size=1024,packed_vq=1",
        "--vdev=net_virtio_user1,path=/r/b,queues=1,queue_size=1024,packed_vq=1"]


def test_l3fwd_on_vhost_user_offers_the_packed_ring_and_says_so(tmp_path):
    vnf = _l3fwd(tmp_path, {"packed_ring": True})
    vnf.ports = _vhost(tmp_path)
    assert all(v.endswith(",packed_vq=1") for v in vnf._vdevs())
    assert vnf.version()["packed_ring_offered"] == "true"
    plain = _l3fwd(tmp_path, {})
    plain.ports = _vhost(tmp_path)
    assert not any("packed_vq" in v for v in plain._vdevs())
    assert plain.version()["packed_ring_offered"] == "false"


def test_l3fwd_refuses_the_packed_ring_on_veth_ends(tmp_path, monkeypatch):
    monkeypatch.setattr(dpdk_process, "list_links", lambda netns: ["ve0", "ve1"])
    ports = [SwitchPort(n, i, PortSpec("physical", n, iface=n)) for i, n in enumerate(("ve0", "ve1"))]
    with pytest.raises(PluginError, match="packed_ring is a virtio ring layout") as info:
        _l3fwd(tmp_path, {"packed_ring": True})._check_ports(ports)
    assert "\n" not in str(info.value)


def _spec(**kw):
    return domain.DomainSpec(name="vsbabc123tp0", kernel=Path("/boot/k"), initramfs=Path("/c/i"), cmdline="x",
                             console_socket=Path("/r/c.sock"), vhost_sockets=(Path("/o/v0"), Path("/o/v1")),
                             macs=("52:ab:c1:23:00:00", "52:ab:c1:23:00:01"), **kw)


def test_a_vms_nics_offer_the_packed_ring_on_qemus_side():
    drivers = ET.fromstring(domain.domain_xml(_spec(packed_ring=True))).findall("devices/interface/driver")
    assert [d.get("packed") for d in drivers] == ["on", "on"]
    plain = ET.fromstring(domain.domain_xml(_spec())).findall("devices/interface/driver")
    assert [d.get("packed") for d in plain] == [None, None]


def test_testpmd_in_a_vm_takes_the_packed_ring_to_its_vm(monkeypatch):
    from vsbench_plugins.vnf.testpmd import guest

    booted = {}

    class FakeVm:
        def __init__(self, **kw):
            booted["init"] = kw

        def boot(self, image, sockets, extra_cmdline=(), packed_ring=False):
            booted.update(sockets=sockets, packed_ring=packed_ring)

    monkeypatch.setattr(guest, "VirtualMachine", FakeVm)
    import vsbench.interfaces.host.vm as host_vm
    monkeypatch.setattr(host_vm, "ensure_image", lambda programs, kernel_version=None: "image")
    guest.boot_vm(run_id="abc123", instance=0, work_dir=Path("/w"), log_dir=Path("/l"), resources=None,
                  settings={}, sockets=[Path("/o/v0")], binary="/usr/bin/dpdk-testpmd", packed_ring=True)
    assert booted["packed_ring"] is True and booted["sockets"] == [Path("/o/v0")]


def test_libvirt_accepts_the_packed_ring_domain(tmp_path):
    """The document libvirt 9 would be handed, checked against libvirt's own schema
    (``virt-xml-validate``, with libxml2-utils' xmllint): a misplaced attribute is refused
    here, not at VM boot minutes into a run."""
    import shutil
    import subprocess

    if not (shutil.which("virt-xml-validate") and shutil.which("xmllint")):
        pytest.skip("virt-xml-validate (libvirt-clients) and xmllint (libxml2-utils) not installed")
    path = tmp_path / "domain.xml"
    path.write_text(domain.domain_xml(_spec(packed_ring=True)))
    done = subprocess.run(["virt-xml-validate", str(path), "domain"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
