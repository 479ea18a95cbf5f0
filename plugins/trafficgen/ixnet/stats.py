"""Reading IxNetwork statistics views and turning their strings into counters and latency.

Views are read with restpy's ``StatViewAssistant`` (it waits until the view is ready,
takes a CSV snapshot of all pages and downloads it). Every cell is a string. Latency
columns carry their unit in the caption -- "Store-Forward Avg Latency (ns)" -- and
IxNetwork can be set to show other units, so the unit is read from the caption and every
figure is converted to nanoseconds here (VSPERF and Yardstick assumed units and got them
wrong; see the reference notes).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from vsbench.interfaces.traffic import DirectionCounters

PORT_VIEW = "Port Statistics"
ITEM_VIEW = "Traffic Item Statistics"
FLOW_VIEW = "Flow Statistics"

_LATENCY_CAPTION = re.compile(
    r"^(?P<mode>.*?)\s*(?P<stat>Min|Avg|Max)\s+Latency\s*\((?P<unit>ns|us|µs|μs|ms|s)\)$")
_NS_PER_UNIT = {"ns": 1.0, "us": 1e3, "µs": 1e3, "μs": 1e3, "ms": 1e6, "s": 1e9}


def read_view(ixnetwork: Any, caption: str, timeout_s: float) -> list[dict[str, str]]:
    """All rows of view ``caption`` as caption → cell mappings."""
    from ixnetwork_restpy import StatViewAssistant

    view = StatViewAssistant(ixnetwork, caption, Timeout=int(max(1, timeout_s)))
    rows = view.Rows
    return [dict(zip(rows.Columns, cells)) for cells in rows.RawData]


def count(cell: str | None) -> int:
    """A frame counter cell ('12345', '1,234', '' when absent)."""
    if cell is None:
        return 0
    text = cell.strip().replace(",", "")
    if not text or text.upper() == "N/A":
        return 0
    return int(float(text))


@dataclass(frozen=True)
class Latency:
    min_ns: float
    mean_ns: float
    max_ns: float
    caption_prefix: str  # e.g. "Store-Forward": which latency IxNetwork measured


def latency(row: Mapping[str, str]) -> Latency | None:
    """Min/avg/max latency of a row in nanoseconds, or None when the row has none."""
    found: dict[str, float] = {}
    prefix = ""
    for caption, cell in row.items():
        m = _LATENCY_CAPTION.match(caption.strip())
        if m is None:
            continue
        text = (cell or "").strip().replace(",", "")
        if not text or text.upper() == "N/A":
            continue
        found[m.group("stat")] = float(text) * _NS_PER_UNIT[m.group("unit")]
        prefix = m.group("mode").strip()
    if set(found) != {"Min", "Avg", "Max"}:
        return None
    return Latency(found["Min"], found["Avg"], found["Max"], prefix)


def direction_counters(flow_rows: Iterable[Mapping[str, str]], port_names: list[str],
                       directions: list[tuple[int, int]]) -> list[DirectionCounters]:
    """Per-direction frames from Flow Statistics rows (tracked by port pair). Frames that
    arrived on a port other than the direction's peer are not counted as received."""
    index = {name: i for i, name in enumerate(port_names)}
    sums = {d: [0, 0] for d in directions}
    for row in flow_rows:
        pair = (index.get(row.get("Tx Port", "")), index.get(row.get("Rx Port", "")))
        tx_dirs = [d for d in directions if d[0] == pair[0]]
        for d in tx_dirs:
            sums[d][0] += count(row.get("Tx Frames"))
            if d == pair:
                sums[d][1] += count(row.get("Rx Frames"))
    return [DirectionCounters(tx, rx, sums[(tx, rx)][0], sums[(tx, rx)][1]) for tx, rx in directions]


def item_row(rows: list[dict[str, str]], item_name: str) -> dict[str, str] | None:
    return next((r for r in rows if r.get("Traffic Item") == item_name), None)


def port_summary(rows: list[dict[str, str]], port_names: list[str]) -> list[dict[str, Any]]:
    """The Port Statistics counters of our ports, for ``generator_stats``."""
    out = []
    for row in rows:
        if row.get("Port Name") in port_names:
            out.append({"port": row.get("Port Name"), "location": row.get("Stat Name"),
                        "link": row.get("Link State"), "frames_tx": count(row.get("Frames Tx.")),
                        "frames_rx": count(row.get("Valid Frames Rx."))})
    return out
