"""Render a :class:`~vsbench.interfaces.router.RouterConfig` into Linux kernel routing inside a namespace.

What it installs, in order, and removes in reverse: forwarding sysctls; interface
addresses (ARP turned on for the router's ports — the testbed makes every port NOARP, and
on a NOARP device the kernel resolves every neighbour to the device's *own* MAC); one
permanent neighbour per next hop with a MAC and per static ARP entry (nothing is ever
ARPed, so no frame of the router's own reaches the generator's counters); one next-hop
object per next hop and one group object per ECMP group; a blackhole default (unrouted
frames vanish silently instead of raising ICMP errors that would be counted as
received); then the routes. Neighbours, next-hop objects and routes go in bulk
(:mod:`.netlink_bulk`): 64k neighbours and 64k next-hop objects are a few dozen sendmsg
calls. A route of a ``per_route`` group points at the group's next hop ``k mod N``
itself; of an ``ecmp`` group, at its group object.

Permanent neighbours are exempt from the kernel's neighbour-table garbage collection
(``gc_thresh3`` bounds only the entries it learned), so 32k per interface fit.

Teardown deletes the groups and next-hop objects — the kernel removes every route that
uses one with it — and the neighbours, then verifies that no static route, no next-hop
object and no permanent neighbour is left in the namespace, so a leak is an error, not a
silent residue.
"""

from __future__ import annotations

import logging
import subprocess
import time
from dataclasses import dataclass, field

import numpy as np
from pyroute2 import IPRoute

from . import netlink_bulk as nl
from vsbench.interfaces.router import USE_PER_ROUTE, NextHopGroup, RouterConfig

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
    #: (ifindex, addresses as host-order integers) of the permanent neighbours installed
    neighbours: list[tuple[int, np.ndarray]] = field(default_factory=list)
    arp_enabled: list[int] = field(default_factory=list)
    #: ids of the single next-hop objects, in arrays of consecutive ids
    nexthop_ids: list[np.ndarray] = field(default_factory=list)
    group_ids: list[int] = field(default_factory=list)
    blackhole: bool = False
    routes: int = 0
    neighbour_count: int = 0
    install_s: float = 0.0
    route_install_s: float = 0.0
    nexthop_install_s: float = 0.0
    sendmsg_calls: int = 0

    @property
    def nexthop_object_count(self) -> int:
        return sum(len(a) for a in self.nexthop_ids)


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
    """Next-hop objects in the namespace (a raw dump, like ``BulkSocket.count_routes``); a
    kernel without next-hop objects has none."""
    import struct

    try:
        return sock.count_dump(RTM_GETNEXTHOP, struct.pack("<BBBBI", 0, 0, 0, 0, 0), nl.RTM_NEWNEXTHOP,
                               "next-hop", unsupported_is_empty=True)
    except nl.BulkError as exc:
        raise RenderError(str(exc)) from None


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
        group_id: dict[str, int] = {}
        members_of: dict[str, np.ndarray] = {}
        with nl.BulkSocket(self.netns) as sock:
            try:
                self._neighbours(sock, config, index, state)
                nh_started = time.monotonic()
                next_id = 1
                for n, group in enumerate(config.nexthop_groups):
                    ids = np.arange(next_id, next_id + group.size, dtype=np.uint32)
                    next_id += group.size
                    self._nexthop_objects(sock, group, ids, index, state)
                    members_of[group.name] = ids
                    if group.ecmp:
                        if group.size > nl.MAX_GROUP_MEMBERS:
                            raise RenderError(f"next-hop group {group.name}: {group.size} next hops in one ECMP group; "
                                              f"the kernel takes at most {nl.MAX_GROUP_MEMBERS} (its member list is "
                                              "one netlink attribute of at most 64 KiB)")
                        gid = GROUP_ID_BASE + n
                        weights = [h.weight for h in group.nexthops] + [1] * (group.size - len(group.nexthops))
                        sock.request(lambda s, g=gid, m=list(zip(ids.tolist(), weights)): nl.encode_nexthop(s, g, group=m))
                        state.group_ids.append(gid)
                        group_id[group.name] = gid
                    else:
                        group_id[group.name] = int(ids[0])
                state.nexthop_install_s = time.monotonic() - nh_started
                if config.unrouted == "blackhole":
                    sock.request(nl.encode_blackhole_default)
                    state.blackhole = True
                route_started = time.monotonic()
                for r in config.ranges:
                    group = config.group(r.group)
                    if group.use == USE_PER_ROUTE and group.size > 1:
                        members = members_of[r.group]
                        nh: np.ndarray | int = members[np.arange(r.count, dtype=np.int64) % len(members)]
                    else:
                        nh = group_id[r.group]
                    result = sock.routes(r.destinations(), r.prefixlen, nh)
                    state.sendmsg_calls += result.sendmsg_calls
                    state.routes += result.sent - result.failed
                    if result.failed:
                        raise RenderError(f"{result.failed} of {result.sent} routes from {r.start}/{r.prefixlen} "
                                          f"refused: {result.first_error}")
                state.route_install_s = time.monotonic() - route_started
            except nl.BulkError as exc:
                raise RenderError(f"next-hop object refused in {self.netns}: {exc}") from None
        state.install_s = time.monotonic() - started
        log.info("vrouter %s: %d route(s), %d next hop(s) in %d group(s), %d neighbour(s) installed in %.2f s "
                 "(%d sendmsg)", self.netns, state.routes, config.nexthop_count, len(config.nexthop_groups),
                 state.neighbour_count, state.install_s, state.sendmsg_calls)
        return state

    @staticmethod
    def _hops_by_interface(group: NextHopGroup) -> list[tuple[str, str | None, np.ndarray, int]]:
        """The group's next hops as (interface, mac, addresses, position of the first in
        the group) runs: each listed next hop alone, the range as one run."""
        runs = [(h.interface, h.mac, np.array([int(h.via)], dtype=np.uint32), k) for k, h in enumerate(group.nexthops)]
        r = group.hop_range
        if r is not None:
            runs.append((r.interface, r.mac, r.addresses(), len(group.nexthops)))
        return runs

    def _neighbours(self, sock: nl.BulkSocket, config: RouterConfig, index: dict[str, int], state: Installed) -> None:
        """One permanent neighbour per next hop with a MAC and per static ARP entry (an
        address listed twice on an interface is installed once)."""
        wanted: dict[tuple[int, str], list[np.ndarray]] = {}
        for group in config.nexthop_groups:
            for iface, mac, addresses, _ in self._hops_by_interface(group):
                if mac:
                    wanted.setdefault((index[iface], mac), []).append(addresses)
        for arp in config.static_arp:
            if arp.mac:
                wanted.setdefault((index[arp.interface], arp.mac), []).append(arp.addresses())
        seen: dict[int, set[int]] = {}
        for (ifindex, mac), chunks in wanted.items():
            addresses = np.unique(np.concatenate(chunks))
            done = seen.setdefault(ifindex, set())
            if done:
                addresses = addresses[~np.isin(addresses, np.fromiter(done, dtype=np.uint32))]
            done.update(int(a) for a in addresses)
            result = sock.send_array(nl.encode_neighbours(addresses, ifindex, mac))
            state.sendmsg_calls += result.sendmsg_calls
            state.neighbours.append((ifindex, addresses))
            state.neighbour_count += result.sent - result.failed
            if result.failed:
                raise RenderError(f"{result.failed} of {result.sent} static neighbours refused in {self.netns}: "
                                  f"{result.first_error}")

    def _nexthop_objects(self, sock: nl.BulkSocket, group: NextHopGroup, ids: np.ndarray, index: dict[str, int],
                         state: Installed) -> None:
        for iface, _mac, addresses, first in self._hops_by_interface(group):
            run_ids = ids[first:first + len(addresses)]
            result = sock.send_array(nl.encode_nexthops(run_ids, addresses, index[iface]))
            state.sendmsg_calls += result.sendmsg_calls
            state.nexthop_ids.append(run_ids[:result.sent])
            if result.failed:
                raise RenderError(f"{result.failed} of {result.sent} next-hop objects of group {group.name} refused "
                                  f"in {self.netns}: {result.first_error}")

    def remove(self) -> None:
        """Take out everything ``apply`` installed and check nothing is left."""
        state, self.installed = self.installed, None
        if state is None:
            return
        with nl.BulkSocket(self.netns) as sock:
            errors = []
            # Routes spread over a group's next hops one by one go first, in bulk: deleting
            # a next-hop object that routes still use flushes the whole FIB once per object
            # (Linux's __remove_nexthop_fib), 65536 times in 49 s for 64k next hops.
            for r in state.config.ranges:
                group = state.config.group(r.group)
                if group.use == USE_PER_ROUTE and group.size > 1:
                    result = sock.routes(r.destinations(), r.prefixlen, 0, delete=True)
                    if result.failed:
                        errors.append(f"{result.failed} of {result.sent} routes from {r.start}/{r.prefixlen}: "
                                      f"{result.first_error}")
            # Then groups (a member of a group cannot go while the group exists); deleting a
            # next-hop object deletes every route that uses it.
            for nh_id in state.group_ids:
                try:
                    sock.request(lambda s, i=nh_id: nl.encode_nexthop_delete(s, i))
                except nl.BulkError as exc:
                    errors.append(f"next hop {nh_id}: {exc}")
            for ids in state.nexthop_ids:
                result = sock.send_array(nl.encode_nexthop_deletes(ids))
                if result.failed:
                    errors.append(f"{result.failed} of {result.sent} next-hop objects from id {int(ids[0])}: "
                                  f"{result.first_error}")
            if state.blackhole:
                try:
                    sock.request(lambda s: nl.encode_blackhole_default(s, delete=True))
                except nl.BulkError as exc:
                    errors.append(f"blackhole default route: {exc}")
            for ifindex, addresses in state.neighbours:
                result = sock.send_array(nl.encode_neighbours(addresses, ifindex, None, delete=True))
                if result.failed:
                    errors.append(f"{result.failed} of {result.sent} neighbours on interface {ifindex}: "
                                  f"{result.first_error}")
            left_routes = sock.count_routes()
            left_nh = count_nexthops(sock)
            left_neigh = sock.count_neighbours()
        with self._ipr() as ipr:
            for ifindex, address, plen in state.addresses:
                try:
                    ipr.addr("del", index=ifindex, address=address, prefixlen=plen)
                except Exception as exc:  # noqa: BLE001
                    errors.append(f"address {address}: {exc}")
            for ifindex in state.arp_enabled:
                ipr.link("set", index=ifindex, flags=IFF_NOARP, change=IFF_NOARP)
        if left_routes or left_nh or left_neigh:
            errors.append(f"{left_routes} static route(s), {left_nh} next-hop object(s) and {left_neigh} permanent "
                          f"neighbour(s) left in {self.netns}")
        if errors:
            raise RenderError("vrouter teardown: " + "; ".join(errors))
        log.info("vrouter %s: %d route(s), %d next-hop object(s) and %d neighbour(s) removed, none left",
                 self.netns, state.routes, len(state.group_ids) + state.nexthop_object_count, state.neighbour_count)
