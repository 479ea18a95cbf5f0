"""The discrete, log-spaced grid of loads the multi-goal search may try.

Loads are ``max_load * (1 - w) ** (top - i)`` for integer indices ``i``; the lowest index
is ``min_load`` itself. Adjacent loads are exactly one relative width apart, so a bracket
between neighbouring indices has reached the goal width, a load is measured again only at
exactly the same value, and halving or doubling a distance is integer arithmetic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class LoadGrid:
    min_load_fps: float
    max_load_fps: float
    relative_width: float

    def __post_init__(self) -> None:
        if not 0 < self.min_load_fps < self.max_load_fps:
            raise ValueError("need 0 < min_load_fps < max_load_fps")
        if not 0 < self.relative_width < 1:
            raise ValueError("relative_width must be in (0, 1)")

    @property
    def _log_step(self) -> float:
        return -math.log1p(-self.relative_width)

    @property
    def step_ratio(self) -> float:
        """The ratio of adjacent grid loads."""
        return math.exp(self._log_step)

    @property
    def top(self) -> int:
        """Index of ``max_load``; index 0 is ``min_load``."""
        return max(1, math.ceil(math.log(self.max_load_fps / self.min_load_fps) / self._log_step - 1e-9))

    def load(self, index: int) -> float:
        if not 0 <= index <= self.top:
            raise IndexError(f"load index {index} outside 0..{self.top}")
        if index == 0:
            return self.min_load_fps
        return self.max_load_fps * math.exp(-(self.top - index) * self._log_step)

    def index_at_or_below(self, load_fps: float) -> int:
        """The highest index whose load does not exceed ``load_fps`` (0 if none)."""
        if load_fps >= self.max_load_fps:
            return self.top
        steps_down = math.ceil(math.log(self.max_load_fps / load_fps) / self._log_step - 1e-9)
        return max(0, self.top - steps_down)

    def width(self, lower: int, upper: int) -> float:
        """Relative width (upper - lower) / upper between two indices."""
        return 1.0 - self.load(lower) / self.load(upper)
