"""The common validity rules every trial passes before the search sees it.

A generator reports what it sent and what came back; whether that trial may be counted at
all is decided here, once, for every generator (DESIGN.md principle 2). The rules exist
because of real failures in older tools: frames a generator never sent were counted as loss
in the device under test (CSIT-1781, TRex#442), and duplicated or stray frames produced a
negative loss that was silently read as zero loss.

Pure functions, no I/O.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from vsbench.interfaces.traffic import TrialResult

#: A trial whose generator sent fewer than this share of the intended frames is invalid.
MIN_TX_SHARE = 0.999

GENERATOR_LIMITED = "generator-limited"
RX_EXCEEDS_TX = "rx-exceeds-tx"
GENERATOR_VERDICT = "generator"


@dataclass(frozen=True)
class Verdict:
    """Why a trial is invalid (empty ``reasons`` means valid).

    Each reason is a short tag, optionally followed by ``": detail"``, so tools can match
    on the tag: ``generator-limited``, ``rx-exceeds-tx`` or ``generator: <its own reason>``.
    """

    reasons: tuple[str, ...] = ()

    @property
    def valid(self) -> bool:
        return not self.reasons

    @property
    def tags(self) -> tuple[str, ...]:
        return tuple(r.split(":", 1)[0] for r in self.reasons)


def judge(result: TrialResult) -> Verdict:
    """Apply the common rules to ``result`` and keep the generator's own verdict."""
    reasons: list[str] = []
    if not result.valid:
        reasons.append(f"{GENERATOR_VERDICT}: {result.invalid_reason or 'no reason given'}")
    intended = result.intended_frames
    if intended > 0 and result.tx_frames < MIN_TX_SHARE * intended:
        share = result.tx_frames / intended
        reasons.append(
            f"{GENERATOR_LIMITED}: sent {result.tx_frames} of {intended:.0f} intended frames "
            f"({share:.2%})"
        )
    if result.rx_frames > result.tx_frames:
        reasons.append(
            f"{RX_EXCEEDS_TX}: received {result.rx_frames} > sent {result.tx_frames}"
        )
    return Verdict(tuple(reasons))


def apply(result: TrialResult) -> tuple[TrialResult, Verdict]:
    """``result`` with ``valid``/``invalid_reason`` set from :func:`judge`, and the verdict.

    The counters are never changed: an invalid trial keeps what was measured, so it stays
    visible (and recomputable) in every output.
    """
    verdict = judge(result)
    if verdict.valid:
        return result, verdict
    checked = dataclasses.replace(result, valid=False, invalid_reason="; ".join(verdict.reasons))
    return checked, verdict
