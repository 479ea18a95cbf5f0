"""The TCP workload contract: real TCP connections across the device under test.

Frame trials measure a switch with an open loop (offered load in, counters out). A TCP
workload is a closed loop -- the endpoints' stacks pace themselves by the acknowledgements
coming back -- so it is not a trial at a load: a generator that can run one declares
:attr:`~vsbench.interfaces.trafficgen.TrafficGenerator.supports_tcp` and implements
:meth:`~vsbench.interfaces.trafficgen.TrafficGenerator.run_tcp`, which runs one
:class:`TcpSpec` between its two ports (port 0 the client, port 1 the server) and returns
what the endpoints measured (:class:`TcpResult`). The runner samples the switch around it
as around any trial, so the switch's CPU cost sits beside the endpoints' (report 5: Gbit/s,
retransmits and CPU per Gbit/s).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class TcpSpec:
    """One TCP run: ``streams`` parallel connections from port 0 to port 1 (and back at the
    same time when ``bidirectional``) for ``duration_s``. The endpoint options -- the
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


@dataclass(frozen=True)
class TcpResult:
    """What the endpoints measured over ``duration_s``.

    ``received_bytes`` is TCP payload delivered to the receiving applications (both ways
    summed when bidirectional); ``retransmits`` the senders' retransmitted segments (None
    when the stack does not say); ``sender_cpu_percent``/``receiver_cpu_percent`` the CPU
    the endpoint processes used, in percent of one CPU (user + system, as iperf3 reports
    it); ``rtt_*_us`` the smoothed round-trip times of the connections (the kernel's
    TCP_INFO) under this load: the latency-under-load figure."""

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

    @property
    def gbps(self) -> float:
        """Goodput in Gbit/s (TCP payload received)."""
        return self.received_bytes * 8 / self.duration_s / 1e9 if self.duration_s > 0 else 0.0
