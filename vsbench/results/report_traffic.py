"""report.html sections of the traffic types beside throughput: back2back, burst, load_sweep.

Tables read results.json (``back2back``, ``bursts``, ``sweep`` of each frame size); the
load sweep also gets a figure (offered vs received rate, loss and -- when its steps carried
latency probes -- latency min/avg/max, per step). Nothing is computed here that
results.json does not hold.
"""

from __future__ import annotations

from typing import Any, Mapping

from matplotlib.figure import Figure

from vsbench.results import report_page as h
from vsbench.results import report_plots
from vsbench.results import report_rfc2889
from vsbench.results.page_model import Details, Heading, Paragraph, compact
from vsbench.results.report_data import finite

#: Burst rows shown per plan; the rest are in results.json.
MAX_BURST_ROWS = 60


def sections(test: Mapping[str, Any]) -> list[Any]:
    """Every section this test's frame sizes call for, as blocks ([] for other traffic types)."""
    frames = test.get("frame_sizes") or []
    parts: list[Any] = []
    if any(fs.get("back2back") for fs in frames):
        parts.append(back2back_table(test))
    if any(fs.get("bursts") for fs in frames):
        parts.append(bursts_table(test))
    if any(fs.get("sweep") for fs in frames):
        parts.append(sweep_figure_html(test))
        parts.append(sweep_table(test))
    parts.extend(report_rfc2889.sections(test))  # rfc2889_forwarding, _learning, _caching
    return compact(parts)


def _us(seconds: Any) -> str:
    value = finite(seconds)
    return h.DASH if value is None else f"{value * 1e6:,.1f}"


def _yes_no(value: Any) -> str:
    return h.DASH if value is None else ("yes" if value else "no")


def back2back_table(test: Mapping[str, Any]) -> list[Any]:
    rows = []
    for fs in test.get("frame_sizes") or []:
        b = fs.get("back2back")
        if not b:
            continue
        rows.append([
            fs.get("frame_size_bytes"), h.fmt_fixed(b.get("frames_avg"), 1), h.fmt_fixed(b.get("frames_min")),
            h.fmt_fixed(b.get("frames_max")), h.fmt_fixed(b.get("frames_stdev"), 1),
            len(b.get("repetitions") or []), b.get("trials_per_length"), _yes_no(b.get("bounded")),
            h.fmt_fps(b.get("burst_rate_fps")), h.fmt_fps(b.get("nominal_line_rate_fps")),
            _yes_no(b.get("bursts_at_line_rate")),
            f"{h.fmt_fps(b.get('max_rate_fps'))} ({str(b.get('max_rate_source', '')).replace('_', ' ')})",
            f"{h.fmt_fps(b.get('throughput_fps'))}" + (f" ({b['throughput_source']})" if b.get("throughput_source") else ""),
            _us(b.get("implied_buffer_time_s")), _us(b.get("corrected_buffer_time_s")),
        ])
    headers = [("Frame size", "B"), ("Back-to-back", "avg", "frames"), ("Back-to-back", "min", "frames"),
               ("Back-to-back", "max", "frames"), ("Back-to-back", "stdev", "frames"), ("Searches", "N"),
               ("Bursts", "per length"), ("Bounded", "loss seen"), ("Burst rate", "achieved", "fps"),
               ("Line rate", "nominal", "fps"), ("At line rate", ""), ("Max rate used", "fps"),
               ("Throughput", "fps"), ("Buffer time", "implied", "µs"), ("Buffer time", "corrected", "µs")]
    return [Heading(3, "Back-to-back frames (RFC 2544 §26.4, RFC 9004)"),
            h.table(headers, rows, numeric_to=len(headers)),
            Paragraph.of("Back-to-back frames: the longest burst at the maximum rate with no frame lost, "
                         "averaged over N complete binary searches. Implied buffer time = average / max rate; "
                         "corrected buffer time = (average − average / max rate × throughput) / max rate "
                         "(RFC 9004 §5). Unbounded searches (no loss even at the longest burst) give a lower "
                         "bound and no buffer time.", "muted")]


def bursts_table(test: Mapping[str, Any]) -> list[Any]:
    rows = []
    for fs in test.get("frame_sizes") or []:
        for b in fs.get("bursts") or []:
            lat = b.get("latency") if isinstance(b.get("latency"), dict) else {}
            rows.append([
                fs.get("frame_size_bytes"), f"#{b.get('trial_index')}", h.fmt_fixed(b.get("burst_frames")),
                h.fmt_fixed(b.get("tx_frames")), h.fmt_fixed(b.get("rx_frames")), h.fmt_fixed(b.get("lost_frames")),
                h.fmt_ratio_percent(b.get("loss_ratio")), h.fmt_fps(b.get("burst_rate_fps")),
                _us(b.get("send_time_s")), h.fmt_fixed(lat.get("min_ns")), h.fmt_fixed(lat.get("avg_ns")),
                h.fmt_fixed(lat.get("max_ns")), "valid" if b.get("valid") else "invalid",
            ])
    more = None
    if len(rows) > MAX_BURST_ROWS:
        more = Paragraph.of(f"… and {len(rows) - MAX_BURST_ROWS} more bursts in results.json.", "muted")
        rows = rows[:MAX_BURST_ROWS]
    headers = [("Frame size", "B"), ("Trial", "#"), ("Burst", "asked", "frames"), ("Burst", "sent", "frames"),
               ("Burst", "received", "frames"), ("Lost", "frames"), ("Loss", "% of sent"),
               ("Burst rate", "fps"), ("Send time", "µs"), ("Latency", "min", "ns"), ("Latency", "avg", "ns"),
               ("Latency", "max", "ns"), ("Validity", "")]
    return compact([Heading(3, "Bursts"), h.table(headers, rows, numeric_to=len(headers) - 1), more])


def sweep_table(test: Mapping[str, Any]) -> Details:
    rows = []
    for fs in test.get("frame_sizes") or []:
        for s in fs.get("sweep") or []:
            lat = s.get("latency") if isinstance(s.get("latency"), dict) else {}
            rows.append([
                fs.get("frame_size_bytes"), f"{s.get('percent'):g}", h.fmt_fps(s.get("offered_load_fps")),
                h.fmt_fps(s.get("tx_fps")), h.fmt_fps(s.get("rx_fps")), h.fmt_ratio_percent(s.get("loss_ratio")),
                h.fmt_fixed(s.get("lost_frames")), h.fmt_fixed(lat.get("min_ns")), h.fmt_fixed(lat.get("avg_ns")),
                h.fmt_fixed(lat.get("max_ns")), f"#{s.get('trial_index')}", "valid" if s.get("valid") else "invalid",
            ])
    headers = [("Frame size", "B"), ("Step", "% of max load"), ("Load", "offered", "fps"), ("Load", "sent", "fps"),
               ("Load", "received", "fps"), ("Loss", "% of sent"), ("Lost", "frames"), ("Latency", "min", "ns"),
               ("Latency", "avg", "ns"), ("Latency", "max", "ns"), ("Trial", "#"), ("Validity", "")]
    return Details("Load sweep: every step", blocks=[h.table(headers, rows, numeric_to=len(headers) - 1)])


def _step_latency_us(step: Mapping[str, Any], key: str) -> float | None:
    lat = step.get("latency") if isinstance(step.get("latency"), dict) else {}
    value = finite(lat.get(key))
    return None if value is None else value / 1000.0


def sweep_has_latency(frames: list[Mapping[str, Any]]) -> bool:
    return any(_step_latency_us(s, "avg_ns") is not None for fs in frames for s in fs.get("sweep") or ())


def sweep_figure(test: Mapping[str, Any]) -> str | None:
    """Received vs offered rate (log axes), loss and, when the steps carried probes,
    latency min/avg/max per step (the vRouter report's figures 6-8), one line per frame size."""
    frames = [fs for fs in test.get("frame_sizes") or [] if fs.get("sweep")]
    if not frames:
        return None
    latency = sweep_has_latency(frames)
    fig = Figure(figsize=(13.5 if latency else 9.0, 3.4))
    with report_plots.matplotlib.rc_context(report_plots.RC):
        axes = fig.subplots(1, 3 if latency else 2)
        ax_rate, ax_loss = axes[0], axes[1]
        for i, fs in enumerate(frames):
            color = report_plots.PALETTE[i % len(report_plots.PALETTE)]
            steps = [s for s in fs["sweep"] if finite(s.get("offered_load_fps"))]
            offered = [s["offered_load_fps"] for s in steps]
            ax_rate.plot(offered, [s.get("rx_fps") or 0.0 for s in steps], marker=".", color=color,
                         label=f"{fs.get('frame_size_bytes')} B received")
            ax_loss.plot(offered, [100.0 * (s.get("loss_ratio") or 0.0) for s in steps], marker=".", color=color,
                         label=f"{fs.get('frame_size_bytes')} B")
            bad = [s for s in steps if not s.get("valid")]
            if bad:
                ax_rate.scatter([s["offered_load_fps"] for s in bad], [s.get("rx_fps") or 0.0 for s in bad],
                                marker="X", color="#000000", zorder=3, label="invalid step")
            if latency:
                timed = [s for s in steps if _step_latency_us(s, "avg_ns") is not None]
                x = [s["offered_load_fps"] for s in timed]
                axes[2].plot(x, [_step_latency_us(s, "avg_ns") for s in timed], marker=".", color=color,
                             label=f"{fs.get('frame_size_bytes')} B avg")
                axes[2].fill_between(x, [_step_latency_us(s, "min_ns") or 0.0 for s in timed],
                                     [_step_latency_us(s, "max_ns") or 0.0 for s in timed], color=color, alpha=0.15,
                                     label=f"{fs.get('frame_size_bytes')} B min..max")
        lows = [s["offered_load_fps"] for fs in frames for s in fs["sweep"] if finite(s.get("offered_load_fps"))]
        top = max(lows) if lows else 1.0
        ax_rate.plot([min(lows), top], [min(lows), top], linestyle="--", color="#999999", label="received = offered")
        for ax in axes:
            ax.set_xscale("log")
            ax.set_xlabel("offered load (frames/s, aggregate)")
        ax_rate.set_yscale("log")
        ax_rate.set_ylabel("received (frames/s)")
        ax_rate.set_title("Forwarded vs offered")
        ax_loss.set_ylabel("loss (% of sent)")
        ax_loss.set_title("Loss per step")
        ax_rate.legend(fontsize=7)
        if latency:
            axes[2].set_yscale("log")
            axes[2].set_ylabel("one-way latency (µs)")
            axes[2].set_title("Latency per step")
            axes[2].legend(fontsize=7)
        uri = report_plots._data_uri(fig)
    return uri


def sweep_figure_html(test: Mapping[str, Any]):
    frames = [fs for fs in test.get("frame_sizes") or [] if fs.get("sweep")]
    latency = (" and the one-way latency of the probes sent during each step's trial (average; the band is min to "
               "max)") if sweep_has_latency(frames) else ""
    return h.figure(sweep_figure(test),
                    "Load sweep (results.json): the received rate against the offered load of every step (log axes; "
                    f"the dashed line is received = offered), the loss of each step{latency}.")
