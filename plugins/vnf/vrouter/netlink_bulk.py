"""Routes, next-hop objects and neighbours installed in bulk over rtnetlink: many messages per sendmsg.

Why not pyroute2's ``IPRoute.route("add")``: it encodes one message with its generic
encoder, sends it, and waits for its ACK — one round trip and ~50 µs of Python per route,
minutes for a million. Here a batch of ``RTM_NEWROUTE`` messages is laid out by numpy
(fixed 44 B messages: header, ``rtmsg``, ``RTA_DST``, ``RTA_NH_ID``) and a few hundred
kilobytes are handed to the kernel per ``sendmsg``. Only the last message of a batch asks
for an ACK: the kernel processes a batch in order inside the syscall and reports errors
as ``NLMSG_ERROR``, so reading up to that ACK collects every error of the batch and paces
the sender. Routes point at next-hop objects (``RTA_NH_ID``, kernel >= 5.3), so ECMP over
N next hops costs one group object, not N gateways per route. Next-hop objects
(``encode_nexthops``, 48 B each) and permanent neighbours (``encode_neighbours``, 48 B)
are laid out the same way, so 32k next hops per interface install in a fraction of a
second instead of one round trip each.

A group object lists its members in one netlink attribute, whose length field is 16 bits:
at most :data:`MAX_GROUP_MEMBERS` (8191) next hops per ECMP group -- the kernel has no
smaller limit of its own (Linux 6.x took an 8191-member group here).

Pure encoding is separated from I/O (the ``encode_*`` functions) so it is unit-testable.
"""

from __future__ import annotations

import errno
import ipaddress
import os
import socket
import struct
from dataclasses import dataclass
from typing import Callable

import numpy as np

from vsbench.interfaces.host.netns_socket import socket_in_netns

NETLINK_ROUTE = 0
RTM_NEWROUTE, RTM_DELROUTE, RTM_GETROUTE = 24, 25, 26
RTM_NEWNEIGH, RTM_DELNEIGH, RTM_GETNEIGH = 28, 29, 30
RTM_NEWNEXTHOP, RTM_DELNEXTHOP = 104, 105
NLMSG_ERROR, NLMSG_DONE = 2, 3
NLM_F_REQUEST, NLM_F_ACK, NLM_F_REPLACE, NLM_F_EXCL, NLM_F_CREATE, NLM_F_DUMP = 0x1, 0x4, 0x100, 0x200, 0x400, 0x300
NDA_DST, NDA_LLADDR = 1, 2
NUD_PERMANENT = 0x80
#: Members of one next-hop group: NHA_GROUP is one attribute (16-bit length, 4 B header)
#: of 8 B ``struct nexthop_grp`` entries.
MAX_GROUP_MEMBERS = (0xFFFF - 4) // 8
RT_TABLE_MAIN = 254
RTPROT_STATIC = 4
RT_SCOPE_UNIVERSE = 0
RTN_UNICAST, RTN_BLACKHOLE = 1, 6
RTA_DST, RTA_TABLE, RTA_NH_ID = 1, 15, 30
NHA_ID, NHA_GROUP, NHA_GROUP_TYPE, NHA_BLACKHOLE, NHA_OIF, NHA_GATEWAY = 1, 2, 3, 4, 5, 6
SOL_NETLINK = 270
NETLINK_EXT_ACK = 11
SO_SNDBUFFORCE, SO_RCVBUFFORCE = 32, 33

#: Bytes handed to the kernel per sendmsg (the socket's send buffer is forced above it).
BATCH_BYTES = 256 * 1024

ROUTE_DTYPE = np.dtype([
    ("nl_len", "<u4"), ("nl_type", "<u2"), ("nl_flags", "<u2"), ("nl_seq", "<u4"), ("nl_pid", "<u4"),
    ("family", "u1"), ("dst_len", "u1"), ("src_len", "u1"), ("tos", "u1"),
    ("table", "u1"), ("protocol", "u1"), ("scope", "u1"), ("type", "u1"), ("rtm_flags", "<u4"),
    ("dst_rta_len", "<u2"), ("dst_rta_type", "<u2"), ("dst", ">u4"),
    ("nh_rta_len", "<u2"), ("nh_rta_type", "<u2"), ("nh_id", "<u4"),
])
assert ROUTE_DTYPE.itemsize == 44

#: ``RTM_NEWNEIGH``/``RTM_DELNEIGH``: ``ndmsg``, ``NDA_DST`` (IPv4), ``NDA_LLADDR`` (6 B + pad).
NEIGH_DTYPE = np.dtype([
    ("nl_len", "<u4"), ("nl_type", "<u2"), ("nl_flags", "<u2"), ("nl_seq", "<u4"), ("nl_pid", "<u4"),
    ("family", "u1"), ("pad1", "u1"), ("pad2", "<u2"), ("ifindex", "<i4"), ("state", "<u2"),
    ("ndm_flags", "u1"), ("ndm_type", "u1"),
    ("dst_rta_len", "<u2"), ("dst_rta_type", "<u2"), ("dst", ">u4"),
    ("ll_rta_len", "<u2"), ("ll_rta_type", "<u2"), ("lladdr", "u1", (6,)), ("ll_pad", "<u2"),
])
assert NEIGH_DTYPE.itemsize == 48

#: ``RTM_NEWNEXTHOP`` of one gateway on one interface: ``nhmsg``, ``NHA_ID``, ``NHA_OIF``, ``NHA_GATEWAY``.
NEXTHOP_DTYPE = np.dtype([
    ("nl_len", "<u4"), ("nl_type", "<u2"), ("nl_flags", "<u2"), ("nl_seq", "<u4"), ("nl_pid", "<u4"),
    ("family", "u1"), ("scope", "u1"), ("protocol", "u1"), ("resvd", "u1"), ("nh_flags", "<u4"),
    ("id_rta_len", "<u2"), ("id_rta_type", "<u2"), ("id", "<u4"),
    ("oif_rta_len", "<u2"), ("oif_rta_type", "<u2"), ("oif", "<u4"),
    ("gw_rta_len", "<u2"), ("gw_rta_type", "<u2"), ("gateway", ">u4"),
])
assert NEXTHOP_DTYPE.itemsize == 48

#: ``RTM_DELNEXTHOP`` by id.
NEXTHOP_DELETE_DTYPE = np.dtype([
    ("nl_len", "<u4"), ("nl_type", "<u2"), ("nl_flags", "<u2"), ("nl_seq", "<u4"), ("nl_pid", "<u4"),
    ("family", "u1"), ("scope", "u1"), ("protocol", "u1"), ("resvd", "u1"), ("nh_flags", "<u4"),
    ("id_rta_len", "<u2"), ("id_rta_type", "<u2"), ("id", "<u4"),
])
assert NEXTHOP_DELETE_DTYPE.itemsize == 32


class BulkError(Exception):
    """The kernel refused messages of a batch; ``str()`` is one line with the first error."""


@dataclass(frozen=True)
class BulkResult:
    """What one bulk operation did: messages sent, how many the kernel refused, syscalls."""

    sent: int
    failed: int
    sendmsg_calls: int
    first_error: str | None = None


def encode_routes(dst: np.ndarray, prefixlen: int, nh_ids: np.ndarray | int, *, seq0: int = 1,
                  delete: bool = False, table: int = RT_TABLE_MAIN) -> np.ndarray:
    """One ``RTM_NEWROUTE`` (or ``RTM_DELROUTE``) per destination, as a structured array.

    ``dst`` are IPv4 addresses as unsigned integers (host order); ``nh_ids`` the next-hop
    object (or group) id of each route, or one id for all. ``.tobytes()`` is the wire form.
    """
    n = len(dst)
    msgs = np.zeros(n, dtype=ROUTE_DTYPE)
    msgs["nl_len"] = ROUTE_DTYPE.itemsize
    msgs["nl_type"] = RTM_DELROUTE if delete else RTM_NEWROUTE
    msgs["nl_flags"] = NLM_F_REQUEST if delete else NLM_F_REQUEST | NLM_F_CREATE | NLM_F_EXCL
    msgs["nl_seq"] = np.arange(seq0, seq0 + n, dtype=np.uint64).astype(np.uint32)
    msgs["family"] = socket.AF_INET
    msgs["dst_len"] = prefixlen
    msgs["table"] = table
    msgs["protocol"] = RTPROT_STATIC
    msgs["scope"] = RT_SCOPE_UNIVERSE
    msgs["type"] = RTN_UNICAST
    msgs["dst_rta_len"] = 8
    msgs["dst_rta_type"] = RTA_DST
    msgs["dst"] = dst
    msgs["nh_rta_len"] = 8
    msgs["nh_rta_type"] = RTA_NH_ID
    msgs["nh_id"] = nh_ids
    return msgs


def mac_bytes(mac: str) -> np.ndarray:
    """``02:ab:...`` as 6 bytes."""
    return np.frombuffer(bytes.fromhex(mac.replace(":", "")), dtype=np.uint8)


def encode_neighbours(dst: np.ndarray, ifindex: int, mac: str | None, *, delete: bool = False) -> np.ndarray:
    """One permanent IPv4 neighbour per address of ``dst`` (host-order integers) on
    ``ifindex``, resolved to ``mac`` (``RTM_NEWNEIGH``, create or replace); with ``delete``
    the ``RTM_DELNEIGH`` of each (``mac`` unused). ``nl_seq`` is set when sent."""
    n = len(dst)
    msgs = np.zeros(n, dtype=NEIGH_DTYPE)
    msgs["nl_len"] = NEIGH_DTYPE.itemsize
    msgs["nl_type"] = RTM_DELNEIGH if delete else RTM_NEWNEIGH
    msgs["nl_flags"] = NLM_F_REQUEST if delete else NLM_F_REQUEST | NLM_F_CREATE | NLM_F_REPLACE
    msgs["family"] = socket.AF_INET
    msgs["ifindex"] = ifindex
    msgs["state"] = NUD_PERMANENT
    msgs["dst_rta_len"] = 8
    msgs["dst_rta_type"] = NDA_DST
    msgs["dst"] = dst
    msgs["ll_rta_len"] = 10
    msgs["ll_rta_type"] = NDA_LLADDR
    if mac is not None:
        msgs["lladdr"] = mac_bytes(mac)
    return msgs


def encode_nexthops(ids: np.ndarray, gateways: np.ndarray, oif: int) -> np.ndarray:
    """One ``RTM_NEWNEXTHOP`` per id: gateway ``gateways[i]`` (host-order integer) on ``oif``."""
    n = len(ids)
    msgs = np.zeros(n, dtype=NEXTHOP_DTYPE)
    msgs["nl_len"] = NEXTHOP_DTYPE.itemsize
    msgs["nl_type"] = RTM_NEWNEXTHOP
    msgs["nl_flags"] = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_EXCL
    msgs["family"] = socket.AF_INET
    msgs["protocol"] = RTPROT_STATIC
    msgs["id_rta_len"], msgs["id_rta_type"], msgs["id"] = 8, NHA_ID, ids
    msgs["oif_rta_len"], msgs["oif_rta_type"], msgs["oif"] = 8, NHA_OIF, oif
    msgs["gw_rta_len"], msgs["gw_rta_type"], msgs["gateway"] = 8, NHA_GATEWAY, gateways
    return msgs


def encode_nexthop_deletes(ids: np.ndarray) -> np.ndarray:
    """One ``RTM_DELNEXTHOP`` per id."""
    msgs = np.zeros(len(ids), dtype=NEXTHOP_DELETE_DTYPE)
    msgs["nl_len"] = NEXTHOP_DELETE_DTYPE.itemsize
    msgs["nl_type"] = RTM_DELNEXTHOP
    msgs["nl_flags"] = NLM_F_REQUEST
    msgs["family"] = socket.AF_UNSPEC
    msgs["id_rta_len"], msgs["id_rta_type"], msgs["id"] = 8, NHA_ID, ids
    return msgs


def _attr(kind: int, payload: bytes) -> bytes:
    length = 4 + len(payload)
    return struct.pack("<HH", length, kind) + payload + b"\0" * (-length % 4)


def encode_nexthop(seq: int, nh_id: int, *, gateway: str | None = None, oif: int | None = None,
                   group: list[tuple[int, int]] | None = None) -> bytes:
    """One ``RTM_NEWNEXTHOP``: a gateway on an interface, or an ECMP group of
    ``(id, weight)`` members (weight 1..256; at most :data:`MAX_GROUP_MEMBERS`)."""
    if group is not None and len(group) > MAX_GROUP_MEMBERS:
        raise BulkError(f"a next-hop group holds at most {MAX_GROUP_MEMBERS} members (its member list is one "
                        f"netlink attribute of at most 64 KiB), not {len(group)}")
    attrs = _attr(NHA_ID, struct.pack("<I", nh_id))
    family = socket.AF_INET
    if group is not None:
        family = socket.AF_UNSPEC
        members = b"".join(struct.pack("<IBBH", mid, weight - 1, 0, 0) for mid, weight in group)
        attrs += _attr(NHA_GROUP, members) + _attr(NHA_GROUP_TYPE, struct.pack("<H", 0))
    else:
        attrs += _attr(NHA_OIF, struct.pack("<I", oif or 0))
        if gateway is not None:
            attrs += _attr(NHA_GATEWAY, ipaddress.IPv4Address(gateway).packed)
    body = struct.pack("<BBBBI", family, 0, RTPROT_STATIC, 0, 0) + attrs
    flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL
    return struct.pack("<IHHII", 16 + len(body), RTM_NEWNEXTHOP, flags, seq, 0) + body


def encode_nexthop_delete(seq: int, nh_id: int) -> bytes:
    body = struct.pack("<BBBBI", socket.AF_UNSPEC, 0, 0, 0, 0) + _attr(NHA_ID, struct.pack("<I", nh_id))
    return struct.pack("<IHHII", 16 + len(body), RTM_DELNEXTHOP, NLM_F_REQUEST | NLM_F_ACK, seq, 0) + body


def encode_blackhole_default(seq: int, *, delete: bool = False, table: int = RT_TABLE_MAIN) -> bytes:
    """``blackhole 0.0.0.0/0`` (a route type, not a next-hop object: those live on ``lo``,
    which is down in a fresh namespace)."""
    body = struct.pack("<BBBBBBBBI", socket.AF_INET, 0, 0, 0, table, RTPROT_STATIC, RT_SCOPE_UNIVERSE,
                       RTN_BLACKHOLE, 0)
    flags = NLM_F_REQUEST | NLM_F_ACK | (0 if delete else NLM_F_CREATE | NLM_F_EXCL)
    return struct.pack("<IHHII", 16 + len(body), RTM_DELROUTE if delete else RTM_NEWROUTE, flags, seq, 0) + body


class BulkSocket:
    """One rtnetlink socket (in ``netns`` or the caller's) for batched requests."""

    def __init__(self, netns: str | None = None) -> None:
        self.sock = (socket_in_netns(netns, socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_ROUTE) if netns
                     else socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_ROUTE))
        for opt, size in ((SO_SNDBUFFORCE, 4 * BATCH_BYTES), (SO_RCVBUFFORCE, 8 << 20)):
            try:
                self.sock.setsockopt(socket.SOL_SOCKET, opt, size)
            except PermissionError:
                pass
        self.sock.bind((0, 0))
        self.seq = 1

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> "BulkSocket":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _collect(self, until_seq: int) -> tuple[int, str | None]:
        """Read replies until the ACK of ``until_seq``; count the errors on the way."""
        failed, first = 0, None
        while True:
            data = self.sock.recv(1 << 20)
            offset = 0
            while offset + 16 <= len(data):
                length, kind, _flags, seq, _pid = struct.unpack_from("<IHHII", data, offset)
                if kind == NLMSG_ERROR:
                    (code,) = struct.unpack_from("<i", data, offset + 16)
                    if code != 0:
                        failed += 1
                        if first is None:
                            first = f"{os.strerror(-code)} (errno {-code}, message seq {seq})"
                    if seq == until_seq:
                        return failed, first
                offset += (length + 3) & ~3 if length else len(data)

    def send_messages(self, buf: bytes | memoryview, count: int, last_seq: int) -> BulkResult:
        """Send ``count`` concatenated messages in one sendmsg whose last asks for an ACK."""
        self.sock.sendto(buf, (0, 0))
        failed, first = self._collect(last_seq)
        return BulkResult(count, failed, 1, first)

    def routes(self, dst: np.ndarray, prefixlen: int, nh_ids: np.ndarray | int, *,
               delete: bool = False, batch_bytes: int = BATCH_BYTES) -> BulkResult:
        """Add (or delete) one route per destination, ``batch_bytes`` of messages per sendmsg."""
        nh = np.broadcast_to(np.asarray(nh_ids, dtype=np.uint32), (len(dst),))
        return self.send_array(encode_routes(dst, prefixlen, nh, delete=delete), batch_bytes=batch_bytes)

    def send_array(self, msgs: np.ndarray, *, batch_bytes: int = BATCH_BYTES) -> BulkResult:
        """Send fixed-size messages (a structured array with the netlink header's fields),
        ``batch_bytes`` per sendmsg: sequence numbers set here, an ACK asked for by the last
        of each batch, every error of the batch counted."""
        per_batch = max(1, batch_bytes // msgs.dtype.itemsize)
        sent = failed = calls = 0
        first = None
        for start in range(0, len(msgs), per_batch):
            chunk = msgs[start:start + per_batch].copy()
            chunk["nl_seq"] = (np.arange(len(chunk), dtype=np.uint64) + self.seq).astype(np.uint32)
            chunk["nl_flags"][-1] |= NLM_F_ACK
            last_seq = int(chunk["nl_seq"][-1])
            self.seq = (last_seq + 1) & 0xFFFFFFFF or 1
            result = self.send_messages(chunk.tobytes(), len(chunk), last_seq)
            sent += result.sent
            failed += result.failed
            calls += 1
            first = first or result.first_error
        return BulkResult(sent, failed, calls, first)

    def request(self, message_of_seq) -> None:
        """Send one message built by ``message_of_seq(seq)`` (with ACK); raise on error."""
        seq = self.seq
        self.seq += 1
        result = self.send_messages(message_of_seq(seq), 1, seq)
        if result.failed:
            raise BulkError(result.first_error or "refused")

    def count_dump(self, request: int, body: bytes, reply: int, what: str,
                   matches: Callable[[bytes, int], bool] = lambda _data, _offset: True,
                   unsupported_is_empty: bool = False) -> int:
        """Messages of type ``reply`` in a dump (``request`` with NLM_F_DUMP and ``body``)
        that ``matches(data, offset)`` accepts, counted without parsing attributes (a
        million-route dump parsed by pyroute2 takes minutes). ``unsupported_is_empty``: a
        kernel answering EOPNOTSUPP has none of them."""
        seq = self.seq
        self.seq += 1
        self.sock.sendto(struct.pack("<IHHII", 16 + len(body), request, NLM_F_REQUEST | NLM_F_DUMP, seq, 0) + body,
                         (0, 0))
        count = 0
        while True:
            data = self.sock.recv(1 << 20)
            offset = 0
            while offset + 16 <= len(data):
                length, kind, _f, _s, _p = struct.unpack_from("<IHHII", data, offset)
                if kind == NLMSG_DONE:
                    return count
                if kind == NLMSG_ERROR:
                    (code,) = struct.unpack_from("<i", data, offset + 16)
                    if unsupported_is_empty and code == -errno.EOPNOTSUPP:
                        return 0
                    raise BulkError(f"{what} dump failed: {os.strerror(-code)}")
                if kind == reply and matches(data, offset):
                    count += 1
                offset += (length + 3) & ~3

    def count_routes(self, table: int = RT_TABLE_MAIN, protocol: int | None = RTPROT_STATIC) -> int:
        """IPv4 routes in ``table`` (of ``protocol``)."""
        def matches(data: bytes, offset: int) -> bool:
            rt_table, proto = data[offset + 20], data[offset + 21]
            return rt_table == table and (protocol is None or proto == protocol)

        body = struct.pack("<BBBBBBBBI", socket.AF_INET, 0, 0, 0, 0, 0, 0, 0, 0)
        return self.count_dump(RTM_GETROUTE, body, RTM_NEWROUTE, "route", matches)

    def count_neighbours(self, state: int = NUD_PERMANENT) -> int:
        """IPv4 neighbour entries in ``state`` (permanent: the ones a router installed)."""
        def matches(data: bytes, offset: int) -> bool:
            (found,) = struct.unpack_from("<H", data, offset + 24)
            return bool(found & state)

        body = struct.pack("<BBHiHBB", socket.AF_INET, 0, 0, 0, 0, 0, 0)
        return self.count_dump(RTM_GETNEIGH, body, RTM_NEWNEIGH, "neighbour", matches)


def ipv4_int(address: str) -> int:
    return int(ipaddress.IPv4Address(address))


__all__ = ["BulkError", "BulkResult", "BulkSocket", "MAX_GROUP_MEMBERS", "encode_blackhole_default", "encode_neighbours",
           "encode_nexthop", "encode_nexthop_delete", "encode_nexthop_deletes", "encode_nexthops", "encode_routes",
           "ipv4_int", "errno"]
