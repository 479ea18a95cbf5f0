"""Frames arriving at generator ports that vsbench did not send, counted per port.

Interface counters count every frame, including what a device under test emits on its
own: a Linux bridge's IGMP report when it comes up, spanning-tree BPDUs, LLDP. Counted as
received bulk frames, they would hide real loss (or show more frames received than sent).
Every bulk frame carries :data:`BULK_MAGIC` and every probe :data:`MAGIC` at the start of
its UDP payload; a packet socket per generator port, opened inside the generator namespace
(pyroute2 creates it there and hands it over), accepts only the other frames, and its
kernel statistics (``PACKET_STATISTICS``, which also count what a full buffer dropped) say
how many arrived. Bulk frames are rejected by the filter, so counting costs one short
filter run per frame and no copy.
"""

from __future__ import annotations

import socket
import struct

from pyroute2.netns import create_socket

from vsbench_plugins.trafficgen.trafgen_probe import (
    ETH_P_ALL,
    PACKET_IGNORE_OUTGOING,
    PACKET_STATISTICS,
    SOL_PACKET,
    attach_filter,
    foreign_filter,
)


#: ``PACKET_AUXDATA`` (linux/if_packet.h): each frame read comes with a ``tpacket_auxdata``,
#: which holds the VLAN tag the kernel took off the frame before the socket saw it.
PACKET_AUXDATA = 8
AUXDATA_BYTES = 20  # u32 status, len, snaplen; u16 mac, net, vlan_tci, vlan_tpid
TP_STATUS_VLAN_VALID = 0x10
TP_STATUS_VLAN_TPID_VALID = 0x40


def with_vlan_tag(data: bytes, ancillary: list[tuple[int, int, bytes]]) -> bytes:
    """``data`` as it was on the wire: the outer VLAN tag the kernel moved into the
    packet's metadata (``tpacket_auxdata``) put back after the MAC addresses."""
    for level, kind, payload in ancillary:
        if level != SOL_PACKET or kind != PACKET_AUXDATA or len(payload) < AUXDATA_BYTES:
            continue
        status, _len, _snap, _mac, _net, tci, tpid = struct.unpack("IIIHHHH", payload[:AUXDATA_BYTES])
        if status & TP_STATUS_VLAN_VALID and len(data) >= 12:
            tpid = tpid if status & TP_STATUS_VLAN_TPID_VALID else 0x8100
            return data[:12] + struct.pack("!HH", tpid, tci) + data[12:]
    return data


class ForeignFrameCounter:
    """One counting socket per interface in ``ifaces`` inside ``netns``.

    ``programs`` gives an interface its own filter instead of :func:`foreign_filter` (an
    encapsulated profile's ports, :mod:`.verify`). With ``keep_samples`` the first frames
    the filter accepted in each period between two :meth:`read` calls are kept (up to that
    many per interface, ``snap`` bytes each) in :attr:`samples`."""

    def __init__(self, netns: str | None, ifaces: list[str],
                 programs: dict[str, list[tuple[int, int, int, int]]] | None = None,
                 keep_samples: int = 0, snap: int = 64) -> None:
        self._sockets: dict[str, socket.socket] = {}
        self._keep = keep_samples
        self._snap = max(64, snap)
        self.samples: dict[str, list[bytes]] = {}
        programs = programs or {}
        try:
            for iface in ifaces:
                if netns is None:
                    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
                else:
                    sock = create_socket(netns, family=socket.AF_PACKET, socket_type=socket.SOCK_RAW,
                                         proto=0, flags=0)
                self._sockets[iface] = sock
                attach_filter(sock, programs.get(iface) or foreign_filter())
                sock.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
                if keep_samples:
                    sock.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 16)
                sock.setblocking(False)
                sock.bind((iface, ETH_P_ALL))
        except BaseException:
            self.close()
            raise

    def _drain(self, sock: socket.socket, kept: list[bytes]) -> None:
        while True:
            try:
                data, ancillary, _flags, _addr = sock.recvmsg(self._snap, socket.CMSG_SPACE(AUXDATA_BYTES))
            except (BlockingIOError, InterruptedError):
                return
            if len(kept) < self._keep:
                kept.append(with_vlan_tag(data, ancillary))

    def read(self) -> dict[str, int]:
        """Accepted frames per interface since the previous read (the kernel resets them)."""
        counts = {}
        self.samples = {}
        for iface, sock in self._sockets.items():
            kept: list[bytes] = []
            self._drain(sock, kept)
            if kept:
                self.samples[iface] = kept
            packets, _drops = struct.unpack("II", sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))
            counts[iface] = packets
        return counts

    def close(self) -> None:
        for sock in self._sockets.values():
            sock.close()
        self._sockets = {}
