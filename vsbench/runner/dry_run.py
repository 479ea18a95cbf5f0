"""What ``vsbench --test ... --dry-run`` shows: the plans a command line resolves to, each
one's variant and resolved configuration, and an upper bound of the time its traffic takes.

A lab about to start a nightly job wants to know, before anything is created, which
testcases and variants will run, with what configuration, and for roughly how long. The
bound is read from the configuration alone (search budgets, trial lengths, latency follow-ups,
sweep ladders); set-up and teardown (a switch, VMs, hugepages) come on top and differ per
deployment, so they are named and not guessed. A traffic type whose length depends on what
it measures (burst, back2back) is said to be unbounded here rather than given a number.
Pure functions of the plans: nothing here touches the host.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import yaml

from vsbench.measurement import load_sweep
from vsbench.runner.config import redact_secrets
from vsbench.runner.plan import TestPlan


@dataclass(frozen=True)
class TrafficEstimate:
    """At most ``traffic_s`` seconds of traffic for one plan (None: not bounded by its
    configuration), and how that figure was reached."""

    traffic_s: float | None
    basis: str


def _latency_follow_ups_s(config: Mapping[str, Any], trial_s: float) -> float:
    latency = config.get("latency") or {}
    if not latency.get("enabled"):
        return 0.0
    points = len(latency.get("load_fractions") or []) + len(latency.get("at_goals") or [])
    return points * trial_s


def _search_s(config: Mapping[str, Any]) -> float:
    search = config.get("search") or {}
    repetitions = int(search.get("repetitions") or 1)
    return float(search.get("time_budget_s") or 0.0) * repetitions + float(search.get("final_trial_duration_s") or 0.0)


def estimate_traffic(config: Mapping[str, Any]) -> TrafficEstimate:
    """The most traffic time ``config`` allows, over all its frame sizes."""
    traffic = config.get("traffic") or {}
    kind = traffic.get("type") or "rfc2544_throughput"
    sizes = max(1, len(traffic.get("frame_sizes") or []))
    trial_s = float(traffic.get("trial_duration_s") or 0.0)
    warmup_s = float(traffic.get("warmup_s") or 0.0)
    if kind == "rfc2544_throughput":
        per_size = warmup_s + _search_s(config) + _latency_follow_ups_s(config, trial_s)
        basis = "search time budget + warm-up + latency follow-ups, per frame size"
    elif kind in ("continuous", "latency"):
        per_size = warmup_s + trial_s
        basis = "warm-up + one trial, per frame size"
    elif kind == "tcp":
        per_size = trial_s
        basis = "one TCP run, per frame size"
    elif kind == "load_sweep":
        steps = len(load_sweep.sweep_percents(float(traffic.get("sweep_max_percent") or 100.0),
                                              float(traffic.get("sweep_min_percent") or 0.0)))
        per_size = warmup_s + _search_s(config) + steps * trial_s
        basis = f"throughput search + {steps} sweep steps, per frame size"
    else:
        return TrafficEstimate(None, f"{kind}: its length depends on what it measures")
    return TrafficEstimate(per_size * sizes, basis)


def describe(plans: Sequence[TestPlan]) -> list[str]:
    """The lines ``--dry-run`` prints: one block per plan, then the total."""
    lines: list[str] = []
    total_s, unbounded = 0.0, 0
    for number, plan in enumerate(plans, 1):
        config = plan.config
        traffic = config.get("traffic") or {}
        estimate = estimate_traffic(config)
        plugins = ", ".join(f"{kind} {(config.get(kind) or {}).get('name')}" for kind in ("vswitch", "trafficgen", "vnf"))
        repeat = f" (repeat {plan.repeat[0]} of {plan.repeat[1]})" if plan.repeat else ""
        lines.append(f"plan {number} of {len(plans)}: {plan.label}{repeat}")
        lines.append(f"  deployment {(config.get('test') or {}).get('deployment')}; {plugins}")
        steps = (config.get("test") or {}).get("steps")
        if steps is not None:  # an integration testcase: its send_traffic steps are its traffic
            sends = [s["send_traffic"] or {} for s in steps if "send_traffic" in s]
            seconds = sum(float(s.get("duration_s", 1)) for s in sends)
            total_s += seconds
            lines.append(f"  integration: {len(steps)} steps, {len(sends)} of them send traffic")
            lines.append(f"  traffic time: {seconds:,.0f} s (the send_traffic steps' durations)")
            continue
        lines.append(f"  traffic {traffic.get('type')}: frame sizes {traffic.get('frame_sizes')} B, "
                     f"trials {traffic.get('trial_duration_s')} s")
        if estimate.traffic_s is None:
            unbounded += 1
            lines.append(f"  traffic time: not bounded by the configuration ({estimate.basis})")
        else:
            total_s += estimate.traffic_s
            lines.append(f"  traffic time: at most {estimate.traffic_s:,.0f} s ({estimate.basis})")
    summary = f"{len(plans)} plan(s); traffic time at most {total_s / 60:,.1f} min"
    if unbounded:
        summary += f" plus {unbounded} plan(s) not bounded"
    lines.append(summary + ", set-up and teardown of each deployment on top; nothing was created")
    return lines


def resolved_configuration(plan: TestPlan, plugin_classes: Mapping[str, type] | None = None) -> str:
    """``plan``'s resolved configuration as the YAML a run writes to config.yaml, secrets
    redacted as there (a dry run's output lands in CI logs); ``plugin_classes`` as for
    :func:`redact_secrets`, whose schemas' ``writeOnly`` keys are redacted too."""
    config = redact_secrets(plan.config, plugin_classes or {})
    return yaml.safe_dump({"plan": plan.label, "variant": dict(plan.variant), "config": config},
                          sort_keys=False, default_flow_style=False)
