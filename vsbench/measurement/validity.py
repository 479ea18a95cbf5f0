"""The common validity rules every trial passes before the search sees it.

A generator reports what it sent and what came back; whether that trial may be counted at
all is decided here, once, for every generator (DESIGN.md principle 2). The rules exist
because of real failures in older tools: frames a generator never sent were counted as loss
in the device under test (CSIT-1781, TRex#442), and duplicated or stray frames produced a
negative loss that was silently read as zero loss. A generator plugin is also third-party
code: a result that contradicts itself or the trial that was asked for (negative or
fractional counters, directions that do not add up, another load, duration or frame size,
sending that took far longer or shorter than the trial) is ``inconsistent`` and never
used -- not for loss, not to lower the generator's maximum load.

Pure functions, no I/O.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from vsbench.interfaces.traffic import INVALID_DISTURBED, INVALID_LIMITED, INVALID_UNTRUSTED, TrialResult

#: A trial whose generator sent fewer than this share of the intended frames is invalid.
MIN_TX_SHARE = 0.999

#: A paced trial whose load, over some window of ``PacingStats.window_s`` (10 ms), was
#: further than this share from the nominal load did not offer what it claims (issue 13).
PACING_TOLERANCE = 0.005
#: ... or further than this many frames, whichever is larger: a window of a perfectly
#: regular stream holds the nominal count rounded up or down, and the generator's bins
#: place a frame sent on a bin edge on either side at both ends of the window.
PACING_SLACK_FRAMES = 2.0

GENERATOR_LIMITED = "generator-limited"
RX_EXCEEDS_TX = "rx-exceeds-tx"
GENERATOR_VERDICT = "generator"
PACING = "pacing"
INCONSISTENT = "inconsistent"
DEADLINE = "deadline"
#: Tags of a trial whose counters cannot be trusted at all (not even what was sent).
UNTRUSTED_TAGS = frozenset({RX_EXCEEDS_TX, INCONSISTENT, DEADLINE})
#: Tags of a trial that sent every frame in its time, only not evenly: disturbed, not
#: limited (``TrialResult.invalid_kind``).
DISTURBED_TAGS = frozenset({PACING})
#: A reported sending time under MIN x the trial duration is inconsistent; over MAX x it
#: (+ slack) the generator could not hold the rate (generator-limited).
MIN_TX_DURATION_SHARE = 0.5
MAX_TX_DURATION_SHARE = 2.0
TX_DURATION_SLACK_S = 0.5
#: Relative tolerance of the echoed load and duration.
ECHO_TOLERANCE = 1e-6


@dataclass(frozen=True)
class Asked:
    """What the trial was asked to do, to check the result against."""

    load_fps: float | None = None
    duration_s: float | None = None
    frame_size_bytes: int | None = None
    burst_frames: int | None = None


@dataclass(frozen=True)
class Verdict:
    """Why a trial is invalid (empty ``reasons`` means valid).

    Each reason is a short tag, optionally followed by ``": detail"``, so tools can match
    on the tag: ``generator-limited``, ``rx-exceeds-tx``, ``inconsistent``, ``deadline``,
    ``pacing`` or ``generator: <its own reason>``.
    """

    reasons: tuple[str, ...] = ()

    @property
    def valid(self) -> bool:
        return not self.reasons

    @property
    def tags(self) -> tuple[str, ...]:
        return tuple(r.split(":", 1)[0] for r in self.reasons)

    @property
    def kind(self) -> str | None:
        """What the search does with the trial (:func:`kind_of`); None when valid."""
        return kind_of(self.tags)


def kind_of(tags: tuple[str, ...] | list[str]) -> str | None:
    """The ``TrialResult.invalid_kind`` of a trial invalid for ``tags`` (None: no tags).

    * ``untrusted`` -- any tag that says the counters cannot be trusted;
    * ``disturbed`` -- only pacing tags: every frame went out in the trial's time, the
      load was right over the trial but not in every window (a stall, a burst). The search
      retries the load and never takes it for a generator limit;
    * ``limited`` -- anything else: frames short, sending overran, or the generator's own
      verdict. The search retries it and then lowers its max load.
    """
    found = set(tags)
    if not found:
        return None
    if found & UNTRUSTED_TAGS:
        return INVALID_UNTRUSTED
    if found <= DISTURBED_TAGS:
        return INVALID_DISTURBED
    return INVALID_LIMITED


def inconsistencies(result: TrialResult, asked: Asked | None = None) -> list[str]:
    """What makes ``result`` contradict itself or ``asked`` (empty when nothing does)."""
    found: list[str] = []
    counters = [("tx_frames", result.tx_frames), ("rx_frames", result.rx_frames)]
    for d in result.directions:
        counters += [(f"direction {d.tx_port}->{d.rx_port} tx_frames", d.tx_frames),
                     (f"direction {d.tx_port}->{d.rx_port} rx_frames", d.rx_frames)]
    for name, value in counters:
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            found.append(f"{name} is {value!r}, not a whole number of frames")
        elif value < 0:
            found.append(f"{name} is negative ({value})")
    if found:
        return found
    if result.directions:
        tx_sum = sum(int(d.tx_frames) for d in result.directions)
        rx_sum = sum(int(d.rx_frames) for d in result.directions)
        if (tx_sum, rx_sum) != (result.tx_frames, result.rx_frames):
            found.append(f"directions add up to {tx_sum} sent / {rx_sum} received, "
                         f"the totals say {result.tx_frames} / {result.rx_frames}")
    for name in ("intended_load_fps", "intended_duration_s", "tx_duration_s", "effective_duration_s"):
        value = getattr(result, name)
        if value is not None and (not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0):
            found.append(f"{name} is {value!r}")
    if found:
        return found
    if asked is not None:
        if asked.frame_size_bytes is not None and result.frame_size_bytes != asked.frame_size_bytes:
            found.append(f"frame size {result.frame_size_bytes} B, asked {asked.frame_size_bytes} B")
        if asked.burst_frames is None:
            if asked.load_fps is not None and not _close(result.intended_load_fps, asked.load_fps):
                found.append(f"reports a load of {result.intended_load_fps:g} fps, asked {asked.load_fps:g} fps")
            if asked.duration_s is not None and not _close(result.intended_duration_s, asked.duration_s):
                found.append(f"reports a duration of {result.intended_duration_s:g} s, asked {asked.duration_s:g} s")
        elif result.burst_frames is not None and result.burst_frames != asked.burst_frames:
            found.append(f"reports a burst of {result.burst_frames} frames, asked {asked.burst_frames}")
    duration = result.intended_duration_s
    if (result.tx_duration_s is not None and result.burst_frames is None and duration > 0
            and result.tx_frames > 0 and result.tx_duration_s < MIN_TX_DURATION_SHARE * duration):
        # all those frames in a fraction of the trial: the counters describe another trial
        found.append(f"sent for {result.tx_duration_s:g} s in a {duration:g} s trial")
    return found


def sent_whole(result: TrialResult) -> bool:
    """True when the generator sent (nearly) every frame the trial intended: at least
    :data:`MIN_TX_SHARE` of them, less one frame per direction -- a generator sends whole
    frames split over its directions, so that much short is rounding, not falling behind
    (a 68 fps, 0.5 s load-sweep step intends 34.06 frames; two directions send 17 each)."""
    rounding = max(1, len(result.directions))
    return result.tx_frames >= MIN_TX_SHARE * result.intended_frames - rounding


def _sent_late(result: TrialResult) -> str | None:
    """Sending that overran the trial by far: the generator could not hold the rate (its
    counters are real, they only cover a longer time)."""
    duration = result.intended_duration_s
    if result.tx_duration_s is None or result.burst_frames is not None or duration <= 0:
        return None
    if result.tx_duration_s > MAX_TX_DURATION_SHARE * duration + TX_DURATION_SLACK_S:
        return f"sending took {result.tx_duration_s:g} s in a {duration:g} s trial"
    return None


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= ECHO_TOLERANCE * max(abs(a), abs(b), 1.0)


def reason_tags(reason: str | None) -> tuple[str, ...]:
    """The tags of an ``invalid_reason`` (reasons joined by ``"; "``)."""
    if not reason:
        return ()
    return tuple(part.strip().split(":", 1)[0] for part in reason.split(";") if part.strip())


def untrusted(reason: str | None) -> bool:
    """True when an ``invalid_reason`` says the counters themselves cannot be trusted
    (inconsistent, rx above tx, a missed deadline), as opposed to a generator that could
    not send the load (whose counters say what it could send)."""
    return bool(set(reason_tags(reason)) & UNTRUSTED_TAGS)


def invalid_kind(result: TrialResult) -> str | None:
    """``result.invalid_kind``; for an invalid trial no rule judged (a simulator's, a run
    recorded before the field existed) the kind its reason's tags give, ``limited`` when
    they say nothing. None for a valid trial."""
    if result.valid:
        return None
    if result.invalid_kind is not None:
        return result.invalid_kind
    return kind_of(reason_tags(result.invalid_reason)) or INVALID_LIMITED


def judge(result: TrialResult, asked: Asked | None = None) -> Verdict:
    """Apply the common rules to ``result`` and keep the generator's own verdict."""
    reasons: list[str] = []
    problems = inconsistencies(result, asked)
    if problems:
        # counters that contradict themselves say nothing about sending or loss
        if not result.valid:
            reasons.append(f"{GENERATOR_VERDICT}: {result.invalid_reason or 'no reason given'}")
        reasons.append(f"{INCONSISTENT}: " + "; ".join(problems))
        return Verdict(tuple(reasons))
    if not result.valid:
        reasons.append(f"{GENERATOR_VERDICT}: {result.invalid_reason or 'no reason given'}")
    intended = result.intended_frames
    if intended > 0 and not sent_whole(result):
        share = result.tx_frames / intended
        reasons.append(
            f"{GENERATOR_LIMITED}: sent {result.tx_frames} of {intended:.0f} intended frames "
            f"({share:.2%})"
        )
    late = _sent_late(result)
    if late and not any(r.startswith(GENERATOR_LIMITED) for r in reasons):
        reasons.append(f"{GENERATOR_LIMITED}: {late}")
    pacing_problem = pacing_reason(result)
    if pacing_problem:
        reasons.append(f"{PACING}: {pacing_problem}")
    if result.rx_frames > result.tx_frames:
        reasons.append(
            f"{RX_EXCEEDS_TX}: received {result.rx_frames} > sent {result.tx_frames}"
        )
    return Verdict(tuple(reasons))


def pacing_allowance_frames(nominal_frames_per_window: float) -> float:
    """How far a window may be from the nominal count before the trial is invalid."""
    return max(PACING_TOLERANCE * nominal_frames_per_window, PACING_SLACK_FRAMES)


def pacing_reason(result: TrialResult) -> str | None:
    """Why the generator's own pacing figures disqualify ``result``, or None."""
    p = result.pacing
    if p is None or p.windows <= 0 or p.nominal_frames_per_window <= 0:
        return None
    allowed = pacing_allowance_frames(p.nominal_frames_per_window)
    if p.max_window_deviation_frames <= allowed:
        return None
    late = f", {p.max_late_s * 1e3:.1f} ms behind schedule at worst" if p.max_late_s else ""
    return (f"a {p.window_s * 1e3:g} ms window was {p.max_window_deviation_frames:.0f} frames off its nominal "
            f"{p.nominal_frames_per_window:.0f} ({p.max_window_deviation_ratio:.2%} > "
            f"{allowed / p.nominal_frames_per_window:.2%}){late}")


def apply(result: TrialResult, asked: Asked | None = None) -> tuple[TrialResult, Verdict]:
    """``result`` with ``valid``/``invalid_reason`` set from :func:`judge`, and the verdict.

    The counters are never changed: an invalid trial keeps what was measured, so it stays
    visible (and recomputable) in every output.
    """
    verdict = judge(result, asked)
    if verdict.valid:
        return result, verdict
    checked = dataclasses.replace(result, valid=False, invalid_reason="; ".join(verdict.reasons),
                                  invalid_kind=verdict.kind)
    return checked, verdict
