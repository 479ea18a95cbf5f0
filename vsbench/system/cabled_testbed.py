"""A testbed on cables that already exist: the generator's ends are kernel interfaces of
real (or emulated) NICs, cabled to the switch's PCI ports, as in a lab.

The embedded testbed makes veth pairs and owns both ends. In a lab (and in the kernel
lab, whose QEMU guest has pairs of emulated NICs cabled to each other) the switch drives
PCI NICs through DPDK (``testbed.dut_ports: [{pci: ...}]``) and the generator the NICs
at the other ends of the cables (``testbed.generator_ifaces``). The embedded generator
(trafgen) measures by interface counters in a namespace of its own, so these interfaces
are *lent* to it: moved into the run's generator namespace and made as quiet as a veth
there (IPv6 off, NOARP, promiscuous, the ingress drop), and given back to the host's namespace with
the state they had (up or down, ARP), whatever happens to the run. An interface that
carries the host's route or an address is refused in one line (lending it would cut a
link in use), as :mod:`vsbench.system.pci_bind` refuses to bind such a NIC.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Sequence

from vsbench.system import naming, pci_bind
from vsbench.system.commands import run
from vsbench.system.netlink import open_netns
from vsbench.system.resources import ResourceStack
from vsbench.system.testbed import (
    IFF_NOARP,
    IFF_UP,
    TG_ROLE,
    GENERATOR_PREFIXLEN,
    Testbed,
    TestbedError,
    TestbedLink,
    _add_netns,
    _check_ipv6_disabled,
    _ensure_tools,
    _wait_carrier,
    generator_ip,
    sink_ingress,
)

log = logging.getLogger(__name__)
SYS_NET = Path("/sys/class/net")
#: How long a lent NIC may take to report its carrier (an emulated or real NIC
#: negotiates its link after ``up``; a veth has it at once).
CARRIER_WAIT_S = 10.0
IFF_PROMISC = 0x100


def _flags(iface: str) -> int:
    return int((SYS_NET / iface / "flags").read_text().strip(), 16)


def check_lendable(ifaces: Sequence[str]) -> None:
    """Refuse (one line) what cannot be lent: a missing interface, one named twice, one
    that is a PCI NIC's interface carrying an address or route of the host's."""
    if len(set(ifaces)) != len(ifaces):
        raise TestbedError(f"testbed.generator_ifaces names an interface twice: {list(ifaces)}")
    for iface in ifaces:
        if not (SYS_NET / iface).exists():
            raise TestbedError(f"testbed.generator_ifaces: no interface {iface} in the host's namespace "
                               "(ip link lists them)")
        reason = pci_bind.iface_in_use(iface)
        if reason:
            raise TestbedError(f"refusing to lend {iface} to the generator: {reason}")


def iface_with_mac(mac: str) -> str | None:
    """The host-namespace interface whose MAC is ``mac`` (None: none is)."""
    for net in sorted(SYS_NET.iterdir()):
        address = net / "address"
        if address.exists() and address.read_text().strip().lower() == mac.lower():
            return net.name
    return None


def _give_back(netns: str, iface: str, mac: str, was_up: bool, had_noarp: bool, was_promisc: bool = False) -> None:
    """Back to the host's namespace (PID 1's), with the flags it had. Found by its MAC:
    when the run gives a PCI NIC back to its kernel driver first, the kernel may hand
    that NIC this interface's old name (eth0 was free meanwhile) -- seen in the kernel lab;
    then it keeps the name it came back under."""
    # under a name of its own first: moving a link into a namespace that has one of the same
    # name fails (and the namespace's removal would then return it as devN)
    # (and a link is renamed only while down: its flags are set again below)
    parking = "vsbg" + mac.replace(":", "")[-8:]
    run(["ip", "link", "set", iface, "down"], netns=netns, check=False, timeout_s=10)
    run(["ip", "link", "set", iface, "name", parking], netns=netns, check=False, timeout_s=10)
    run(["ip", "link", "set", parking, "netns", "1"], netns=netns, check=False, timeout_s=10)
    name = iface_with_mac(mac)
    if name is None:
        log.warning("cabled testbed: %s (%s) did not come back to the host's namespace", iface, mac)
        return
    if name != iface and not (SYS_NET / iface).exists():
        run(["ip", "link", "set", name, "name", iface], check=False, timeout_s=10)
        name = iface if (SYS_NET / iface).exists() else name
    if name != iface:
        log.warning("cabled testbed: %s came back as %s (the kernel gave its name to another NIC meanwhile)",
                    iface, name)
    run(["ip", "link", "set", name, "arp", "off" if had_noarp else "on"], check=False, timeout_s=10)
    run(["ip", "link", "set", name, "promisc", "on" if was_promisc else "off"], check=False, timeout_s=10)
    run(["ip", "link", "set", name, "up" if was_up else "down"], check=False, timeout_s=10)


def create_cabled_testbed(run_id: str, ifaces: Sequence[str], resources: ResourceStack) -> Testbed:
    """Lend ``ifaces`` (generator port i is ``ifaces[i]``) to the run's generator namespace;
    the give-back of each is registered before it moves. The links' DUT side is whatever
    the interfaces are cabled to (``dut_iface`` empty: the switch's PCI ports)."""
    if not ifaces:
        raise TestbedError("testbed.generator_ifaces is empty")
    _ensure_tools()
    check_lendable(ifaces)
    tg_ns = naming.netns_name(run_id, TG_ROLE)
    _add_netns(tg_ns, resources)
    links = []
    for index, iface in enumerate(ifaces):
        flags = _flags(iface)
        mac = (SYS_NET / iface / "address").read_text().strip()
        resources.register(f"{iface} back to the host's namespace", _give_back, tg_ns, iface, mac,
                           bool(flags & IFF_UP), bool(flags & IFF_NOARP), bool(flags & IFF_PROMISC))
        run(["ip", "link", "set", iface, "netns", tg_ns], timeout_s=10)
        ip = generator_ip(index)
        try:
            with open_netns(tg_ns) as ipr:
                found = ipr.link_lookup(ifname=iface)
                if not found:
                    raise TestbedError(f"interface {iface} did not arrive in {tg_ns}")
                ipr.addr("add", index=found[0], address=ip, prefixlen=GENERATOR_PREFIXLEN)
                # promiscuous: a NIC filters unicast frames not addressed to it before its
                # counters (a veth counts them); the generator counts every frame that returns
                # (measured in the kernel lab: OvS forwarded 300 frames, the virtio NICs counted 0)
                ipr.link("set", index=found[0], flags=IFF_NOARP | IFF_UP | IFF_PROMISC,
                         change=IFF_NOARP | IFF_UP | IFF_PROMISC)
        except TestbedError:
            raise
        except Exception as exc:  # pyroute2's NetlinkError and OSError
            raise TestbedError(f"cannot configure {iface} in {tg_ns}: {exc}") from exc
        links.append(TestbedLink(index=index, tg_iface=iface, tg_mac=mac, tg_ip=ip, dut_iface="", dut_mac=""))
    names = [link.tg_iface for link in links]
    for name in names:
        sink_ingress(tg_ns, name)
    _check_ipv6_disabled(tg_ns, names)
    _wait_carrier(tg_ns, names, timeout_s=CARRIER_WAIT_S)
    log.info("cabled testbed %s: generator ports %s lent to %s", run_id, ", ".join(names), tg_ns)
    return Testbed(run_id=run_id, tg_netns=tg_ns, dut_netns="", links=tuple(links), cabled=True)
