"""The rule set a run's configuration asks for (``dut.rules``, ``dut.rule_template``).

The rule-set types and their generation are part of the plugin contract
(:mod:`vsbench.interfaces.rules`, re-exported here for the core's callers); reading them
from the resolved configuration is the core's job, done once, here.
"""

from __future__ import annotations

from typing import Any, Mapping

from vsbench.interfaces.rules import (  # noqa: F401 - re-exported for the core's callers
    MAX_RULES,
    RULE_PRIORITY,
    TEMPLATES,
    Direction,
    RuleSetError,
    RuleSetSpec,
    default_directions,
    flow_addresses,
    ipv4_add,
    rule_lines,
    write_rule_file,
)
from vsbench.measurement.profiles import ProfileError, flow_fields


def rule_set_from_config(config: Mapping[str, Any]) -> RuleSetSpec | None:
    """The rule set a resolved configuration asks for, or None (plain port forwarding).

    ``dut.rules`` set: ``dut.rule_template`` (default ``src_dst_ip``) with that many rules
    per direction. ``dut.rules`` unset and template ``in_out``: the in/out rules.
    Traffic fields and flow count come from the ``traffic`` section, as the generator's do.
    """
    dut = config.get("dut") or {}
    traffic = config.get("traffic") or {}
    rules = dut.get("rules")
    template = dut.get("rule_template") or "src_dst_ip"
    if rules is None and template != "in_out":
        return None
    try:
        fields = flow_fields(traffic.get("fields"))
    except ProfileError as exc:
        raise RuleSetError(str(exc)) from exc
    flows = traffic.get("flows")
    return RuleSetSpec(
        template=template,
        rules=1 if rules is None else rules,
        fields=fields,
        flows=1 if flows is None else int(flows),
        bidirectional=bool(traffic.get("bidirectional", True)),
    )
