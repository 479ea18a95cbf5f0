"""The rate of a trial: a tbf qdisc on the generator port's egress.

trafgen hands frames to the kernel as fast as it can (qdisc path, exact frame count); the
token bucket releases them at the trial rate. The socket's send buffer holds back trafgen
when the bucket is empty, so the queue never overflows (``limit`` is far above what a
default send buffer can hold in flight) and nothing is dropped by the shaper.

The bucket depth (``burst``) is a few milliseconds of traffic: deep enough that a late
hrtimer or a descheduled sender does not lose rate (credit beyond the bucket is lost), small
enough that the first burst and catch-ups stay short. At low rates the bucket is also bounded
in time (:data:`MAX_FLOOR_S`): a floor of 16 frames, or of two full-size frames, let a
20 frames/s trial of 10 frames leave in one burst of 65 us, which the trial's validity
check rightly refused (a load sweep stopped at its third step). The bucket always holds one
whole frame, else tbf would drop it. tbf counts bytes of the frame as the kernel sees it
(no FCS), so rate = frames/s x (frame size - 4) x 8.
"""

from __future__ import annotations

from vsbench.interfaces.traffic import FCS_BYTES

#: Queue limit (bytes) far above what trafgen can have in flight with a default sndbuf.
LIMIT_BYTES = 32 << 20
#: The bucket holds at least this many frames, when they fall due within MAX_FLOOR_S.
MIN_BURST_FRAMES = 16
#: Longest stretch of traffic the floor of the bucket may hold.
MAX_FLOOR_S = 0.01


def tbf_rate_bits(rate_fps: float, frame_size_bytes: int) -> int:
    return max(8, int(round(rate_fps * (frame_size_bytes - FCS_BYTES) * 8)))


def tbf_burst_bytes(rate_fps: float, frame_size_bytes: float, burst_s: float,
                    largest_frame_bytes: int | None = None) -> int:
    """``frame_size_bytes`` is the mean of a frame mix; the bucket also holds its largest
    frame whole (``largest_frame_bytes``), else tbf would drop it."""
    wire = frame_size_bytes - FCS_BYTES
    floor_frames = max(1, min(MIN_BURST_FRAMES, int(rate_fps * MAX_FLOOR_S)))
    largest = (largest_frame_bytes or 0) - FCS_BYTES
    return int(max(int(rate_fps * burst_s * wire), floor_frames * wire, largest))


def tbf_argv(iface: str, rate_fps: float, frame_size_bytes: float, burst_s: float,
             largest_frame_bytes: int | None = None) -> list[str]:
    """``tc`` argv that sets (or replaces) the shaper of ``iface`` for ``rate_fps`` frames/s."""
    if rate_fps <= 0:
        raise ValueError("the shaper needs a positive rate")
    return [
        "tc", "qdisc", "replace", "dev", iface, "root", "tbf",
        "rate", f"{tbf_rate_bits(rate_fps, frame_size_bytes)}bit",
        "burst", str(tbf_burst_bytes(rate_fps, frame_size_bytes, burst_s, largest_frame_bytes)),
        "limit", str(LIMIT_BYTES),
    ]


def remove_argv(iface: str) -> list[str]:
    return ["tc", "qdisc", "del", "dev", iface, "root"]
