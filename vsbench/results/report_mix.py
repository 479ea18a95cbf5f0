"""report.html section of a frame mix (IMIX): each reported point per size.

The throughput tables already show a mix's aggregate figures (its row is filed under the
mix's mean size, named by the mix); this section shows what results.json holds per size
(``per_size`` of each point): the size's share of the frames, its fps and bit/s at the
point, and the frames of that size sent in the point's trial (received, where the
generator counted them). Nothing is computed here that results.json does not hold.
"""

from __future__ import annotations

from typing import Any, Mapping

from vsbench.results import report_page as h
from vsbench.results.page_model import Heading, Paragraph


def section(test: Mapping[str, Any]) -> list[Any]:
    """The per-size table of every mix of ``test`` ([] when it has none)."""
    rows = []
    for fs in test.get("frame_sizes") or []:
        mix = fs.get("frame_mix")
        if not mix:
            continue
        label = f"{mix.get('name')} (mean {h.fmt_fixed(mix.get('mean_frame_size_bytes'), 1)} B)"
        for point in fs.get("points") or []:
            for r in point.get("per_size") or []:
                rows.append([label, point.get("name"), r.get("frame_size_bytes"), r.get("weight"),
                             h.fmt_fixed((r.get("frame_share") or 0) * 100, 1), h.fmt_fps(r.get("throughput_fps")),
                             h.fmt_fixed(r.get("throughput_l1_mbps"), 1), h.fmt_fixed(r.get("throughput_l2_mbps"), 1),
                             h.fmt_fixed(r.get("tx_frames")), h.fmt_fixed(r.get("rx_frames"))])
    if not rows:
        return []
    headers = [("Frame mix", ""), ("Point", ""), ("Size", "B"), ("Weight", ""), ("Share", "% of frames"),
               ("Throughput", "fps"), ("L1", "Mbps"), ("L2", "Mbps"), ("Sent", "frames, trial"),
               ("Received", "frames, by size")]
    return [Heading(3, "Frame mix per size"), h.table(headers, rows, numeric_from=2, numeric_to=len(headers)),
            Paragraph.of("A mix is one load: its frames cycle through the sizes in the weighted proportion, "
                         "interleaved, and the search ran on the aggregate frame rate (the throughput tables, "
                         "whose bit rates and line rate are at the mix's mean size). Per size: its share of "
                         "that rate, and the frames of that size the point's trial sent (counted off the "
                         "cycle); received per size where the generator counts by size, else –.", "muted")]
