"""The offered-load steps of a ``load_sweep`` (the vRouter characterization's "use case 0").

Throughput, loss and latency are measured at each step of a fixed ladder of offered loads,
finest where a DUT's behaviour changes first at low load: 0.01 % steps up to 0.1 %, 0.1 %
steps up to 1 %, then 1 % steps up to 100 % -- 118 steps in all. The percentages are of a
reference rate the runner chooses (the throughput search's max load; see
:mod:`vsbench.runner.traffic_types_extra`). Pure functions, no I/O.
"""

from __future__ import annotations

#: (first, last, step) of each segment in hundredths of a percent, so every step is exact.
SEGMENTS_CENTI_PERCENT: tuple[tuple[int, int, int], ...] = (
    (1, 10, 1),        # 0.01 % .. 0.1 % by 0.01 %
    (20, 100, 10),     # 0.2 % .. 1 % by 0.1 %
    (200, 10000, 100),  # 2 % .. 100 % by 1 %
)


class SweepError(ValueError):
    """The sweep cannot run with these settings; one line for the user."""


def sweep_percents(max_percent: float = 100.0, min_percent: float = 0.0) -> list[float]:
    """The steps in percent, ascending, from above ``min_percent`` up to ``max_percent``.

    ``max_percent`` stops the ladder early (a step equal to it is included); it must be at
    least the first step, 0.01 %.
    """
    if not 0.01 <= max_percent <= 100.0:
        raise SweepError(f"sweep_max_percent must be between 0.01 and 100, not {max_percent}")
    if not 0.0 <= min_percent < max_percent:
        raise SweepError(f"sweep_min_percent must be between 0 and sweep_max_percent, not {min_percent}")
    steps: list[float] = []
    for first, last, step in SEGMENTS_CENTI_PERCENT:
        for centi in range(first, last + 1, step):
            percent = centi / 100.0
            # a tiny slack: 0.3 written by a user must include the step 0.3 (= 30 / 100)
            if min_percent + 1e-9 < percent <= max_percent + 1e-9:
                steps.append(percent)
    return steps


def sweep_loads(reference_fps: float, percents: list[float]) -> list[tuple[float, float]]:
    """(percent, offered load in frames/s) of each step, ``percent`` of ``reference_fps``."""
    if reference_fps <= 0:
        raise SweepError("the sweep's 100 % rate must be positive")
    return [(p, reference_fps * p / 100.0) for p in percents]
