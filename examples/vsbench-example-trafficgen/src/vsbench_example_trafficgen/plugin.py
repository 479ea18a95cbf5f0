"""The vsbench side of toygen: the traffic generator contract, one trial at a time.

Everything vsbench-specific is here; the generator is :mod:`.server`, another process. The
life cycle vsbench drives (see ``vsbench.interfaces.TrafficGenerator``)::

    gen = ToyGen(context)              # cheap: settings only
    gen.start()                        # connect to a server given in the settings
    gen.configure(profile, ports)      # launch a local server where the ports are; send the profile
    gen.run_trial(load_fps, duration_s)   # many times: one request, one answer
    gen.stop()                         # bye, close, end the server we launched

Rules this file follows, and a vendor's plugin should too:

* import only ``vsbench.interfaces`` (the contract; a test in vsbench fails otherwise);
* read only ``self.settings`` (validated against ``settings_schema`` before we exist) and
  ``self.context`` -- never vsbench's configuration;
* register the undo of everything we acquire on ``context.resources`` at once;
* report what was *measured*: counters come from the server, never from the asked load;
* fail with :class:`PluginError`, one line naming the generator and what went wrong.
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
import tempfile
from pathlib import Path
from typing import Any, ClassVar, Sequence

from vsbench.interfaces import (
    DirectionCounters,
    GeneratorCapabilities,
    GeneratorPort,
    PluginError,
    Prerequisite,
    TrafficGenerator,
    TrafficProfile,
    TrialResult,
)
from vsbench.interfaces.commands import ManagedProcess, spawn, wait_for, which
from vsbench.interfaces.settings import with_defaults

from vsbench_example_trafficgen.protocol import LineChannel, ProtocolError

SETTINGS_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "toygen settings (trafficgen.toygen)",
    "type": "object",
    "additionalProperties": False,  # a misspelt setting is an error, not silently ignored
    "properties": {
        "server": {
            "description": "a toygen-server already running (TCP); null: launch one where the ports are",
            "type": ["object", "null"], "default": None, "additionalProperties": False,
            "required": ["host", "port"],
            "properties": {"host": {"type": "string"}, "port": {"type": "integer", "minimum": 1, "maximum": 65535}},
        },
        "model_capacity_fps": {
            "description": "model a DUT of this aggregate capacity instead of sending frames (the generator's own fake)",
            "type": ["number", "null"], "exclusiveMinimum": 0, "default": None,
        },
        "ports": {
            "description": "model mode: the generator's own port names (else the testbed's)",
            "type": "array", "items": {"type": "string"}, "default": ["0", "1"],
        },
        "python": {"description": "interpreter for a launched server; null: vsbench's own",
                   "type": ["string", "null"], "default": None},
        "drain_s": {"description": "wait after traffic before counting; null: the run's traffic.drain_s",
                    "type": ["number", "null"], "minimum": 0, "default": None},
        "connect_timeout_s": {"type": "number", "exclusiveMinimum": 0, "default": 5},
    },
}
#: A UNIX socket's path must fit sockaddr_un.sun_path (108 bytes); the server first binds
#: it with a ".tmp" suffix.
MAX_UNIX_PATH_BYTES = 100
#: Margin on top of a trial's duration for the server's answer (sending overruns, drain).
REPLY_MARGIN_S = 10.0


class ToyGen(TrafficGenerator):
    """toygen: a generator server driven over a socket (testbed frames, or a modelled DUT)."""

    description: ClassVar[str] = "Example vendor generator: toygen-server driven over a socket"
    api_version: ClassVar[str] = "1.0"  # the vsbench plugin API this class was written for
    settings_schema: ClassVar[dict] = SETTINGS_SCHEMA

    def __init__(self, context) -> None:
        super().__init__(context)
        self.cfg = with_defaults(SETTINGS_SCHEMA, self.settings)
        self._channel: LineChannel | None = None
        self._server: ManagedProcess | None = None
        self._profile: TrafficProfile | None = None
        self._max_rate_fps: float | None = None
        self._server_version: str | None = None

    # ------------------------------------------------------------------ before a run

    @classmethod
    def check_prerequisites(cls, settings) -> list[Prerequisite]:
        cfg = with_defaults(SETTINGS_SCHEMA, settings)
        if cfg["server"] is None and cfg["model_capacity_fps"] is None and which("ip") is None:
            return [Prerequisite("the ip command (to start toygen-server in the testbed namespace)",
                                 "apt-get install iproute2")]
        return []

    def capabilities(self) -> GeneratorCapabilities:
        testbed = self.cfg["model_capacity_fps"] is None and self.cfg["server"] is None
        return GeneratorCapabilities(
            ports=2,
            max_rate_fps=self._max_rate_fps or (100_000 if testbed else 10_000_000),
            latency=False,  # no latency probes: vsbench then reports latency as not measured
            max_flows=1024,
            bidirectional=True,
            needs_testbed=testbed,  # the deployment builds veth pairs and gives us one end
        )

    def version(self) -> dict[str, str]:
        return {"toygen_plugin": "0.1.0", "toygen_server": self._server_version or "not connected"}

    # ------------------------------------------------------------------ life cycle

    def start(self) -> None:
        if self.cfg["server"] is not None:  # a server someone else runs: connect now
            host, port = self.cfg["server"]["host"], self.cfg["server"]["port"]
            self._connect_tcp(host, port)

    def configure(self, profile: TrafficProfile, ports: Sequence[GeneratorPort]) -> None:
        if len(ports) < 2:
            raise PluginError(f"toygen: needs two ports, got {len(ports)}")
        if self._channel is None:
            self._launch(ports[0].netns)
        self._request({
            "cmd": "configure",
            "ports": [{"iface": p.iface, "mac": p.mac or f"02:00:00:00:00:0{p.index + 1}"} for p in ports[:2]],
            "frame_size_bytes": profile.frame_size_bytes,
            "bidirectional": profile.bidirectional,
            "flows": profile.flows,
            "fields": {"src_ip": profile.fields.src_ip, "dst_ip": profile.fields.dst_ip,
                       "src_port": profile.fields.src_port, "dst_port": profile.fields.dst_port},
        }, timeout_s=30)
        self._profile = profile

    def run_trial(self, load_fps: float, duration_s: float, *, latency: bool = False) -> TrialResult:
        if self._profile is None:
            raise PluginError("toygen: run_trial before configure")
        reply = self._request({"cmd": "trial", "load_fps": load_fps, "duration_s": duration_s,
                               "drain_s": self._drain_s()}, timeout_s=duration_s * 2 + REPLY_MARGIN_S)
        directions = tuple(DirectionCounters(int(d["tx_port"]), int(d["rx_port"]), int(d["tx_frames"]),
                                             int(d["rx_frames"])) for d in reply["directions"])
        return TrialResult(
            intended_load_fps=load_fps,
            intended_duration_s=duration_s,
            frame_size_bytes=self._profile.frame_size_bytes,
            tx_frames=sum(d.tx_frames for d in directions),
            rx_frames=sum(d.rx_frames for d in directions),
            directions=directions,
            tx_duration_s=float(reply["tx_duration_s"]),
            # A trial the server could not send at the asked rate comes back as it is:
            # vsbench's validity rules mark it generator-limited, never DUT loss.
            generator_stats={"server": "toygen"},
        )

    def stop(self) -> None:
        """Say bye, close the socket, end the server we launched. Idempotent."""
        channel, self._channel = self._channel, None
        if channel is not None:
            try:
                channel.send({"cmd": "bye"})
                channel.receive()
            except (OSError, ProtocolError):
                pass  # already gone: nothing to say goodbye to
            channel.close()
        server, self._server = self._server, None
        if server is not None:
            server.stop(grace_s=2)

    # ------------------------------------------------------------------ the socket

    def _drain_s(self) -> float:
        if self.cfg["drain_s"] is not None:
            return float(self.cfg["drain_s"])
        return self.context.run.drain_s if self.context.run.drain_s is not None else 0.5

    def _launch(self, netns: str | None) -> None:
        """Start toygen-server where the ports are (inside the testbed's generator
        namespace), listening on a UNIX socket -- reachable from here whatever the
        namespace -- and connect to it."""
        work = Path(self.context.work_dir or self.context.log_dir)
        work.mkdir(parents=True, exist_ok=True)
        path = work / f"toygen-{self.context.run_id}.sock"
        if len(os.fsencode(path)) > MAX_UNIX_PATH_BYTES:
            # a deep work directory (a test's) is too long for a UNIX socket's address:
            # a short private directory instead, removed at teardown (after the server ends)
            short = Path(tempfile.mkdtemp(prefix=f"toygen-{self.context.run_id}-"))
            self.context.resources.register("toygen socket directory", shutil.rmtree, short, ignore_errors=True)
            path = short / "server.sock"
        argv = [self.cfg["python"] or sys.executable, "-m", "vsbench_example_trafficgen.server",
                "--listen", f"unix:{path}"]
        if self.cfg["model_capacity_fps"] is not None:
            argv += ["--model-capacity-fps", str(self.cfg["model_capacity_fps"])]
        self._server = spawn(argv, netns=netns, log_path=Path(self.context.log_dir) / "toygen-server.log")
        # registered in the same breath: a failure from here on still ends the server
        self.context.resources.register("toygen-server", self.stop)
        try:
            wait_for(lambda: path.exists() or not self._server.alive(), float(self.cfg["connect_timeout_s"]),
                     what="toygen-server's socket")
        except TimeoutError as exc:
            raise PluginError(f"toygen: {exc}") from None
        if not self._server.alive():
            raise PluginError(f"toygen: toygen-server exited at start; see {self._server.log_path}")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(float(self.cfg["connect_timeout_s"]))
        try:
            sock.connect(str(path))
        except OSError as exc:
            sock.close()
            raise PluginError(f"toygen: cannot connect to toygen-server at {path}: {exc.strerror or exc}") from None
        self._hello(LineChannel(sock))

    def _connect_tcp(self, host: str, port: int) -> None:
        try:
            sock = socket.create_connection((host, port), timeout=float(self.cfg["connect_timeout_s"]))
        except OSError as exc:
            raise PluginError(f"toygen: cannot connect to toygen-server at {host}:{port}: "
                              f"{exc.strerror or exc}") from None
        self.context.resources.register("toygen connection", self.stop)
        self._hello(LineChannel(sock))

    def _hello(self, channel: LineChannel) -> None:
        self._channel = channel
        reply = self._request({"cmd": "hello"}, timeout_s=float(self.cfg["connect_timeout_s"]))
        if reply.get("server") != "toygen":
            raise PluginError(f"toygen: the peer is not a toygen-server: {reply}")
        self._server_version = str(reply.get("version"))
        self._max_rate_fps = float(reply.get("max_rate_fps") or 0) or None

    def _request(self, message: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """One request, one answer; anything else is a one-line PluginError."""
        if self._channel is None:
            raise PluginError("toygen: not connected (start/configure first)")
        self._channel.sock.settimeout(timeout_s)
        try:
            self._channel.send(message)
            reply = self._channel.receive()
        except (OSError, ProtocolError) as exc:
            raise PluginError(f"toygen: {message['cmd']}: lost toygen-server: {exc}") from None
        if not reply.get("ok"):
            raise PluginError(f"toygen: {message['cmd']}: {reply.get('error', 'refused')}")
        return reply
