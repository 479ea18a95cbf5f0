"""What a DPDK application that vsbench starts needs around it: its own hugepages, its
vhost-user or ``net_af_packet`` ports, and its counters read through DPDK's telemetry socket.

A VNF plugin (testpmd, l3fwd) calls :func:`prepare_memory` before starting the program:
hugepages are reserved for exactly what it asks (plus nothing), mounted privately under the
plugin's run directory, and the program's page files and runtime directory (its
``--file-prefix``) are removed at teardown -- each undo registered as it is acquired, and
recorded for ``vsbench cleanup`` if the run is killed.
"""

from __future__ import annotations

import json
import re
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from vsbench.system import hugepages
from vsbench.system.resources import ResourceStack

DPDK_RUNTIME_ROOT = Path("/var/run/dpdk")
HUGEPAGE_RECORD = "hugepages.json"
#: A kernel interface name (at most 15 characters) without the ',' and '=' that would split
#: a DPDK device argument.
IFACE_RE = re.compile(r"^[A-Za-z0-9_.@-]{1,15}$")


class DpdkAppError(Exception):
    """Memory or telemetry for a DPDK program failed; one line for the user."""


@dataclass(frozen=True)
class DpdkMemory:
    """Where the program's hugepages are: pass :meth:`eal_args` to its EAL."""

    file_prefix: str
    huge_dir: Path
    memory_mb: int

    def eal_args(self) -> list[str]:
        return [f"--file-prefix={self.file_prefix}", f"--huge-dir={self.huge_dir}", "-m", str(self.memory_mb)]


def prepare_memory(stack: ResourceStack, run_dir: Path, file_prefix: str, memory_mb: int,
                   page_size_kb: int = 2048) -> DpdkMemory:
    """Reserve ``memory_mb`` of hugepages, mount them privately at ``run_dir/hugepages``,
    and register removal of the program's files; every undo on ``stack``."""
    record = run_dir / HUGEPAGE_RECORD
    run_dir.mkdir(parents=True, exist_ok=True)
    try:
        hugepages.reserve(hugepages.pages_for_mb(memory_mb, page_size_kb), stack,
                          page_size_kb=page_size_kb, record=record)
        huge_dir = hugepages.mount_private(run_dir / "hugepages", stack, page_size_kb=page_size_kb, record=record)
    except hugepages.HugepageError as exc:
        raise DpdkAppError(str(exc)) from None
    hugepages.register_dpdk_file_cleanup(stack, huge_dir, file_prefix, record)
    return DpdkMemory(file_prefix, huge_dir, memory_mb)


def release_recorded(run_dir: Path) -> int:
    """For ``cleanup_dead_run``: give back what :func:`prepare_memory` recorded in
    ``run_dir`` (the program must be dead). Returns the pages released."""
    return hugepages.release_recorded(run_dir / HUGEPAGE_RECORD)


def virtio_user_vdevs(socket_paths: Sequence[Path], queues: int = 1, queue_size: int = 1024,
                      packed_ring: bool = False) -> list[str]:
    """``--vdev`` arguments attaching one ``net_virtio_user`` port per vhost-user socket
    (the switch is the server: OvS ``dpdkvhostuser`` ports); ``packed_ring`` offers the
    virtio 1.1 packed virtqueue (``packed_vq=1``), which the switch may or may not accept."""
    args = []
    for index, path in enumerate(socket_paths):
        packed = ",packed_vq=1" if packed_ring else ""
        args.append(f"--vdev=net_virtio_user{index},path={path},queues={queues},queue_size={queue_size}{packed}")
    return args


def af_packet_vdev(index: int, iface: str, *, framecnt: int = 2048, blocksz: int = 4096,
                   framesz: int = 2048, qpairs: int = 1) -> str:
    """The ``--vdev`` argument of one ``net_af_packet`` port on kernel interface ``iface``
    (a veth end, for a switch without vhost-user): packet-mmap rings, the qdisc bypassed.
    ``qpairs`` > 1: that many sockets, the kernel spreading received frames over them by
    flow hash (a program must poll every one of their receive queues)."""
    if not IFACE_RE.match(iface):
        raise DpdkAppError(f"{iface!r} is not an interface name a DPDK device argument can carry")
    return (f"--vdev=net_af_packet{index},iface={iface},qpairs={int(qpairs)},blocksz={int(blocksz)},"
            f"framesz={int(framesz)},framecnt={int(framecnt)},qdisc_bypass=1")


def telemetry_socket(file_prefix: str, runtime_root: Path = DPDK_RUNTIME_ROOT) -> Path:
    return runtime_root / file_prefix / "dpdk_telemetry.v2"


def telemetry_query(path: Path, command: str, timeout_s: float = 2.0) -> Any:
    """One query to a DPDK telemetry socket (``/ethdev/stats,0``); the decoded reply's value."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as sock:
        sock.settimeout(timeout_s)
        try:
            sock.connect(str(path))
            sock.recv(4096)  # greeting: version, pid, max_output_len
            sock.send(command.encode())
            reply = json.loads(sock.recv(1 << 16).decode())
        except (OSError, ValueError) as exc:
            raise DpdkAppError(f"telemetry {path}: {command}: {exc}") from None
    return reply.get(command.split(",", 1)[0])


def ethdev_counters(reply: Any) -> dict[str, int]:
    """``/ethdev/stats`` under the names of the VNF contract's ``trial_end`` (frames)."""
    reply = reply or {}
    return {
        "rx_frames": int(reply.get("ipackets", 0)),
        "tx_frames": int(reply.get("opackets", 0)),
        "rx_missed": int(reply.get("imissed", 0)),
        "rx_errors": int(reply.get("ierrors", 0)),
        "tx_errors": int(reply.get("oerrors", 0)),
        "rx_nombuf": int(reply.get("rx_nombuf", 0)),
    }


def counter_deltas(before: list[dict[str, int]], after: list[dict[str, int]]) -> list[dict[str, int]]:
    """Per-port ``after - before`` of :func:`ethdev_counters` lists (``port`` kept)."""
    deltas = []
    for old, new in zip(before, after):
        deltas.append({k: (v if k == "port" else v - int(old.get(k, 0))) for k, v in new.items()})
    return deltas
