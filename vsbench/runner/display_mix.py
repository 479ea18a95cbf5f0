"""Terminal lines for a frame mix and a fixed-rate trial, beside each test's table.

Why apart from :mod:`vsbench.runner.display`: the table keeps one row per frame size; a mix
adds one line per reported point with its share of each size, and a fixed rate (``--rate``)
one line with what was offered, sent and received -- the figures a user of ``--rate`` asked
for, not only the received rate the table's throughput column shows.
"""

from __future__ import annotations

from vsbench.results.model import FrameSizeResult, TestResult


def frame_label(fs: FrameSizeResult) -> str:
    """The table's frame-size cell: ``imix (354)`` for a mix, else the size."""
    if fs.frame_mix:
        return f"{fs.frame_mix['name']} ({fs.frame_size_bytes})"
    return str(fs.frame_size_bytes)


def _rate(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def mix_lines(test: TestResult) -> list[str]:
    """Per mix and point: its mean size and each size's share, fps and L1 Mbps there."""
    out = []
    for fs in test.frame_sizes:
        mix = fs.frame_mix
        if not mix:
            continue
        weights = ":".join(str(w) for w in mix["weights"])
        sizes = "/".join(str(s) for s in mix["sizes_bytes"])
        out.append(f"{mix['name']}: {weights} of {sizes} B, mean {mix['mean_frame_size_bytes']:.1f} B "
                   f"(filed under {fs.frame_size_bytes} B)")
        for p in fs.points:
            if not p.per_size:
                continue
            parts = [f"{r['frame_size_bytes']} B {r['frame_share'] * 100:.1f}% {_rate(r['throughput_fps'])} fps "
                     f"{_rate(r['throughput_l1_mbps'], 1)} Mbps L1"
                     + (f" sent {r['tx_frames']:,}" if r.get("tx_frames") is not None else "")
                     + (f" received {r['rx_frames']:,}" if r.get("rx_frames") is not None else "")
                     for r in p.per_size]
            out.append(f"  {p.name} {_rate(p.throughput_fps)} fps: " + "; ".join(parts))
    return out


def fixed_rate_lines(test: TestResult) -> list[str]:
    """A continuous (fixed-rate) test: per frame size offered, sent and received fps, loss."""
    if test.traffic_type != "continuous":
        return []
    out = []
    for fs in test.frame_sizes:
        for p in fs.points:
            if p.name != "continuous":
                continue
            loss = "-" if p.loss_ratio is None else f"{p.loss_ratio * 100:.4g}%"
            lost = ""
            if p.tx_fps is not None and p.rx_fps is not None:
                lost = f" ({max(0.0, p.tx_fps - p.rx_fps):,.0f} fps lost)"
            where = f"{fs.frame_mix['name']} ({fs.frame_size_bytes} B)" if fs.frame_mix else f"{fs.frame_size_bytes} B"
            out.append(f"fixed rate {where}: offered {_rate(p.offered_load_fps)} fps, sent "
                       f"{_rate(p.tx_fps)} fps, received {_rate(p.rx_fps)} fps, loss {loss}{lost}"
                       + ("" if p.valid is not False else " [invalid trial]"))
    return out
