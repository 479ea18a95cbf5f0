"""Parse the one-line CSV replies of PROX query commands into typed records.

Formats (PROX ``cmd_parser.c``; every reply is one ``\\n``-terminated line of integers):

* ``tot stats`` -> ``rx,tx,last_tsc,tsc_hz``
* ``port_stats <p>`` -> 12 fields: ``no_mbufs_diff, ierrors+imissed_diff, rx_bytes_diff,
  tx_bytes_diff, rx_pkts_diff, tx_pkts_diff, rx_tot, tx_tot, no_mbufs_tot,
  ierrors+imissed_tot, last_tsc, prev_tsc``
* ``lat stats <cores> <task>`` -> one line per core/task. Three generations exist and all are
  accepted: 7 fields ``min,max,avg,min_since_reset,max_since_reset,last_tsc,tsc_hz`` (old
  builds), 9 fields adding ``core,task``, 12 fields adding ``mis_ordered,extent,duplicate``.
  Latency fields are **microseconds** (``time_unit_to_usec``), integers.
* ``lat all stats`` -> the ``lat stats`` line followed by 128 lines ``Bucket [i]: n``; bucket
  ``i`` holds latencies in ``[i, i+1) * 2**bucket_size`` **TSC cycles** (``latency bucket
  size`` in the PROX config), so its width in ns is ``2**bucket_size / tsc_hz * 1e9``.
* ``stats <path>,<path>,...`` -> one unsigned integer per path, comma-separated; a path
  with nothing to report (``latency(i).tot.total`` before the i-th latency task received a
  packet) reads ``2**64 - 1`` (the parser's ``-1``). ``latency(i).tot.total`` counts the
  latency packets received since ``reset lat stats``, ``latency(i).tot.used`` those PROX
  measured: one whose transmit time it cannot vouch for within the task's accuracy limit
  (``accuracy limit nsec``) is received and not measured (``handle_lat.c``).
* Errors for a bad core/task are reply lines starting with ``error:``.

The latency statistics of a reply are those of the *last stats interval* (PROX publishes a
new sample about once a second); only ``*_since_reset`` cover everything since ``reset stats``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

NS_PER_US = 1000
LAT_BUCKETS = 128
_BUCKET_RE = re.compile(r"^\s*Bucket\s*\[(\d+)\]\s*:\s*(\d+)\s*$")


class ProxReplyError(ValueError):
    """A reply that does not have the expected shape (or is a PROX ``error:`` line)."""


def _ints(line: str, what: str, counts: tuple[int, ...]) -> list[int]:
    text = line.strip()
    if text.startswith("error"):
        raise ProxReplyError(f"{what}: PROX replied {text!r}")
    parts = [p.strip() for p in text.split(",")]
    if len(parts) not in counts:
        expected = " or ".join(str(c) for c in counts)
        raise ProxReplyError(f"{what}: expected {expected} fields, got {len(parts)}: {text!r}")
    try:
        return [int(p) for p in parts]
    except ValueError:
        raise ProxReplyError(f"{what}: non-integer field in {text!r}") from None


@dataclass(frozen=True)
class TotStats:
    rx: int
    tx: int
    last_tsc: int
    tsc_hz: int


def parse_tot_stats(line: str) -> TotStats:
    return TotStats(*_ints(line, "tot stats", (4,)))


@dataclass(frozen=True)
class PortStats:
    no_mbufs_diff: int
    errors_diff: int
    rx_bytes_diff: int
    tx_bytes_diff: int
    rx_pkts_diff: int
    tx_pkts_diff: int
    rx_total: int
    tx_total: int
    no_mbufs_total: int
    errors_total: int
    last_tsc: int
    prev_tsc: int


def parse_port_stats(line: str) -> PortStats:
    return PortStats(*_ints(line, "port_stats", (12,)))


#: What ``stats`` reads for a path with nothing to report (PROX's uint64 ``-1``).
STATS_NOTHING = 2**64 - 1


@dataclass(frozen=True)
class LatencySamples:
    """Latency packets PROX received since ``reset lat stats``, and how many it measured."""

    received: int
    measured: int


def latency_samples_paths(n_tasks: int) -> list[str]:
    """The ``stats`` paths of :func:`parse_latency_samples` for latency tasks 0..n_tasks-1."""
    return [f"latency({i}).tot.{what}" for i in range(n_tasks) for what in ("used", "total")]


def parse_latency_samples(line: str, n_tasks: int) -> LatencySamples | None:
    """The reply to ``stats`` with :func:`latency_samples_paths`, summed over the tasks that
    received any latency packet; None when none did."""
    values = _ints(line, "stats", (2 * n_tasks,))
    received = measured = 0
    seen = False
    for used, total in zip(values[::2], values[1::2]):
        if total == STATS_NOTHING:
            continue
        seen = True
        received += total
        measured += 0 if used == STATS_NOTHING else used
    return LatencySamples(received, measured) if seen else None


@dataclass(frozen=True)
class LatStats:
    """One ``lat stats`` line. Latencies as PROX sends them (µs); use the ``*_ns`` views."""

    min_us: int
    max_us: int
    avg_us: int
    min_since_reset_us: int
    max_since_reset_us: int
    last_tsc: int
    tsc_hz: int
    core: int | None = None
    task: int | None = None
    mis_ordered: int | None = None
    extent: int | None = None
    duplicate: int | None = None

    @property
    def fields(self) -> int:
        if self.mis_ordered is not None:
            return 12
        return 9 if self.core is not None else 7

    @property
    def min_ns(self) -> int:
        return self.min_us * NS_PER_US

    @property
    def max_ns(self) -> int:
        return self.max_us * NS_PER_US

    @property
    def avg_ns(self) -> int:
        return self.avg_us * NS_PER_US

    @property
    def min_since_reset_ns(self) -> int:
        return self.min_since_reset_us * NS_PER_US

    @property
    def max_since_reset_ns(self) -> int:
        return self.max_since_reset_us * NS_PER_US


def parse_lat_stats(line: str) -> LatStats:
    return LatStats(*_ints(line, "lat stats", (7, 9, 12)))


def parse_bucket(line: str) -> tuple[int, int]:
    """``Bucket [i]: n`` -> ``(i, n)``."""
    m = _BUCKET_RE.match(line)
    if not m:
        raise ProxReplyError(f"lat all stats: expected 'Bucket [i]: n', got {line.strip()!r}")
    return int(m.group(1)), int(m.group(2))


def bucket_width_ns(bucket_size_exp: int, tsc_hz: int) -> float:
    """Width of one ``lat all stats`` bucket in ns: ``2**exp`` TSC cycles at ``tsc_hz``."""
    if tsc_hz <= 0:
        raise ProxReplyError(f"lat all stats: bad tsc_hz {tsc_hz}")
    return (2**bucket_size_exp) * 1e9 / tsc_hz


def parse_version(line: str) -> dict[str, str]:
    """``version`` -> ``(major<<24)|(minor<<16)|(rev<<8),RTE_VERSION`` decoded to strings.

    Upstream PROX (version.h) has ``VERSION_MAJOR 0`` and ``VERSION_MINOR 2212`` (YYMM):
    the minor overflows its byte into the major's, so the real reply to ``version`` is
    ``144965632,...`` (2212 << 16). Decoded as bytes that would read "8.164.0"; read as
    what it is, ``(v >> 16)`` is the YYMM minor, "22.12" as PROX's banner prints it."""
    prox, dpdk = _ints(line, "version", (2,))

    def dotted(v: int) -> str:
        return ".".join(str((v >> s) & 0xFF) for s in (24, 16, 8))

    minor, rev = prox >> 16, (prox >> 8) & 0xFF
    if minor >= 1000 and 1 <= minor % 100 <= 12:  # major 0, a YYMM minor
        text = f"{minor // 100:02d}.{minor % 100:02d}" + (f".{rev:02d}" if rev else "")
    else:
        text = dotted(prox)
    return {"prox": text, "dpdk": f"{dotted(dpdk)}.{dpdk & 0xFF}"}
