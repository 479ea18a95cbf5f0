"""Execute test plans: one run id, one run directory, one teardown stack per invocation.

Order of a run, and why:

1. **Preflight** (:mod:`vsbench.runner.preflight`): every selected plugin is loaded through
   its entry point and asked for missing prerequisites, deployments and traffic types are
   checked -- before anything is created, so a missing binary is one line, exit 2 and
   nothing left behind (not even a run directory).
2. **Claim**: the run's lock in the state directory tells ``vsbench cleanup`` this run is
   alive (:mod:`vsbench.system.runstate`); SIGINT/SIGTERM/SIGHUP handlers turn a signal
   into an orderly teardown (SIGHUP: the ssh session the run was started from dropped).
3. ``config.yaml`` and ``sysinfo.json`` are written before the first trial, every trial is
   in ``trials.jsonl`` before the next starts, results.json/csv are rewritten after every
   frame size. A killed run leaves everything it finished readable.
4. Per plan: generator, deployment (testbed, switch, bridge, ports), generator start, then
   each frame size through its traffic type. Each plan's resources live on a child stack
   closed when the plan ends, so the next plan starts from a clean machine.
5. Teardown of everything, in reverse order, on success, failure and signal alike; then
   results.json (and a suite's suite.json, and report.html) are written with a terminal
   status whatever ended the run -- ``complete``, ``failed`` (a plan failed, or an error
   outside any plan) or ``interrupted`` (a signal, or Ctrl-C outside the handlers) --
   never left saying ``running``. Only ``kill -9`` skips this: ``vsbench cleanup`` marks
   such a run ``interrupted`` afterwards.

Exit codes: 0 every plan ran; 1 a plan failed; 2 a preflight error; 128+signal when
interrupted (130 SIGINT, 143 SIGTERM, 129 SIGHUP).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import signal
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping, Sequence

from rich.console import Console

from vsbench import __version__
from vsbench.deployment import DeploymentError
from vsbench.interfaces.collector import Collector
from vsbench.interfaces.plugin import PluginContext, PluginError
from vsbench.interfaces.traffic import VXLAN_OVERHEAD_BYTES
from vsbench.interfaces.trafficgen import TrafficGenerator
from vsbench.measurement import profiles
from vsbench.measurement.trial_runner import TrialRunner, TrialSink
from vsbench.results import frame_mix_figures, space_reserve, writers
from vsbench.results.model import FrameSizeResult, RunResults, TestResult, TrialIdentity
from vsbench.results.trial_log import FILE_NAME as TRIALS_FILE
from vsbench.results.trial_log import TrialLog
from vsbench.runner import doctor_host, guard, noisy_load, placement, preflight, traffic_tcp, traffic_types
from vsbench.runner.config import redact_secrets, redact_url_passwords
from vsbench.runner.display import RunDisplay
from vsbench.runner.integration.execute import StepFailed
from vsbench.runner.plan import TestPlan
from vsbench.system import cleanup, private_files, runstate, sysinfo
from vsbench.system.commands import CommandError
from vsbench.system.deadline import DeadlineExceeded
from vsbench.system.naming import new_run_id
from vsbench.system.resources import ResourceStack
from vsbench.system.testbed import TestbedError

log = logging.getLogger(__name__)

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
LOG_FILE = "vsbench.log"
#: report.html is rewritten between plans once the run (or its last report) is this old.
INTERIM_REPORT_INTERVAL_S = 60.0

#: Errors a plan can end with that are the environment's or the user's, not a vsbench bug:
#: reported as one line (the traceback goes to the run's log file only).
EXPECTED_ERRORS = (
    PluginError,
    DeadlineExceeded,
    CommandError,
    DeploymentError,
    traffic_types.TrafficTypeError,
    profiles.ProfileError,
    TestbedError,
    TimeoutError,
    OSError,
    ValueError,
    StepFailed,
)


class RunInterrupted(BaseException):
    """SIGINT, SIGTERM or SIGHUP arrived; unwinds the run so every resource is torn down.

    A BaseException so that plugin code catching ``Exception`` cannot swallow it.
    """

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(f"interrupted by {signal.Signals(signum).name}")


class SignalGuard:
    """Turns the first SIGINT/SIGTERM/SIGHUP into :class:`RunInterrupted`; later ones
    (during the teardown it causes) are only logged, so a second Ctrl-C cannot break the
    teardown. SIGHUP is what a run gets when the ssh session it was started from drops:
    its default action would kill the run with no teardown at all (namespaces, a switch
    and hugepages left behind, results.json saying ``running``)."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __init__(self) -> None:
        self.received: int | None = None
        self._raise = True
        self._owner_pid = os.getpid()
        self._previous: dict[int, Any] = {}

    def _handler(self, signum: int, _frame: Any) -> None:
        if os.getpid() != self._owner_pid:
            # A forked child (pyroute2 enters namespaces through one) inherits this handler
            # but not the run: it must die as it would have, never unwind our teardown.
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        if self._raise and self.received is None:
            self.received = signum
            self._raise = False
            raise RunInterrupted(signum)
        if self.received is None:
            self.received = signum
            log.warning("%s received: stopping after the current step", signal.Signals(signum).name)
        else:
            log.warning("%s received: tearing down, please wait", signal.Signals(signum).name)

    @contextlib.contextmanager
    def held(self):
        """Signals arriving inside are deferred to its end (a teardown or a file write is
        not cut in half); then the first one interrupts as usual."""
        if not self._raise:
            yield
            return
        self._raise = False
        try:
            yield
        finally:
            self._raise = True
        if self.received is not None:
            self._raise = False
            raise RunInterrupted(self.received)

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            log.debug("not the main thread: signal handlers not installed")
            return
        self._owner_pid = os.getpid()
        for signum in self.SIGNALS:
            if signum == signal.SIGHUP and signal.getsignal(signum) is signal.SIG_IGN:
                continue  # started with nohup: the user asked the run to outlive the session
            self._previous[signum] = signal.signal(signum, self._handler)

    def defer(self) -> None:
        """From now on, signals are recorded but do not interrupt (teardown is running)."""
        self._raise = False

    def restore(self) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        self._previous.clear()


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def run_dir_name(run_id: str, when: float | None = None) -> str:
    """``<YYYYmmdd-HHMMSS>-<runid>`` in local time, so run directories sort by start."""
    return time.strftime("%Y%m%d-%H%M%S", time.localtime(when)) + f"-{run_id}"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", text)[:80]


#: Loggers whose records are the run's own; any other logger is a library's.
OWN_LOGGERS = ("vsbench", "vsbench_plugins", "__main__")
LOG_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}


class _LibraryChatter(logging.Filter):
    """Keeps libraries' records below WARNING out of the run's log: pyroute2 alone once
    wrote 6 MB of DEBUG lines per quick start. With ``--debug`` their INFO lines pass."""

    def __init__(self, min_level: int) -> None:
        super().__init__()
        self.min_level = min_level

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name.split(".", 1)[0] in OWN_LOGGERS:
            return True
        return record.levelno >= self.min_level


class _PrivateFileHandler(logging.FileHandler):
    """A FileHandler whose file is created :data:`private_files.FILE_MODE` and never opened
    through a symlink (``logging.FileHandler`` uses ``open()``: the umask's mode, links followed),
    and whose records have every URL's password redacted: a plugin's error or a traceback
    may quote the database or API URL it failed to reach."""

    def format(self, record: logging.LogRecord) -> str:
        return redact_url_passwords(super().format(record))

    _failed = False

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 - logging's name
        """A log file that cannot be written (its filesystem full) costs the log, never a
        traceback on the terminal per record: one line, once; the terminal has the records."""
        if not self._failed:
            self._failed = True
            exc = sys.exc_info()[1]
            sys.stderr.write(f"vsbench: warning: run log {self.baseFilename} not written: {exc}\n")

    def _open(self):  # type: ignore[override]
        return private_files.open_append(Path(self.baseFilename), encoding=self.encoding or "utf-8",
                                         errors=self.errors)


class _RunLogFile:
    """The run's log file, for the run's duration: vsbench's records at ``level`` (the
    configuration's ``log_level``, INFO by default; DEBUG with ``--debug``) and libraries'
    warnings. Existing root handlers keep the level they showed before."""

    def __init__(self, path: Path, level: int = logging.INFO) -> None:
        private_files.make_dirs(path.parent)
        self.handler = _PrivateFileHandler(path, encoding="utf-8")
        self.handler.setLevel(level)
        self.handler.addFilter(_LibraryChatter(logging.INFO if level <= logging.DEBUG else logging.WARNING))
        self.handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root = logging.getLogger()
        self._root_level = root.level
        self._pinned: list[logging.Handler] = []
        effective = root.getEffectiveLevel()
        for h in root.handlers:
            if h.level == logging.NOTSET:
                h.setLevel(effective)
                self._pinned.append(h)
        root.addHandler(self.handler)
        root.setLevel(min(level, effective))

    def close(self) -> None:
        root = logging.getLogger()
        root.removeHandler(self.handler)
        root.setLevel(self._root_level)
        for h in self._pinned:
            h.setLevel(logging.NOTSET)
        self.handler.close()


def log_level_of(plans: Sequence[TestPlan], debug: bool) -> int:
    """The run log's level: DEBUG with ``--debug``, else the first plan's ``log_level``."""
    if debug:
        return logging.DEBUG
    configured = str((plans[0].config.get("log_level") if plans else None) or "info")
    return LOG_LEVELS.get(configured, logging.INFO)


class Run:
    """State of one invocation of :func:`run_plans`."""

    def __init__(self, plans: Sequence[TestPlan], checked: list[preflight.CheckedPlan],
                 results_dir: Path, console: Console, log_level: int = logging.INFO,
                 observer: "RunObserver | None" = None, tags: dict[str, str] | None = None) -> None:
        self.plans = list(plans)
        self.observer = observer
        self.log_level = log_level
        self.checked = checked
        self.console = console
        self.display = RunDisplay(console)
        self.run_id = new_run_id()
        self.run_dir = Path(results_dir) / run_dir_name(self.run_id)
        self.results = RunResults(run_id=self.run_id, started_at=utc_now(), vsbench_version=__version__,
                                  tags=dict(tags or {}))
        self.resources = ResourceStack()
        self.plugin_versions: list[dict[str, Any]] = []
        self._host_settings_doc: dict[str, Any] | None = None
        self.claim: runstate.RunClaim | None = None
        self.reserve: space_reserve.SpaceReserve | None = None
        self.guard = SignalGuard()
        self._report_clock = time.monotonic()  # the run's start, then its last report
        self.sink: TrialSink | None = None
        #: Generator ceilings measured in this run, reused by every plan with the same
        #: testbed (traffic_job.generator_ceiling).
        self.ceilings: dict = {}

    # -- files ----------------------------------------------------------------------------

    def write_results(self) -> None:
        with self.guard.held():
            writers.write_results_json(self.run_dir / "results.json", self.results)
            writers.write_results_csv(self.run_dir / "results.csv", self.results)

    def _interim_report_due(self) -> bool:
        """Whether to write report.html between plans: when the run (or the last report)
        is :data:`INTERIM_REPORT_INTERVAL_S` old. A long run shows what it has so far; a
        short one is not slowed by re-rendering every plan's plots after each plan (the
        final report is always written)."""
        return time.monotonic() - self._report_clock >= INTERIM_REPORT_INTERVAL_S

    def write_report(self) -> None:
        """report.html from the files written so far. It is derived from them and can be
        regenerated (``vsbench report``), so a failure here is logged, never the run's."""
        self._report_clock = time.monotonic()
        try:
            from vsbench.results import report_html  # matplotlib: imported only when a report is due

            report_html.write_report(self.run_dir)
        except Exception as exc:  # noqa: BLE001 - the results are safe; only the report is missing
            log.warning("could not write report.html: %s", one_line(exc))
            log.debug("report generation failed", exc_info=True)

    def write_sysinfo(self) -> None:
        writers.write_sysinfo_json(self.run_dir / "sysinfo.json", sysinfo.collect(
            self.run_id, self.plugin_versions, host_settings=self._host_settings()))

    def _host_settings(self) -> dict[str, Any] | None:
        """The lab settings of ``vsbench doctor --host`` for the plans' NICs and cores, read
        once per run (the host does not change under it). A fault here costs the record,
        never the run: it is logged and sysinfo.json goes without it."""
        if self._host_settings_doc is None:
            try:
                self._host_settings_doc = doctor_host.sysinfo_section([p.config for p in self.plans])
            except Exception as exc:  # noqa: BLE001 - a bill-of-materials item is not worth a run
                log.warning("could not read the host's lab settings: %s", one_line(exc))
                self._host_settings_doc = {}
        return self._host_settings_doc or None

    def write_config(self) -> None:
        doc = writers.run_config_document(
            self.run_id,
            (
                {"name": p.name, "label": p.label, "variant": p.variant,
                 "config": redact_secrets(p.config, checked.classes)}
                for p, checked in zip(self.plans, self.checked)
            ),
        )
        writers.write_config_yaml(self.run_dir / "config.yaml", doc)

    def notify(self, event: str) -> None:
        """Tell the observer (if any) of ``event``; its faults are logged, never raised."""
        if self.observer is None:
            return
        try:
            with self.guard.held():
                getattr(self.observer, event)(self.run_dir, self.results)
        except RunInterrupted:
            raise
        except Exception as exc:  # noqa: BLE001 - an observer's file is derived; the run goes on
            log.warning("run observer failed at %s: %s", event, one_line(exc))
            log.debug("observer failure", exc_info=True)

    # -- plans ----------------------------------------------------------------------------

    def context(self, plan_index: int, kind: str, name: str, config: Mapping[str, Any],
                resources: ResourceStack, dut_netns: str | None = None) -> PluginContext:
        """The plugin's own settings section and the plan's run parameters; never the
        configuration itself (DESIGN.md principle 8)."""
        section = (config.get("collector") or {}) if kind == "collector" else (config.get(kind) or {})
        work_dir = self.claim.work_dir / f"p{plan_index}" if self.claim else None
        if work_dir is not None and not work_dir.exists():
            private_files.make_dirs(work_dir, exist_ok=False)
            # Registered first on the plan's stack, so it runs after every plugin stopped.
            resources.register(f"work dir {work_dir}", remove_work_dir, work_dir)
        return PluginContext(
            run_id=self.run_id,
            settings=section.get(name) or {},
            log_dir=self.run_dir / "logs" / f"{plan_index}-{_slug(self.plans[plan_index].label)}",
            resources=resources,
            run=self.checked[plan_index].run,
            dut_netns=dut_netns,
            work_dir=work_dir,
        )

    def run_plan(self, index: int, test: TestResult) -> None:
        plan, checked = self.plans[index], self.checked[index]
        title = plan.label + (f" (repeat {plan.repeat[0]} of {plan.repeat[1]})" if plan.repeat else "")
        self.display.plan_started(index, len(self.plans), title, test.description)
        test.status = "running"
        self.write_results()
        plan_resources = ResourceStack()
        self.resources.enter_context(plan_resources)  # a signal closes it with the run
        try:
            self._run_plan_body(index, test, plan_resources, checked)
        finally:
            self.display.close_progress()
            with self.guard.held():
                plan_resources.close()

    def _run_plan_body(self, index: int, test: TestResult, resources: ResourceStack,
                       checked: preflight.CheckedPlan) -> None:
        plan = self.plans[index]
        config = plan.config
        gen_name = checked.classes["trafficgen"].name
        # Every plugin is held through the guard: deadlines on its calls, faults contained.
        policy = guard.DeadlinePolicy.from_config(config)
        generator: TrafficGenerator = guard.construct(  # type: ignore[assignment]
            checked.classes["trafficgen"], self.context(index, "trafficgen", gen_name, config, resources),
            policy, "trafficgen")
        collectors: list[Collector] = [
            guard.construct(cls, self.context(index, "collector", cls.name, config, resources), policy, "collector")
            for cls in checked.collectors
        ]
        vswitch_cls = checked.classes.get("vswitch")

        def make_vswitch(dut_netns: str | None):
            if vswitch_cls is None:
                raise DeploymentError(f"deployment {checked.deployment.name} builds no switch")
            return guard.construct(
                vswitch_cls, self.context(index, "vswitch", vswitch_cls.name, config, resources, dut_netns),
                policy, "vswitch")

        vnf_cls = checked.classes.get("vnf")

        def make_vnf(dut_netns: str | None):
            return guard.construct(
                vnf_cls, self.context(index, "vnf", vnf_cls.name, config, resources, dut_netns), policy, "vnf")

        deployment = checked.deployment(run_id=self.run_id, config=config, resources=resources,
                                        generator=generator, make_vswitch=make_vswitch,
                                        make_vnf=make_vnf if vnf_cls is not None else None)
        ports = deployment.build()
        resources.register(f"trafficgen {gen_name}", generator.stop)
        generator.start()

        vnfs = list(getattr(deployment, "vnfs", None) or ())
        for kind, plugin in (("trafficgen", generator), ("vswitch", deployment.vswitch),
                             *(("vnf", v) for v in (vnfs or [getattr(deployment, "vnf", None)]))):
            if plugin is not None:
                self.plugin_versions.append(sysinfo.plugin_versions(index, kind, plugin))
        self.write_sysinfo()
        test.switching_operations = deployment.switching_operations  # the shape as built
        if hasattr(deployment, "describe"):
            test.topology = deployment.describe()
        if checked.run.frame_modification is not None and test.topology is not None:
            test.topology = {**test.topology, "frame_modification": checked.run.frame_modification.to_dict()}
        for note in deployment.notes():  # what stands in for what the report had (v2v: endpoints for VMs; a router's sockets)
            test.notes.append(note)
            self.display.note(note)
        if checked.deployment.name == "clean":  # an integration testcase: its steps build the topology
            from vsbench.runner.integration import execute as integration

            steps_trials = TrialRunner(generator, self.sink, TrialIdentity(self.run_id, index, plan.label), collectors,
                                       vswitch=deployment.vswitch)
            integration.run_plan(test, config, deployment, generator, ports, self.run_id, self.display.note,
                                 self.write_results, steps_trials)
            return
        cpus = placement.cpu_plan(deployment.vswitch, generator, vnfs)
        test.cpu_plan, test.cpu_oversubscribed = cpus.to_dict(), cpus.oversubscribed
        self.display.note(cpus.text(), style="yellow" if cpus.oversubscribed else "default")
        for warning in placement.warning_lines(cpus):
            test.notes.append(warning)
            self.display.note(f"warning: {warning}")

        noise = noisy_load.start_for_plan(config, test.cpu_plan, resources, self.run_dir / "logs",
                                          self.claim.work_dir / f"p{index}" if self.claim else None)
        if noise is not None:  # a noisy neighbour (load:), measured around every trial
            test.load = noise.describe()
            test.notes.append(noise.text())
            self.display.note(noise.text())
            collectors = [*collectors, noise.collector()]
        identity = TrialIdentity(self.run_id, index, plan.label)
        trials = TrialRunner(generator, self.sink, identity, collectors, vswitch=deployment.vswitch,
                             vnfs=vnfs, paths=getattr(deployment, "paths", None) or ())
        traffic = config.get("traffic") or {}
        run_traffic_type = traffic_types.TRAFFIC_TYPES[test.traffic_type]
        largest = max_frame_bytes(deployment.vswitch)
        tunnel_bytes = VXLAN_OVERHEAD_BYTES if traffic.get("encapsulation") == "vxlan" else 0
        config, endpoint_skip, endpoint_note = traffic_tcp.endpoints_for(config, test.traffic_type, deployment.vswitch)
        not_in_effect = getattr(deployment.vswitch, "setting_not_in_effect", lambda: None)()
        for fs in test.frame_sizes:
            skip = endpoint_skip or (f"skipped: {not_in_effect}" if not_in_effect else None)
            mix = profiles.mix_of(traffic, fs.frame_size_bytes)  # a mix: its largest frame must pass
            biggest = mix.largest_bytes if mix is not None else fs.frame_size_bytes
            if largest is not None and biggest + tunnel_bytes > largest:
                inside = f" ({biggest} B inside VXLAN)" if tunnel_bytes else ""
                skip = (f"skipped: {deployment.vswitch.name} forwards frames of at most {largest} B "
                        f"as built here, not {biggest + tunnel_bytes} B{inside}")
            if skip:
                fs.status = "not-run"
                fs.notes.append(skip)
                self.display.note(f"warning: {plan.label} {fs.notes[-1]}")
                self.write_results()
                continue
            # several port pairs (p2p/phy_vnf_phy topology.port_pairs, lanes) go as port-to-port streams
            profile = profiles.on_port_pairs(deployment.profile(profiles.build_profile(
                traffic, fs.frame_size_bytes, checked.run.frame_modification)), deployment.generator_port_count // 2)
            if profile.frame_modification is not None:  # figures are of the frames sent
                fs.received_frame_size_bytes = profile.frame_size_bytes + profile.frame_modification.size_delta_bytes
            if profile.encapsulation is not None:
                fs.outer_frame_size_bytes = profile.outer_frame_size_bytes
            if profile.frame_mix is not None:
                fs.frame_mix = profile.frame_mix.to_json()
            fs.nominal_line_rate_fps = profiles.nominal_line_rate_fps(config, profile)
            fs.status = "running"
            self.write_results()  # on disk too: a run killed now shows which frame size it was in
            first_trial = len(trials.records)
            trials.frame_size_bytes = profile.frame_size_bytes
            try:
                if profile.frame_mix is not None and not generator.capabilities().frame_mix:
                    raise PluginError(f"{generator.name} cannot send frame mix {profile.frame_mix.name} with its "
                                      "settings (its capabilities say no frame_mix)")
                generator.configure(profile, ports)
                self._set_line_rate(fs, config, profile, generator)
                # asked again per profile: a generator's limits can depend on it (port speed x size)
                capabilities = generator.capabilities()
                job = traffic_types.FrameSizeJob(
                    config=config, profile=profile, generator=generator, capabilities=capabilities,
                    trials=trials, nominal_line_rate_fps=fs.nominal_line_rate_fps, result=fs,
                    on_start=lambda max_load, fs=fs: self.display.frame_size_started(
                        plan.label, fs.frame_size_bytes, test.traffic_type, max_load),
                    notes=[endpoint_note] if endpoint_note else [],
                    ceilings=self.ceilings,
                    testbed_key=(deployment.name, getattr(deployment.vswitch, "name", None),
                                 getattr(getattr(deployment, "vnf", None), "name", None), repr(config.get("dut"))),
                    ports=tuple(ports), deployment=deployment,
                )
                run_traffic_type(job)
                if profile.frame_mix is not None:  # each size's share of the aggregate figures
                    frame_mix_figures.annotate(fs, profile.frame_mix, trials.records[first_trial:])
            except RunInterrupted:
                fs.status = "interrupted"
                raise
            except BaseException as exc:
                fs.status = "failed"
                fs.error = one_line(exc)
                raise
            finally:
                if fs.status != "complete":  # keep the account of what did run
                    traffic_types.account(fs, trials.records[first_trial:], [endpoint_note] if endpoint_note else [])
                note_wrong_frames(fs, trials.records[first_trial:])
                if noise is not None:
                    fs.load = noisy_load.account(trials.records[first_trial:])
                    self.display.note(f"{plan.label} {fs.frame_size_bytes} B: {noisy_load.summary_text(fs.load)}")
                normalise_points(test, fs)
                self.display.frame_size_finished(fs)
                self.write_results()
        test.status = "complete"

    def _set_line_rate(self, fs: FrameSizeResult, config: Mapping[str, Any], profile: Any,
                       generator: TrafficGenerator) -> None:
        """The line rate at the sending ports' own speed where the generator knows every
        one (a NIC, a TRex or IxNetwork port), else the nominal one (``testbed.link_gbps``)."""
        try:
            speeds = list(generator.port_speeds())
        except PluginError as exc:
            speeds = []
            log.warning("%s: port speeds unknown (%s); the line rate is nominal", generator.name, one_line(exc))
        rate = profiles.line_rate(config, profile, speeds)
        fs.nominal_line_rate_fps = rate.fps
        fs.link_speed_source = rate.link_speed_source
        fs.link_speeds_bps = list(rate.link_speeds_bps)
        fs.link_speed_reason = rate.reason

    # -- the whole run ----------------------------------------------------------------------

    def prepare(self) -> None:
        """Create the run directory and its space reserve (the run's first write): on a
        full or read-only results filesystem this fails before anything else exists, and
        the run directory is removed again."""
        private_files.make_dirs(self.run_dir, exist_ok=False)
        try:
            self.reserve = space_reserve.SpaceReserve(self.run_dir)
        except OSError:
            shutil.rmtree(self.run_dir, ignore_errors=True)
            raise

    def execute(self) -> int:
        if self.reserve is None:
            self.prepare()
        guard = self.guard
        log_file = _RunLogFile(self.run_dir / "logs" / LOG_FILE, self.log_level)
        trial_log: TrialLog | None = None
        exit_code = EXIT_OK
        try:
            guard.install()
            self.claim = runstate.claim(self.run_id, self.run_dir)
            log.info("run %s: %d plan(s), results in %s", self.run_id, len(self.plans), self.run_dir)
            self.display.run_started(self.run_id, self.run_dir, len(self.plans))
            self.results.tests = [self._test_result(i) for i in range(len(self.plans))]
            self.write_config()
            self.write_sysinfo()
            self.write_results()
            self.notify("started")
            trial_log = TrialLog(self.run_dir / TRIALS_FILE)
            self.sink = TrialSink(trial_log, [self.display.trial])
            aborted: str | None = None
            for index, test in enumerate(self.results.tests):
                if aborted is not None:
                    test.status, test.error = "not-run", aborted
                    self.display.note(f"{test.label}: {aborted}", style="red")
                    continue
                try:
                    self.run_plan(index, test)
                except RunInterrupted:
                    raise
                except Exception as exc:  # noqa: BLE001 - one plan's failure is reported, the run goes on
                    test.status = "failed"
                    test.error = one_line(exc)
                    exit_code = EXIT_FAILED
                    if isinstance(exc, EXPECTED_ERRORS):
                        # the traceback (a plugin's, chained) is in the log file, and on -v
                        log.debug("plan %s failed", test.label, exc_info=True)
                    else:
                        log.error("internal error in plan %s:\n%s", test.label, traceback.format_exc())
                    self.display.note(f"{test.label}: failed: {test.error}", style="red")
                    if isinstance(exc, DeadlineExceeded):
                        # a plugin that stopped answering was interrupted and torn down; the
                        # next plans would drive the same software: the run ends here
                        aborted = f"not run: the run ended after {test.label} missed a deadline"
                self.notify("plan_finished")
                if index < len(self.results.tests) - 1 and self._interim_report_due():
                    self.write_report()  # the last plan's report is the final one
            self.results.status = "complete" if exit_code == EXIT_OK else "failed"
        except RunInterrupted as exc:
            guard.defer()
            log.warning("run %s %s; tearing down", self.run_id, exc)
            self.display.close_progress()
            self.display.note(f"{exc}: tearing down; finished trials are in {self.run_dir / TRIALS_FILE}",
                              style="red")
            self.results.status = "interrupted"
            for test in self.results.tests:
                if test.status == "running":
                    test.status = "interrupted"
                    test.error = test.error or str(exc)  # the final line names the signal
                elif test.status == "not-run":
                    test.error = test.error or f"not run: {exc}"
                for fs in test.frame_sizes:
                    if fs.status == "running":
                        fs.status = "interrupted"
            exit_code = 128 + exc.signum
        except OSError as exc:
            # The run's own files cannot be written (the results filesystem full, read-only)
            # or the state directory cannot be used: the run fails with that one line.
            guard.defer()
            log.error("run %s cannot go on: %s", self.run_id, one_line(exc))
            log.debug("run %s file error", self.run_id, exc_info=True)
            self._close_unfinished("failed", one_line(exc))
            for test in self.results.tests:
                if test.status == "not-run" and not test.error:
                    test.error = f"not run: {one_line(exc)}"
            exit_code = EXIT_FAILED
        except BaseException as exc:
            # Outside any plan (writing a file, a bug in the runner) or not an Exception at
            # all (Ctrl-C where no handler is installed, SystemExit): the run's files must
            # still end with a terminal status; the CLI reports the error itself.
            guard.defer()
            interrupted = not isinstance(exc, Exception)
            log.error("run %s ended by %s", self.run_id, one_line(exc), exc_info=not interrupted)
            self._close_unfinished("interrupted" if interrupted else "failed", one_line(exc))
            raise
        finally:
            guard.defer()
            self.display.close_progress()
            try:
                self.resources.close()
            finally:
                if self.results.status == "running":  # whatever path got here: never left running
                    self._close_unfinished("failed", "the run ended before it could record why")
            if trial_log is not None:
                trial_log.close()
            self.results.finished_at = utc_now()
            self._write_final_results()
            self.notify("finished")
            self.write_report()
            if self.claim is not None:
                self.claim.release()
            log_file.close()
            guard.restore()
        if guard.received is not None and exit_code == EXIT_OK:
            exit_code = 128 + guard.received  # a signal arrived during the final teardown
        self.display.summary(self.results, self.run_dir)
        return exit_code

    def _write_final_results(self) -> None:
        """results.json/csv with the run's terminal status; on a full disk, again after
        freeing the run's space reserve (:mod:`vsbench.results.space_reserve`). A failure is
        one line on the terminal (its traceback in the log), never the run's outcome."""
        reserve = self.reserve
        try:
            try:
                self.write_results()
            except OSError as exc:
                if not (space_reserve.is_no_space(exc) and reserve is not None and reserve.held):
                    raise
                reserve.release()
                log.warning("results filesystem full: wrote the final results into the run's space reserve")
                self.write_results()
        except Exception as exc:  # noqa: BLE001 - never mask the run's own outcome
            log.error("could not write the final results: %s", one_line(exc))
            log.debug("final results not written", exc_info=True)
        finally:
            if reserve is not None:
                reserve.release()

    def _close_unfinished(self, status: str, error: str) -> None:
        """The run, and every plan and frame size still ``running``, end as ``status``
        with ``error`` (a run's files must never say ``running`` once it is over)."""
        if self.results.status == "running":
            self.results.status = status
        for test in self.results.tests:
            if test.status == "running":
                test.status = status
                test.error = test.error or error
            for fs in test.frame_sizes:
                if fs.status == "running":
                    fs.status = status
                    fs.error = fs.error or error

    def _test_result(self, index: int) -> TestResult:
        plan, checked = self.plans[index], self.checked[index]
        config = plan.config
        traffic = config.get("traffic") or {}
        test_section = config.get("test") or {}
        return TestResult(
            plan_index=index,
            label=plan.label,
            testcase=plan.name,
            description=str(test_section.get("description") or "").strip(),
            variant=dict(plan.variant),
            deployment=checked.deployment.name,
            switching_operations=(checked.shape or checked.deployment).switching_operations,
            vswitch=checked.classes["vswitch"].name if "vswitch" in checked.classes else "none",
            vnf=checked.classes["vnf"].name if "vnf" in checked.classes else "",
            trafficgen=checked.classes["trafficgen"].name,
            traffic_type=("integration" if checked.deployment.name == "clean"
                          else str(traffic.get("type", "rfc2544_throughput"))),
            link_gbps=float((config.get("testbed") or {}).get("link_gbps") or 0) or None,
            bidirectional=bool(traffic.get("bidirectional", True)),
            flows=int(traffic.get("flows") or 1),
            frame_sizes=[FrameSizeResult(size, status="not-run") for size in checked.frame_sizes
                         if checked.deployment.name != "clean"],  # integration steps send their own
            repeat=None if plan.repeat is None else {"index": plan.repeat[0], "count": plan.repeat[1]},
        )


def normalise_points(test: TestResult, fs: FrameSizeResult) -> None:
    """What makes a frame size's points comparable across topologies and honest about CPU:
    ``switched_fps`` (throughput x the deployment's switching operations, ONP 2.1 section
    5.2) and ``cpu_oversubscribed`` (the test's CPU plan oversubscribed, or a busy poller of
    the switch or a VNF starved during the point's trial)."""
    for point in fs.points:
        if point.throughput_fps is not None and test.switching_operations:
            point.switched_fps = point.throughput_fps * test.switching_operations
        starved = bool((point.efficiency or {}).get("oversubscribed")) or any(
            v.get("starved") for v in (point.vnf or {}).get("vnfs") or ())
        point.cpu_oversubscribed = bool(test.cpu_oversubscribed) or starved
    if fs.tcp is not None:
        fs.tcp.cpu_oversubscribed = bool(test.cpu_oversubscribed)


def note_wrong_frames(fs: FrameSizeResult, records: Sequence[Any]) -> None:
    """``rx_wrong_frames`` of the frame size from its trials (a generator that verifies
    what it receives), and a note when any frame arrived wrong."""
    counts = [r.result.rx_wrong_frames for r in records if r.result.rx_wrong_frames is not None]
    if not counts:
        return
    fs.rx_wrong_frames = int(sum(counts))
    if fs.rx_wrong_frames:
        note = (f"{fs.rx_wrong_frames} frame(s) arrived other than the DUT should have delivered them "
                "(see rx_wrong_samples in trials.jsonl); counted as lost")
        if note not in fs.notes:
            fs.notes.append(note)


def max_frame_bytes(vswitch: Any) -> int | None:
    """The switch's largest forwarded frame (``VSwitch.max_frame_bytes``), None when it
    does not say or cannot tell (the frame sizes are then all tried)."""
    if vswitch is None or not hasattr(vswitch, "max_frame_bytes"):
        return None
    try:
        value = vswitch.max_frame_bytes()
    except Exception as exc:  # noqa: BLE001 - a hint must not fail the plan
        log.warning("could not read the largest frame of %s: %s", getattr(vswitch, "name", vswitch), exc)
        return None
    return int(value) if value else None


def mounts_under(path: Path) -> list[str]:
    """Mount points at or below ``path`` (a private hugetlbfs a plugin failed to unmount)."""
    prefix = str(path.resolve())
    try:
        points = cleanup.mount_points()
    except OSError:
        return []
    return [p for p in points if p == prefix or p.startswith(prefix + "/")]


def remove_work_dir(path: Path) -> None:
    """Remove a plan's work dir once its plugins stopped; never while something is mounted
    inside it (that is left for ``vsbench cleanup``, which unmounts first)."""
    if not path.exists():
        return
    mounted = mounts_under(path)
    if mounted:
        log.warning("leaving %s: still mounted: %s (run `vsbench cleanup`)", path, ", ".join(mounted))
        return
    shutil.rmtree(path)


def one_line(exc: BaseException) -> str:
    """``exc`` as the one line results.json and the terminal show, a URL's password redacted."""
    text = redact_url_passwords(str(exc).strip().splitlines()[0]) if str(exc).strip() else ""
    if isinstance(exc, EXPECTED_ERRORS) and text:
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class RunObserver:
    """Told of a run's progress by :meth:`Run.execute`, so a layer above the runner (a
    suite) can keep its own files beside the run's. Each call gets the run directory and
    the run's results as written so far; an observer's fault is logged, never the run's.
    ``plan_finished`` is called after every plan, ``finished`` once after the final
    results.json and before the final report.html."""

    def started(self, run_dir: Path, results: RunResults) -> None:
        """The run directory exists, config.yaml and the first results.json are written."""

    def plan_finished(self, run_dir: Path, results: RunResults) -> None:
        """A plan ended (complete, failed or not run)."""

    def finished(self, run_dir: Path, results: RunResults) -> None:
        """The run ended (its final status is in ``results``)."""


@dataclass(frozen=True)
class RunOutcome:
    """How a run ended: its exit code and its directory (None when nothing was created)."""

    exit_code: int
    run_dir: Path | None


def execute_plans(plans: list[TestPlan], results_dir: Path, console: Console,
                  err_console: Console | None = None, debug: bool = False,
                  observer: RunObserver | None = None, tags: dict[str, str] | None = None) -> RunOutcome:
    """Run ``plans`` in order into ``<results_dir>/<YYYYmmdd-HHMMSS>-<runid>/``.

    The exit code is 0 when every plan ran, 1 when one failed, 2 when a preflight check
    failed (nothing was created, no run directory), 128+signal when interrupted. The
    one-line errors of exit 2 go to ``err_console`` (the CLI's stderr) when given, else to
    ``console``. ``debug`` (``--debug``) logs DEBUG records to the run's log whatever
    ``log_level`` says. ``observer`` (:class:`RunObserver`) is told of the run's progress.
    ``tags`` (``--tag KEY=VALUE``) go into results.json as the user gave them, so the store
    can list and trend runs by them.
    """
    err = err_console or console
    if not plans:
        err.print("vsbench: error: no test plans to run", markup=False)
        return RunOutcome(EXIT_USAGE, None)
    try:
        checked = preflight.check_plans(plans)
    except preflight.PreflightError as exc:
        err.print(f"vsbench: error: {exc}", markup=False, highlight=False, soft_wrap=True)
        return RunOutcome(EXIT_USAGE, None)
    try:
        run = Run(plans, checked, results_dir, console, log_level_of(plans, debug), observer, tags)
        private_files.make_dirs(Path(results_dir))
    except OSError as exc:
        err.print(f"vsbench: error: cannot create results directory {results_dir}: {exc.strerror}",
                  markup=False, highlight=False, soft_wrap=True)
        return RunOutcome(EXIT_USAGE, None)
    try:
        run.prepare()
    except OSError as exc:
        err.print(f"vsbench: error: cannot write in results directory {results_dir}: {exc.strerror}",
                  markup=False, highlight=False, soft_wrap=True)
        return RunOutcome(EXIT_USAGE, None)
    code = run.execute()
    return RunOutcome(code, run.run_dir)


def run_plans(plans: list[TestPlan], results_dir: Path, console: Console,
              err_console: Console | None = None, debug: bool = False) -> int:
    """:func:`execute_plans`, returning only the exit code."""
    return execute_plans(plans, results_dir, console, err_console, debug).exit_code
