"""Read link and qdisc counters of interfaces inside a network namespace, over netlink.

The embedded testbed measures with interface counters: what a generator port transmitted
and what its peer received. These helpers read them with pyroute2 (no ``ip -s`` parsing)
and never create a namespace as a side effect: a missing namespace is an error, not a new
empty one.

veth semantics worth knowing when reading these numbers: a veth's ``rx_packets`` is what
its peer handed over successfully (the peer's TX), counted before tc ingress sees the
frame; a frame the peer could not hand over (receive backlog full) is counted in the
*sender's* ``tx_dropped``, not in its ``tx_packets``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from typing import Iterable

from pyroute2 import IPRoute

#: Where ``ip netns`` (and pyroute2) bind-mount named network namespaces.
NETNS_RUN_DIR = "/var/run/netns"


class NetlinkError(Exception):
    """A netlink query failed; ``str()`` is one line naming the namespace or interface."""


@dataclass(frozen=True)
class LinkCounters:
    """The 64-bit counters of one interface (``IFLA_STATS64``); subtract to get a delta."""

    rx_packets: int = 0
    tx_packets: int = 0
    rx_bytes: int = 0
    tx_bytes: int = 0
    rx_dropped: int = 0
    tx_dropped: int = 0

    def __sub__(self, earlier: "LinkCounters") -> "LinkCounters":
        return LinkCounters(**{f.name: getattr(self, f.name) - getattr(earlier, f.name) for f in fields(self)})

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class QdiscBacklog:
    """Frames and bytes waiting in an interface's root qdisc."""

    packets: int
    bytes: int


def netns_exists(name: str) -> bool:
    """True if the named network namespace is mounted under :data:`NETNS_RUN_DIR`."""
    return os.path.exists(os.path.join(NETNS_RUN_DIR, name))


def open_netns(netns: str | None) -> IPRoute:
    """An rtnetlink socket inside ``netns`` (the caller's namespace when None).

    ``flags=0`` makes pyroute2 open an existing namespace only; its default would create
    a missing one, and a typo must not leave an empty namespace behind.
    """
    if netns is None:
        return IPRoute()
    if not netns_exists(netns):
        raise NetlinkError(f"network namespace {netns} does not exist")
    try:
        return IPRoute(netns=netns, flags=0)
    except OSError as exc:
        raise NetlinkError(f"cannot open network namespace {netns}: {exc}") from exc


def _index_of(ipr: IPRoute, iface: str, netns: str | None) -> int:
    found = ipr.link_lookup(ifname=iface)
    if not found:
        where = f" in netns {netns}" if netns else ""
        raise NetlinkError(f"interface {iface} not found{where}")
    return found[0]


def _counters_of(msg) -> LinkCounters:
    stats = msg.get("IFLA_STATS64") or msg.get("IFLA_STATS") or {}
    return LinkCounters(**{f.name: int(stats.get(f.name, 0)) for f in fields(LinkCounters)})


class LinkCounterReader:
    """A reusable netlink socket in one namespace for repeated counter reads.

    Opening a socket inside a namespace forks a helper process in pyroute2, so a trial
    that reads counters twice keeps one reader rather than opening two sockets.
    """

    def __init__(self, netns: str | None) -> None:
        self.netns = netns
        self._ipr = open_netns(netns)
        self._index: dict[str, int] = {}

    def index(self, iface: str) -> int:
        if iface not in self._index:
            self._index[iface] = _index_of(self._ipr, iface, self.netns)
        return self._index[iface]

    def read(self, ifaces: Iterable[str]) -> dict[str, LinkCounters]:
        """Counters of each interface in ``ifaces``, read in one pass."""
        result = {}
        for iface in ifaces:
            try:
                msgs = self._ipr.get_links(self.index(iface))
            except NetlinkError:
                raise
            except Exception as exc:  # pyroute2 raises NetlinkError subclasses and OSError
                raise NetlinkError(f"cannot read counters of {iface}: {exc}") from exc
            result[iface] = _counters_of(msgs[0])
        return result

    def backlog(self, iface: str) -> QdiscBacklog:
        """What waits in ``iface``'s root qdisc (0/0 for ``noqueue``)."""
        try:
            qdiscs = self._ipr.get_qdiscs(index=self.index(iface))
        except Exception as exc:
            raise NetlinkError(f"cannot read qdiscs of {iface}: {exc}") from exc
        packets = bytes_ = 0
        for q in qdiscs:
            if q.get("parent") != 0xFFFFFFFF:  # TC_H_ROOT: the egress root qdisc only
                continue
            stats = q.get("TCA_STATS") or {}
            packets += int(stats.get("qlen", 0))
            bytes_ += int(stats.get("backlog", 0))
        return QdiscBacklog(packets, bytes_)

    def close(self) -> None:
        self._ipr.close()

    def __enter__(self) -> "LinkCounterReader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def read_link_counters(netns: str | None, ifaces: Iterable[str]) -> dict[str, LinkCounters]:
    """One-shot read of the counters of ``ifaces`` inside ``netns``."""
    with LinkCounterReader(netns) as reader:
        return reader.read(ifaces)


def list_links(netns: str | None) -> list[str]:
    """Names of the interfaces in ``netns``."""
    with open_netns(netns) as ipr:
        return [link.get("ifname") for link in ipr.get_links()]
