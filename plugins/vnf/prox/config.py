"""The PROX configuration of PROX as a VNF: two ports, one worker core forwarding both ways.

Pure: settings and the EAL arguments in, the text of PROX's ``.cfg`` out, so the layout is
checked in unit tests without PROX. Why each line is there:

* ``no-pci=yes``: PROX must never probe the host's NICs; its ports are the ``--vdev``
  arguments vsbench chose (``net_virtio_user`` on the switch's vhost-user sockets, or
  ``net_af_packet`` on the VNF's veth ends);
* ``lsc=no``: neither vdev has a link-state interrupt, and PROX refuses to start a port
  that asks for one (seen with the real PROX on ``net_af_packet``);
* both forwarding tasks on one worker core (``task=0``: port 0 -> port 1, ``task=1``: port
  1 -> port 0): a 2-CPU host has one CPU besides the master; the master runs no task;
* ``swap`` (PROX's reflector: MACs swapped, source MAC the transmitting port's, IPs and L4
  ports swapped), ``nop`` (forwarded unchanged, testpmd's ``io``) or ``l2fwd`` (destination
  MAC set to the peer's, source MAC the port's, testpmd's ``mac``).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

FORWARD_MODES = ("swap", "nop", "l2fwd")
MAC_PATTERN = r"^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$"


class ConfigError(ValueError):
    """A layout PROX would refuse or panic on; one line for the user."""


def render(settings: Mapping[str, Any], eal_args: Sequence[str], peer_macs: Sequence[str | None] = (None, None)) -> str:
    """The ``.cfg`` text. ``peer_macs[p]``: the MAC frames leaving port ``p`` are addressed to
    (``l2fwd``; ignored by the other modes)."""
    mode = settings["forward_mode"]
    if mode not in FORWARD_MODES:
        raise ConfigError(f"vnf.prox.forward_mode {mode!r}: one of {', '.join(FORWARD_MODES)}")
    master, worker = int(settings["master_cpu"]), int(settings["worker_cpu"])
    if master == worker:
        raise ConfigError(f"vnf.prox: master_cpu and worker_cpu are both {master}; PROX's master core "
                          f"runs no forwarding task")
    lines = [
        ";; rendered by vsbench (plugins/vnf/prox/config.py): PROX as a VNF",
        "[eal options]", "-n=4", "no-output=no", "no-pci=yes", "eal=" + " ".join(eal_args), "",
    ]
    for port in range(2):
        lines += [f"[port {port}]", f"name=p{port}", "mac=hardware", "lsc=no",
                  f"rx desc={int(settings['rx_desc'])}", f"tx desc={int(settings['tx_desc'])}", ""]
    lines += ["[defaults]", f"mempool size={int(settings['mempool_k'])}K", "",
              "[global]", "name=vsbench-vnf", "",
              f"[core {master}]", "mode=master", "",
              f"[core {worker}]"]
    for task, (rx, tx) in enumerate(((0, 1), (1, 0))):
        lines += [f"name=fwd{rx}{tx}", f"task={task}", f"mode={mode}", f"rx port=p{rx}", f"tx port=p{tx}"]
        if mode == "l2fwd":
            peer = peer_macs[tx] if len(peer_macs) > tx else None
            if not peer:
                raise ConfigError(f"vnf.prox forward_mode l2fwd needs the MAC of the peer of port {tx} "
                                  f"(the deployment's peer_mac, or vnf.prox.eth_dest)")
            lines.append(f"dst mac={peer}")
        lines.append("")
    return "\n".join(lines)
