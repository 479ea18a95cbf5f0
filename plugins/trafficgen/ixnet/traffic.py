"""A vsbench traffic profile as one IxNetwork raw traffic item.

One traffic item per profile, with one endpoint set per direction (port 0 → 1, and 1 → 0
when bidirectional). IxNetwork creates one config element per endpoint set; each carries
its own packet stack, so the reverse direction gets the swapped addresses a
:class:`TrafficProfile` asks for (a single ``biDirectional`` endpoint set would send the same
headers both ways). Per config element:

* frame size ``fixed`` at the profile's size -- IxNetwork frame sizes include the 4 B FCS,
  as vsbench's do, so no conversion;
* frame rate ``framesPerSecond``, set per trial to the per-direction share of the load;
* transmission ``fixedDuration``, set per trial, so the chassis times the trial and a rate
  it cannot reach shows up as fewer frames sent;
* stack ethernet [→ vlan] → ipv4 → udp|tcp (→ fcs, which IxNetwork keeps last); the
  fields named in ``FlowFields.vary`` use ``increment`` with ``countValue = flows``. All
  varying fields advance together once per frame, so with equal counts the packet
  sequence has exactly ``flows`` distinct header combinations (flow i = base + i in every
  varying field), matching the rule sets vsbench installs.

Tracking by traffic item and source/destination port pair gives one "Flow Statistics" row
per direction, which is where the per-direction counters come from.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any

from vsbench.interfaces.plugin import PluginError
from vsbench.interfaces.traffic import FlowFields, TrafficProfile

TRACK_BY = ["trafficItem", "sourceDestPortPair0"]

_MAC_STEP = "00:00:00:00:00:01"
_IP_STEP = "0.0.0.1"
_SWAP = {"src_mac": "dst_mac", "dst_mac": "src_mac", "src_ip": "dst_ip", "dst_ip": "src_ip",
         "src_port": "dst_port", "dst_port": "src_port"}


@dataclass(frozen=True)
class FieldValue:
    """One header field of one direction: a single value, or ``count`` values from
    ``start`` in steps of ``step``."""

    stack: str  # stackTypeId of the header: ethernet, vlan, ipv4, udp, tcp
    field_type_id: str
    start: str
    step: str | None = None
    count: int = 1


def _mac_int(mac: str) -> int:
    parts = mac.replace("-", ":").split(":")
    if len(parts) != 6:
        raise PluginError(f"ixnet: {mac!r} is not a MAC address")
    try:
        return int("".join(p.zfill(2) for p in parts), 16)
    except ValueError:
        raise PluginError(f"ixnet: {mac!r} is not a MAC address") from None


def _check_range(name: str, start: int, flows: int, limit: int, shown: str) -> None:
    if start + flows - 1 > limit:
        raise PluginError(f"ixnet: {flows} flows starting at {name}={shown} run past the "
                          "field's largest value; lower the base value or the flow count")


def field_plan(fields: FlowFields, flows: int, reverse: bool) -> list[FieldValue]:
    """The header field values of one direction (``reverse`` swaps source/destination)."""
    l4 = fields.l4_proto.lower()
    if l4 not in ("udp", "tcp"):
        raise PluginError(f"ixnet: l4_proto {fields.l4_proto!r} is not supported (udp or tcp)")
    unknown = set(fields.vary) - set(_SWAP)
    if unknown:
        raise PluginError(f"ixnet: cannot vary {', '.join(sorted(unknown))}; "
                          f"choose from {', '.join(sorted(_SWAP))}")

    def value(name: str) -> Any:
        return getattr(fields, _SWAP[name] if reverse else name)

    vary = set(fields.vary) if flows > 1 else set()
    plan: list[FieldValue] = []
    for name, stack, type_id in (
        ("dst_mac", "ethernet", "ethernet.header.destinationAddress"),
        ("src_mac", "ethernet", "ethernet.header.sourceAddress"),
        ("src_ip", "ipv4", "ipv4.header.srcIp"),
        ("dst_ip", "ipv4", "ipv4.header.dstIp"),
        ("src_port", l4, f"{l4}.header.srcPort"),
        ("dst_port", l4, f"{l4}.header.dstPort"),
    ):
        base = value(name)
        kind = name.split("_", 1)[1]
        if kind == "mac":
            text, number, limit, step = str(base), _mac_int(str(base)), 2**48 - 1, _MAC_STEP
        elif kind == "ip":
            try:
                number = int(ipaddress.IPv4Address(str(base)))
            except ValueError:
                raise PluginError(f"ixnet: {name} {base!r} is not an IPv4 address") from None
            text, limit, step = str(base), 2**32 - 1, _IP_STEP
        else:
            number = int(base)
            if not 0 <= number <= 65535:
                raise PluginError(f"ixnet: {name} {base!r} is not a port number")
            text, limit, step = str(number), 65535, "1"
        if name in vary:
            _check_range(name, number, flows, limit, text)
            plan.append(FieldValue(stack, type_id, text, step, flows))
        else:
            plan.append(FieldValue(stack, type_id, text))
    if fields.vlan_id is not None:
        if not 0 <= int(fields.vlan_id) <= 4095 or not 0 <= int(fields.vlan_pcp) <= 7:
            raise PluginError(f"ixnet: VLAN {fields.vlan_id} priority {fields.vlan_pcp} out of range")
        plan.append(FieldValue("vlan", "vlan.header.vlanTag.vlanID", str(int(fields.vlan_id))))
        plan.append(FieldValue("vlan", "vlan.header.vlanTag.vlanUserPriority", str(int(fields.vlan_pcp))))
    return plan


def stack_types(fields: FlowFields) -> list[str]:
    """The headers after ethernet, in order."""
    return (["vlan"] if fields.vlan_id is not None else []) + ["ipv4", fields.l4_proto.lower()]


@dataclass
class TrafficItem:
    """The restpy handles of a configured traffic item: the item and, per direction, the
    config element and the (tx, rx) generator port indices."""

    item: Any
    elements: list[Any]
    directions: list[tuple[int, int]]


def build(ixnetwork: Any, name: str, profile: TrafficProfile,
          directions: list[tuple[int, int]], vport_hrefs: list[str]) -> TrafficItem:
    """Create the traffic item of ``profile`` over ``directions`` (pairs of port indices)."""
    plans = [field_plan(profile.fields, profile.flows, reverse=i == 1) for i in range(len(directions))]
    item = ixnetwork.Traffic.TrafficItem.add(Name=name, TrafficType="raw", TrafficItemType="l2L3",
                                             BiDirectional=False)
    endpoint_ids = []
    for tx, rx in directions:
        endpoint = item.EndpointSet.add(Name=f"port {tx} to port {rx}",
                                        Sources=[f"{vport_hrefs[tx]}/protocols"],
                                        Destinations=[f"{vport_hrefs[rx]}/protocols"])
        endpoint_ids.append(int(endpoint.href.rsplit("/", 1)[1]))
    by_endpoint = {int(ce.EndpointSetId): ce for ce in item.ConfigElement.find()}
    elements = [by_endpoint[eid] for eid in endpoint_ids]
    templates = {t: ixnetwork.Traffic.ProtocolTemplate.find(StackTypeId=f"^{t}$")
                 for t in stack_types(profile.fields)}
    for element, plan in zip(elements, plans):
        element.FrameSize.update(Type="fixed", FixedSize=profile.frame_size_bytes)
        element.FrameRateDistribution.update(PortDistribution="applyRateToAll",
                                             StreamDistribution="splitRateEvenly")
        element.FrameRate.update(Type="framesPerSecond", Rate=1)
        element.TransmissionControl.update(Type="fixedDuration", Duration=1)
        stacks = {"ethernet": element.Stack.find(StackTypeId="^ethernet$")}
        last = stacks["ethernet"]
        for stack_type in stack_types(profile.fields):
            template = templates[stack_type]
            if len(template) != 1:
                raise PluginError(f"ixnet: the server has no {stack_type} protocol template")
            last = element.Stack.read(last.AppendProtocol(template.href))
            stacks[stack_type] = last
        _apply_plan(stacks, plan)
    item.Tracking.find().update(TrackBy=TRACK_BY)
    return TrafficItem(item, elements, directions)


def _apply_plan(stacks: dict[str, Any], plan: list[FieldValue]) -> None:
    by_stack: dict[str, list[FieldValue]] = {}
    for fv in plan:
        by_stack.setdefault(fv.stack, []).append(fv)
    for stack_type, values in by_stack.items():
        fields = {f.FieldTypeId: f for f in stacks[stack_type].Field.find()}
        for fv in values:
            fld = fields.get(fv.field_type_id)
            if fld is None:
                raise PluginError(f"ixnet: the {stack_type} header has no field {fv.field_type_id}")
            if fv.count > 1:
                fld.update(Auto=False, ValueType="increment", StartValue=fv.start,
                           StepValue=fv.step, CountValue=str(fv.count))
            else:
                fld.update(Auto=False, ValueType="singleValue", SingleValue=fv.start)


def set_rate(traffic_item: TrafficItem, per_direction_fps: float, duration_s: float) -> None:
    """Per trial: each direction's rate and the transmit duration (whole seconds are sent
    as integers, which every IxNetwork version accepts)."""
    duration: float | int = int(duration_s) if float(duration_s).is_integer() else float(duration_s)
    for element in traffic_item.elements:
        element.FrameRate.update(Type="framesPerSecond", Rate=per_direction_fps)
        element.TransmissionControl.update(Type="fixedDuration", Duration=duration)
