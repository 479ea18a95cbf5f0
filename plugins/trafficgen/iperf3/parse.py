"""iperf3's JSON report (``iperf3 -J``, 3.12) into a :class:`TcpResult`. Pure."""

from __future__ import annotations

import json
from typing import Any, Mapping

from vsbench.interfaces.tcp import TcpResult


class ReportError(ValueError):
    """iperf3 said nothing usable (or reported an error); one line."""


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def parse_report(text: str, streams: int) -> TcpResult:
    """The client's ``-J`` document -> :class:`TcpResult`. Bytes are the sums over every
    stream (and both directions with ``--bidir``); RTTs the senders' TCP_INFO smoothed
    RTTs (min of the minima, mean of the means, max of the maxima)."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        tail = text.strip().splitlines()[-1:] or ["no output"]
        raise ReportError(f"iperf3 printed no JSON report: {tail[0][:200]}") from None
    if not isinstance(doc, Mapping):
        raise ReportError("iperf3's report is not a JSON object")
    if doc.get("error"):
        raise ReportError(f"iperf3: {str(doc['error'])[:200]}")
    end = doc.get("end") or {}
    sums = [end.get(k) for k in ("sum_sent", "sum_sent_bidir_reverse")]
    received = [end.get(k) for k in ("sum_received", "sum_received_bidir_reverse")]
    sums = [s for s in sums if isinstance(s, Mapping)]
    received = [s for s in received if isinstance(s, Mapping)]
    if not sums or not received:
        raise ReportError("iperf3's report has no end summary (the test did not run)")
    seconds = _number(received[0].get("seconds")) or _number(sums[0].get("seconds")) or 0.0
    retrans = [_number(s.get("retransmits")) for s in sums]
    senders = [st.get("sender") for st in end.get("streams") or [] if isinstance(st, Mapping)]
    senders = [s for s in senders if isinstance(s, Mapping) and s.get("mean_rtt") is not None]
    cpu = end.get("cpu_utilization_percent") or {}
    rtts = {k: [_number(s.get(k)) for s in senders if _number(s.get(k)) is not None]
            for k in ("min_rtt", "mean_rtt", "max_rtt")}
    return TcpResult(
        duration_s=float(seconds),
        sent_bytes=int(sum(_number(s.get("bytes")) or 0 for s in sums)),
        received_bytes=int(sum(_number(s.get("bytes")) or 0 for s in received)),
        streams=int(streams),
        retransmits=None if any(r is None for r in retrans) else int(sum(retrans)),  # type: ignore[arg-type]
        sender_cpu_percent=_number(cpu.get("host_total")),
        receiver_cpu_percent=_number(cpu.get("remote_total")),
        rtt_min_us=min(rtts["min_rtt"]) if rtts["min_rtt"] else None,
        rtt_mean_us=sum(rtts["mean_rtt"]) / len(rtts["mean_rtt"]) if rtts["mean_rtt"] else None,
        rtt_max_us=max(rtts["max_rtt"]) if rtts["max_rtt"] else None,
        stats={"iperf3_version": (doc.get("start") or {}).get("version"),
               "sender_tcp_congestion": end.get("sender_tcp_congestion"),
               "intervals": len(doc.get("intervals") or [])},
    )


def tcp_counters(snmp: str) -> dict[str, int]:
    """The ``Tcp:`` counters of ``/proc/net/snmp`` (a header line of names, then one of
    values), e.g. ``{"InSegs": 12, "InCsumErrors": 0, ...}``; empty if there are none."""
    rows = [line.split()[1:] for line in snmp.splitlines() if line.startswith("Tcp:")]
    if len(rows) < 2 or len(rows[0]) != len(rows[1]):
        return {}
    try:
        return {name: int(value) for name, value in zip(rows[0], rows[1])}
    except ValueError:
        return {}
