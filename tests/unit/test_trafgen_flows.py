"""Flows as trafgen counters: N distinct combinations, cycling uniformly, fields in range."""

from __future__ import annotations

import dataclasses
import ipaddress

import pytest

from vsbench.interfaces.traffic import FlowFields
from vsbench_plugins.trafficgen.trafgen.flows import (
    FlowPlan,
    FlowPlanError,
    capacity,
    flow_values,
    plan_flows,
    reverse_fields,
)

KEYS = ("src_mac", "dst_mac", "src_ip", "dst_ip", "src_port", "dst_port")


def _combo(f: FlowFields) -> tuple:
    return tuple(getattr(f, k) for k in KEYS)


def _frames(fields: FlowFields, plan: FlowPlan, count: int) -> list[tuple]:
    """What trafgen's lock-step counters produce for frames 0..count-1 (independent model)."""
    out = []
    for k in range(count):
        f = fields
        changes = {}
        for name, period in plan.periods:
            step = k % period
            value = getattr(fields, name)
            if name.endswith("_ip"):
                changes[name] = str(ipaddress.IPv4Address(int(ipaddress.IPv4Address(value)) + step))
            elif name.endswith("_port"):
                changes[name] = value + step
            else:
                raw = int(value.replace(":", ""), 16) + step
                hexed = f"{raw:012x}"
                changes[name] = ":".join(hexed[i:i + 2] for i in range(0, 12, 2))
        out.append(_combo(dataclasses.replace(f, **changes)))
    return out


@pytest.mark.parametrize(
    "vary, flows",
    [
        (("src_ip", "dst_ip"), 1000),
        (("dst_ip",), 7),
        (("src_port", "dst_port"), 70000),  # needs a coprime split: 10000 x 7
        (("src_ip", "src_port"), 1_000_000),  # port counts a divisor of 1M
        (("src_mac", "dst_port"), 5000),
    ],
)
def test_n_distinct_flows_cycle_uniformly(vary, flows):
    fields = FlowFields(vary=vary)
    plan = plan_flows(fields, flows)
    assert plan.cycle_length() == flows
    sample = min(flows, 20000)
    frames = _frames(fields, plan, sample)
    assert len(set(frames)) == sample  # every frame of one cycle is a distinct flow
    for name, period in plan.periods:
        assert 1 <= period <= capacity(fields, name)
    if flows <= 20000:
        # the next cycle repeats the first one exactly: each flow gets 1/flows of the frames
        assert _frames(fields, plan, 2 * flows)[flows:] == frames


def test_flows_that_cannot_be_made_distinct_are_refused():
    # 2^20 over two 16-bit fields: a prime power has no coprime split and neither field
    # alone holds 2^20 values. Refused, never silently fewer flows.
    with pytest.raises(FlowPlanError, match="1048576 flows do not fit in src_port, dst_port"):
        plan_flows(FlowFields(vary=("src_port", "dst_port")), 1 << 20)


def test_flow_values_match_the_counter_model():
    fields = FlowFields(vary=("src_mac", "dst_ip", "src_port"), src_mac="02:00:00:00:00:ff")
    plan = plan_flows(fields, 300)
    model = _frames(fields, plan, 600)
    assert [_combo(flow_values(fields, plan, k)) for k in range(600)] == model
    # the MAC keeps its first two bytes while its last four count
    assert flow_values(fields, plan, 1).src_mac == "02:00:00:00:01:00"


def test_one_flow_varies_nothing():
    plan = plan_flows(FlowFields(), 1)
    assert plan.varying == () and plan.cycle_length() == 1


def test_field_that_would_overflow_is_refused_with_a_reason():
    fields = FlowFields(dst_ip="255.255.255.250", vary=("dst_ip",))
    with pytest.raises(FlowPlanError, match="do not fit"):
        plan_flows(fields, 100)
    # a wider partner field carries the count; the narrow one cycles a divisor of it
    plan = plan_flows(dataclasses.replace(fields, vary=("src_ip", "dst_ip")), 100)
    assert plan.period("src_ip") == 100 and plan.period("dst_ip") == 5


@pytest.mark.parametrize("vary, message", [
    (("vlan_id",), "cannot vary"),
    (("src_ip", "src_ip"), "twice"),
    ((), "at least one field"),
])
def test_bad_vary_is_one_line(vary, message):
    with pytest.raises(FlowPlanError, match=message):
        plan_flows(FlowFields(vary=vary), 10)


def test_reverse_direction_mirrors_each_flow():
    fields = FlowFields(vary=("src_ip", "dst_port"))
    plan = plan_flows(fields, 50)
    rev_fields, rev_plan = reverse_fields(fields), plan.swapped()
    assert rev_fields.vary == ("dst_ip", "src_port")
    for k in range(50):
        fwd = flow_values(fields, plan, k)
        rev = flow_values(rev_fields, rev_plan, k)
        assert (rev.src_ip, rev.dst_ip, rev.src_port, rev.dst_port, rev.src_mac, rev.dst_mac) == (
            fwd.dst_ip, fwd.src_ip, fwd.dst_port, fwd.src_port, fwd.dst_mac, fwd.src_mac)
