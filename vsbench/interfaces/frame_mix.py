"""Weighted frame-size mixes (IMIX): one stream whose frames cycle through several sizes.

Why a type of its own: a mix is measured as *one* load -- the search runs on its aggregate
frame rate -- yet every rate in bits/s and the line rate depend on the mean frame size, and
a report owes the reader each size's share. A generator that sends a mix reads
:meth:`FrameMix.cycle`: the sizes in the order it must send them, interleaved by smooth
weighted round robin (7:4:1 gives ``64 570 64 1518 64 570 64 ...``, never seven 64 B frames
in a row), so every short window of the stream carries the mix's proportion.

``frame_sizes: [64, imix, 1518]`` names a mix by a word (NFVbench's spelling: IMIX is the
7:4:1 mix of 64/570/1518 B); ``traffic.frame_mixes: {mymix: {64: 7, 570: 4, 1518: 1}}``
defines others. Results stay keyed by an integer frame size: a mix is filed under its
*representative* size, its mean rounded to a byte (:attr:`FrameMix.representative_bytes`),
with the mix itself beside it, so a reader that knows nothing of mixes still finds a
frame size where it expects one.

Pure: no I/O, importable by plugins (it is part of the contract package).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import reduce
from typing import Any, Mapping

#: Frame sizes and weights of the standard IMIX (NFVbench, TRex: 7:4:1 of 64/570/1518 B).
IMIX_NAME = "imix"
IMIX_WEIGHTS: dict[int, int] = {64: 7, 570: 4, 1518: 1}
#: Most frames in one cycle of a mix (weights are reduced by their gcd first): the
#: generator sends the cycle as a sequence of templates, so it must stay small.
MAX_CYCLE_FRAMES = 64
#: Per-frame overhead on the wire besides the frame (preamble + SFD + IFG), as in traffic.py.
_L1_OVERHEAD_BYTES = 20


class FrameMixError(ValueError):
    """A mix is malformed; the message is one line."""


@dataclass(frozen=True)
class FrameMix:
    """A named weighted mix of frame sizes (FCS included, as every frame size).

    ``sizes_bytes`` ascending, ``weights`` the matching positive integers (not reduced:
    what the user wrote; :attr:`cycle` reduces them)."""

    name: str
    sizes_bytes: tuple[int, ...]
    weights: tuple[int, ...]

    def __post_init__(self) -> None:
        if not self.sizes_bytes or len(self.sizes_bytes) != len(self.weights):
            raise FrameMixError(f"frame mix {self.name}: needs sizes with one weight each")
        if len(set(self.sizes_bytes)) != len(self.sizes_bytes):
            raise FrameMixError(f"frame mix {self.name}: a size is listed twice")
        if any(int(w) < 1 for w in self.weights):
            raise FrameMixError(f"frame mix {self.name}: weights must be positive integers")
        if len(self.cycle) > MAX_CYCLE_FRAMES:
            raise FrameMixError(f"frame mix {self.name}: {len(self.cycle)} frames in one cycle of its weights "
                                f"(reduced); at most {MAX_CYCLE_FRAMES}")

    @property
    def reduced_weights(self) -> tuple[int, ...]:
        g = reduce(math.gcd, (int(w) for w in self.weights))
        return tuple(int(w) // g for w in self.weights)

    @property
    def cycle(self) -> tuple[int, ...]:
        """The sizes in sending order over one cycle, interleaved by smooth weighted round
        robin (nginx's: each step every size gains its weight, the largest credit is sent
        and pays the total), so no size runs longer than its share demands."""
        weights = self.reduced_weights
        total = sum(weights)
        credit = [0] * len(weights)
        out = []
        for _ in range(total):
            for i, w in enumerate(weights):
                credit[i] += w
            best = max(range(len(weights)), key=lambda i: (credit[i], -i))
            credit[best] -= total
            out.append(self.sizes_bytes[best])
        return tuple(out)

    @property
    def shares(self) -> dict[int, float]:
        """Each size's share of the frames."""
        total = sum(self.weights)
        return {s: int(w) / total for s, w in zip(self.sizes_bytes, self.weights)}

    @property
    def mean_frame_size_bytes(self) -> float:
        """The frame-weighted mean size: bits/s = fps x mean x 8 (L2), line rate = link /
        ((mean + 20) x 8), exactly, because those are linear in the frame size."""
        total = sum(self.weights)
        return sum(s * int(w) for s, w in zip(self.sizes_bytes, self.weights)) / total

    @property
    def representative_bytes(self) -> int:
        """The integer frame size results file this mix under (its mean, rounded)."""
        return int(math.floor(self.mean_frame_size_bytes + 0.5))

    @property
    def largest_bytes(self) -> int:
        return max(self.sizes_bytes)

    def frames_of_size(self, frames: int) -> dict[int, int]:
        """How many of the first ``frames`` frames of a stream have each size (a stream
        starts at the cycle's beginning; exact, not a share)."""
        cycle = self.cycle
        whole, rest = divmod(int(frames), len(cycle))
        out = {s: 0 for s in self.sizes_bytes}
        for i, size in enumerate(cycle):
            out[size] += whole + (1 if i < rest else 0)
        return out

    def l1_bps(self, rate_fps: float) -> float:
        return rate_fps * (self.mean_frame_size_bytes + _L1_OVERHEAD_BYTES) * 8

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "sizes_bytes": [int(s) for s in self.sizes_bytes],
            "weights": [int(w) for w in self.weights],
            "mean_frame_size_bytes": self.mean_frame_size_bytes,
            "cycle_bytes": [int(s) for s in self.cycle],
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> "FrameMix":
        return cls(str(doc["name"]), tuple(int(s) for s in doc["sizes_bytes"]),
                   tuple(int(w) for w in doc["weights"]))


def imix() -> FrameMix:
    return from_weights(IMIX_NAME, IMIX_WEIGHTS)


def from_weights(name: str, weights: Mapping[Any, Any]) -> FrameMix:
    """A mix from ``{size: weight}`` as YAML gives it (keys may be strings of digits)."""
    if not isinstance(weights, Mapping) or not weights:
        raise FrameMixError(f"frame mix {name}: expected a mapping of frame size to weight, e.g. {{64: 7, 570: 4}}")
    pairs = []
    for size, weight in weights.items():
        try:
            s, w = int(str(size)), weight
        except ValueError:
            raise FrameMixError(f"frame mix {name}: {size!r} is not a frame size in bytes") from None
        if isinstance(w, bool) or not isinstance(w, int):
            raise FrameMixError(f"frame mix {name}: weight of {s} B must be a positive integer, got {w!r}")
        pairs.append((s, w))
    pairs.sort()
    return FrameMix(str(name), tuple(s for s, _ in pairs), tuple(w for _, w in pairs))


def named_mixes(defined: Mapping[str, Any] | None) -> dict[str, FrameMix]:
    """IMIX plus the mixes of ``traffic.frame_mixes`` by lower-case name (a definition
    may not take IMIX's name: a word must mean one mix everywhere)."""
    out = {IMIX_NAME: imix()}
    for name, weights in (defined or {}).items():
        key = str(name).lower()
        if key == IMIX_NAME:
            raise FrameMixError(f"traffic.frame_mixes: {name} is the standard IMIX (7:4:1 of 64/570/1518 B) "
                                "and cannot be redefined; choose another name")
        out[key] = from_weights(key, weights)
    return out
