"""Run an integration testcase's steps against a started switch and the testbed.

The ``clean`` deployment has started the switch and made the testbed's links; each step
here is one call of the switch plugin's contract (:class:`~vsbench.interfaces.vswitch.VSwitch`:
``add_bridge``, ``add_port``, ``add_flow``, ``dump_flows``...), one short fixed-rate trial
of the generator, or one check. A step's outcome is recorded as it ends; the first step
that fails or cannot be done ends the test (the rest are ``not-run``). Whatever happened,
every bridge the steps added and did not delete is deleted again (with its ports and
flows) before the switch stops, so a failing step leaves nothing of what the steps built.

A switch that has no such operation or port kind (:class:`SwitchCannot`) *skips* the
testcase with that reason: it is not a failure of the switch.
"""

from __future__ import annotations

import json
import logging
import re
import time
from typing import Any, Callable, Mapping, Sequence

from vsbench.interfaces.plugin import PluginError
from vsbench.interfaces.traffic import FlowFields, GeneratorPort, TrafficProfile
from vsbench.interfaces.trafficgen import TrafficGenerator
from vsbench.interfaces.vswitch import FlowSpec, PortSpec, SwitchCannot, SwitchPort, VSwitch
from vsbench.results.model import StepResult
from vsbench.runner.integration.steps import COMMAND_ALLOW_LIST, Ref, Step, StepError, compare, resolve
from vsbench.system import commands, naming

log = logging.getLogger(__name__)

#: The VXLAN underlay of a ``kind: vxlan`` port: this switch's VTEP and the far one (a
#: static neighbour on the testbed port: nothing is ARPed). The generator's port on that
#: link sees the encapsulated frames.
VTEP = {"local_ip": "192.168.240.1", "local_mac": "02:76:73:00:f0:01", "remote_ip": "192.168.240.2",
        "remote_mac": "02:76:73:00:f0:02", "prefixlen": 24, "dst_port": 4789}
#: The addresses of the frames ``send_traffic`` sends (FlowFields' defaults): a flow step
#: matches them as ``eth_dst: 02:00:00:00:00:02`` (the reverse direction swaps them).
TRAFFIC_FIELDS = FlowFields()
DUMP_EXCERPT_CHARS = 400
#: A send_traffic trial the generator could not send as asked (late on a busy 2-CPU host)
#: is tried once more before the step errs; both trials are in trials.jsonl.
SEND_RETRIES = 1


class StepFailed(Exception):
    """An integration step failed (a check did not hold, or the step could not be done);
    the message names the step. The plan fails with it: exit 1."""


class _CheckFailed(Exception):
    """A check step's condition did not hold (the step's status is ``failed``)."""


class StepRunner:
    """Executes :class:`Step` objects in order; keeps results and what the steps made."""

    def __init__(self, vswitch: VSwitch, dut_ports: Sequence[PortSpec], generator: TrafficGenerator,
                 generator_ports: Sequence[GeneratorPort], run_id: str, dut_netns: str | None,
                 on_step: Callable[[StepResult], None] | None = None, trials: Any = None) -> None:
        self.vswitch = vswitch
        #: The plan's :class:`~vsbench.measurement.trial_runner.TrialRunner`: a step's trial
        #: goes through the core's validity rules into trials.jsonl (role ``continuous``, a
        #: fixed-rate trial); None calls the generator directly (unit tests).
        self.trials = trials
        self.dut_ports = list(dut_ports)
        self.generator = generator
        self.generator_ports = list(generator_ports)
        self.run_id = run_id
        self.dut_netns = dut_netns
        self.on_step = on_step
        #: ``${step.field}`` values and ``${step}`` objects (a (bridge, SwitchPort) or (bridge, FlowSpec)).
        self.values: dict[str, dict[str, Any]] = {}
        self.objects: dict[str, Any] = {}
        self.bridges: list[str] = []
        self._made = 0

    # -- the run -------------------------------------------------------------------------

    def run(self, steps: Sequence[Step]) -> tuple[list[StepResult], str | None, str | None]:
        """Every step's result, then (failure, skip reason): at most one is not None."""
        results: list[StepResult] = []
        failure: str | None = None
        skipped: str | None = None
        try:
            for step in steps:
                if failure or skipped:
                    results.append(StepResult(step.index, step.kind, step.label, "not-run", name=step.name))
                    continue
                result = self._one(step)
                results.append(result)
                if self.on_step is not None:
                    self.on_step(result)
                if result.status == "skipped":
                    skipped = f"skipped at step {step.label}: {result.detail}"
                elif result.status != "passed":
                    failure = f"step {step.label} {result.status}: {result.detail}"
        finally:
            self.undo()
        return results, failure, skipped

    def _one(self, step: Step) -> StepResult:
        start = time.monotonic()
        values: dict[str, Any] = {}
        try:
            detail = getattr(self, f"_{step.kind}")(step, values) or ""
            status = "passed"
        except _CheckFailed as exc:
            status, detail = "failed", str(exc)
        except SwitchCannot as exc:
            status, detail = "skipped", _line(exc)
        except (PluginError, StepError, commands.CommandError, OSError, ValueError, TimeoutError) as exc:
            log.debug("step %s", step.label, exc_info=True)
            status, detail = "error", _line(exc)
        if step.name is not None:
            self.values[step.name] = values
        return StepResult(step.index, step.kind, step.label, status, name=step.name,
                          duration_s=round(time.monotonic() - start, 3), detail=detail, values=values)

    def undo(self) -> None:
        """Delete every bridge the steps added and did not delete, newest first (its
        ports and flows go with it). Best effort: a failure is logged, and the switch's own
        teardown (it stops next) removes the rest."""
        for bridge in reversed(self.bridges):
            try:
                self.vswitch.delete_bridge(bridge)
            except PluginError as exc:
                log.warning("integration teardown: bridge %s: %s", bridge, _line(exc))
        self.bridges.clear()

    # -- helpers -------------------------------------------------------------------------

    def _resolve(self, value: Any) -> Any:
        return resolve(value, self.values, self.objects)

    def _port(self, ref: Ref) -> SwitchPort:
        return self._resolve(ref)[1]

    def _name(self, role: str) -> str:
        self._made += 1
        return naming.iface_name(self.run_id, role, self._made)

    # -- steps (``_<kind>(step, values) -> detail``) -----------------------------------

    def _add_bridge(self, step: Step, values: dict[str, Any]) -> str:
        bridge = step.options["bridge"]
        self.vswitch.add_bridge(bridge)
        self.bridges.append(bridge)
        values["name"] = self.vswitch.bridge_name(bridge)
        return f"bridge {bridge} added as {values['name']}"

    def _delete_bridge(self, step: Step, values: dict[str, Any]) -> str:
        bridge = step.options["bridge"]
        self.vswitch.delete_bridge(bridge)
        if bridge in self.bridges:
            self.bridges.remove(bridge)
        for key, (where, _obj) in list(self.objects.items()):
            if where == bridge:
                del self.objects[key]
        return f"bridge {bridge} deleted"

    def _add_port(self, step: Step, values: dict[str, Any]) -> str:
        o = step.options
        kind = o["kind"]
        who = self.vswitch.name or type(self.vswitch).__name__
        if kind == "physical":
            spec = self.dut_ports[o["port"]]
        elif kind == "vxlan":
            if "vxlan" not in self.vswitch.tunnel_types:
                raise SwitchCannot(f"{who} terminates no VXLAN tunnels")
            spec = PortSpec(kind="tunnel", name=self._name("x"), iface=self.dut_ports[o["port"]].iface,
                            options={"type": "vxlan", "key": int(o.get("key", 100)), **VTEP})
        else:
            offered = tuple(getattr(self.vswitch, "vport_kinds", ()) or ())
            if kind == "vport":
                if not offered:
                    raise SwitchCannot(f"{who} offers no virtual port kind (vhost-user, tap)")
                kind = offered[0]
            elif kind not in offered:
                raise SwitchCannot(f"{who} cannot add a {kind} port on its own "
                                   f"(it offers: {', '.join(offered) or 'none'})")
            spec = PortSpec(kind=kind, name=self._name("v"))  # type: ignore[arg-type]
        port = self.vswitch.add_port(o["bridge"], spec)
        values.update(name=port.name, number=port.number, iface=port.spec.iface or port.name)
        if step.name is not None:
            self.objects[step.name] = (o["bridge"], port)
        return f"{kind} port {port.name} (number {port.number}) in bridge {o['bridge']}"

    def _delete_port(self, step: Step, values: dict[str, Any]) -> str:
        port = self._port(step.options["port"])
        self.vswitch.delete_port(step.options["bridge"], port)
        self.objects.pop(step.options["port"].step, None)
        return f"port {port.name} deleted from bridge {step.options['bridge']}"

    def _flow(self, step: Step) -> FlowSpec:
        o = step.options
        match = dict(o["match"])
        if "in_port" in match:
            match["in_port"] = self._port(match["in_port"]).number
        output = self._port(o["output"]) if "output" in o else None
        return FlowSpec(match=match, output=output, priority=int(o.get("priority", 100)))

    def _add_flow(self, step: Step, values: dict[str, Any]) -> str:
        flow = self._flow(step)
        self.vswitch.add_flow(step.options["bridge"], flow)
        if step.name is not None:
            self.objects[step.name] = (step.options["bridge"], flow)
        out = f"output {flow.output.name}" if flow.output is not None else "drop"
        return f"flow {flow.match} -> {out}"

    def _delete_flow(self, step: Step, values: dict[str, Any]) -> str:
        _bridge, flow = self._resolve(step.options["flow"])
        self.vswitch.delete_flow(step.options["bridge"], flow)
        self.objects.pop(step.options["flow"].step, None)
        return f"flow {flow.match} deleted"

    def _connect(self, step: Step, values: dict[str, Any]) -> str:
        a, b = self._port(step.options["a"]), self._port(step.options["b"])
        self.vswitch.connect(step.options["bridge"], a, b)
        return f"{a.name} <-> {b.name}"

    def _send_traffic(self, step: Step, values: dict[str, Any]) -> str:
        o = step.options
        rate, duration = float(o.get("rate_fps", 10000)), float(o.get("duration_s", 1))
        ends = [self.generator_ports[o.get("from_port", 0)], self.generator_ports[o.get("to_port", 1)]]
        profile = TrafficProfile(frame_size_bytes=int(o.get("frame_size", 64)), flows=1,
                                 bidirectional=bool(o.get("bidirectional", False)), fields=TRAFFIC_FIELDS)
        self.generator.configure(profile, ends)
        for attempt in range(1 + SEND_RETRIES):
            if self.trials is not None:
                self.trials.frame_size_bytes = profile.frame_size_bytes
                trial = self.trials.run(rate, duration, role="continuous").result
            else:
                trial = self.generator.run_trial(rate, duration)
            if trial.valid:
                break
            log.warning("step %s: trial invalid (%s)%s", step.label, trial.invalid_reason,
                        "; once more" if attempt < SEND_RETRIES else "")
        if not trial.valid:
            raise StepError(f"the generator did not send as asked ({trial.invalid_reason}); not a verdict "
                            "on the switch")
        tx_s = trial.tx_duration_s or duration
        values.update(tx_frames=int(trial.tx_frames), rx_frames=int(trial.rx_frames),
                      rx_wrong_frames=int(trial.rx_wrong_frames or 0), tx_fps=round(trial.tx_frames / tx_s, 1))
        return (f"{profile.frame_size_bytes} B at {rate:g} fps for {duration:g} s, port {o.get('from_port', 0)} -> "
                f"{o.get('to_port', 1)}: sent {trial.tx_frames}, received {trial.rx_frames}"
                + (f", {trial.rx_wrong_frames} arrived wrong" if trial.rx_wrong_frames else ""))

    def _port_counters(self, step: Step, values: dict[str, Any]) -> str:
        port = self._port(step.options["port"])
        values.update(self.vswitch.port_counters(step.options["bridge"], port))
        return f"{port.name}: " + ", ".join(f"{k} {v}" for k, v in values.items())

    def _link_counters(self, step: Step, values: dict[str, Any]) -> str:
        """The kernel's counters of the DUT end of a testbed link (``ip -s -j link``): what
        left or reached the switch's port on the wire, whatever the switch counts itself."""
        iface = self.dut_ports[step.options["port"]].iface
        proc = commands.run(["ip", "-s", "-j", "link", "show", "dev", str(iface)], netns=self.dut_netns,
                            timeout_s=10)
        stats = json.loads(proc.stdout)[0].get("stats64", {})
        values.update({f"{d}_{k}": int(stats.get(d, {}).get(k, 0)) for d in ("rx", "tx")
                       for k in ("packets", "bytes", "dropped")})
        return f"{iface}: " + ", ".join(f"{k} {v}" for k, v in values.items())

    def _check_counters(self, step: Step, values: dict[str, Any]) -> str:
        o = step.options
        left, right = self._resolve(o["left"]), self._resolve(o["right"])
        minus = self._resolve(o["minus"]) if "minus" in o else None
        holds, text = compare(left, o["op"], right, o.get("factor"), minus)
        text = (f"{o['left']}" + (f" - {o['minus']}" if "minus" in o else "") + f" {o['op']} {o['right']}"
                + (f" * {o['factor']}" if "factor" in o else "") + f": {text}")
        if not holds:
            raise _CheckFailed(f"{text} does not hold")
        return text

    def _pattern(self, options: Mapping[str, Any]) -> tuple[str, re.Pattern[str], bool] | None:
        for key, want in (("contains", True), ("lacks", False)):
            if key in options:
                raw = options[key]
                pattern = re.escape(str(self._resolve(raw))) if isinstance(raw, Ref) else raw
                return key, re.compile(pattern, re.MULTILINE), want
        return None

    def _match(self, text: str, options: Mapping[str, Any], what: str) -> str:
        found = self._pattern(options)
        if found is None:
            return what
        key, pattern, want = found
        if bool(pattern.search(text)) != want:
            excerpt = " | ".join(line.strip() for line in text.strip().splitlines())[:DUMP_EXCERPT_CHARS]
            raise _CheckFailed(f"{what} {'does not contain' if want else 'contains'} /{pattern.pattern}/: {excerpt}")
        return f"{what} {key} /{pattern.pattern}/"

    def _check_dump(self, step: Step, values: dict[str, Any]) -> str:
        o = step.options
        if o["of"] == "flows":
            text, what = self.vswitch.dump_flows(o["bridge"]), f"flow dump of {o['bridge']}"
        else:
            text, what = self.vswitch.dump_state(), "switch state"
        return self._match(text, o, what)

    def _check_command(self, step: Step, values: dict[str, Any]) -> str:
        argv = [str(self._resolve(a)) for a in step.options["argv"]]
        if argv[0] not in COMMAND_ALLOW_LIST:  # parse_steps refused it already; never run another tool
            raise StepError(f"{argv[0]} is not an allowed tool")
        proc = commands.run(argv, netns=self.dut_netns, check=False, timeout_s=10)
        if proc.returncode != 0:
            raise _CheckFailed(f"{' '.join(argv)} exited {proc.returncode}: {(proc.stderr or '').strip()[:200]}")
        return self._match(proc.stdout or "", step.options, f"`{' '.join(argv)}`")

    def _wait(self, step: Step, values: dict[str, Any]) -> str:
        time.sleep(float(step.options["seconds"]))
        return f"waited {step.options['seconds']} s"


def _line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def run_plan(test: Any, config: Mapping[str, Any], deployment: Any, generator: TrafficGenerator,
             ports: Sequence[GeneratorPort], run_id: str, note: Callable[..., None],
             persist: Callable[[], None], trials: Any = None) -> None:
    """Run the plan's steps (``config["test"]["steps"]``) on the built ``clean``
    deployment; record them in ``test.steps`` (persisted after each); raise
    :class:`StepFailed` naming the first step that failed, or mark the test ``not-run``
    with the reason when the switch cannot do a step."""
    from vsbench.runner.integration.steps import parse_steps

    section = config.get("test") or {}
    steps = parse_steps(section.get("steps") or [], int(section.get("testbed_ports") or 2))
    marks = {"passed": "ok  ", "failed": "FAIL", "error": "ERR ", "skipped": "skip", "not-run": "    "}
    styles = {"passed": "green", "failed": "red", "error": "red", "skipped": "yellow"}

    def on_step(result: StepResult) -> None:
        test.steps.append(result)
        note(f"  {marks[result.status]} {result.label}: {result.detail} ({result.duration_s:.2f} s)",
             style=styles.get(result.status, "default"))
        persist()

    runner = StepRunner(deployment.vswitch, deployment.dut_ports, generator, ports, run_id,
                        deployment.testbed.dut_netns if deployment.testbed else None, on_step, trials)
    results, failure, skipped = runner.run(steps)
    test.steps = results
    if failure:
        raise StepFailed(failure)
    if skipped:
        test.status, test.error = "not-run", skipped
        note(f"{test.label}: {skipped}")
        return
    test.status = "complete"
