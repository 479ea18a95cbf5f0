"""Interface counters and listings over netlink (no ``ip`` process per read), in the host
or inside a network namespace."""

from vsbench.system.netlink import LinkCounterReader, LinkCounters, NetlinkError, list_links, read_link_counters

__all__ = ["LinkCounterReader", "LinkCounters", "NetlinkError", "list_links", "read_link_counters"]
