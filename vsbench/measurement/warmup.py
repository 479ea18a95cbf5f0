"""The warm-up trial: a low rate with the full flow set, long enough to send every flow.

Before a search the switch's flow caches must hold every flow of the profile; otherwise
the first search trials measure flow setup (upcalls, megaflow installs, TC rule inserts)
rather than forwarding. Each flow must therefore be sent at least once, better
``passes`` times (a frame the switch dropped while it was still setting the flow up
installs nothing). Generators cycle through the flow set in order, so a direction that
sends ``k * flows`` frames has sent each of its flows ``k`` times.

The warm-up starts at ``base_share`` of the frame size's max load (low enough not to
overload a switch that is still learning). When that rate cannot send ``passes`` passes in
``min_duration_s`` the rate is raised first, up to ``max_share`` of max load (the safe
bound), and only then is the trial stretched, up to ``max_duration_s``. A warm-up that hits
that cap covers fewer passes, or fewer flows, than asked: the plan says so (``capped``) and
the caller warns.

Pure functions; no I/O. The runner turns ``traffic.warmup_*`` into :class:`WarmupSettings`,
runs the planned trial and stores :func:`coverage` with the trial in ``trials.jsonl``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Mapping

from vsbench.interfaces.traffic import TrialResult

#: Defaults (conf/10_traffic.yaml ``traffic.warmup_*``).
DEFAULT_PASSES = 2
DEFAULT_MAX_DURATION_S = 60.0
DEFAULT_BASE_SHARE = 0.01
DEFAULT_MAX_SHARE = 0.1


class WarmupError(ValueError):
    """The warm-up settings are inconsistent; one line for the user."""


@dataclass(frozen=True)
class WarmupSettings:
    """How the warm-up is sized (``traffic.warmup_s``, ``warmup_max_s``, ``warmup_passes``,
    ``warmup_max_share``). ``min_duration_s`` 0 switches the warm-up off."""

    min_duration_s: float
    max_duration_s: float = DEFAULT_MAX_DURATION_S
    passes: int = DEFAULT_PASSES
    base_share: float = DEFAULT_BASE_SHARE
    max_share: float = DEFAULT_MAX_SHARE

    def __post_init__(self) -> None:
        if self.min_duration_s < 0:
            raise WarmupError(f"traffic.warmup_s must be >= 0, got {self.min_duration_s}")
        if self.max_duration_s < self.min_duration_s:
            raise WarmupError(f"traffic.warmup_max_s {self.max_duration_s:g} is below "
                              f"traffic.warmup_s {self.min_duration_s:g}")
        if isinstance(self.passes, bool) or not isinstance(self.passes, int) or self.passes < 1:
            raise WarmupError(f"traffic.warmup_passes must be an integer >= 1, got {self.passes!r}")
        if not 0 < self.base_share <= 1:
            raise WarmupError(f"warm-up base share must be in (0, 1], got {self.base_share}")
        if not self.base_share <= self.max_share <= 1:
            raise WarmupError(f"traffic.warmup_max_share must be in [{self.base_share:g}, 1], "
                              f"got {self.max_share}")

    @property
    def enabled(self) -> bool:
        return self.min_duration_s > 0


def settings_from_traffic(traffic: Mapping[str, Any]) -> WarmupSettings:
    """:class:`WarmupSettings` from a resolved ``traffic`` section (defaults for unset keys)."""

    def get(key: str, default: Any) -> Any:
        value = traffic.get(key)
        return default if value is None else value

    return WarmupSettings(
        min_duration_s=float(get("warmup_s", 0.0)),
        max_duration_s=float(get("warmup_max_s", DEFAULT_MAX_DURATION_S)),
        passes=get("warmup_passes", DEFAULT_PASSES),
        max_share=float(get("warmup_max_share", DEFAULT_MAX_SHARE)),
    )


@dataclass(frozen=True)
class WarmupPlan:
    """One warm-up trial: aggregate ``load_fps`` for ``duration_s``.

    ``planned_passes`` is how often each flow is sent at that rate and duration (per
    direction, assuming the generator cycles through its flows); below ``wanted_passes``
    exactly when ``capped``. ``planned_flows`` is how many flows per direction the plan
    reaches at least once (all of them unless the cap leaves less than one pass).
    """

    load_fps: float
    duration_s: float
    flows_per_direction: int
    directions: int
    wanted_passes: int
    planned_passes: float
    planned_flows: int
    rate_raised: bool
    capped: bool
    #: Frames of one flow in a row (the burst pattern; 1: the next flow every frame).
    frames_per_flow_run: int = 1

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def plan(settings: WarmupSettings, *, flows: int, directions: int, max_load_fps: float,
         min_load_fps: float, run: int = 1) -> WarmupPlan:
    """Size the warm-up for ``flows`` per direction over ``directions`` (aggregate loads).

    ``run``: frames of one flow in a row (the burst pattern; 1: the next flow every
    frame). A pass over the flows is then ``flows * run`` frames and sends each flow
    ``run`` times, so ``passes`` of them take ``ceil(passes / run)`` such cycles.

    Rate first (from ``base_share`` up to ``max_share`` of ``max_load_fps``, never below
    ``min_load_fps`` nor above ``max_load_fps``), then duration (from ``min_duration_s`` up
    to ``max_duration_s``).
    """
    if flows < 1 or directions < 1:
        raise WarmupError(f"warm-up needs flows and directions >= 1, got {flows} and {directions}")
    if max_load_fps <= 0:
        raise WarmupError(f"warm-up needs a positive max load, got {max_load_fps}")
    base = min(max_load_fps, max(min_load_fps, settings.base_share * max_load_fps))
    ceiling = min(max_load_fps, max(base, settings.max_share * max_load_fps))
    run = max(1, int(run))
    cycles = math.ceil(settings.passes / run)
    frames = float(cycles * run) * flows * directions  # aggregate frames for every pass
    min_s = settings.min_duration_s
    load = base
    if frames / load > min_s:
        load = min(ceiling, frames / min_s) if min_s > 0 else ceiling
    duration = max(min_s, frames / load)
    capped = duration > settings.max_duration_s
    if capped:
        duration = settings.max_duration_s
    per_direction = load * duration / directions
    passes = per_direction / flows
    return WarmupPlan(
        load_fps=load,
        duration_s=duration,
        flows_per_direction=flows,
        directions=directions,
        wanted_passes=settings.passes,
        planned_passes=passes,
        planned_flows=min(flows, int(math.ceil(math.floor(per_direction + 1e-9) / run))),
        rate_raised=load > base,
        capped=capped,
        frames_per_flow_run=run,
    )


def coverage(warmup: WarmupPlan, result: TrialResult) -> dict[str, Any]:
    """What the warm-up trial really covered, for its line in ``trials.jsonl``.

    ``flows_covered``: flows per direction sent at least once, by the direction that sent
    the fewest frames (``min(flows, frames)``); ``passes_sent``: that direction's frames
    over the flow count; ``passes_received``: the same for frames that came back (a warm-up
    that overloaded the switch shows here). Directions without counters count the trial's
    totals shared evenly.
    """
    flows = warmup.flows_per_direction
    if result.directions:
        tx = min(d.tx_frames for d in result.directions)
        rx = min(d.rx_frames for d in result.directions)
    else:
        tx = result.tx_frames // warmup.directions
        rx = result.rx_frames // warmup.directions
    run = max(1, int(warmup.frames_per_flow_run))
    reached = -(-tx // run)  # flows whose run began
    return {
        **warmup.to_json(),
        "flows_covered": int(min(flows, reached)),
        "all_flows_covered": bool(reached >= flows),
        "passes_sent": tx / flows,
        "passes_received": rx / flows,
    }


def cap_warning(warmup: WarmupPlan) -> str:
    """The one-line note for a warm-up the duration cap cut short."""
    if warmup.planned_flows < warmup.flows_per_direction:
        reach = f"only {warmup.planned_flows} of {warmup.flows_per_direction} flows per direction"
    else:
        reach = f"{warmup.planned_passes:.2g} of {warmup.wanted_passes} passes over the {warmup.flows_per_direction} flows"
    return (f"warm-up capped at traffic.warmup_max_s={warmup.duration_s:g} s at {warmup.load_fps:.0f} fps: "
            f"{reach}; the first search trials may measure flow setup (raise traffic.warmup_max_s "
            f"or traffic.warmup_max_share)")
