"""``trafgen``: the embedded default generator — netsniff-ng trafgen on the netns/veth testbed.

One trial, per direction (port 0 -> 1, and 1 -> 0 when bidirectional):

1. a tbf shaper on the sending port is set to the direction's rate (:mod:`.shaper`);
2. the ports' counters are read;
3. with latency, the probe helper is started inside the generator namespace;
4. one trafgen process per direction sends exactly ``rate x duration`` frames through the
   shaper (:mod:`.process`), pinned to its CPUs; once every trafgen is running, the probes
   start;
5. when trafgen has exited and the shaper queue is empty, the drain time passes, the probe
   helper finishes, and the counters are read again.

Frames sent = the sending port's ``tx_packets`` + ``tx_dropped`` delta (a veth counts a frame
its peer could not take as a TX drop; it left the generator all the same), minus the
probes sent on that port. Frames received = the peer port's ``rx_packets`` delta minus the
probes that reached the probe socket, minus frames that are neither (a DUT's own chatter,
:mod:`.foreign`). Counters are only read when no traffic flows.

A trial trafgen could not send at the asked rate keeps its real counters: it is cut at a
deadline (fewer frames than intended) or, when it finished late, marked invalid with the
time it took. ``tx_duration_s`` is trafgen's own clock for its sending loop plus what its
shaper still held when trafgen's exit was seen, at the shaper's rate. When trafgen is the
bottleneck the queue is empty and that is the sending time, measured by trafgen itself (not
by this process's polling, which a busy machine delays); when the shaper sets the pace the
figure may fall a few milliseconds short (what drained while trafgen was exiting), and the
shaper's pace is exact then.
"""

from __future__ import annotations

import logging
import os
import resource
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Mapping, Sequence

from vsbench.interfaces.plugin import PluginContext, PluginError, Prerequisite
from vsbench.interfaces.traffic import (
    DirectionCounters,
    FCS_BYTES,
    FlowFields,
    GeneratorCapabilities,
    GeneratorPort,
    TrafficProfile,
    TrialResult,
)
from vsbench.interfaces.trafficgen import TrafficGenerator
from vsbench.system.commands import CommandError, ManagedProcess, run, spawn, which
from vsbench.system.netlink import LinkCounterReader, LinkCounters, NetlinkError

from vsbench_plugins.trafficgen.trafgen import process, shaper
from vsbench_plugins.trafficgen.trafgen.foreign import ForeignFrameCounter
from vsbench_plugins.trafficgen.trafgen.settings import DEFAULTS, SETTINGS_SCHEMA, resolve

log = logging.getLogger(__name__)

DEFAULT_DRAIN_S = 0.5
DEFAULT_PROBE_RATE_FPS = 1000.0


@dataclass
class _Direction:
    """Everything one direction of the configured profile needs for a trial."""

    index: int
    tx: GeneratorPort
    rx: GeneratorPort
    fields: FlowFields
    plan: Any  # flows.FlowPlan
    template: Any  # frames.Template
    config_path: Path
    log_path: Path
    cpus: tuple[int, ...]


@dataclass
class _Sender:
    """One running trafgen process of a trial."""

    direction: _Direction
    frames: int
    process: ManagedProcess
    log_offset: int
    cut: bool = False
    exited_at: float | None = None
    drained_at: float | None = None
    queued_at_exit: int | None = None  # frames in the shaper when trafgen's exit was seen


def split_cpus(cpus: Sequence[int], directions: int) -> list[tuple[int, ...]]:
    """CPUs of each direction: consecutive shares of the sorted list (trafgen needs each
    direction's CPUs contiguous); all directions share the list when it is too short."""
    ordered = tuple(sorted(set(int(c) for c in cpus)))
    if directions <= 1 or len(ordered) < directions:
        return [ordered] * max(1, directions)
    size, extra = divmod(len(ordered), directions)
    shares, start = [], 0
    for i in range(directions):
        end = start + size + (1 if i < extra else 0)
        shares.append(ordered[start:end])
        start = end
    return shares


def _read_from(path: Path, offset: int) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


class Trafgen(TrafficGenerator):
    """netsniff-ng trafgen on the embedded testbed, paced by tbf, with a latency probe stream."""

    name: ClassVar[str] = "trafgen"
    description: ClassVar[str] = (
        "netsniff-ng trafgen on the netns/veth testbed (tbf-paced), kernel-timestamped latency probes"
    )
    settings_schema: ClassVar[dict] = SETTINGS_SCHEMA

    def __init__(self, context: PluginContext) -> None:
        super().__init__(context)
        self.cfg: dict[str, Any] = resolve(context.settings)
        self._profile: TrafficProfile | None = None
        self._directions: list[_Direction] = []
        self._netns: str | None = None
        self._reader: LinkCounterReader | None = None
        self._foreign: ForeignFrameCounter | None = None
        self._senders: list[_Sender] = []
        self._probe = None
        self._shaped: set[str] = set()
        self._started = False
        self._trial = 0

    # -- plugin contract ---------------------------------------------------------------

    @classmethod
    def check_prerequisites(cls, settings: Mapping[str, Any]) -> list[Prerequisite]:
        cfg = resolve(settings)
        missing = []
        if which(cfg["binary"]) is None:
            missing.append(Prerequisite(f"the trafgen binary ({cfg['binary']})", "apt-get install netsniff-ng"))
        for binary in ("ip", "tc"):
            if which(binary) is None:
                missing.append(Prerequisite(f"the {binary} command", "apt-get install iproute2"))
        if which("sysctl") is None:
            missing.append(Prerequisite("the sysctl command (testbed set-up)", "apt-get install procps"))
        online = os.sched_getaffinity(0)
        bad = [c for c in cfg["cpus"] if c not in online]
        if bad:
            missing.append(Prerequisite(
                f"CPUs {bad} for trafgen (trafficgen.trafgen.cpus)",
                f"choose among the CPUs this process may use: {sorted(online)}"))
        if cfg["tx_path"] == "sendto" and list(cfg["cpus"]) != [process.SENDTO_CPU]:
            missing.append(Prerequisite(
                f"trafficgen.trafgen.cpus {list(cfg['cpus'])} with tx_path sendto",
                f"trafgen's sendto path runs one worker, pinned to CPU {process.SENDTO_CPU}: "
                f"set cpus: [{process.SENDTO_CPU}], or tx_path: ring to choose CPUs"))
        return missing

    def capabilities(self) -> GeneratorCapabilities:
        max_rate = self.cfg.get("max_rate_fps")
        return GeneratorCapabilities(
            ports=2,
            max_rate_fps=float(max_rate) if max_rate else None,
            latency=True,
            per_packet_latency=True,
            max_flows=int(self.cfg["max_flows"]),
            bidirectional=True,
            needs_testbed=True,
            native_search=False,
        )

    def version(self) -> dict[str, str]:
        binary = which(self.cfg["binary"]) or self.cfg["binary"]
        try:
            out = run([binary, "-v"], check=False, timeout_s=10)
        except CommandError:
            return {}
        found = process.parse_version(out.stdout + out.stderr)
        return {"trafgen": found} if found else {}

    def generator_cpus(self) -> set[int]:
        """CPUs trafgen's workers run on (for the runner's placement check)."""
        if self.cfg["tx_path"] == "sendto":
            return {process.SENDTO_CPU}
        return set(int(c) for c in self.cfg["cpus"])

    def start(self) -> None:
        if self._started:
            return
        problems = self.check_prerequisites(self.cfg)
        if problems:
            raise PluginError(f"trafgen: missing {problems[0]}")
        self._work_dir.mkdir(parents=True, exist_ok=True)
        self.context.resources.register("trafgen generator", self.stop)
        self._started = True

    def stop(self) -> None:
        for sender in self._senders:
            sender.process.stop(grace_s=2.0)
        self._senders = []
        if self._probe is not None:
            self._probe.stop()
            self._probe = None
        for iface in sorted(self._shaped):
            try:
                run(shaper.remove_argv(iface), netns=self._netns, check=False, timeout_s=10)
            except CommandError:
                pass
        self._shaped.clear()
        self._close_readers()
        self._started = False

    def _close_readers(self) -> None:
        if self._foreign is not None:
            self._foreign.close()
            self._foreign = None
        if self._reader is not None:
            try:
                self._reader.close()
            except Exception:  # noqa: BLE001 - the namespace may be gone already
                pass
            self._reader = None

    # -- configuration -------------------------------------------------------------------

    @property
    def _work_dir(self) -> Path:
        base = self.context.work_dir or self.context.log_dir
        return Path(base) / "trafgen"

    def configure(self, profile: TrafficProfile, ports: Sequence[GeneratorPort]) -> None:
        from vsbench_plugins.trafficgen.trafgen import config as trafgen_config
        from vsbench_plugins.trafficgen.trafgen import flows, frames

        if len(ports) < 2:
            raise PluginError(f"trafgen needs 2 ports, got {len(ports)}")
        ports = list(ports[:2])
        namespaces = {p.netns for p in ports}
        if len(namespaces) != 1 or None in namespaces:
            raise PluginError("trafgen needs both ports in one testbed network namespace "
                              "(it runs on the embedded netns/veth testbed)")
        if profile.encapsulation is not None:
            raise PluginError(f"trafgen does not generate {profile.encapsulation} encapsulation")
        if profile.flows > int(self.cfg["max_flows"]):
            raise PluginError(f"trafgen: {profile.flows} flows exceed max_flows {self.cfg['max_flows']}")
        try:
            plan = flows.plan_flows(profile.fields, profile.flows)
            forward = frames.bulk_template(profile.fields, profile.frame_size_bytes)
        except (flows.FlowPlanError, frames.FrameError, ValueError) as exc:
            raise PluginError(f"trafgen: {exc}") from None

        netns = ports[0].netns
        if self._reader is None or self._netns != netns:
            self._close_readers()
            try:
                self._reader = LinkCounterReader(netns)
            except NetlinkError as exc:
                raise PluginError(f"trafgen: {exc}") from None
            self._netns = netns
        try:
            for p in ports:
                self._reader.index(p.iface)
        except NetlinkError as exc:
            raise PluginError(f"trafgen: {exc}") from None
        if self._foreign is not None:
            self._foreign.close()
            self._foreign = None
        try:
            self._foreign = ForeignFrameCounter(netns, [p.iface for p in ports])
        except OSError as exc:
            raise PluginError(f"trafgen: cannot count foreign frames on {ports[0].iface}: {exc}") from None

        self._work_dir.mkdir(parents=True, exist_ok=True)
        Path(self.context.log_dir).mkdir(parents=True, exist_ok=True)
        n_dirs = profile.directions
        # trafgen's sendto path forces one worker (on CPU 0): no per-CPU blocks then
        cpu_sets = (split_cpus([int(c) for c in self.cfg["cpus"]], n_dirs)
                    if self.cfg["tx_path"] == "ring" else [()] * n_dirs)
        specs = [(ports[0], ports[1], profile.fields, plan, forward)]
        if profile.bidirectional:
            rev_fields = flows.reverse_fields(profile.fields)
            specs.append((ports[1], ports[0], rev_fields, plan.swapped(),
                          frames.bulk_template(rev_fields, profile.frame_size_bytes)))
        for cpus in cpu_sets:
            if cpus:
                try:
                    trafgen_config.cpu_range(cpus)
                except ValueError as exc:
                    raise PluginError(f"trafgen: {exc} (trafficgen.trafgen.cpus)") from None
        directions = []
        for i, (tx, rx, fields, dir_plan, template) in enumerate(specs):
            cfg_path = self._work_dir / f"{tx.iface}.cfg"
            comment = (f"vsbench trafgen: {tx.iface} -> {rx.iface}, {profile.frame_size_bytes} B "
                       f"frames, {profile.flows} flow(s), periods {dict(dir_plan.periods)}")
            cfg_path.write_text(trafgen_config.render(template, fields, dir_plan, cpu_sets[i], comment),
                                encoding="utf-8")
            directions.append(_Direction(
                index=i, tx=tx, rx=rx, fields=fields, plan=dir_plan, template=template, config_path=cfg_path,
                log_path=Path(self.context.log_dir) / f"trafgen-{tx.iface}.log", cpus=cpu_sets[i],
            ))
        self._profile = profile
        self._directions = directions
        log.info("trafgen: %s B, %d flow(s), %s, CPUs %s", profile.frame_size_bytes, profile.flows,
                 "bidirectional" if profile.bidirectional else "unidirectional",
                 [d.cpus for d in directions])

    # -- trials --------------------------------------------------------------------------

    def _drain_s(self) -> float:
        value = self.cfg.get("drain_s")
        if value is None:
            value = (self.context.run_config.get("traffic") or {}).get("drain_s")
        return float(DEFAULT_DRAIN_S if value is None else value)

    def _probe_rate(self) -> float:
        value = self.cfg.get("probe_rate_fps")
        if value is None:
            value = (self.context.run_config.get("latency") or {}).get("probe_rate_fps")
        return float(DEFAULT_PROBE_RATE_FPS if value is None else value)

    def _ifaces(self) -> list[str]:
        names = []
        for d in self._directions:
            for p in (d.tx, d.rx):
                if p.iface not in names:
                    names.append(p.iface)
        return names

    def _read_counters(self) -> dict[str, LinkCounters]:
        assert self._reader is not None
        try:
            return self._reader.read(self._ifaces())
        except NetlinkError as exc:
            raise PluginError(f"trafgen: {exc}") from None

    def run_trial(self, load_fps: float, duration_s: float, *, latency: bool = False) -> TrialResult:
        if self._profile is None or not self._directions:
            raise PluginError("trafgen: run_trial before configure")
        if not self._started:
            self.start()
        if load_fps < 0 or duration_s <= 0:
            raise PluginError(f"trafgen: cannot run {load_fps} fps for {duration_s} s")
        t0 = time.monotonic()
        cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        self._trial += 1
        profile = self._profile
        per_dir_fps = load_fps / len(self._directions)
        frames_per_dir = int(round(per_dir_fps * duration_s))
        drain_s = self._drain_s()
        stats: dict[str, Any] = {
            "tx_path": self.cfg["tx_path"],
            "shaper_burst_s": float(self.cfg["shaper_burst_s"]),
            "frames_per_direction": frames_per_dir,
            "directions": [],
        }

        if frames_per_dir > 0:
            for d in self._directions:
                self._set_shaper(d.tx.iface, per_dir_fps, profile.frame_size_bytes)
        assert self._foreign is not None
        self._foreign.read()  # resets the kernel's counts
        before = self._read_counters()

        probe_outcome = None
        cut_reasons: list[str] = []
        send_times: dict[int, float | None] = {}
        reports: dict[int, process.TrafgenReport] = {}
        try:
            if latency:
                self._probe = self._start_probe(duration_s, drain_s)
            if frames_per_dir > 0:
                self._senders = [self._spawn(d, frames_per_dir) for d in self._directions]
                self._wait_running()
            if self._probe is not None:
                self._probe.go()
            deadline = (t0 + float(self.cfg["startup_allowance_s"])
                        + duration_s * (1.0 + max(0.05, 10 * float(self.cfg["rate_tolerance"]))) + 1.0)
            self._wait_senders(deadline)
            for sender in self._senders:
                d = sender.direction
                text = _read_from(d.log_path, sender.log_offset)
                report = process.parse_report(text)
                reports[d.index] = report
                code = sender.process.popen.returncode
                if code != 0 and not sender.cut:
                    tail = text.strip().splitlines()
                    raise PluginError(f"trafgen on {d.tx.iface} failed (exit {code}): "
                                      f"{tail[-1] if tail else 'no output'} (see {d.log_path})")
                if not sender.cut and (report.tx_packets or 0) < sender.frames:
                    raise PluginError(f"trafgen on {d.tx.iface} sent {report.tx_packets} of "
                                      f"{sender.frames} frames without an error (see {d.log_path})")
                if sender.cut:
                    cut_reasons.append(f"trafgen on {d.tx.iface} had not finished at the deadline "
                                       f"({report.tx_packets} of {sender.frames} frames)")
                loop_s = report.send_time_s
                # trafgen's own clock stops when its last frame is queued; what the shaper
                # still held then leaves at the shaper's rate. Frames that left while trafgen
                # was exiting are not seen, so this is a lower bound of the sending time --
                # exact when trafgen, not the shaper, was the bottleneck (queue empty).
                queued = sender.queued_at_exit or 0
                send_times[d.index] = None if loop_s is None else loop_s + queued / per_dir_fps
            time.sleep(drain_s)
            if self._probe is not None:
                probe_outcome = self._probe.finish()
        finally:
            for sender in self._senders:
                sender.process.stop(grace_s=2.0)  # also closes its log file
            self._senders = []
            if self._probe is not None:
                self._probe.stop()
                self._probe = None
        after = self._read_counters()
        foreign = self._foreign.read()

        result_dirs = []
        for d in self._directions:
            tx_delta = after[d.tx.iface] - before[d.tx.iface]
            rx_delta = after[d.rx.iface] - before[d.rx.iface]
            tx_frames = tx_delta.tx_packets + tx_delta.tx_dropped
            rx_frames = rx_delta.rx_packets - foreign.get(d.rx.iface, 0)
            if probe_outcome is not None:
                if probe_outcome.tx_iface == d.tx.iface:
                    tx_frames -= probe_outcome.sent + probe_outcome.send_failed
                if probe_outcome.rx_iface == d.rx.iface:
                    rx_frames -= probe_outcome.rx_frames
            result_dirs.append(DirectionCounters(tx_port=d.tx.index, rx_port=d.rx.index,
                                                 tx_frames=tx_frames, rx_frames=rx_frames))
            report = reports.get(d.index)
            stats["directions"].append({
                "tx_iface": d.tx.iface,
                "rx_iface": d.rx.iface,
                "cpus": list(d.cpus),
                "trafgen_tx_frames": report.tx_packets if report else 0,
                "send_time_s": send_times.get(d.index),
                "tx_dropped_by_peer": tx_delta.tx_dropped,
                "rx_dropped": rx_delta.rx_dropped,
                "foreign_rx_frames": foreign.get(d.rx.iface, 0),
            })
        if probe_outcome is not None:
            stats["probes"] = probe_outcome.stats

        cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        # trafgen processes and the probe helper, reaped during this trial
        stats["generator_cpu_s"] = round((cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime), 4)
        tx_total = sum(c.tx_frames for c in result_dirs)
        rx_total = sum(c.rx_frames for c in result_dirs)
        known = [t for t in send_times.values() if t is not None]
        tx_duration = max(known) if known and len(known) == len(send_times) else None
        valid, reason = True, None
        if cut_reasons:
            valid, reason = False, "; ".join(cut_reasons)
        elif tx_duration is not None and tx_duration > duration_s * (1.0 + float(self.cfg["rate_tolerance"])):
            valid = False
            reason = (f"trafgen needed {tx_duration:.4f} s to send what was asked for {duration_s:g} s "
                      f"(achieved {tx_total / tx_duration:.0f} of {load_fps:.0f} fps)")
        return TrialResult(
            intended_load_fps=float(load_fps),
            intended_duration_s=float(duration_s),
            frame_size_bytes=profile.frame_size_bytes,
            tx_frames=tx_total,
            rx_frames=rx_total,
            directions=tuple(result_dirs),
            tx_duration_s=tx_duration,
            effective_duration_s=time.monotonic() - t0,
            probes=probe_outcome.records if probe_outcome is not None else None,
            valid=valid,
            invalid_reason=reason,
            generator_stats=stats,
        )

    # -- trial steps ---------------------------------------------------------------------

    def _set_shaper(self, iface: str, rate_fps: float, frame_size_bytes: int) -> None:
        argv = shaper.tbf_argv(iface, rate_fps, frame_size_bytes, float(self.cfg["shaper_burst_s"]))
        try:
            run(argv, netns=self._netns, timeout_s=10)
        except CommandError as exc:
            raise PluginError(f"trafgen: cannot set the rate shaper on {iface}: {exc}") from None
        self._shaped.add(iface)

    def _spawn(self, d: _Direction, frames: int) -> _Sender:
        binary = which(self.cfg["binary"]) or self.cfg["binary"]
        cpus = d.cpus if d.cpus and frames >= process.worker_count(d.cpus) else None
        if cpus is None and d.cpus:
            # Fewer frames than workers: trafgen would drop workers and with them the
            # pinned packet blocks; such a trial is tiny, send it from one unpinned block.
            from vsbench_plugins.trafficgen.trafgen import config as trafgen_config

            cfg_path = d.config_path.with_suffix(".unpinned.cfg")
            cfg_path.write_text(trafgen_config.render(d.template, d.fields, d.plan, None), encoding="utf-8")
        else:
            cfg_path = d.config_path
        argv = process.trafgen_argv(binary, d.tx.iface, str(cfg_path), frames, cpus,
                                    tx_path=self.cfg["tx_path"],
                                    wire_len_bytes=self._profile.frame_size_bytes - FCS_BYTES)
        offset = _size(d.log_path)
        proc = spawn(argv, netns=self._netns, log_path=d.log_path)
        return _Sender(direction=d, frames=frames, process=proc, log_offset=offset)

    def _wait_running(self) -> None:
        """Wait until every trafgen printed that it is sending (or died)."""
        deadline = time.monotonic() + float(self.cfg["startup_allowance_s"])
        pending = list(self._senders)
        while pending and time.monotonic() < deadline:
            pending = [s for s in pending
                       if s.process.alive()
                       and process.RUNNING_MARK not in _read_from(s.direction.log_path, s.log_offset)]
            if pending:
                time.sleep(0.002)

    def _wait_senders(self, deadline: float, poll_s: float = 0.001) -> None:
        """Wait for every trafgen to exit and its shaper queue to empty, noting when.

        A trafgen still running at ``deadline`` is stopped (SIGTERM: it prints its summary);
        its queued frames still go out and are counted.
        """
        assert self._reader is not None
        pending = list(self._senders)
        while pending:
            now = time.monotonic()
            for sender in list(pending):
                if sender.exited_at is None:
                    if sender.process.alive():
                        if now < deadline:
                            continue
                        sender.cut = True
                        log.warning("trafgen on %s still sending at the deadline; stopping it",
                                    sender.direction.tx.iface)
                        sender.process.stop(grace_s=5.0, sig=signal.SIGTERM)
                    sender.exited_at = time.monotonic()
                try:
                    backlog = self._reader.backlog(sender.direction.tx.iface)
                except NetlinkError as exc:
                    raise PluginError(f"trafgen: {exc}") from None
                if sender.queued_at_exit is None:
                    sender.queued_at_exit = backlog.packets
                if backlog.packets == 0:
                    sender.drained_at = time.monotonic()
                    pending.remove(sender)
                elif time.monotonic() - sender.exited_at > 10.0:
                    raise PluginError(f"trafgen: {backlog.packets} frames still queued on "
                                      f"{sender.direction.tx.iface} 10 s after trafgen ended")
            if pending:
                time.sleep(poll_s)

    def _start_probe(self, duration_s: float, drain_s: float):
        from vsbench_plugins.trafficgen.trafgen.probes import ProbeStream

        d = self._directions[0]
        rate = self._probe_rate()
        stream = ProbeStream(
            netns=self._netns,
            tx_iface=d.tx.iface,
            rx_iface=d.rx.iface,
            frame=d.template.data,
            ip_offset=d.template.ip_offset,
            rate_fps=rate,
            duration_s=duration_s,
            drain_s=drain_s,
            out_prefix=self._work_dir / f"probes-{self._trial}",
            log_path=Path(self.context.log_dir) / "trafgen-probe.log",
            python=self.cfg.get("python"),
        )
        stream.start()
        return stream


__all__ = ["Trafgen", "DEFAULTS", "SETTINGS_SCHEMA", "split_cpus"]
