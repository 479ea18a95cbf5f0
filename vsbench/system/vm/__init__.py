"""VNFs in virtual machines: a guest image built from Debian packages, a libvirt domain with
vhost-user NICs on the switch's sockets, a serial console to drive the VNF, and a teardown
that leaves nothing (domain, its private libvirt root, hugepages, sockets).

* :mod:`.image` builds (and caches) the guest: Debian's kernel plus an initramfs that
  carries busybox, the VNF's binary, its shared libraries and DPDK drivers;
* :mod:`.domain` renders the libvirt domain XML (pure; unit-tested);
* :mod:`.console` drives the guest's serial console with pexpect;
* :mod:`.runner` boots, drives and tears down one VM with libvirt's embedded QEMU driver
  (``qemu:///embed``: no daemon, every file under the run's own directory).
"""
