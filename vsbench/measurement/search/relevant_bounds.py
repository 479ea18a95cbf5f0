"""MLRsearch-compatible relevant bounds of one goal under one target.

The relevant upper bound is the *smallest* load classified as an upper bound; the relevant
lower bound is the *largest* lower bound below it. When a higher load passes above a
failing one (loss inversion) the failing one wins: the result is conservative, and
measuring low loads first keeps such surprises rare.
"""

from __future__ import annotations

from dataclasses import dataclass

from .exceed_test import Verdict


@dataclass(frozen=True)
class Bounds:
    lower: int | None  # grid index
    upper: int | None

    def gap(self) -> int | None:
        if self.lower is None or self.upper is None:
            return None
        return self.upper - self.lower


def relevant_bounds(verdicts: dict[int, Verdict]) -> Bounds:
    uppers = [i for i, v in verdicts.items() if v is Verdict.UPPER]
    upper = min(uppers) if uppers else None
    lowers = [i for i, v in verdicts.items() if v is Verdict.LOWER and (upper is None or i < upper)]
    return Bounds(max(lowers) if lowers else None, upper)
