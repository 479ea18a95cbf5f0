"""What a plugin is given: its own settings and the run's typed parameters.

Plugins never see the resolved configuration (DESIGN.md principle 8). The few run-wide
values some of them need are read here, once, into :class:`RunParameters`; a value that
cannot be used (a rule set that does not fit the traffic) is a one-line error found by the
preflight, before anything is created.
"""

from __future__ import annotations

from typing import Any, Mapping

from vsbench.interfaces.plugin import RunParameters
from vsbench.interfaces import modification as modifications
from vsbench.measurement import profiles, rules


class RunParametersError(ValueError):
    """The configuration's run-wide plugin parameters are unusable; one line."""


def _positive(value: Any, key: str, kind: type) -> Any:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        unit = "frames/s" if key.endswith("_pps") or key.endswith("_fps") else "seconds"
        raise RunParametersError(f"{key} must be a positive number of {unit}, got {value!r}")
    return kind(value)


def run_parameters(config: Mapping[str, Any]) -> RunParameters:
    """The :class:`RunParameters` of a resolved configuration."""
    traffic = config.get("traffic") or {}
    latency = config.get("latency") or {}
    dut = config.get("dut") or {}
    try:
        fields = profiles.flow_fields(traffic.get("fields"))
        rule_set = rules.rule_set_from_config(config)
        frame_modification = modifications.from_setting(dut.get("frame_modification"))
    except (profiles.ProfileError, rules.RuleSetError, modifications.ModificationError) as exc:
        raise RunParametersError(str(exc)) from None
    problem = modifications.check_fields(frame_modification, fields.vlan_id)
    if problem:
        raise RunParametersError(problem)
    drain = traffic.get("drain_s")
    if drain is not None and (isinstance(drain, bool) or not isinstance(drain, (int, float)) or drain < 0):
        raise RunParametersError(f"traffic.drain_s must be a number of seconds >= 0, got {drain!r}")
    return RunParameters(
        drain_s=None if drain is None else float(drain),
        probe_rate_fps=_positive(latency.get("probe_rate_fps"), "latency.probe_rate_fps", float),
        flow_fields=fields,
        rule_set=rule_set,
        meter_pps=_positive(dut.get("meter_pps"), "dut.meter_pps", int),
        meter_window_s=_positive(dut.get("meter_window_s"), "dut.meter_window_s", float),
        frame_modification=frame_modification,
    )
