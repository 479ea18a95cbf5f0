"""The ``moongen`` traffic generator: one MoonGen process per trial, locally or over ssh.

MoonGen has no daemon or RPC: a Lua script *is* the test. Each trial runs the shipped
``vsbench-trial.lua`` (or a script with the same arguments and output) with the rate, frame
size, flows and duration as arguments, waits for it to end, and reads its ``[REPORT]`` lines
(device counters minus latency probes), libmoon's final device counter lines and, with
latency, the histogram CSV. A process per trial costs MoonGen's DPDK start-up every time
(seconds), but nothing is left running between trials and a crash affects one trial only.

Rates: ``--rate-mpps`` is per direction (aggregate / directions / 1e6); ``--size`` excludes
the CRC (frame size - 4), as libmoon's ``setRateMpps(rate, size)`` and ``bufs:alloc(size)``
expect. Over ssh (``ssh.host`` set) the script is copied to ``work_dir`` on the host at
:meth:`start`, each trial runs under ``ssh -tt`` (so ending the local client ends the remote
MoonGen), and the histogram is fetched with scp.
"""

from __future__ import annotations

import logging
import os
import subprocess
import time
from importlib import resources
from pathlib import Path
from typing import Any, ClassVar, Mapping, Sequence

from vsbench.interfaces.plugin import PluginContext, PluginError, Prerequisite
from vsbench.interfaces.traffic import (
    FCS_BYTES,
    DirectionCounters,
    GeneratorCapabilities,
    GeneratorPort,
    LatencyHistogram,
    TrafficProfile,
    TrialResult,
    line_rate_fps,
)
from vsbench.interfaces.trafficgen import TrafficGenerator
from vsbench.interfaces import commands

from vsbench_plugins.trafficgen.moongen import output
from vsbench_plugins.trafficgen.remote_host import SSH_ERROR_EXIT, SSH_SETTINGS_SCHEMA, RemoteHost

log = logging.getLogger(__name__)

SCRIPT_NAME = "vsbench-trial.lua"
VARYABLE = ("src_ip", "dst_ip", "src_port", "dst_port")
#: Sending more than this share above the asked rate means the NIC ignored the rate limiter.
OVERSEND_TOLERANCE = 0.01

SETTINGS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "binary": {"type": "string", "minLength": 1},
        "moongen_args": {"type": "array", "items": {"type": "string"}},
        "script": {"type": ["string", "null"]},
        "devices": {"type": "array", "minItems": 2, "maxItems": 2,
                    "items": {"type": "integer", "minimum": 0}},
        "link_gbps": {"type": "number", "exclusiveMinimum": 0},
        "max_flows": {"type": "integer", "minimum": 1},
        "probe_rate_pps": {"type": "number", "exclusiveMinimum": 0},
        "startup_timeout_s": {"type": "number", "exclusiveMinimum": 0},
        "work_dir": {"type": "string", "minLength": 1},
        "ssh": SSH_SETTINGS_SCHEMA,
    },
}

DEFAULTS: dict[str, Any] = {
    "binary": "MoonGen",
    "moongen_args": [],
    "script": None,
    "devices": [0, 1],
    "link_gbps": 10.0,
    "max_flows": 2**24,
    "probe_rate_pps": 1000.0,
    "startup_timeout_s": 60.0,
    "work_dir": "/tmp/vsbench-moongen",
    "ssh": None,
}


def shipped_script() -> Path:
    return Path(str(resources.files("vsbench_plugins.trafficgen.moongen").joinpath(SCRIPT_NAME)))


class MoonGen(TrafficGenerator):
    """MoonGen (libmoon/DPDK) running a vsbench Lua script per trial."""

    description: ClassVar[str] = "MoonGen running vsbench's Lua trial script, locally or over ssh"
    api_version: ClassVar[str] = "1.0"
    settings_schema: ClassVar[dict] = SETTINGS_SCHEMA

    def __init__(self, context: PluginContext) -> None:
        super().__init__(context)
        self.cfg: dict[str, Any] = {**DEFAULTS, **dict(context.settings or {})}
        self.remote = RemoteHost.from_settings(self.cfg.get("ssh"))
        self.address = self.remote.address if self.remote else "localhost"
        self._profile: TrafficProfile | None = None
        self._proc: commands.ManagedProcess | None = None
        self._script: str | None = None
        self._trials = 0
        self._started = False

    # ------------------------------------------------------------------ contract

    @classmethod
    def check_prerequisites(cls, settings: Mapping[str, Any]) -> list[Prerequisite]:
        cfg = {**DEFAULTS, **dict(settings or {})}
        remote = RemoteHost.from_settings(cfg.get("ssh"))
        if remote is not None:
            tool = remote.ssh_command[0]
            if not commands.which(tool):
                return [Prerequisite(f"ssh client {tool!r}", "apt-get install openssh-client")]
            return []
        if not _local_executable(cfg["binary"]):
            return [Prerequisite(f"MoonGen executable {cfg['binary']!r}",
                                 "build MoonGen (emmericp/MoonGen) and set trafficgen.moongen.binary")]
        return []

    @classmethod
    def check_reachable(cls, settings: Mapping[str, Any]) -> list[Prerequisite]:
        """MoonGen on a remote host (``ssh``): that host's ssh port must answer, or the run
        would fail only when it starts its first trial. A local MoonGen reaches nothing."""
        cfg = {**DEFAULTS, **dict(settings or {})}
        remote = RemoteHost.from_settings(cfg.get("ssh"))
        return [] if remote is None else remote.unreachable("trafficgen.moongen.ssh")

    def capabilities(self) -> GeneratorCapabilities:
        return GeneratorCapabilities(
            ports=2,
            max_rate_fps=2 * line_rate_fps(float(self.cfg["link_gbps"]) * 1e9, 64),
            latency=True,
            per_packet_latency=False,
            max_flows=int(self.cfg["max_flows"]),
            bidirectional=True,
            needs_testbed=False,
            native_search=False,
        )

    def start(self) -> None:
        self._started = True
        self.context.resources.register(f"moongen trial process on {self.address}", self.stop)
        local_script = Path(self.cfg["script"]) if self.cfg["script"] else shipped_script()
        if not local_script.is_file():
            raise PluginError(f"moongen: script {local_script} not found")
        if self.remote is None:
            if not _local_executable(self.cfg["binary"]):
                raise PluginError(f"moongen on {self.address}: MoonGen executable "
                                  f"{self.cfg['binary']!r} not found")
            self._script = str(local_script)
            return
        work = self.cfg["work_dir"]
        remote_script = f"{work}/{SCRIPT_NAME}"
        self._run_remote_setup(self.remote.ssh_argv(["mkdir", "-p", work]), "create " + work)
        self._run_remote_setup(self.remote.own_dir_check_argv(work),
                               f"use {work}: not a directory of the ssh user's own (another user's, or a link)")
        self._run_remote_setup(self.remote.scp_to_argv(str(local_script), remote_script),
                               "copy the trial script")
        self._script = remote_script

    def configure(self, profile: TrafficProfile, ports: Sequence[GeneratorPort]) -> None:
        if not self._started:
            raise PluginError(f"moongen on {self.address}: configure before start")
        if profile.encapsulation or profile.fields.vlan_id is not None:
            raise PluginError("moongen: the trial script sends untagged, unencapsulated UDP only")
        if profile.fields.l4_proto != "udp":
            raise PluginError(f"moongen: only UDP profiles are supported, not {profile.fields.l4_proto!r}")
        bad = [v for v in profile.fields.vary if v not in VARYABLE]
        if bad:
            raise PluginError(f"moongen: cannot vary {', '.join(bad)} (only {', '.join(VARYABLE)})")
        if profile.flows > int(self.cfg["max_flows"]):
            raise PluginError(f"moongen: {profile.flows} flows exceed max_flows {self.cfg['max_flows']}")
        if len(ports) < 2:
            raise PluginError(f"moongen: a trial needs 2 ports, got {len(ports)}")
        self._profile = profile

    def run_trial(self, load_fps: float, duration_s: float, *, latency: bool = False) -> TrialResult:
        profile = self._profile
        if profile is None or self._script is None:
            raise PluginError(f"moongen on {self.address}: run_trial before start/configure")
        began = time.monotonic()
        self._trials += 1
        n = self._trials
        hist_name = f"vsbench-hist-{self.context.run_id}-{n}.csv"
        hist_remote = f"{self.cfg['work_dir']}/{hist_name}" if self.remote else None
        log_dir = Path(self.context.log_dir)
        hist_local = log_dir / hist_name
        argv = self._trial_argv(profile, load_fps, duration_s, latency,
                                hist_remote or str(hist_local))
        log_path = log_dir / f"moongen-trial-{n:04d}.log"
        text, code = self._run(argv, log_path, duration_s)
        if code == SSH_ERROR_EXIT and self.remote:
            # not MoonGen's own exit: the host went down, rebooted or dropped off the network
            raise PluginError(f"moongen: generator host {self.address} lost during trial {n} "
                              f"(ssh exit {code}): {output.last_error_line(text)} (log: {log_path})")
        if code != 0:
            raise PluginError(f"moongen on {self.address}: MoonGen exited with code {code}: "
                              f"{output.last_error_line(text)} (log: {log_path})")
        parsed = output.parse_output(text)
        try:
            output.require_reports(parsed, profile.directions)
        except output.MoonGenOutputError as exc:
            raise PluginError(f"moongen on {self.address}: {exc} (log: {log_path})") from None
        dirs = []
        for d, rep in enumerate(parsed.reports[: profile.directions]):
            dirs.append(DirectionCounters(tx_port=d, rx_port=1 - d,
                                          tx_frames=max(rep.tx_frames, 0),
                                          rx_frames=max(rep.rx_frames, 0)))
        histogram = None
        if latency:
            histogram = self._histogram(hist_remote, hist_local, parsed)
        tx = sum(d.tx_frames for d in dirs)
        intended = load_fps * duration_s
        oversent = intended > 0 and tx > intended * (1 + OVERSEND_TOLERANCE)
        return TrialResult(
            intended_load_fps=load_fps,
            intended_duration_s=duration_s,
            frame_size_bytes=profile.frame_size_bytes,
            tx_frames=tx,
            rx_frames=sum(d.rx_frames for d in dirs),
            directions=tuple(dirs),
            tx_duration_s=None,
            effective_duration_s=time.monotonic() - began,
            latency_histogram=histogram,
            valid=not oversent,
            invalid_reason=(f"sent {tx} frames, {tx / intended:.1%} of the {intended:.0f} asked: "
                            f"the NIC did not apply the rate limit" if oversent else None),
            generator_stats={
                "device_totals": parsed.device_totals,
                "probes_sent": parsed.probes_sent,
                "probes_received": parsed.probes_received,
                "log": str(log_path),
            },
        )

    def stop(self) -> None:
        """End a trial process still running (interrupted run). Idempotent."""
        proc, self._proc = self._proc, None
        if proc is not None:
            proc.stop()

    # ------------------------------------------------------------------ helpers

    def _trial_argv(self, profile: TrafficProfile, load_fps: float, duration_s: float,
                    latency: bool, hist_path: str) -> list[str]:
        f = profile.fields
        per_direction_mpps = load_fps / profile.directions / 1e6
        dev0, dev1 = self.cfg["devices"]
        argv = [
            self.cfg["binary"], *self.cfg["moongen_args"], self._script or "",
            str(dev0), str(dev1),
            "--rate-mpps", f"{per_direction_mpps:.9g}",
            "--size", str(profile.frame_size_bytes - FCS_BYTES),
            "--flows", str(profile.flows),
            "--time", f"{duration_s:g}",
            "--src-mac", f.src_mac, "--dst-mac", f.dst_mac,
            "--src-ip", f.src_ip, "--dst-ip", f.dst_ip,
            "--src-port", str(f.src_port), "--dst-port", str(f.dst_port),
            "--vary", ",".join(f.vary) or "none",
        ]
        if profile.bidirectional:
            argv.append("--bidirectional")
        if latency:
            argv += ["--latency", "--hist-file", hist_path,
                     "--probe-rate", f"{float(self.cfg['probe_rate_pps']):g}"]
        return argv

    def _run(self, argv: list[str], log_path: Path, duration_s: float) -> tuple[str, int]:
        full = self.remote.ssh_argv(argv, tty=True) if self.remote else argv
        log_path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._proc = commands.spawn(full, log_path=log_path)
        except OSError as exc:
            raise PluginError(f"moongen on {self.address}: cannot run {full[0]!r}: "
                              f"{exc.strerror or exc}") from None
        proc = self._proc
        limit = duration_s + float(self.cfg["startup_timeout_s"])
        try:
            code = proc.wait(timeout_s=limit)
        except subprocess.TimeoutExpired:
            proc.stop()
            raise PluginError(f"moongen on {self.address}: trial did not end within {limit:g} s "
                              f"(log: {log_path})") from None
        finally:
            proc.stop()  # closes the log handle; ends a leftover process group
            self._proc = None
        return log_path.read_text(encoding="utf-8", errors="replace"), code

    def _run_remote_setup(self, argv: list[str], what: str) -> None:
        try:
            commands.run(argv, timeout_s=60)
        except commands.CommandError as exc:
            raise PluginError(f"moongen on {self.address}: cannot {what}: {exc}") from None

    def _histogram(self, remote: str | None, local: Path,
                   parsed: output.TrialOutput) -> LatencyHistogram | None:
        if remote is not None:
            self._run_remote_setup(self.remote.scp_from_argv(remote, str(local)),  # type: ignore[union-attr]
                                   "fetch the latency histogram")
        try:
            text = local.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise PluginError(f"moongen on {self.address}: no latency histogram at {remote or local}") from None
        try:
            lat, counts = output.parse_histogram_csv(text)
        except output.MoonGenOutputError as exc:
            raise PluginError(f"moongen on {self.address}: {exc}") from None
        if not counts or sum(counts) == 0:
            return None
        total = sum(counts)
        mean = sum(l * c for l, c in zip(lat, counts)) / total
        return LatencyHistogram(bucket_lower_ns=lat, counts=counts, min_ns=float(lat[0]),
                                max_ns=float(lat[-1]), mean_ns=mean)


def _local_executable(binary: str) -> bool:
    if os.sep in binary:
        return os.path.isfile(binary) and os.access(binary, os.X_OK)
    return commands.which(binary) is not None
