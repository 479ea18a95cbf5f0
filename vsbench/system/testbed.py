"""The embedded testbed: generator ports in one network namespace, DUT ports in another,
joined by veth pairs. Built with pyroute2; every piece registers its teardown.

The interface counters of these ports *are* the measurement, so the testbed is quiet by
construction: IPv6 is disabled in both namespaces before any interface exists (no router
solicitation, MLD or DAD frames), every port is ``NOARP``, and every generator port drops
whatever arrives at tc ingress (``clsact`` + a one-instruction classic BPF program in
direct-action mode). A veth counts a received frame before tc ingress runs and packet
sockets see it before tc ingress too, so the drop hides nothing from counters or from the
latency probe receiver; it only keeps the generator namespace's own IP stack from ever
answering (ICMP errors, ARP) and from spending CPU on a million frames a second.

Generator ports get deterministic, locally administered MAC addresses derived from the run
id, and addresses from the RFC 2544 benchmarking range 198.18.0.0/15.

``create_loopback_testbed`` joins two generator ports with one veth pair and no DUT: it
measures the generator itself (its maximum rate, its latency floor).
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from typing import Iterable

from vsbench.system import naming
from vsbench.system.commands import CommandError, run, which
from vsbench.system.netlink import NetlinkError, netns_exists, open_netns
from vsbench.system.resources import ResourceStack

log = logging.getLogger(__name__)

TG_ROLE = "tg"
DUT_ROLE = "dut"
#: Interface-name role of DUT ports (``vsb<run>d<i>``), kept short for the 15-char limit.
DUT_IFACE_ROLE = "d"

#: L3 MTU that lets the largest frame vsbench sends (9216 B incl. the 4 B FCS, untagged)
#: through: 9216 - 4 - 14. A veth also accepts a VLAN tag on top of its MTU.
DEFAULT_MTU_BYTES = 9198

IFF_UP = 0x1
IFF_NOARP = 0x80

#: Classic BPF program "return 2" (TC_ACT_SHOT) for a direct-action cls_bpf filter: drop
#: everything. The kernel here has cls_bpf but neither gact nor matchall.
DROP_ALL_BYTECODE = "1,6 0 0 2,"

#: sysctls applied in each namespace before any interface is created in it.
QUIET_SYSCTLS = (
    "net.ipv6.conf.all.disable_ipv6=1",
    "net.ipv6.conf.default.disable_ipv6=1",
)


class TestbedError(Exception):
    """The testbed could not be built; ``str()`` is one line for the user."""


@dataclass(frozen=True)
class TestbedLink:
    """One veth pair: ``tg_iface`` in the generator netns, ``dut_iface`` in the DUT netns.

    On a loopback testbed there is no DUT: ``dut_iface`` is the other generator port, the
    peer of ``tg_iface``, in the generator namespace.
    """

    index: int
    tg_iface: str
    tg_mac: str
    tg_ip: str
    dut_iface: str
    dut_mac: str


@dataclass(frozen=True)
class Testbed:
    run_id: str
    tg_netns: str
    dut_netns: str
    links: tuple[TestbedLink, ...]
    loopback: bool = False  # generator ports wired to each other; dut_netns == tg_netns
    #: generator ports are lent NICs cabled to the switch's PCI ports (no DUT namespace;
    #: vsbench.system.cabled_testbed)
    cabled: bool = False

    @property
    def namespaces(self) -> tuple[str, ...]:
        """Every namespace this testbed created (one for a loopback or cabled testbed)."""
        return (self.tg_netns,) if self.loopback or self.cabled else (self.tg_netns, self.dut_netns)


# --------------------------------------------------------------------------- addressing


def port_mac(run_id: str, role: str, index: int) -> str:
    """``02:<run id>:<role>:<index>``: locally administered, unicast, unique per run.

    Role byte 0x01 for generator ports, 0x02 for DUT ports.
    """
    if not naming.RUN_ID_RE.match(run_id):
        raise ValueError(f"run id must be 6 hex digits, got {run_id!r}")
    if not 0 <= index <= 0xFF:
        raise ValueError(f"port index out of range: {index}")
    role_byte = {TG_ROLE: 0x01, DUT_ROLE: 0x02}[role]
    octets = [0x02, int(run_id[0:2], 16), int(run_id[2:4], 16), int(run_id[4:6], 16), role_byte, index]
    return ":".join(f"{o:02x}" for o in octets)


def generator_ip(index: int) -> str:
    """Generator port ``index`` is ``198.18.<index>.1`` (RFC 2544 benchmarking range)."""
    if not 0 <= index <= 0xFF:
        raise ValueError(f"port index out of range: {index}")
    return f"198.18.{index}.1"


GENERATOR_PREFIXLEN = 24


# --------------------------------------------------------------------------- building blocks


def _add_netns(name: str, resources: ResourceStack) -> None:
    """Create namespace ``name`` and register its removal in the same breath."""
    from pyroute2 import netns as pr_netns

    if netns_exists(name):
        raise TestbedError(f"network namespace {name} already exists (a leftover? run 'vsbench cleanup')")
    try:
        pr_netns.create(name)
    except OSError as exc:
        raise TestbedError(f"cannot create network namespace {name}: {exc}") from exc
    resources.register(f"netns {name}", _remove_netns, name)
    _apply_quiet_sysctls(name)


def _remove_netns(name: str) -> None:
    from pyroute2 import netns as pr_netns

    if netns_exists(name):
        pr_netns.remove(name)


def _apply_quiet_sysctls(name: str) -> None:
    """Disable IPv6 in ``name`` before any interface exists there (they inherit it)."""
    try:
        run(["sysctl", "-q", "-w", *QUIET_SYSCTLS], netns=name, timeout_s=10)
    except Exception as exc:
        raise TestbedError(f"cannot disable IPv6 in {name}: {exc}") from exc


def sink_ingress(netns: str, iface: str) -> None:
    """Drop every frame arriving at generator port ``iface`` after it was counted (the
    kernel would otherwise answer or forward it); also used for loops a generator builds."""
    try:
        run(["tc", "qdisc", "add", "dev", iface, "clsact"], netns=netns, timeout_s=10)
        run(["tc", "filter", "add", "dev", iface, "ingress", "pref", "1", "bpf", "da",
             "bytecode", DROP_ALL_BYTECODE], netns=netns, timeout_s=10)
    except Exception as exc:
        raise TestbedError(f"cannot install the ingress drop on {iface}: {exc}") from exc


def _delete_link(netns: str, iface: str) -> None:
    """Delete one veth (its peer goes with it), if the namespace and link still exist."""
    if not netns_exists(netns):
        return
    with open_netns(netns) as ipr:
        found = ipr.link_lookup(ifname=iface)
        if found:
            ipr.link("del", index=found[0])


def _configure_port(ipr, netns: str, iface: str, mac: str, mtu: int, ip: str | None) -> None:
    found = ipr.link_lookup(ifname=iface)
    if not found:
        raise TestbedError(f"interface {iface} missing in {netns} right after creating it")
    index = found[0]
    ipr.link("set", index=index, address=mac, mtu=mtu)
    if ip is not None:
        ipr.addr("add", index=index, address=ip, prefixlen=GENERATOR_PREFIXLEN)
    ipr.link("set", index=index, flags=IFF_NOARP | IFF_UP, change=IFF_NOARP | IFF_UP)


def _check_ipv6_disabled(netns: str, ifaces: list[str]) -> None:
    """Fail loudly if an interface still has IPv6 (it would emit frames into the counters)."""
    keys = [f"net.ipv6.conf.{i}.disable_ipv6" for i in ifaces]
    out = run(["sysctl", "-n", *keys], netns=netns, timeout_s=10, check=False)
    values = out.stdout.split()
    if out.returncode != 0 or any(v != "1" for v in values) or len(values) != len(keys):
        raise TestbedError(f"IPv6 is still enabled on a port in {netns}: {out.stdout.strip() or out.stderr.strip()}")


def _wait_carrier(netns: str, ifaces: list[str], timeout_s: float = 5.0) -> None:
    """Wait until every port is operationally up.

    The kernel attaches a link's real qdisc only when linkwatch notices the carrier (up to
    a second after ``up``); until then the link has the ``noop`` qdisc, which silently
    drops every frame sent through the qdisc path.
    """
    deadline = time.monotonic() + timeout_s
    with open_netns(netns) as ipr:
        while True:
            states = {}
            for iface in ifaces:
                msg = ipr.get_links(ipr.link_lookup(ifname=iface)[0])[0]
                states[iface] = (msg.get("IFLA_OPERSTATE"), msg.get("IFLA_QDISC"))
            if all(op == "UP" and qd != "noop" for op, qd in states.values()):
                return
            if time.monotonic() >= deadline:
                raise TestbedError(f"links in {netns} did not come up within {timeout_s:g} s: {states}")
            time.sleep(0.05)


def cpu_mask(cpus: Iterable[int]) -> str:
    """``[1, 3]`` -> ``"a"``: the hex CPU mask sysfs expects."""
    mask = 0
    for cpu in cpus:
        mask |= 1 << int(cpu)
    return f"{mask:x}"


def steer_receive(netns: str, iface: str, cpus: Iterable[int]) -> None:
    """Process frames arriving at ``iface`` on ``cpus`` (RPS on each of its RX queues).

    A veth hands a frame to its peer's receive backlog on the sending CPU; without RPS a
    kernel DUT (bridge, OvS kernel datapath, an af_packet socket's copy) does its work on
    the generator's CPU, and the generator slows down instead of the DUT dropping frames.
    """
    mask = cpu_mask(cpus)
    listing = run(["ls", f"/sys/class/net/{iface}/queues"], netns=netns, timeout_s=10)
    queues = [q for q in listing.stdout.split() if q.startswith("rx-")]
    for queue in queues:
        run(["tee", f"/sys/class/net/{iface}/queues/{queue}/rps_cpus"], netns=netns,
            input_text=mask + "\n", timeout_s=10)


@dataclass(frozen=True)
class VethPeer:
    """The other end of a veth pair: its namespace (None: the caller's own) and name."""

    netns: str | None
    iface: str


def veth_peer(netns: str | None, iface: str) -> VethPeer | None:
    """The peer of veth ``iface`` in ``netns``, or None when ``iface`` is not a veth (or
    its peer lives in a namespace without a name, which nothing here could enter)."""
    try:
        [link] = json.loads(run(["ip", "-d", "-j", "link", "show", "dev", iface], netns=netns, timeout_s=10).stdout)
    except (CommandError, ValueError) as exc:
        raise TestbedError(f"cannot look up {iface}: {exc}") from None
    if (link.get("linkinfo") or {}).get("info_kind") != "veth":
        return None
    if "link_netnsid" not in link and link.get("link"):  # both ends here: ip names the peer
        return VethPeer(netns, link["link"])
    if "link_index" not in link:
        return None
    peer_netns = netns
    if "link_netnsid" in link:
        ids = json.loads(run(["ip", "-j", "netns", "list-id"], netns=netns, timeout_s=10).stdout or "[]")
        names = [e.get("name") for e in ids if e.get("nsid") == link["link_netnsid"]]
        if not names or not names[0]:
            return None
        peer_netns = names[0]
    for other in json.loads(run(["ip", "-j", "link", "show"], netns=peer_netns, timeout_s=10).stdout or "[]"):
        if other.get("ifindex") == link["link_index"]:
            return VethPeer(peer_netns, other["ifname"])
    return None


def set_gro(netns: str | None, iface: str, on: bool) -> bool:
    """Switch generic receive offload of ``iface`` on or off; returns whether it was on.

    On a veth, GRO on also puts the receiving side in NAPI mode: frames sent to it with
    XDP (``ndo_xdp_xmit``) are only accepted then (the trafgen plugin's ``xdp`` engine)."""
    try:
        shown = run(["ethtool", "-k", iface], netns=netns, timeout_s=10).stdout
        was_on = any(line.split(":", 1)[1].split()[0] == "on" for line in shown.splitlines()
                     if line.strip().startswith("generic-receive-offload:"))
        if was_on != on:
            run(["ethtool", "-K", iface, "gro", "on" if on else "off"], netns=netns, timeout_s=10)
    except (CommandError, IndexError) as exc:
        raise TestbedError(f"cannot switch GRO {'on' if on else 'off'} on {iface}: {exc}") from None
    return was_on


def check_tools() -> list[str]:
    """Binaries the testbed needs that are missing (``ip`` for netns exec, ``tc``, ``sysctl``)."""
    return [b for b in ("ip", "tc", "sysctl") if which(b) is None]


def _ensure_tools() -> None:
    missing = check_tools()
    if missing:
        raise TestbedError(
            f"testbed needs {', '.join(missing)} (apt-get install iproute2 procps)"
        )


# --------------------------------------------------------------------------- testbeds


def create_testbed(
    run_id: str,
    n_links: int,
    resources: ResourceStack,
    *,
    mtu_bytes: int = DEFAULT_MTU_BYTES,
    dut_rx_cpus: Iterable[int] | None = None,
    tg_rx_cpus: Iterable[int] | None = None,
) -> Testbed:
    """Create the namespaces and ``n_links`` veth pairs; register their removal.

    Generator port ``i`` is ``naming.iface_name(run_id, "tg", i)`` in
    ``naming.netns_name(run_id, "tg")``; its peer ``naming.iface_name(run_id, "d", i)``
    lives in ``naming.netns_name(run_id, "dut")``. All links are up, NOARP, IPv6-free; the
    generator ends drop what they receive after counting it.

    ``dut_rx_cpus``/``tg_rx_cpus``: CPUs that process frames arriving at the DUT ports /
    generator ports (:func:`steer_receive`); None leaves the kernel default (the sender's CPU).
    """
    if n_links < 1:
        raise ValueError("a testbed needs at least one link")
    _ensure_tools()
    tg_ns = naming.netns_name(run_id, TG_ROLE)
    dut_ns = naming.netns_name(run_id, DUT_ROLE)
    _add_netns(tg_ns, resources)
    _add_netns(dut_ns, resources)

    links = []
    try:
        with open_netns(tg_ns) as tg, open_netns(dut_ns) as dut:
            for i in range(n_links):
                link = TestbedLink(
                    index=i,
                    tg_iface=naming.iface_name(run_id, TG_ROLE, i),
                    tg_mac=port_mac(run_id, TG_ROLE, i),
                    tg_ip=generator_ip(i),
                    dut_iface=naming.iface_name(run_id, DUT_IFACE_ROLE, i),
                    dut_mac=port_mac(run_id, DUT_ROLE, i),
                )
                # Both ends are born in their namespaces: nothing appears in the host's.
                tg.link("add", ifname=link.tg_iface, kind="veth",
                        peer={"ifname": link.dut_iface, "net_ns_fd": dut_ns})
                resources.register(f"veth {link.tg_iface}", _delete_link, tg_ns, link.tg_iface)
                _configure_port(dut, dut_ns, link.dut_iface, link.dut_mac, mtu_bytes, None)
                _configure_port(tg, tg_ns, link.tg_iface, link.tg_mac, mtu_bytes, link.tg_ip)
                links.append(link)
    except (TestbedError, NetlinkError):
        raise
    except Exception as exc:  # pyroute2's NetlinkError and OSError
        raise TestbedError(f"cannot build the testbed: {exc}") from exc

    for link in links:
        sink_ingress(tg_ns, link.tg_iface)
        if dut_rx_cpus is not None:
            steer_receive(dut_ns, link.dut_iface, dut_rx_cpus)
        if tg_rx_cpus is not None:
            steer_receive(tg_ns, link.tg_iface, tg_rx_cpus)
    _check_ipv6_disabled(tg_ns, [l.tg_iface for l in links])
    _check_ipv6_disabled(dut_ns, [l.dut_iface for l in links])
    _wait_carrier(tg_ns, [l.tg_iface for l in links])
    _wait_carrier(dut_ns, [l.dut_iface for l in links])
    log.info("testbed %s: %d link(s) %s", run_id, n_links,
             ", ".join(f"{l.tg_iface}<->{l.dut_iface}" for l in links))
    return Testbed(run_id=run_id, tg_netns=tg_ns, dut_netns=dut_ns, links=tuple(links))


def create_loopback_testbed(
    run_id: str,
    resources: ResourceStack,
    *,
    mtu_bytes: int = DEFAULT_MTU_BYTES,
    tg_rx_cpus: Iterable[int] | None = None,
) -> Testbed:
    """Two generator ports joined by one veth pair, no DUT: the generator's own limits.

    Link 0 is generator port 0 (its ``dut_iface`` is port 1), link 1 is port 1 (its
    ``dut_iface`` is port 0). Only the generator namespace exists. ``tg_rx_cpus`` as in
    :func:`create_testbed`.
    """
    _ensure_tools()
    tg_ns = naming.netns_name(run_id, TG_ROLE)
    _add_netns(tg_ns, resources)
    names = [naming.iface_name(run_id, TG_ROLE, i) for i in (0, 1)]
    macs = [port_mac(run_id, TG_ROLE, i) for i in (0, 1)]
    try:
        with open_netns(tg_ns) as tg:
            tg.link("add", ifname=names[0], kind="veth", peer={"ifname": names[1]})
            resources.register(f"veth {names[0]}", _delete_link, tg_ns, names[0])
            for i in (0, 1):
                _configure_port(tg, tg_ns, names[i], macs[i], mtu_bytes, generator_ip(i))
    except (TestbedError, NetlinkError):
        raise
    except Exception as exc:
        raise TestbedError(f"cannot build the loopback testbed: {exc}") from exc
    for name in names:
        sink_ingress(tg_ns, name)
        if tg_rx_cpus is not None:
            steer_receive(tg_ns, name, tg_rx_cpus)
    _check_ipv6_disabled(tg_ns, names)
    _wait_carrier(tg_ns, names)
    links = tuple(
        TestbedLink(index=i, tg_iface=names[i], tg_mac=macs[i], tg_ip=generator_ip(i),
                    dut_iface=names[1 - i], dut_mac=macs[1 - i])
        for i in (0, 1)
    )
    log.info("loopback testbed %s: %s<->%s", run_id, names[0], names[1])
    return Testbed(run_id=run_id, tg_netns=tg_ns, dut_netns=tg_ns, links=links, loopback=True)


def add_internal_pair(
    netns: str,
    names: tuple[str, str],
    macs: tuple[str, str],
    resources: ResourceStack,
    *,
    mtu_bytes: int = DEFAULT_MTU_BYTES,
) -> None:
    """A veth pair with both ends in ``netns``, up, NOARP, quiet; its removal registered.

    For a generator's own plumbing next to the testbed ports (the trafgen plugin shapes
    both directions of a trial through one such pair). It is deleted with the namespace
    anyway; the registered undo removes it earlier when the generator goes first.
    """
    a, b = names
    try:
        with open_netns(netns) as ipr:
            ipr.link("add", ifname=a, kind="veth", peer={"ifname": b})
            resources.register(f"veth {a}", _delete_link, netns, a)
            for name, mac in zip(names, macs):
                _configure_port(ipr, netns, name, mac, mtu_bytes, None)
    except (TestbedError, NetlinkError):
        raise
    except Exception as exc:
        raise TestbedError(f"cannot create veth pair {a}/{b} in {netns}: {exc}") from exc
    _check_ipv6_disabled(netns, list(names))
    _wait_carrier(netns, list(names))


def set_port_mac(netns: str, iface: str, mac: str) -> None:
    """Give ``iface`` (one a switch created in ``netns``: an OvS tap port) the address
    ``mac``, so the endpoint behind it has a known, run-unique one."""
    try:
        with open_netns(netns) as ipr:
            found = ipr.link_lookup(ifname=iface)
            if not found:
                raise TestbedError(f"interface {iface} missing in {netns}")
            ipr.link("set", index=found[0], address=mac)
    except (TestbedError, NetlinkError):
        raise
    except Exception as exc:
        raise TestbedError(f"cannot set the MAC of {iface} in {netns}: {exc}") from exc


def add_namespace(name: str, resources: ResourceStack) -> None:
    """A quiet network namespace (IPv6 off before any interface exists) for one VNF whose
    own kernel forwards (a router): its removal is registered."""
    _ensure_tools()
    _add_netns(name, resources)


def move_port(netns: str, iface: str, target_netns: str) -> None:
    """Move ``iface`` (a veth end, NOARP and quiet) from ``netns`` into ``target_netns``
    and bring it up there. A moved interface keeps its MAC, MTU and flags but goes down;
    its peer stays where it was, so the pair's registered removal still finds it."""
    try:
        with open_netns(netns) as ipr:
            found = ipr.link_lookup(ifname=iface)
            if not found:
                raise TestbedError(f"interface {iface} missing in {netns}")
            ipr.link("set", index=found[0], net_ns_fd=target_netns)
        with open_netns(target_netns) as ipr:
            found = ipr.link_lookup(ifname=iface)
            if not found:
                raise TestbedError(f"interface {iface} did not arrive in {target_netns}")
            ipr.link("set", index=found[0], flags=IFF_NOARP | IFF_UP, change=IFF_NOARP | IFF_UP)
    except (TestbedError, NetlinkError):
        raise
    except Exception as exc:
        raise TestbedError(f"cannot move {iface} from {netns} into {target_netns}: {exc}") from exc
    _check_ipv6_disabled(target_netns, [iface])
    _wait_carrier(target_netns, [iface])
