"""Reading TRex statistics: port counters and per packet-group-id (pg_id) stats.

TRex reports latency in **microseconds** (``src/time_histogram.cpp``): a histogram keyed
by bucket lower bounds in µs ("0" counts samples under 10 µs, then 10, 20 .. 90, 100, 200
.. 900, 1000 ..), ``average`` (a float), ``total_min``/``total_max`` (integer µs) and
``jit``. vsbench speaks nanoseconds everywhere, so everything is converted here, once.
Per-port maps inside pg_id stats are keyed by the port number as a *string*; error
counters (``er``) are omitted when zero.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from vsbench.interfaces.traffic import LatencyHistogram

NS_PER_US = 1000


@dataclass(frozen=True)
class PortCounters:
    opackets: int
    ipackets: int
    obytes: int
    ibytes: int
    oerrors: int
    ierrors: int

    @classmethod
    def from_json(cls, stats: Mapping[str, Any]) -> "PortCounters":
        def num(key: str) -> int:
            value = stats.get(key, 0)
            return int(value) if isinstance(value, (int, float)) else 0

        return cls(num("opackets"), num("ipackets"), num("obytes"), num("ibytes"),
                   num("oerrors"), num("ierrors"))

    def __sub__(self, other: "PortCounters") -> "PortCounters":
        return PortCounters(self.opackets - other.opackets, self.ipackets - other.ipackets,
                            self.obytes - other.obytes, self.ibytes - other.ibytes,
                            self.oerrors - other.oerrors, self.ierrors - other.ierrors)


@dataclass(frozen=True)
class PgIdCounters:
    """Frames a packet group sent on one port and received on another."""

    tx_packets: dict[int, int]
    rx_packets: dict[int, int]

    @classmethod
    def from_json(cls, flow_stats: Mapping[str, Any] | None) -> "PgIdCounters":
        flow_stats = flow_stats or {}
        return cls(_per_port(flow_stats.get("tp")), _per_port(flow_stats.get("rp")))

    def tx(self, port: int) -> int:
        return self.tx_packets.get(port, 0)

    def rx(self, port: int) -> int:
        return self.rx_packets.get(port, 0)


@dataclass(frozen=True)
class LatencyRecord:
    """One latency pg_id, converted to ns."""

    histogram: dict[int, int]  # bucket lower bound (ns) -> samples
    min_ns: float | None
    max_ns: float | None
    mean_ns: float | None
    jitter_ns: float | None
    dropped: int
    out_of_order: int
    duplicates: int
    seq_too_high: int
    seq_too_low: int

    @property
    def samples(self) -> int:
        return sum(self.histogram.values())

    def errors_json(self) -> dict[str, int]:
        return {"dropped": self.dropped, "out_of_order": self.out_of_order,
                "duplicates": self.duplicates, "seq_too_high": self.seq_too_high,
                "seq_too_low": self.seq_too_low}


def _per_port(section: Any) -> dict[int, int]:
    if not isinstance(section, Mapping):
        return {}
    out = {}
    for key, value in section.items():
        try:
            out[int(key)] = int(value)
        except (TypeError, ValueError):
            continue  # "total" or junk
    return out


def _us_to_ns(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) * NS_PER_US


def latency_record(section: Mapping[str, Any] | None) -> LatencyRecord | None:
    """Convert ``get_pgid_stats``'s ``latency[pg_id]`` (µs) to a record in ns."""
    if not section:
        return None
    lat = section.get("lat") or {}
    er = section.get("er") or {}
    hist: dict[int, int] = {}
    for key, count in (lat.get("histogram") or {}).items():
        try:
            lower_us, n = int(key), int(count)
        except (TypeError, ValueError):
            continue
        if n > 0:
            hist[lower_us * NS_PER_US] = hist.get(lower_us * NS_PER_US, 0) + n
    total_min = lat.get("total_min")
    return LatencyRecord(
        histogram=dict(sorted(hist.items())),
        # TRex reports total_min as 0 before any sample arrived; that is not a figure.
        min_ns=_us_to_ns(total_min) if hist else None,
        max_ns=_us_to_ns(lat.get("total_max")) if hist else None,
        mean_ns=_us_to_ns(lat.get("average")) if hist else None,
        jitter_ns=_us_to_ns(lat.get("jit")) if hist else None,
        dropped=int(er.get("drp", 0)),
        out_of_order=int(er.get("ooo", 0)),
        duplicates=int(er.get("dup", 0)),
        seq_too_high=int(er.get("sth", 0)),
        seq_too_low=int(er.get("stl", 0)),
    )


def merge_histograms(records: list[LatencyRecord]) -> LatencyHistogram | None:
    """One histogram for the trial: bucket counts summed over directions, the exact
    min/max over directions and the mean weighted by each direction's sample count."""
    records = [r for r in records if r.samples > 0]
    if not records:
        return None
    buckets: dict[int, int] = {}
    for r in records:
        for lower, n in r.histogram.items():
            buckets[lower] = buckets.get(lower, 0) + n
    mins = [r.min_ns for r in records if r.min_ns is not None]
    maxs = [r.max_ns for r in records if r.max_ns is not None]
    weighted = [(r.mean_ns, r.samples) for r in records if r.mean_ns is not None]
    total = sum(n for _, n in weighted)
    mean = sum(m * n for m, n in weighted) / total if total else None
    ordered = sorted(buckets)
    return LatencyHistogram(
        bucket_lower_ns=ordered,
        counts=[buckets[b] for b in ordered],
        min_ns=min(mins) if mins else None,
        max_ns=max(maxs) if maxs else None,
        mean_ns=mean,
    )
