"""The TCP workload contract: real TCP connections across the device under test.

Frame trials measure a switch with an open loop (offered load in, counters out). A TCP
workload is a closed loop -- the endpoints' stacks pace themselves by the acknowledgements
coming back -- so it is not a trial at a load: a generator that can run one declares
:attr:`~vsbench.interfaces.trafficgen.TrafficGenerator.supports_tcp` and implements
:meth:`~vsbench.interfaces.trafficgen.TrafficGenerator.run_tcp`, which runs one
:class:`TcpSpec` between its two ports (port 0 the client, port 1 the server) and returns
what the endpoints measured (:class:`TcpResult`). With ``clients`` > 1 ports 0..N-1 are
the clients, each sending to the server on port N at the same time (a deployment gives
each endpoint a switch port of its own), and the result carries each client's figures
beside their sums. The runner samples the switch around it
as around any trial, so the switch's CPU cost sits beside the endpoints' (report 5: Gbit/s,
retransmits and CPU per Gbit/s).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class TcpSpec:
    """One TCP run: ``streams`` parallel connections from port 0 to port 1 (and back at the
    same time when ``bidirectional``) for ``duration_s``; with ``clients`` N > 1, from
    each of ports 0..N-1 to port N, all at once (``streams`` per client). The endpoint options -- the
    ports' L3 ``mtu_bytes``, segmentation/receive offloads ``tso``/``gso``/``gro`` and
    ``tx_checksum`` --
    are applied to the endpoint interfaces; None leaves the interface's default."""

    duration_s: float
    streams: int = 1
    bidirectional: bool = False
    mtu_bytes: int | None = None
    tso: bool | None = None
    gso: bool | None = None
    gro: bool | None = None
    #: Transmit checksum offload (``ethtool -K tx``); off, the stack checksums every
    #: segment itself (and TSO, which needs it, is off too).
    tx_checksum: bool | None = None
    #: Seconds at the start the endpoints leave out of their figures (slow start).
    omit_s: float = 0.0
    #: Client endpoints sending to the one server at the same time.
    clients: int = 1


@dataclass(frozen=True)
class TcpResult:
    """What the endpoints measured over ``duration_s``.

    ``received_bytes`` is TCP payload delivered to the receiving applications (both ways
    summed when bidirectional); ``retransmits`` the senders' retransmitted segments (None
    when the stack does not say); ``sender_cpu_percent``/``receiver_cpu_percent`` the CPU
    the endpoint processes used, in percent of one CPU (user + system, as iperf3 reports
    it); ``rtt_*_us`` the smoothed round-trip times of the connections (the kernel's
    TCP_INFO) under this load: the latency-under-load figure.

    ``clients``: with more than one client, each client's own result (its bytes, its
    client and server processes' CPU, its connections' RTTs); the figures above are then
    their sums (bytes, retransmits, CPU), the mean of their durations, and the RTTs over
    all connections (see :func:`combine`)."""

    duration_s: float
    sent_bytes: int
    received_bytes: int
    streams: int
    retransmits: int | None = None
    sender_cpu_percent: float | None = None
    receiver_cpu_percent: float | None = None
    rtt_min_us: float | None = None
    rtt_mean_us: float | None = None
    rtt_max_us: float | None = None
    stats: dict[str, Any] = field(default_factory=dict)
    clients: tuple["TcpResult", ...] = ()

    @property
    def gbps(self) -> float:
        """Goodput in Gbit/s (TCP payload received)."""
        return self.received_bytes * 8 / self.duration_s / 1e9 if self.duration_s > 0 else 0.0


def combine(parts: "list[TcpResult] | tuple[TcpResult, ...]") -> TcpResult:
    """One result of clients that ran at the same time (:attr:`TcpResult.clients`): bytes,
    streams, retransmits (None if any client's is) and CPU (None if any is) summed, the
    duration the mean of theirs -- the runs share one window, so the total goodput is
    the sum of the clients' --, RTT minimum of the minima, mean of the means, maximum of
    the maxima. Pure."""
    parts = tuple(parts)
    if not parts:
        raise ValueError("no client results to combine")
    if len(parts) == 1:
        return parts[0]

    def total(name: str) -> Any:
        values = [getattr(p, name) for p in parts]
        return None if any(v is None for v in values) else sum(values)

    def over(name: str, how: Any) -> float | None:
        values = [getattr(p, name) for p in parts if getattr(p, name) is not None]
        return how(values) if values else None

    return TcpResult(
        duration_s=sum(p.duration_s for p in parts) / len(parts),
        sent_bytes=sum(p.sent_bytes for p in parts), received_bytes=sum(p.received_bytes for p in parts),
        streams=sum(p.streams for p in parts), retransmits=total("retransmits"),
        sender_cpu_percent=total("sender_cpu_percent"), receiver_cpu_percent=total("receiver_cpu_percent"),
        rtt_min_us=over("rtt_min_us", min), rtt_mean_us=over("rtt_mean_us", lambda v: sum(v) / len(v)),
        rtt_max_us=over("rtt_max_us", max), stats=dict(parts[0].stats), clients=parts)
