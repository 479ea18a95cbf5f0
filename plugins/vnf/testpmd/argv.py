"""dpdk-testpmd's command line, built by pure functions (no I/O), for every place it runs.

A forwarding VNF on the host (this plugin), or inside a guest (a VM plugin reuses
:func:`testpmd_argv` with its own EAL device arguments), is one ``dpdk-testpmd`` process:

* **EAL arguments** (:func:`eal_args`): lcores pinned to CPUs (``--lcores 0@0,1@1``; the
  main lcore serves the interactive console, every other lcore busy-polls), the file prefix
  that names its hugepage files and runtime directory after the run, memory (hugepages
  with ``--single-file-segments``, which vhost-user needs to share guest memory in few file
  descriptors, or ``--no-huge``), and ``--no-pci``: testpmd never probes the host's NICs
  -- unless it is given PCI ports (:class:`PciPort`), then ``-a`` allows exactly those.
* **One vdev per port** (:func:`vdev_arg`): ``net_virtio_user<N>`` attached to a vswitch's
  vhost-user socket (``server=1`` when testpmd creates the socket and the switch connects
  as client; ``packed_vq=1`` offers the virtio 1.1 packed virtqueue layout, ``queues=N``
  N queue pairs), or ``net_af_packet<N>`` on a kernel interface (a veth end) for switches
  without vhost-user.
* **Application arguments** (:func:`app_args`): interactive (``-i``, driven over a pty),
  the forwarding mode, ports paired 0<->1, 2<->3 (``--port-topology=paired``), queue and
  burst sizes, an mbuf pool sized for the ports instead of testpmd's ~400 MB default.

Nothing here reads settings files or the environment: the caller passes values.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

FORWARD_MODES = ("io", "mac", "macswap")
IFACE_RE = re.compile(r"^[A-Za-z0-9_.@-]{1,15}$")
MAC_RE = re.compile(r"^([0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}$")
#: Characters a vdev argument value may hold (it is split on ',' and '=' by the EAL).
SAFE_PATH_RE = re.compile(r"^[A-Za-z0-9_./+-]+$")


class ArgvError(ValueError):
    """A value cannot be put on testpmd's command line; one line for the user."""


@dataclass(frozen=True)
class VirtioUserPort:
    """A port on a vswitch's vhost-user socket. ``server``: testpmd creates the socket
    (the switch's port is a vhost-user *client*); else the switch created it."""

    socket_path: Path
    server: bool = False
    queue_size: int = 1024
    mac: str | None = None
    #: Offer VIRTIO_F_RING_PACKED (virtio 1.1 packed virtqueues) instead of split rings.
    packed_ring: bool = False
    #: Queue pairs (VIRTIO_NET_F_MQ when more than one).
    queues: int = 1


@dataclass(frozen=True)
class AfPacketPort:
    """A port on a kernel interface (the VNF's end of a veth pair), through packet-mmap."""

    iface: str
    framecnt: int = 2048
    blocksz: int = 4096
    framesz: int = 2048
    qdisc_bypass: bool = True
    qpairs: int = 1


@dataclass(frozen=True)
class PciPort:
    """A PCI NIC (a lab's, or the kernel lab's emulated one) driven by DPDK's own PMD: the
    only PCI devices the EAL may probe are these (``-a``), bound to vfio-pci or
    uio_pci_generic before testpmd starts."""

    address: str


VnfPort = VirtioUserPort | AfPacketPort | PciPort
PCI_RE = re.compile(r"^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")


def dpdk_port_order(ports: Sequence[VnfPort]) -> list[int]:
    """Indices of ``ports`` in the order DPDK numbers them: the PCI bus is scanned (and its
    ports numbered) in address order, before any vdev, whose order is the command line's."""
    pci = sorted((i for i, p in enumerate(ports) if isinstance(p, PciPort)), key=lambda i: ports[i].address.lower())
    return pci + [i for i, p in enumerate(ports) if not isinstance(p, PciPort)]


@dataclass(frozen=True)
class TestpmdLaunch:
    """Everything that decides one testpmd process's command line.

    ``main_cpu`` runs the main lcore (the console: nearly idle); ``forward_cpus`` one
    forwarding lcore each (busy-polling). ``memory_mb`` is what the EAL may allocate, from
    hugepages under ``huge_dir`` when ``hugepages`` else from ordinary memory.
    """

    __test__ = False  # not a pytest test class

    binary: str
    ports: tuple[VnfPort, ...]
    file_prefix: str
    main_cpu: int = 0
    forward_cpus: tuple[int, ...] = (1,)
    memory_mb: int = 256
    hugepages: bool = True
    huge_dir: Path | None = None
    forward_mode: str = "io"
    rx_descriptors: int = 1024
    tx_descriptors: int = 1024
    burst: int = 32
    #: RX and TX queues per port (each port's vdev must have as many).
    queues: int = 1
    mbufs: int | None = None
    peer_macs: tuple[str | None, ...] = ()
    extra_eal: tuple[str, ...] = field(default_factory=tuple)
    extra_app: tuple[str, ...] = field(default_factory=tuple)


def lcores_arg(main_cpu: int, forward_cpus: Sequence[int]) -> str:
    """``0@<main>,1@<fwd0>,2@<fwd1>``: lcore 0 is the main one; lcores may share a CPU
    (on a 2-core machine they must), which ``-l`` could not express."""
    if not forward_cpus:
        raise ArgvError("testpmd needs at least one forwarding CPU")
    for cpu in (main_cpu, *forward_cpus):
        if isinstance(cpu, bool) or not isinstance(cpu, int) or cpu < 0:
            raise ArgvError(f"not a CPU number: {cpu!r}")
    return ",".join(f"{lcore}@{cpu}" for lcore, cpu in enumerate((main_cpu, *forward_cpus)))


def _safe_path(path: Path) -> str:
    text = str(path)
    if not SAFE_PATH_RE.match(text):
        raise ArgvError(f"vhost-user socket path {text!r} has characters a DPDK device argument cannot carry")
    return text


def vdev_arg(index: int, port: VnfPort) -> str:
    """The ``--vdev`` value of port ``index``."""
    if isinstance(port, VirtioUserPort):
        if int(port.queues) < 1:
            raise ArgvError(f"a virtio-user port needs at least one queue pair, not {port.queues}")
        parts = [f"net_virtio_user{index}", f"path={_safe_path(port.socket_path)}", f"queues={int(port.queues)}",
                 f"queue_size={int(port.queue_size)}"]
        if port.server:
            parts.append("server=1")
        if port.packed_ring:
            parts.append("packed_vq=1")
        if port.mac:
            if not MAC_RE.match(port.mac):
                raise ArgvError(f"not a MAC address: {port.mac!r}")
            parts.append(f"mac={port.mac}")
        return ",".join(parts)
    if isinstance(port, AfPacketPort):
        if not IFACE_RE.match(port.iface):
            raise ArgvError(f"not an interface name: {port.iface!r}")
        return (f"net_af_packet{index},iface={port.iface},qpairs={int(port.qpairs)},blocksz={int(port.blocksz)},"
                f"framesz={int(port.framesz)},framecnt={int(port.framecnt)},"
                f"qdisc_bypass={int(port.qdisc_bypass)}")
    if isinstance(port, PciPort):
        raise ArgvError(f"PCI device {port.address} is allowed with -a, not a --vdev")
    raise ArgvError(f"unknown port type {type(port).__name__}")


def mbufs_for(launch: TestpmdLaunch) -> int:
    """An mbuf pool that fills every RX and TX ring of every port, plus a burst per lcore
    and headroom: testpmd's own default sizes it for 64 lcores (~400 MB)."""
    per_port = (launch.rx_descriptors + launch.tx_descriptors) * max(1, int(launch.queues))
    return max(4096, len(launch.ports) * per_port + (len(launch.forward_cpus) + 1) * launch.burst * 4 + 2048)


def eal_args(launch: TestpmdLaunch) -> list[str]:
    if not launch.file_prefix or not re.match(r"^[A-Za-z0-9_-]+$", launch.file_prefix):
        raise ArgvError(f"file prefix {launch.file_prefix!r} must be letters, digits, '-' or '_'")
    pci = [p.address for p in launch.ports if isinstance(p, PciPort)]
    for address in pci:
        if not PCI_RE.match(address):
            raise ArgvError(f"not a PCI address (DDDD:BB:DD.F): {address!r}")
    allow = [arg for address in pci for arg in ("-a", address)] or ["--no-pci"]
    args = ["--lcores", lcores_arg(launch.main_cpu, launch.forward_cpus), "--main-lcore", "0",
            *allow, f"--file-prefix={launch.file_prefix}", "-m", str(int(launch.memory_mb))]
    if launch.hugepages:
        args.append("--single-file-segments")
        if launch.huge_dir is not None:
            args.append(f"--huge-dir={launch.huge_dir}")
    else:
        args.append("--no-huge")
    vdevs = [p for p in launch.ports if not isinstance(p, PciPort)]
    for index, port in enumerate(vdevs):
        args += ["--vdev", vdev_arg(index, port)]
    return args + list(launch.extra_eal)


def app_args(launch: TestpmdLaunch) -> list[str]:
    if launch.forward_mode not in FORWARD_MODES:
        raise ArgvError(f"forward mode {launch.forward_mode!r}: choose one of {', '.join(FORWARD_MODES)}")
    if len(launch.ports) < 2 or len(launch.ports) % 2:
        raise ArgvError(f"testpmd forwards between pairs of ports; got {len(launch.ports)}")
    args = ["-i", f"--forward-mode={launch.forward_mode}", "--port-topology=paired",
            f"--nb-cores={len(launch.forward_cpus)}", f"--rxq={int(launch.queues)}", f"--txq={int(launch.queues)}",
            f"--rxd={int(launch.rx_descriptors)}", f"--txd={int(launch.tx_descriptors)}",
            f"--burst={int(launch.burst)}", f"--total-num-mbufs={int(launch.mbufs or mbufs_for(launch))}",
            "--no-lsc-interrupt"]
    for index, mac in enumerate(launch.peer_macs):
        if mac is None:
            continue
        if not MAC_RE.match(mac):
            raise ArgvError(f"not a MAC address: {mac!r}")
        args.append(f"--eth-peer={index},{mac}")
    return args + list(launch.extra_app)


def testpmd_argv(launch: TestpmdLaunch) -> list[str]:
    """The whole command line: ``binary EAL... -- APP...``."""
    return [launch.binary, *eal_args(launch), "--", *app_args(launch)]
