"""Latency probe helper of the trafgen plugin: one small process inside the generator netns.

Started as ``ip netns exec <tg-netns> python -m vsbench_plugins.trafficgen.trafgen_probe``
(Python 3.11 has no ``os.setns``), it sends a low-rate stream of UDP probes on one generator
port and receives them on another, next to trafgen's bulk traffic:

* A probe is the flow-0 frame of the bulk stream (same headers, same size, so the DUT treats
  it like bulk) whose UDP payload starts with ``MAGIC``, a 32-bit sequence number and the
  64-bit CLOCK_REALTIME send time in ns (network order); the UDP checksum is recomputed.
* Probes leave through a packet socket with ``PACKET_QDISC_BYPASS``: the generator port's
  egress qdisc is trafgen's rate shaper, always full of bulk frames, and a probe queued
  behind them would measure the generator's own queue. The kernel's software TX timestamp
  (taken in the veth driver, read back from the socket error queue) is the send time used
  for latency; the payload timestamp is the fallback when none came back. A probe can come
  back with *several* TX timestamps: the kernel keeps the sending socket and the
  timestamp request on the frame while a kernel DUT forwards that same buffer (a Linux
  bridge or the OvS kernel datapath forwarding a learned unicast frame), so the DUT's
  egress veth stamps it again. Only the first -- earliest -- one, taken at the generator
  port, is the send time; a later one would leave only the last veth hop in the latency
  (:class:`TxStamps`).
* The receiver is a packet socket on the peer port with a classic BPF filter that accepts
  only incoming probes, so a million bulk frames a second cost one short filter run each and
  never wake this process. Packet sockets see a frame before tc ingress, where the testbed
  drops everything. Receive times are kernel timestamps (``SO_TIMESTAMPNS``).

Protocol with the plugin: the helper creates ``<out>.ready`` once its sockets are set up,
waits for a line ``go`` on stdin, sends ``rate × duration`` probes on a fixed schedule,
keeps receiving for ``drain`` seconds, writes ``<out>.json`` (counts) and ``<out>.bin``
(int64 pairs: sequence, latency in ns, in arrival order) and exits 0.

No third-party imports: it starts in a fraction of a second.
"""

from __future__ import annotations

import argparse
import array
import ctypes
import errno
import json
import os
import select
import socket
import struct
import sys
import time

#: First two bytes of a probe's UDP payload.
MAGIC = 0x7673  # "vs"
#: First two bytes of every bulk frame's UDP payload (the rest is zero). With the probe
#: magic it tells vsbench's frames from anything a DUT emits on its own.
BULK_MAGIC = 0x7662  # "vb"
#: magic (2) + sequence (4) + send time (8)
PROBE_HEADER_BYTES = 14

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_STATISTICS = 6
PACKET_QDISC_BYPASS = 20
PACKET_IGNORE_OUTGOING = 23
SO_ATTACH_FILTER = 26
SO_TIMESTAMPNS = 35  # SO_TIMESTAMPNS_OLD == SCM_TIMESTAMPNS
SO_TIMESTAMPING = 37  # SO_TIMESTAMPING_OLD == SCM_TIMESTAMPING
SOF_TIMESTAMPING_TX_SOFTWARE = 1 << 1
SOF_TIMESTAMPING_SOFTWARE = 1 << 4
MSG_ERRQUEUE = 0x2000
PR_SET_TIMERSLACK = 29

#: Where the UDP payload starts in a received frame. The kernel moves an 802.1Q tag out of
#: the frame data before packet sockets see it, so this holds for tagged frames too.
RX_PAYLOAD_OFFSET = 14 + 20 + 8

# classic BPF opcodes
_LD_W_ABS, _LD_H_ABS, _LD_B_ABS = 0x20, 0x28, 0x30
_JEQ_K, _RET_K = 0x15, 0x06
_SKF_AD_PKTTYPE = (-0x1000 + 4) & 0xFFFFFFFF
_PACKET_OUTGOING = 4


def probe_filter(payload_offset: int = RX_PAYLOAD_OFFSET) -> list[tuple[int, int, int, int]]:
    """Accept incoming IPv4/UDP frames whose payload starts with MAGIC; drop the rest."""
    return [
        (_LD_W_ABS, 0, 0, _SKF_AD_PKTTYPE),
        (_JEQ_K, 7, 0, _PACKET_OUTGOING),  # our own transmissions: reject
        (_LD_H_ABS, 0, 0, 12),
        (_JEQ_K, 0, 5, 0x0800),
        (_LD_B_ABS, 0, 0, 23),
        (_JEQ_K, 0, 3, 17),
        (_LD_H_ABS, 0, 0, payload_offset),
        (_JEQ_K, 0, 1, MAGIC),
        (_RET_K, 0, 0, 0x40000),
        (_RET_K, 0, 0, 0),
    ]


def foreign_filter(payload_offset: int = RX_PAYLOAD_OFFSET) -> list[tuple[int, int, int, int]]:
    """Accept what is neither a bulk frame nor a probe (a DUT's own chatter: IGMP, ARP,
    BPDUs...); reject vsbench's frames. Used only to count, on sockets never read."""
    return [
        (_LD_H_ABS, 0, 0, 12),
        (_JEQ_K, 0, 5, 0x0800),
        (_LD_B_ABS, 0, 0, 23),
        (_JEQ_K, 0, 3, 17),
        (_LD_H_ABS, 0, 0, payload_offset),
        (_JEQ_K, 2, 0, BULK_MAGIC),
        (_JEQ_K, 1, 0, MAGIC),
        (_RET_K, 0, 0, 64),
        (_RET_K, 0, 0, 0),
    ]


def attach_filter(sock: socket.socket, program: list[tuple[int, int, int, int]]) -> None:
    blob = b"".join(struct.pack("HBBI", *insn) for insn in program)
    buf = ctypes.create_string_buffer(blob)
    fprog = struct.pack("HL", len(program), ctypes.addressof(buf))
    sock.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, fprog)


def checksum_words(data: bytes) -> int:
    """Unfolded one's-complement sum of ``data`` as 16-bit big-endian words."""
    if len(data) % 2:
        data += b"\0"
    return sum(array_be16(data))


def array_be16(data: bytes) -> array.array:
    words = array.array("H", data)
    if sys.byteorder == "little":
        words.byteswap()
    return words


def fold(total: int) -> int:
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return total


class ProbeFrames:
    """Stamps sequence number and send time into a template frame, fixing the UDP checksum."""

    def __init__(self, template: bytes, ip_offset: int) -> None:
        self.template = bytearray(template)
        self.ip_offset = ip_offset
        ihl = (template[ip_offset] & 0x0F) * 4
        self.udp_offset = ip_offset + ihl
        self.payload_offset = self.udp_offset + 8
        if self.payload_offset + PROBE_HEADER_BYTES > len(template):
            raise ValueError("probe template too short for the probe header")
        if template[ip_offset + 9] != 17:
            raise ValueError("probe template is not UDP")
        udp_len = struct.unpack_from("!H", template, self.udp_offset + 4)[0]
        # Sum of everything the checksum covers except the stamped bytes and the checksum.
        work = bytearray(template[self.udp_offset:self.udp_offset + udp_len])
        work[6:8] = b"\0\0"
        work[8:8 + PROBE_HEADER_BYTES] = bytes(PROBE_HEADER_BYTES)
        pseudo = template[ip_offset + 12:ip_offset + 20] + struct.pack("!BBH", 0, 17, udp_len)
        self._base_sum = checksum_words(pseudo) + checksum_words(bytes(work))

    def stamp(self, seq: int, sent_ns: int) -> bytes:
        head = struct.pack("!HIQ", MAGIC, seq & 0xFFFFFFFF, sent_ns)
        frame = self.template
        frame[self.payload_offset:self.payload_offset + PROBE_HEADER_BYTES] = head
        csum = 0xFFFF - fold(self._base_sum + checksum_words(head))
        struct.pack_into("!H", frame, self.udp_offset + 6, csum or 0xFFFF)
        return bytes(frame)


def parse_probe(data: bytes, payload_offset: int) -> tuple[int, int] | None:
    """(sequence, payload send time ns) of a probe frame, or None if it is not one."""
    if len(data) < payload_offset + PROBE_HEADER_BYTES:
        return None
    magic, seq, sent_ns = struct.unpack_from("!HIQ", data, payload_offset)
    if magic != MAGIC:
        return None
    return seq, sent_ns


class TxStamps:
    """Software TX timestamps of the probes, the earliest per sequence number.

    ``SOF_TIMESTAMPING_TX_SOFTWARE`` asks every driver that transmits the frame to report a
    timestamp to the sending socket (``skb_tx_timestamp``). Through a kernel switch that
    forwards the same buffer -- a Linux bridge with the destination MAC learned, measured
    here: two stamps per probe, 0.8-1.3 us apart on the bridge path and 90-110 ns before
    the receive stamp -- the buffer keeps its socket and its stamp request, and the
    switch's egress veth stamps it again. The generator port's stamp is the first one taken
    and the earliest, so it is kept whatever order the error queue delivers them in; the
    later ones are only counted (``tx_timestamps_after_first``), as evidence of such a path.
    """

    def __init__(self) -> None:
        self.first_ns: dict[int, int] = {}
        self.after_first = 0

    def add(self, seq: int, stamp_ns: int) -> None:
        """Record one TX timestamp of probe ``seq``."""
        known = self.first_ns.get(seq)
        if known is None:
            self.first_ns[seq] = stamp_ns
            return
        self.after_first += 1
        if stamp_ns < known:
            self.first_ns[seq] = stamp_ns

    def get(self, seq: int) -> int | None:
        return self.first_ns.get(seq)

    def __len__(self) -> int:
        return len(self.first_ns)


def _timespec_ns(data: bytes, index: int = 0) -> int:
    sec, nsec = struct.unpack_from("qq", data, 16 * index)
    return sec * 1_000_000_000 + nsec


def _set_timer_slack_ns(ns: int) -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_TIMERSLACK, ctypes.c_ulong(ns), 0, 0, 0)
    except (OSError, AttributeError):
        pass


class ProbeSession:
    """The sockets and records of one probe stream."""

    def __init__(self, tx_iface: str, rx_iface: str, frames: ProbeFrames,
                 rx_payload_offset: int = RX_PAYLOAD_OFFSET) -> None:
        self.frames = frames
        self.rx_payload_offset = rx_payload_offset
        self.tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
        self.tx.bind((tx_iface, 0))
        self.tx.setsockopt(SOL_PACKET, PACKET_QDISC_BYPASS, 1)
        self.tx.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPING,
                           SOF_TIMESTAMPING_TX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE)
        self.tx.setblocking(False)
        # Filter before bind: the socket receives nothing until it is bound to a protocol.
        self.rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
        attach_filter(self.rx, probe_filter(rx_payload_offset))
        # Bidirectional trials send bulk out of this port too; without this every one of
        # those frames would be cloned for this socket before the filter rejects it.
        self.rx.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
        self.rx.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        self.rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        self.rx.bind((rx_iface, ETH_P_ALL))
        self.rx.setblocking(False)
        self.sent = 0
        self.send_failed = 0
        self.send_failed_nobufs = 0
        self.tx_kernel_ns = TxStamps()
        self.arrivals: list[tuple[int, int, int]] = []  # (seq, rx ns, payload send ns)
        self.rx_without_ts = 0

    def send(self, seq: int) -> None:
        sent_ns = time.clock_gettime_ns(time.CLOCK_REALTIME)
        frame = self.frames.stamp(seq, sent_ns)
        try:
            self.tx.send(frame)
        except OSError as exc:
            self.send_failed += 1
            if exc.errno == errno.ENOBUFS:
                self.send_failed_nobufs += 1
            return
        self.sent += 1
        self.read_tx_timestamps()

    def read_tx_timestamps(self) -> None:
        while True:
            try:
                data, ancdata, _flags, _addr = self.tx.recvmsg(2048, 512, MSG_ERRQUEUE)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            parsed = parse_probe(data, self.frames.payload_offset)
            if parsed is None:
                continue
            for level, ctype, cdata in ancdata:
                if level == socket.SOL_SOCKET and ctype == SO_TIMESTAMPING and len(cdata) >= 16:
                    ts = _timespec_ns(cdata, 0)
                    if ts:
                        self.tx_kernel_ns.add(parsed[0], ts)

    def receive(self) -> None:
        while True:
            try:
                data, ancdata, _flags, _addr = self.rx.recvmsg(256, 256)
            except (BlockingIOError, InterruptedError):
                return
            parsed = parse_probe(data, self.rx_payload_offset)
            if parsed is None:
                continue
            rx_ns = 0
            for level, ctype, cdata in ancdata:
                if level == socket.SOL_SOCKET and ctype == SO_TIMESTAMPNS and len(cdata) >= 16:
                    rx_ns = _timespec_ns(cdata)
            if not rx_ns:
                self.rx_without_ts += 1
                rx_ns = time.clock_gettime_ns(time.CLOCK_REALTIME)
            self.arrivals.append((parsed[0], rx_ns, parsed[1]))

    def socket_stats(self) -> tuple[int, int]:
        """(frames that passed the filter, of which dropped for a full socket buffer)."""
        raw = self.rx.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8)
        packets, drops = struct.unpack("II", raw)
        return packets, drops

    def run(self, rate_fps: float, duration_s: float, drain_s: float) -> None:
        count = int(round(rate_fps * duration_s))
        period = 1.0 / rate_fps
        start = time.monotonic()
        for seq in range(count):
            due = start + seq * period
            while True:
                wait = due - time.monotonic()
                if wait <= 0:
                    break
                readable, _, _ = select.select([self.rx], [], [], wait)
                if readable:
                    self.receive()
            self.send(seq)
            self.receive()
        end = time.monotonic() + drain_s
        while True:
            wait = end - time.monotonic()
            if wait <= 0:
                break
            readable, _, _ = select.select([self.rx], [], [], wait)
            if readable:
                self.receive()
        self.receive()
        self.read_tx_timestamps()

    def write(self, out: str, tx_iface: str, rx_iface: str) -> None:
        records = array.array("q")
        from_payload = 0
        for seq, rx_ns, payload_ns in self.arrivals:
            sent_ns = self.tx_kernel_ns.get(seq)
            if sent_ns is None:
                sent_ns = payload_ns
                from_payload += 1
            records.extend((seq, rx_ns - sent_ns))
        with open(out + ".bin.tmp", "wb") as f:
            records.tofile(f)
        os.replace(out + ".bin.tmp", out + ".bin")
        socket_packets, socket_drops = self.socket_stats()
        summary = {
            "tx_iface": tx_iface,
            "rx_iface": rx_iface,
            "sent": self.sent,
            "send_failed": self.send_failed,
            "send_failed_nobufs": self.send_failed_nobufs,
            "received": len(self.arrivals),
            "rx_socket_frames": socket_packets,
            "rx_socket_drops": socket_drops,
            "tx_kernel_timestamps": len(self.tx_kernel_ns),
            "tx_timestamps_after_first": self.tx_kernel_ns.after_first,
            "latency_from_payload_timestamp": from_payload,
            "rx_without_kernel_timestamp": self.rx_without_ts,
        }
        with open(out + ".json.tmp", "w", encoding="utf-8") as f:
            json.dump(summary, f)
        os.replace(out + ".json.tmp", out + ".json")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tx-iface", required=True)
    parser.add_argument("--rx-iface", required=True)
    parser.add_argument("--frame", required=True, help="probe template frame, hex")
    parser.add_argument("--ip-offset", type=int, required=True)
    parser.add_argument("--rx-payload-offset", type=int, default=RX_PAYLOAD_OFFSET,
                        help="where a received probe's UDP payload starts (a tunnel's frames: further in)")
    parser.add_argument("--rate-fps", type=float, required=True)
    parser.add_argument("--duration-s", type=float, required=True)
    parser.add_argument("--drain-s", type=float, default=0.5)
    parser.add_argument("--out", required=True, help="path prefix of the result files")
    args = parser.parse_args(argv)
    if args.rate_fps <= 0 or args.duration_s <= 0:
        print("trafgen_probe: rate and duration must be positive", file=sys.stderr)
        return 2
    _set_timer_slack_ns(1000)
    frames = ProbeFrames(bytes.fromhex(args.frame), args.ip_offset)
    session = ProbeSession(args.tx_iface, args.rx_iface, frames, args.rx_payload_offset)
    session.receive()  # anything queued before the filter existed
    session.arrivals.clear()
    with open(args.out + ".ready", "w", encoding="utf-8") as f:
        f.write(f"{os.getpid()}\n")
    line = sys.stdin.readline()
    if line.strip() != "go":
        print("trafgen_probe: no 'go' on stdin; nothing sent", file=sys.stderr)
        return 3
    session.run(args.rate_fps, args.duration_s, args.drain_s)
    session.write(args.out, args.tx_iface, args.rx_iface)
    return 0


if __name__ == "__main__":
    sys.exit(main())
