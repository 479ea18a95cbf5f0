"""l3fwd's command line (pure): EAL arguments, then the application's.

The forwarding lcores take the ports in turn, each port wholly one lcore's (one lcore:
``--config (0,0,C),(1,0,C)``), so there are at most as many lcores as ports. l3fwd gives
every port one transmit queue per lcore, so with n lcores each port has n queue pairs
(``net_af_packet`` ``qpairs=n``), and all n receive queues of a port are polled by that
port's lcore (two: ``(0,0,C0),(0,1,C0),(1,0,C1),(1,1,C1)``) -- the kernel spreads a port's
frames over its sockets by flow hash, and a queue nobody polls would lose them. Several
lcores run on veth ends only: on a virtio-user port with two queues DPDK 22.11's l3fwd asks
for RSS, which virtio refuses (``Cannot configure device: err=-95``). The first lcore is also the main lcore, which in l3fwd runs the
same loop, so exactly one thread per lcore busy-polls. ``--parse-ptype`` because virtio ports do not
classify packets. No ``-P``: virtio-user ports refuse promiscuous mode (l3fwd then exits),
and virtio ports deliver every frame the switch sends them anyway.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence


def _lcores(lcore: int | Sequence[int]) -> list[int]:
    return [int(lcore)] if isinstance(lcore, int) else [int(c) for c in lcore]


def app_args(*, ports: int, lcore: int | Sequence[int], lookup: str, rules_v4: Path, rules_v6: Path,
             eth_dest: Sequence[str] = (), rx_desc: int | None = None, tx_desc: int | None = None,
             extra: Sequence[str] = ()) -> list[str]:
    """The arguments after ``--``; ``lcore`` is one lcore or the forwarding lcores, which
    take the ports in turn (at most one per port), each port with one receive queue per
    lcore, all polled by its lcore."""
    lcores = _lcores(lcore)
    if not lcores or len(lcores) > ports:
        raise ValueError(f"l3fwd hands each of its {ports} ports to one lcore: 1 to {ports} lcores, "
                         f"not {len(lcores)}")
    config = ",".join(f"({port},{queue},{lcores[port % len(lcores)]})"
                      for port in range(ports) for queue in range(len(lcores)))
    args = ["-p", hex((1 << ports) - 1), "--config", config, "--parse-ptype",
            "--lookup", lookup, "--rule_ipv4", str(rules_v4), "--rule_ipv6", str(rules_v6)]
    for port, mac in enumerate(eth_dest):
        if mac:
            args.append(f"--eth-dest={port},{mac}")
    if rx_desc:
        args += ["--rx-queue-size", str(rx_desc)]
    if tx_desc:
        args += ["--tx-queue-size", str(tx_desc)]
    return args + list(extra)


def process_argv(binary: Path, *, lcore: int | Sequence[int], memory_args: Sequence[str], vdevs: Sequence[str],
                 app: Sequence[str]) -> list[str]:
    """l3fwd as a host process on the switch's vhost-user sockets (``net_virtio_user``):
    never probing PCI, memory in one file per segment list (what vhost-user sharing needs).
    The first of the lcores is the main one."""
    lcores = _lcores(lcore)
    return [str(binary), "-l", ",".join(map(str, lcores)), "--main-lcore", str(lcores[0]), "--no-pci",
            "--single-file-segments", *memory_args, *vdevs, "--", *app]


def guest_argv(binary: str, *, lcore: int, pci: Sequence[str], memory_mb: int, app: Sequence[str]) -> list[str]:
    """l3fwd inside the VM on the virtio NICs at ``pci`` (bound to uio_pci_generic)."""
    allow = [arg for address in pci for arg in ("-a", address)]
    return [binary, "-l", str(lcore), "--main-lcore", str(lcore), *allow, "-m", str(memory_mb), "--", *app]
