"""Render a :class:`~vsbench.interfaces.router.RouterConfig` into Linux kernel routing inside a namespace.

What it installs, in order, and removes in reverse: forwarding sysctls; interface
addresses (ARP turned on for the router's ports — the testbed makes every port NOARP, and
on a NOARP device the kernel resolves every neighbour to the device's *own* MAC); one
permanent neighbour per next hop with a MAC (nothing is ever ARPed, so no frame of the
router's own reaches the generator's counters); one next-hop object per next hop and
one group object per ECMP group; a blackhole default (unrouted frames vanish silently
instead of raising ICMP errors that would be counted as received); then the routes, in
bulk (:mod:`.netlink_bulk`).

Teardown deletes the groups and next-hop objects — the kernel removes every route that
uses one with it — then verifies that no static route and no next-hop object is left in
the namespace, so a leak is an error, not a silent residue.
"""

from __future__ import annotations

import logging
import subprocess
import time
from dataclasses import dataclass, field

from pyroute2 import IPRoute

from . import netlink_bulk as nl
from vsbench.interfaces.router import RouterConfig

log = logging.getLogger(__name__)

IFF_NOARP = 0x80
NUD_PERMANENT = 0x80
RTM_GETNEXTHOP = 106
#: Next-hop object ids: single next hops from 1, groups from GROUP_ID_BASE.
GROUP_ID_BASE = 1 << 20

FORWARDING_SYSCTLS = (
    "net.ipv4.ip_forward=1",
    "net.ipv4.conf.all.rp_filter=0",
    "net.ipv4.conf.default.rp_filter=0",
    "net.ipv4.conf.all.send_redirects=0",
    "net.ipv4.conf.default.send_redirects=0",
)


class RenderError(Exception):
    """The kernel refused part of the configuration; ``str()`` is one line."""


@dataclass
class Installed:
    """What one ``apply`` put into the namespace (what teardown must take out)."""

    config: RouterConfig
    addresses: list[tuple[int, str, int]] = field(default_factory=list)
    neighbours: list[tuple[int, str]] = field(default_factory=list)
    arp_enabled: list[int] = field(default_factory=list)
    nexthop_ids: list[int] = field(default_factory=list)
    group_ids: list[int] = field(default_factory=list)
    blackhole: bool = False
    routes: int = 0
    install_s: float = 0.0
    route_install_s: float = 0.0
    sendmsg_calls: int = 0


def fib_slab_bytes() -> int | None:
    """Bytes held by the IPv4 FIB's slab caches (``ip_fib_trie`` + ``ip_fib_alias``), host-wide;
    None when /proc/slabinfo cannot be read."""
    try:
        text = open("/proc/slabinfo").read()
    except OSError:
        return None
    total = 0
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0] in ("ip_fib_trie", "ip_fib_alias"):
            total += int(parts[1]) * int(parts[3])
    return total


def sysctl(netns: str, settings: tuple[str, ...]) -> None:
    done = subprocess.run(["ip", "netns", "exec", netns, "sysctl", "-q", "-w", *settings],
                          capture_output=True, text=True, timeout=10)
    if done.returncode != 0:
        raise RenderError(f"sysctl in {netns} failed: {done.stderr.strip()}")


def count_nexthops(sock: nl.BulkSocket) -> int:
    """Next-hop objects in the namespace (a raw dump, like ``BulkSocket.count_routes``)."""
    import struct

    seq = sock.seq
    sock.seq += 1
    body = struct.pack("<BBBBI", 0, 0, 0, 0, 0)
    sock.sock.sendto(struct.pack("<IHHII", 24, RTM_GETNEXTHOP, nl.NLM_F_REQUEST | nl.NLM_F_DUMP, seq, 0) + body,
                     (0, 0))
    count = 0
    while True:
        data = sock.sock.recv(1 << 20)
        offset = 0
        while offset + 16 <= len(data):
            length, kind, _f, _s, _p = struct.unpack_from("<IHHII", data, offset)
            if kind == nl.NLMSG_DONE:
                return count
            if kind == nl.NLMSG_ERROR:
                (code,) = struct.unpack_from("<i", data, offset + 16)
                if code == -95:  # EOPNOTSUPP: a kernel without next-hop objects has none
                    return 0
                raise RenderError(f"next-hop dump failed (errno {-code})")
            if kind == nl.RTM_NEWNEXTHOP:
                count += 1
            offset += (length + 3) & ~3


class KernelRouter:
    """The kernel data plane of one vrouter in network namespace ``netns``."""

    def __init__(self, netns: str) -> None:
        self.netns = netns
        self.installed: Installed | None = None

    def _ipr(self) -> IPRoute:
        return IPRoute(netns=self.netns, flags=0)

    def apply(self, config: RouterConfig) -> Installed:
        """Install ``config``, replacing what an earlier apply installed (a reload)."""
        if self.installed is not None:
            self.remove()
        started = time.monotonic()
        state = Installed(config)
        self.installed = state  # partial state is torn down too
        sysctl(self.netns, FORWARDING_SYSCTLS)
        with self._ipr() as ipr:
            index = {}
            for iface in config.interfaces:
                found = ipr.link_lookup(ifname=iface.name)
                if not found:
                    raise RenderError(f"interface {iface.name} does not exist in {self.netns}")
                index[iface.name] = found[0]
                flags = ipr.get_links(found[0])[0]["flags"]
                if flags & IFF_NOARP:
                    ipr.link("set", index=found[0], flags=0, change=IFF_NOARP)
                    state.arp_enabled.append(found[0])
                ipr.addr("add", index=found[0], address=str(iface.address.ip),
                         prefixlen=iface.address.network.prefixlen)
                state.addresses.append((found[0], str(iface.address.ip), iface.address.network.prefixlen))
            sysctl(self.netns, tuple(f"net.ipv4.conf.{i.name}.rp_filter=0" for i in config.interfaces))
            for group in config.nexthop_groups:
                for hop in group.nexthops:
                    if hop.mac and (index[hop.interface], str(hop.via)) not in state.neighbours:
                        ipr.neigh("replace", dst=str(hop.via), lladdr=hop.mac, ifindex=index[hop.interface],
                                  state=NUD_PERMANENT)
                        state.neighbours.append((index[hop.interface], str(hop.via)))
        group_id: dict[str, int] = {}
        with nl.BulkSocket(self.netns) as sock:
            try:
                next_id = 1
                for n, group in enumerate(config.nexthop_groups):
                    members = []
                    for hop in group.nexthops:
                        sock.request(lambda s, i=next_id, h=hop: nl.encode_nexthop(
                            s, i, gateway=str(h.via), oif=index[h.interface]))
                        state.nexthop_ids.append(next_id)
                        members.append((next_id, hop.weight))
                        next_id += 1
                    if group.ecmp:
                        gid = GROUP_ID_BASE + n
                        sock.request(lambda s, g=gid, m=members: nl.encode_nexthop(s, g, group=m))
                        state.group_ids.append(gid)
                        group_id[group.name] = gid
                    else:
                        group_id[group.name] = members[0][0]
                if config.unrouted == "blackhole":
                    sock.request(nl.encode_blackhole_default)
                    state.blackhole = True
                route_started = time.monotonic()
                for r in config.ranges:
                    result = sock.routes(r.destinations(), r.prefixlen, group_id[r.group])
                    state.sendmsg_calls += result.sendmsg_calls
                    state.routes += result.sent - result.failed
                    if result.failed:
                        raise RenderError(f"{result.failed} of {result.sent} routes from {r.start}/{r.prefixlen} "
                                          f"refused: {result.first_error}")
                state.route_install_s = time.monotonic() - route_started
            except nl.BulkError as exc:
                raise RenderError(f"next-hop object refused in {self.netns}: {exc}") from None
        state.install_s = time.monotonic() - started
        log.info("vrouter %s: %d route(s), %d next hop(s) in %d group(s) installed in %.2f s (%d sendmsg)",
                 self.netns, state.routes, config.nexthop_count, len(config.nexthop_groups),
                 state.install_s, state.sendmsg_calls)
        return state

    def remove(self) -> None:
        """Take out everything ``apply`` installed and check nothing is left."""
        state, self.installed = self.installed, None
        if state is None:
            return
        with nl.BulkSocket(self.netns) as sock:
            errors = []
            # Groups first (a member of a group cannot go while the group exists); deleting
            # a next-hop object deletes every route that uses it.
            for nh_id in state.group_ids + state.nexthop_ids:
                try:
                    sock.request(lambda s, i=nh_id: nl.encode_nexthop_delete(s, i))
                except nl.BulkError as exc:
                    errors.append(f"next hop {nh_id}: {exc}")
            if state.blackhole:
                try:
                    sock.request(lambda s: nl.encode_blackhole_default(s, delete=True))
                except nl.BulkError as exc:
                    errors.append(f"blackhole default route: {exc}")
            left_routes = sock.count_routes()
            left_nh = count_nexthops(sock)
        with self._ipr() as ipr:
            for ifindex, dst in state.neighbours:
                try:
                    ipr.neigh("del", dst=dst, ifindex=ifindex)
                except Exception as exc:  # noqa: BLE001 - keep tearing down
                    errors.append(f"neighbour {dst}: {exc}")
            for ifindex, address, plen in state.addresses:
                try:
                    ipr.addr("del", index=ifindex, address=address, prefixlen=plen)
                except Exception as exc:  # noqa: BLE001
                    errors.append(f"address {address}: {exc}")
            for ifindex in state.arp_enabled:
                ipr.link("set", index=ifindex, flags=IFF_NOARP, change=IFF_NOARP)
        if left_routes or left_nh:
            errors.append(f"{left_routes} static route(s) and {left_nh} next-hop object(s) left in {self.netns}")
        if errors:
            raise RenderError("vrouter teardown: " + "; ".join(errors))
        log.info("vrouter %s: %d route(s) and %d next-hop object(s) removed, none left",
                 self.netns, state.routes, len(state.group_ids) + len(state.nexthop_ids))

