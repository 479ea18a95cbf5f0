"""testpmd's console output, parsed (pure functions over text, tested on captured output).

``show port stats all`` prints one block per port::

      ######################## NIC statistics for port 0  ########################
      RX-packets: 809536     RX-missed: 0          RX-bytes:  0
      RX-errors: 0
      RX-nombuf:  0
      TX-packets: 512064     TX-errors: 0          TX-bytes:  0

The counters are cumulative since the port started; a trial's figures are the difference
of two readings (:func:`delta`), so nothing is reset between trials and a reading taken
while traffic still flows loses nothing.

What the counters mean for loss attribution: ``rx_frames`` are frames the VNF took from the
port's receive ring; ``rx_missed`` frames the port's ring had no room for (counted by the
driver, lost *at* the VNF); ``tx_frames`` frames the VNF handed to the port. For a
virtio-user port a frame the switch could not enqueue into a full ring is counted by the
switch (its vhost-user port's TX drops), not here.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

#: testpmd label -> our counter name (frames, not "packets": one Ethernet frame each).
COUNTERS = {
    "RX-packets": "rx_frames",
    "RX-missed": "rx_missed",
    "RX-bytes": "rx_bytes",
    "RX-errors": "rx_errors",
    "RX-nombuf": "rx_nombuf",
    "TX-packets": "tx_frames",
    "TX-errors": "tx_errors",
    "TX-bytes": "tx_bytes",
}

_BLOCK_RE = re.compile(r"NIC statistics for port (\d+)")
_PAIR_RE = re.compile(r"([A-Za-z]+-[A-Za-z]+):\s+(\d+)")
_VERSION_RE = re.compile(r"RTE Version: '([^']+)'")


class StatsParseError(ValueError):
    """The text is not what ``show port stats all`` prints."""


def parse_port_stats(text: str) -> dict[int, dict[str, int]]:
    """``{port: {rx_frames, rx_missed, rx_bytes, rx_errors, rx_nombuf, tx_frames,
    tx_errors, tx_bytes}}`` from the output of ``show port stats all``. Only the counters
    of each block are read (not its "since last show" rates, which the next reading
    resets); a block missing one of them is an error, not a zero."""
    blocks = _BLOCK_RE.split(text)
    if len(blocks) < 3:
        raise StatsParseError("no 'NIC statistics for port' block in testpmd's output")
    ports: dict[int, dict[str, int]] = {}
    for number, body in zip(blocks[1::2], blocks[2::2]):
        body = body.split("Throughput", 1)[0]
        found = {COUNTERS[label]: int(value) for label, value in _PAIR_RE.findall(body) if label in COUNTERS}
        missing = sorted(set(COUNTERS.values()) - set(found))
        if missing:
            raise StatsParseError(f"port {number}: no {', '.join(missing)} in testpmd's statistics")
        ports[int(number)] = found
    return ports


def delta(before: Mapping[int, Mapping[str, int]], after: Mapping[int, Mapping[str, int]]) -> dict[int, dict[str, int]]:
    """Per-port counter differences ``after - before``. A port present only ``after``
    counts from zero. A counter that went backwards (the port was reset) raises: the
    difference would be a fabricated figure."""
    out: dict[int, dict[str, int]] = {}
    for port, counters in after.items():
        base = before.get(port, {})
        diff = {}
        for name, value in counters.items():
            d = int(value) - int(base.get(name, 0))
            if d < 0:
                raise StatsParseError(f"port {port} {name} went backwards ({base.get(name)} -> {value})")
            diff[name] = d
        out[port] = diff
    return out


def parse_version(text: str) -> str | None:
    """``DPDK 22.11.11`` from the EAL's ``RTE Version: 'DPDK 22.11.11'`` line, if present."""
    match = _VERSION_RE.search(text)
    return match.group(1) if match else None


def ports_document(counters: Mapping[int, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The JSON form of per-port counters: a list ordered by port, each with its ``port``."""
    return [{"port": int(port), **{k: int(v) for k, v in sorted(values.items())}}
            for port, values in sorted(counters.items())]
