"""Everything checked before a run creates anything.

Every selected plugin (switch, generator, VNF, collectors) is loaded through its entry
point and asked :meth:`Plugin.check_prerequisites`, then :meth:`Plugin.check_reachable`
(the remote server or host it drives answers at its configured address: a TRex server
that is down is refused here, not found out by the first trial); the deployment and traffic type are
looked up and the traffic section is turned into profiles once. Any problem is a
:class:`PreflightError` with one line for the user, and the runner exits 2 with nothing
created -- no namespace, no process, no run directory.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from vsbench.deployment import Deployment, DeploymentError, Shape
from vsbench.deployment import get as get_deployment
from vsbench.interfaces.plugin import Plugin, RunParameters
from vsbench.measurement import profiles
from vsbench.measurement import warmup as warmups
from vsbench.runner import guard, noisy_load, plugins, traffic_types
from vsbench.runner.plugin_context import RunParametersError, run_parameters
from vsbench.runner.plan import TestPlan
from vsbench.system import cpu
from vsbench.system.deadline import DeadlineExceeded

PLUGIN_KINDS = ("vswitch", "trafficgen", "vnf")


class PreflightError(Exception):
    """A plan cannot run on this machine or with this configuration; one line."""


@dataclass
class CheckedPlan:
    """The classes a plan will instantiate, found and checked."""

    classes: dict[str, type[Plugin]]
    collectors: list[type[Plugin]]
    deployment: type[Deployment]
    frame_sizes: list[int] = field(default_factory=list)
    #: What the plan's plugins are given besides their settings (``context.run``).
    run: RunParameters = field(default_factory=RunParameters)
    #: The deployment's shape as configured (``topology``): its switching operations.
    shape: Shape | None = None


def _section(config: Mapping[str, Any], kind: str, name: str) -> Mapping[str, Any]:
    parent = config.get("collector" if kind == "collector" else kind) or {}
    return parent.get(name) or {}


def _load(kind: str, name: str) -> type[Plugin]:
    try:
        return plugins.load(kind, name)
    except plugins.UnknownPluginError as exc:
        raise PreflightError(str(exc)) from None


def _prerequisites(kind: str, cls: type[Plugin], settings: Mapping[str, Any],
                   policy: guard.DeadlinePolicy | None = None) -> None:
    try:
        missing = guard.call_class(cls, kind, "check_prerequisites", policy or guard.DeadlinePolicy(), settings)
    except (guard.PluginFault, DeadlineExceeded) as exc:  # a plugin's check must not crash the CLI
        raise PreflightError(str(exc)) from None
    if missing:
        raise PreflightError(
            f"{kind} {cls.name} cannot run here: missing " + "; ".join(str(m) for m in missing)
        )


def _reachable(kind: str, cls: type[Plugin], settings: Mapping[str, Any],
               policy: guard.DeadlinePolicy, probed: dict | None = None) -> None:
    """The plugin's own reachability probe (``check_reachable``); ``probed`` remembers the
    answers already had for the same class and settings (the plans of one run share their
    generator: one probe, not one per plan)."""
    key = (cls, repr(sorted(settings.items(), key=lambda item: str(item[0]))))
    if probed is not None and key in probed:
        unreachable = probed[key]
    else:
        try:
            unreachable = guard.call_class(cls, kind, "check_reachable", policy, settings)
        except (guard.PluginFault, DeadlineExceeded) as exc:
            raise PreflightError(str(exc)) from None
        if probed is not None:
            probed[key] = unreachable
    if unreachable:
        raise PreflightError(
            f"{kind} {cls.name} is not reachable: " + "; ".join(str(m) for m in unreachable)
        )


def check_plan(plan: TestPlan, probed: dict | None = None) -> CheckedPlan:
    """Everything about ``plan`` that can be checked before anything is created; raises
    :class:`PreflightError`. ``probed`` is shared between the plans of one run so that a
    remote generator is probed once (see :func:`_reachable`)."""
    config = plan.config
    where = f"{plan.label}: "
    classes: dict[str, type[Plugin]] = {}
    policy = guard.DeadlinePolicy.from_config(config)
    test = config.get("test") or {}
    try:
        deployment = get_deployment(str(test.get("deployment") or "p2p"))
        shape = deployment.shape(config)
    except DeploymentError as exc:
        raise PreflightError(f"{where}{exc}") from None
    for kind in PLUGIN_KINDS:
        if kind == "vswitch" and not deployment.uses_vswitch:
            continue  # a topology without a switch: neither loaded nor asked for prerequisites
        section = config.get(kind) or {}
        name = section.get("name")
        if not name:
            if kind == "vnf":
                continue
            raise PreflightError(f"{where}no {kind} selected ({kind}.name)")
        cls = _load(kind, name)
        _prerequisites(kind, cls, _section(config, kind, name), policy)
        _reachable(kind, cls, _section(config, kind, name), policy, probed)
        classes[kind] = cls
    collectors = []
    for name in config.get("collectors") or []:
        cls = _load("collector", name)
        _prerequisites("collector", cls, _section(config, "collector", name), policy)
        _reachable("collector", cls, _section(config, "collector", name), policy, probed)
        collectors.append(cls)
    vnf_name = (config.get("vnf") or {}).get("name")
    if deployment.requires_vnf and vnf_name in (None, "", "none"):
        raise PreflightError(f"{where}deployment {deployment.name} sends every frame through a VNF; "
                             "choose one with --vnf (e.g. --vnf testpmd)")
    traffic = config.get("traffic") or {}
    try:
        traffic_types.check(traffic)
        traffic_types._rfc2889.check_plan(config)  # RFC 2889: its settings and its deployment
        traffic_types._tcp.check_deployment(config, deployment)  # tcp.clients, TCP-only topologies
        sizes = profiles.frame_sizes(traffic)
        if traffic.get("type") == traffic_types._tcp.KIND:  # a TCP plan's frame size is its MTU's
            sizes = [traffic_types._tcp.frame_size(config)]
        for size in sizes:
            profiles.build_profile(traffic, size)
        profiles.link_bps(config)
        warmups.settings_from_traffic(traffic)
    except (traffic_types.TrafficTypeError, profiles.ProfileError, warmups.WarmupError) as exc:
        raise PreflightError(f"{where}{exc}") from None
    try:
        noisy_load.check_config(config, cpu.online_cpus())  # a load: section runs stress-ng beside the traffic
    except noisy_load.LoadError as exc:
        raise PreflightError(f"{where}{exc}") from None
    try:
        # the switch generates its rule set only once it runs: a bad one is found here instead
        run = run_parameters(config)
    except RunParametersError as exc:
        raise PreflightError(f"{where}{exc}") from None
    _check_encapsulation(config, deployment, classes, where)
    _check_frame_modification(config, run, deployment, classes, where)
    try:
        deployment.check_config(config, classes.get("vnf"))
    except DeploymentError as exc:
        raise PreflightError(f"{where}{exc}") from None
    if deployment.uses_vswitch:
        _check_rule_set_support(config, classes["vswitch"], where)
        _check_meter_support(config, classes["vswitch"], where)
        _check_learning_support(config, classes["vswitch"], deployment, where)
    else:
        _check_no_switch_settings(config, deployment.name, where)
    try:
        traffic_types.check_generator(traffic, classes["trafficgen"])
    except traffic_types.TrafficTypeError as exc:
        raise PreflightError(f"{where}{exc}") from None
    return CheckedPlan(classes, collectors, deployment, sizes, run, shape)


#: Deployments a frame modification is measured on: one switch pass, so the frames arrive
#: modified once (a pvp chain would apply it on each of its bridges).
MODIFICATION_DEPLOYMENTS = ("p2p",)


def _check_frame_modification(config: Mapping[str, Any], run: RunParameters, deployment: type[Deployment],
                              classes: Mapping[str, type[Plugin]], where: str) -> None:
    """``dut.frame_modification`` is refused, before anything is created, on a deployment
    with other than one switch pass, with encapsulation, on a switch that gives a reason
    it cannot do it (:meth:`VSwitch.modification_refusal`) and with a generator that does
    not verify that kind at the receiver; one that moves the payload (MPLS) with latency
    probes, which are found at the unmodified frame's payload offset."""
    mod = run.frame_modification
    if mod is None:
        return
    what = f"dut.frame_modification {mod.kind}"
    if deployment.name not in MODIFICATION_DEPLOYMENTS or not deployment.uses_vswitch:
        raise PreflightError(f"{where}{what} is measured through one switch pass "
                             f"(deployment {' or '.join(MODIFICATION_DEPLOYMENTS)}), not {deployment.name}")
    if deployment.encapsulation is not None:
        raise PreflightError(f"{where}{what} cannot be combined with {deployment.encapsulation} encapsulation")
    switch = classes["vswitch"]
    refusal = switch.modification_refusal(mod)  # type: ignore[attr-defined]
    if refusal:
        raise PreflightError(f"{where}vswitch {switch.name} cannot run {what}: {refusal}")
    if mod.l3_shift_bytes and (config.get("latency") or {}).get("enabled"):
        raise PreflightError(f"{where}{what} moves the payload the latency probes are found at; "
                             "measure it with latency.enabled=false")
    generator = classes["trafficgen"]
    if mod.kind not in tuple(getattr(generator, "frame_modifications", ()) or ()):
        raise PreflightError(f"{where}trafficgen {generator.name} does not verify {what} at the receiver "
                             "(its frames would be counted unverified); use --trafficgen trafgen")


def _check_no_switch_settings(config: Mapping[str, Any], deployment: str, where: str) -> None:
    """``dut.rules`` or ``dut.meter_pps`` in a topology without a switch is refused: nothing
    would install them, and the figure would be published under their name."""
    dut = config.get("dut") or {}
    for key in ("rules", "meter_pps"):
        if dut.get(key) is not None:
            raise PreflightError(f"{where}dut.{key}={dut[key]} needs a switch, and deployment {deployment} "
                                 "has none (it routes with the VNF alone)")


def _check_encapsulation(config: Mapping[str, Any], deployment: type[Deployment],
                         classes: Mapping[str, type[Plugin]], where: str) -> None:
    """An overlay test needs an overlay deployment (op2p, pvp_vxlan), a switch with that
    tunnel type and a generator that builds (and checks) the encapsulation; anything else is
    refused here: plain frames sent into a VTEP, or VXLAN into a plain bridge, measure
    nothing. A routing VNF behind a VTEP is refused too: it rewrites the inner MACs the
    generator verifies."""
    from vsbench.deployment import DEPLOYMENTS

    encapsulation = (config.get("traffic") or {}).get("encapsulation")
    if deployment.encapsulation is not None:
        problem = deployment.check_traffic(config)
        if problem:
            raise PreflightError(f"{where}{problem}")
        vnf = classes.get("vnf")
        if deployment.requires_vnf and vnf is not None and getattr(vnf, "routing", False):
            raise PreflightError(f"{where}deployment {deployment.name}: vnf {vnf.name} routes, rewriting the inner "
                                 "frames' MACs the generator verifies; behind a VTEP use a forwarding VNF (testpmd)")
    elif encapsulation is not None:
        overlays = " or ".join(sorted(n for n, d in DEPLOYMENTS.items() if d.encapsulation == encapsulation))
        raise PreflightError(f"{where}traffic.encapsulation {encapsulation} needs an overlay deployment "
                             f"({overlays}; this test's is {deployment.name})")
    if encapsulation is None:
        return
    for kind, attribute, what in (("vswitch", "tunnel_types", "terminate"), ("trafficgen", "encapsulations", "build")):
        cls = classes[kind]
        if encapsulation not in tuple(getattr(cls, attribute, ()) or ()):
            able = [n for n in _plugins_listing(kind, attribute, encapsulation)]
            hint = f" (use --{kind} {' or '.join(able)})" if able else ""
            raise PreflightError(f"{where}{kind} {cls.name} cannot {what} {encapsulation} tunnels{hint}")


def _plugins_listing(kind: str, attribute: str, value: str) -> list[str]:
    """Installed plugins of ``kind`` whose class lists ``value`` in ``attribute``."""
    out = []
    for name in plugins.available(kind):
        try:
            cls = plugins.load(kind, name)
        except plugins.UnknownPluginError:
            continue
        if value in tuple(getattr(cls, attribute, ()) or ()):
            out.append(name)
    return out


def _check_rule_set_support(config: Mapping[str, Any], switch: type[Plugin], where: str) -> None:
    """``dut.rules`` on a switch that does not declare ``supports_rule_sets`` is refused:
    it would forward without the rules and the figure would be plain forwarding published
    under a rule-scaling name."""
    requested = (config.get("dut") or {}).get("rules")
    if requested is None or getattr(switch, "supports_rule_sets", False) is True:
        return
    name = switch.name  # before loading the others (an alias would rename the class)
    able = rule_set_switches()
    hint = f"use --vswitch {' or '.join(able)}" if able else "no installed vswitch plugin supports them"
    raise PreflightError(
        f"{where}vswitch {name} cannot install OpenFlow rule sets, but dut.rules={requested} "
        f"asks for one ({hint}, or leave dut.rules unset)"
    )


def _check_meter_support(config: Mapping[str, Any], switch: type[Plugin], where: str) -> None:
    """``dut.meter_pps`` on a switch that does not declare ``supports_meters`` is refused:
    it would forward at full rate and a calibration run would "measure" a capacity the
    device never had."""
    requested = (config.get("dut") or {}).get("meter_pps")
    if requested is None or getattr(switch, "supports_meters", False) is True:
        return
    name = switch.name
    able = _switches_declaring("supports_meters")
    hint = f"use --vswitch {' or '.join(able)}" if able else "no installed vswitch plugin supports them"
    raise PreflightError(
        f"{where}vswitch {name} cannot put a meter on its forwarding path, but dut.meter_pps={requested} "
        f"asks for one ({hint}, or leave dut.meter_pps unset)"
    )


def _check_learning_support(config: Mapping[str, Any], switch: type[Plugin], deployment: type[Deployment],
                            where: str) -> None:
    """A learning topology (RFC 2889's p2p_learning) on a switch that does not declare
    ``supports_learning`` is refused: it would forward by its own rules and every address
    test would "fail" for a reason that is not learning."""
    if deployment.name != "p2p_learning" or getattr(switch, "supports_learning", False) is True:
        return
    able = _switches_declaring("supports_learning")
    raise PreflightError(f"{where}vswitch {switch.name} does not forward by MAC learning; "
                         f"{(config.get('test') or {}).get('name') or 'this test'} needs a switch that learns "
                         f"(use --vswitch {' or '.join(able) or 'a learning switch'})")


def rule_set_switches() -> list[str]:
    """Names of the installed vswitch plugins that declare ``supports_rule_sets``."""
    return _switches_declaring("supports_rule_sets")


def _switches_declaring(capability: str) -> list[str]:
    """Names of the installed vswitch plugins whose class sets ``capability`` to True."""
    out = []
    for name in plugins.available("vswitch"):
        try:
            cls = plugins.load("vswitch", name)
        except plugins.UnknownPluginError:
            continue  # a broken third-party plugin is its own error, not this one's
        if getattr(cls, capability, False) is True:
            out.append(name)
    return out


def check_plans(plans: Sequence[TestPlan]) -> list[CheckedPlan]:
    """Check every plan; the first problem found is raised."""
    probed: dict = {}
    return [check_plan(plan, probed) for plan in plans]
