"""report.html section of the RFC 2889 traffic types: one table of the figures per frame
size (forwarding rate and maximum forwarding rate in frames/s, learning rate in
addresses/s, caching capacity in addresses, flooded frames) and the iterations or steps
behind them. Reads results.json's ``rfc2889`` of each frame size; computes nothing."""

from __future__ import annotations

from typing import Any, Mapping

from vsbench.results import report_page as h
from vsbench.results.page_model import Details, Heading, Paragraph, compact


def _bounded(r: Mapping[str, Any]) -> str:
    return h.DASH if r.get("bounded") is None else ("yes" if r["bounded"] else "no (lower bound)")


def sections(test: Mapping[str, Any]) -> list[Any]:
    """The RFC 2889 blocks of a test ([] when no frame size has an ``rfc2889`` result)."""
    found = [(fs, fs["rfc2889"]) for fs in test.get("frame_sizes") or [] if fs.get("rfc2889")]
    if not found:
        return []
    kind = found[0][1].get("test")
    if kind == "forwarding":
        rows = [[fs.get("frame_size_bytes"), h.fmt_fps(r.get("forwarding_rate_fps")),
                 h.fmt_fps(r.get("max_offered_load_fps")), h.fmt_fps(r.get("max_forwarding_rate_fps")),
                 h.fmt_fps(r.get("max_forwarding_rate_offered_fps")), len(r.get("steps") or [])] for fs, r in found]
        headers = [("Frame size", "B"), ("Forwarding rate at MOL", "FRMOL", "fps"), ("Max offered load", "fps"),
                   ("Max forwarding rate", "MFR", "fps"), ("MFR offered at", "fps"), ("Steps", "N")]
        steps = [[fs.get("frame_size_bytes"), h.fmt_fps(s.get("offered_load_fps")), h.fmt_fps(s.get("forwarding_rate_fps")),
                  h.fmt_fixed(s.get("tx_frames")), h.fmt_fixed(s.get("rx_frames")), f"#{s.get('trial_index')}",
                  "valid" if s.get("valid") else "invalid"] for fs, r in found for s in r.get("steps") or []]
        detail_headers = [("Frame size", "B"), ("Offered", "fps"), ("Forwarded", "fps"), ("Sent", "frames"),
                          ("Received", "frames"), ("Trial", "#"), ("Validity", "")]
        text = ("RFC 2889 §5.1: the forwarding rate (frames/s received on every output port) at the maximum "
                "offered load, and the maximum forwarding rate over every offered load tried.")
        title = "Forwarding rate (RFC 2889 §5.1)"
    else:
        caching = kind == "caching"
        rows = [[fs.get("frame_size_bytes"),
                 h.fmt_fixed(r.get("caching_capacity_addresses")) if caching else h.fmt_fps(r.get("learning_rate_addresses_per_s")),
                 h.fmt_fps(r.get("learning_rate_fps")) if caching else h.fmt_fixed(r.get("addresses")),
                 _bounded(r),
                 h.fmt_fixed(r.get("first_fail_addresses")) if caching else h.fmt_fps(r.get("first_fail_rate_fps")),
                 h.fmt_fixed(r.get("flooded_frames")), len(r.get("iterations") or []),
                 h.fmt_fixed(r.get("invalid_iterations"))] for fs, r in found]
        headers = [("Frame size", "B"),
                   ("Caching capacity", "addresses") if caching else ("Learning rate", "addresses/s"),
                   ("Learning frames", "fps") if caching else ("Addresses", "N"), ("Bounded", ""),
                   ("First failing", "addresses" if caching else "fps"), ("Flooded there", "frames"),
                   ("Iterations", "N"), ("Invalid", "N")]
        steps = [[fs.get("frame_size_bytes"), h.fmt_fixed(i.get("addresses")), h.fmt_fps(i.get("learning_rate_fps")),
                  h.fmt_fixed(i.get("test_tx_frames")), h.fmt_fixed(i.get("test_rx_frames")),
                  h.fmt_fixed(i.get("flooded_frames")), "pass" if i.get("passed") else ("fail" if i.get("valid") else "invalid"),
                  f"#{i.get('learning_trial')} / #{i.get('test_trial')}"] for fs, r in found for i in r.get("iterations") or []]
        detail_headers = [("Frame size", "B"), ("Addresses", "N"), ("Learning rate", "fps"), ("Test frames", "sent"),
                          ("Test frames", "at learning port"), ("Flooded", "at monitor port"), ("Verdict", ""),
                          ("Trials", "learning / test")]
        text = ("RFC 2889 §5.7 (caching) / §5.8 (learning): each iteration empties the address table, sends one "
                "learning frame per address from the learning port, then a test frame to each address from the "
                "test port; it passes when every test frame reached the learning port and none was flooded to "
                "the monitor port. Binary search over the address count (caching) or the learning rate (learning).")
        title = ("Address caching capacity (RFC 2889 §5.7)" if caching else "Address learning rate (RFC 2889 §5.8)")
    return compact([Heading(3, title), h.table(headers, rows, numeric_to=len(headers)), Paragraph.of(text, "muted"),
                    Details("RFC 2889: every step" if kind == "forwarding" else "RFC 2889: every iteration",
                            blocks=[h.table(detail_headers, steps, numeric_to=len(detail_headers) - 1)])])
