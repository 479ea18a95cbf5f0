"""The statistics views of the fake, as column captions and rows of strings.

Captions follow IxNetwork's: "Port Statistics" ("Frames Tx.", "Valid Frames Rx.", ...),
"Traffic Item Statistics" and "Flow Statistics" ("Tx Frames", "Rx Frames", "Loss %",
"Store-Forward Avg Latency (ns)", ...). Every cell is a string, as on the real server.
Latency columns exist only while latency measurement is enabled; their unit is part of the
caption and is ``ns`` unless the fake is told to report microseconds (a client must read the
unit from the caption, never assume it).
"""

from __future__ import annotations

from dataclasses import dataclass

from traffic_model import StreamCounters

LATENCY_PREFIX = {"storeForward": "Store-Forward", "cutThrough": "Cut-Through",
                  "forwardingDelay": "Forwarding Delay", "mef": "MEF Frame Delay"}
PORT_VIEW = "Port Statistics"
ITEM_VIEW = "Traffic Item Statistics"
FLOW_VIEW = "Flow Statistics"


@dataclass(frozen=True)
class PortRow:
    stat_name: str  # chassis/Card01/Port01
    port_name: str  # vport name
    line_speed: str
    link_state: str
    tx_frames: int
    rx_frames: int
    tx_bytes: int
    rx_bytes: int
    tx_rate_fps: float
    rx_rate_fps: float


@dataclass(frozen=True)
class FlowRow:
    item_name: str
    tx_port: str
    rx_port: str
    frame_size_bytes: int
    counters: StreamCounters


def port_view(rows: list[PortRow]) -> tuple[list[str], list[list[str]]]:
    captions = ["Stat Name", "Port Name", "Line Speed", "Link State", "Frames Tx.",
                "Valid Frames Rx.", "Frames Tx. Rate", "Valid Frames Rx. Rate", "Bytes Tx.",
                "Bytes Rx.", "CRC Errors"]
    out = [[r.stat_name, r.port_name, r.line_speed, r.link_state, str(r.tx_frames),
            str(r.rx_frames), _rate(r.tx_rate_fps), _rate(r.rx_rate_fps), str(r.tx_bytes),
            str(r.rx_bytes), "0"] for r in rows]
    return captions, out


def _latency_captions(mode: str, unit: str) -> list[str]:
    prefix = LATENCY_PREFIX[mode]
    return [f"{prefix} Avg Latency ({unit})", f"{prefix} Min Latency ({unit})",
            f"{prefix} Max Latency ({unit})"]


def _latency_cells(latency: tuple[float, float, float] | None, unit: str) -> list[str]:
    if latency is None:
        return ["0", "0", "0"] if unit == "ns" else ["0.000", "0.000", "0.000"]
    lo, avg, hi = latency
    if unit == "ns":
        return [str(int(round(avg))), str(int(round(lo))), str(int(round(hi)))]
    return [f"{avg / 1000:.3f}", f"{lo / 1000:.3f}", f"{hi / 1000:.3f}"]


def _counter_cells(tx: int, rx: int, tx_rate: float, rx_rate: float, rx_bytes: int) -> list[str]:
    loss = 100.0 * (tx - rx) / tx if tx else 0.0
    return [str(tx), str(rx), str(tx - rx), f"{loss:.3f}", _rate(tx_rate), _rate(rx_rate),
            str(rx_bytes)]


def _stamp(seconds: float | None) -> str:
    if seconds is None:
        return ""
    ms = int(round(seconds * 1000))
    return f"{ms // 3_600_000:02d}:{ms // 60_000 % 60:02d}:{ms // 1000 % 60:02d}.{ms % 1000:03d}"


def _rate(value: float) -> str:
    return f"{value:.3f}"


COUNTER_CAPTIONS = ["Tx Frames", "Rx Frames", "Frames Delta", "Loss %", "Tx Frame Rate",
                    "Rx Frame Rate", "Rx Bytes"]


def flow_view(rows: list[FlowRow], latency_mode: str | None,
              unit: str) -> tuple[list[str], list[list[str]]]:
    captions = ["Tx Port", "Rx Port", "Traffic Item", "Source/Dest Port Pair", *COUNTER_CAPTIONS]
    if latency_mode:
        captions += _latency_captions(latency_mode, unit)
    captions += ["First TimeStamp", "Last TimeStamp"]
    out = []
    for r in rows:
        c = r.counters
        cells = [r.tx_port, r.rx_port, r.item_name, f"{r.tx_port} -> {r.rx_port}",
                 *_counter_cells(c.tx_frames, c.rx_frames, c.tx_rate_fps, c.rx_rate_fps,
                                 c.rx_frames * r.frame_size_bytes)]
        if latency_mode:
            cells += _latency_cells(c.latency_ns, unit)
        cells += [_stamp(c.first_rx_s), _stamp(c.last_rx_s)]
        out.append(cells)
    return captions, out


def item_view(rows: list[FlowRow], latency_mode: str | None,
              unit: str) -> tuple[list[str], list[list[str]]]:
    captions = ["Traffic Item", *COUNTER_CAPTIONS]
    if latency_mode:
        captions += _latency_captions(latency_mode, unit)
    captions += ["First TimeStamp", "Last TimeStamp"]
    by_item: dict[str, list[FlowRow]] = {}
    for r in rows:
        by_item.setdefault(r.item_name, []).append(r)
    out = []
    for name, group in by_item.items():
        tx = sum(r.counters.tx_frames for r in group)
        rx = sum(r.counters.rx_frames for r in group)
        cells = [name, *_counter_cells(tx, rx, sum(r.counters.tx_rate_fps for r in group),
                                       sum(r.counters.rx_rate_fps for r in group),
                                       sum(r.counters.rx_frames * r.frame_size_bytes for r in group))]
        if latency_mode:
            measured = [(r.counters.latency_ns, r.counters.rx_frames) for r in group
                        if r.counters.latency_ns is not None]
            if measured:
                weight = sum(n for _, n in measured)
                avg = sum(lat[1] * n for lat, n in measured) / weight
                cells += _latency_cells((min(lat[0] for lat, _ in measured), avg,
                                         max(lat[2] for lat, _ in measured)), unit)
            else:
                cells += _latency_cells(None, unit)
        firsts = [r.counters.first_rx_s for r in group if r.counters.first_rx_s is not None]
        lasts = [r.counters.last_rx_s for r in group if r.counters.last_rx_s is not None]
        cells += [_stamp(min(firsts) if firsts else None), _stamp(max(lasts) if lasts else None)]
        out.append(cells)
    return captions, out


def to_csv(captions: list[str], rows: list[list[str]]) -> bytes:
    """The CSV a snapshot writes with ``csvStringQuotes`` off: plain comma-separated cells."""
    lines = [",".join(captions)] + [",".join(row) for row in rows]
    return ("\r\n".join(lines) + "\r\n").encode("ascii")
