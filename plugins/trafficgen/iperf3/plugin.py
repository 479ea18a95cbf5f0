"""``iperf3``: TCP workloads between two endpoints across the switch (report 5).

Real TCP connections (Debian's ``iperf3``) from generator port 0 (client) to port 1
(server), each port in a network namespace of its own (:mod:`.endpoints`); the switch
forwards every segment and acknowledgement. The workload is closed-loop, so this
generator runs no frame trials (``tcp_only``): it implements
:meth:`~vsbench.interfaces.trafficgen.TrafficGenerator.run_tcp` for ``traffic.type: tcp``,
which gives the endpoints' goodput, retransmits, CPU and TCP round-trip times
(:mod:`.parse`). Both iperf3 processes are pinned to ``cpus`` (default CPU 0, beside the
switch's PMD on CPU 1 of a 2-core machine), which the runner's CPU plan shows.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any, ClassVar, Mapping, Sequence

from vsbench.interfaces.commands import CommandError, ManagedProcess, run, spawn, which
from vsbench.interfaces.plugin import PluginContext, PluginError, Prerequisite
from vsbench.interfaces.settings import with_defaults
from vsbench.interfaces.tcp import TcpResult, TcpSpec
from vsbench.interfaces.traffic import GeneratorCapabilities, GeneratorPort, TrafficProfile, TrialResult
from vsbench.interfaces.trafficgen import TrafficGenerator

from vsbench_plugins.trafficgen.iperf3.endpoints import Endpoints
from vsbench_plugins.trafficgen.iperf3.parse import ReportError, parse_report

log = logging.getLogger(__name__)

SETTINGS_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "trafficgen.iperf3 settings",
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "binary": {"type": "string", "minLength": 1, "default": "iperf3",
                   "description": "the iperf3 executable (apt-get install iperf3)"},
        "ethtool": {"type": "string", "minLength": 1, "default": "ethtool",
                    "description": "ethtool, which sets the endpoints' TSO/GSO/GRO (apt-get install ethtool)"},
        "cpus": {"type": "array", "minItems": 1, "maxItems": 2, "default": [0],
                 "items": {"type": "integer", "minimum": 0},
                 "description": "CPU of the client and of the server ([c] pins both to c)"},
        "port": {"type": "integer", "minimum": 1, "maximum": 65535, "default": 5201},
        "start_timeout_s": {"type": "number", "exclusiveMinimum": 0, "default": 10,
                            "description": "how long the server may take to listen"},
    },
}


class Iperf3(TrafficGenerator):
    """iperf3 client and server in namespaces of their own on the embedded testbed."""

    name: ClassVar[str] = "iperf3"
    description: ClassVar[str] = "iperf3 TCP endpoints in namespaces of their own across the switch (traffic.type: tcp)"
    api_version: ClassVar[str] = "1.0"
    settings_schema: ClassVar[dict] = SETTINGS_SCHEMA
    supports_tcp: ClassVar[bool] = True
    tcp_only: ClassVar[bool] = True
    deadlines_s: ClassVar[Mapping[str, float]] = {"run_tcp": 3600}

    def __init__(self, context: PluginContext) -> None:
        super().__init__(context)
        self.cfg = with_defaults(SETTINGS_SCHEMA, context.settings)
        self.endpoints: Endpoints | None = None
        self._server: ManagedProcess | None = None
        self._runs = 0

    @classmethod
    def check_prerequisites(cls, settings: Mapping[str, Any]) -> list[Prerequisite]:
        cfg = with_defaults(SETTINGS_SCHEMA, settings)
        missing = []
        for key, package in (("binary", "iperf3"), ("ethtool", "ethtool")):
            if which(cfg[key]) is None:
                missing.append(Prerequisite(f"the {key} {cfg[key]} (trafficgen.iperf3.{key})", f"apt-get install {package}"))
        for binary, package in (("ip", "iproute2"), ("ss", "iproute2"), ("sysctl", "procps")):
            if which(binary) is None:
                missing.append(Prerequisite(f"the {binary} command", f"apt-get install {package}"))
        return missing

    def capabilities(self) -> GeneratorCapabilities:
        return GeneratorCapabilities(ports=2, latency=False, max_flows=1, bidirectional=True, needs_testbed=True)

    def version(self) -> dict[str, str]:
        try:
            out = run([which(self.cfg["binary"]) or self.cfg["binary"], "--version"], check=False, timeout_s=10).stdout
        except CommandError:
            return {}
        words = out.split()
        return {"iperf3": words[1]} if len(words) > 1 and words[0] == "iperf" else {}

    def generator_cpus(self) -> set[int]:
        """The CPUs both endpoint processes run on (the runner's CPU plan)."""
        return set(int(c) for c in self.cfg["cpus"])

    def start(self) -> None:
        self.context.resources.register("iperf3 generator", self.stop)

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop(grace_s=2.0)
            self._server = None

    def configure(self, profile: TrafficProfile, ports: Sequence[GeneratorPort]) -> None:
        """Puts the two ports into their endpoint namespaces (once); the profile's frames
        mean nothing to a TCP workload."""
        if self.endpoints is None:
            self.endpoints = Endpoints(self.context.run_id, ports[:2], self.context.resources, self.cfg["ethtool"])
        self.endpoints.setup()

    def run_trial(self, load_fps: float, duration_s: float, *, latency: bool = False) -> TrialResult:
        raise PluginError("iperf3 runs TCP workloads only (traffic.type: tcp), not frame trials")

    def _cpu_args(self) -> tuple[list[str], list[str]]:
        cpus = [int(c) for c in self.cfg["cpus"]]
        client, server = cpus[0], cpus[-1]
        return ["-A", str(client)], ["-A", str(server)]

    def run_tcp(self, spec: TcpSpec) -> TcpResult:
        if self.endpoints is None or not self.endpoints.ready:
            raise PluginError("iperf3: run_tcp before configure")
        if spec.duration_s <= 0 or spec.streams < 1:
            raise PluginError(f"iperf3: cannot run {spec.streams} stream(s) for {spec.duration_s} s")
        self.endpoints.apply(spec)
        self._runs += 1
        binary = which(self.cfg["binary"]) or self.cfg["binary"]
        port = str(int(self.cfg["port"]))
        client_cpu, server_cpu = self._cpu_args()
        log_dir = Path(self.context.log_dir)
        log_dir.mkdir(parents=True, exist_ok=True)
        server_ip, client_ip = self.endpoints.ip(1), self.endpoints.ip(0)
        self._server = spawn([binary, "-s", "-1", "-B", server_ip, "-p", port, *server_cpu],
                             netns=self.endpoints.names[1], log_path=log_dir / "iperf3-server.log")
        try:
            self._wait_listening(port)
            argv = [binary, "-c", server_ip, "-B", client_ip, "-p", port, "-t", f"{spec.duration_s:g}",
                    "-P", str(int(spec.streams)), "-J", *client_cpu]
            if spec.omit_s > 0:
                argv += ["-O", f"{spec.omit_s:g}"]
            if spec.bidirectional:
                argv.append("--bidir")
            timeout = spec.duration_s + spec.omit_s + 30.0
            done = run(argv, netns=self.endpoints.names[0], check=False, timeout_s=timeout)
            (log_dir / f"iperf3-client-{self._runs}.json").write_text(done.stdout, encoding="utf-8")
            try:
                result = parse_report(done.stdout, spec.streams)
            except ReportError as exc:
                raise PluginError(f"iperf3 (exit {done.returncode}): {exc}") from None
        except CommandError as exc:
            raise PluginError(f"iperf3: {exc}") from None
        finally:
            if self._server is not None:
                self._server.stop(grace_s=2.0)
                self._server = None
        return result

    def _wait_listening(self, port: str) -> None:
        deadline = time.monotonic() + float(self.cfg["start_timeout_s"])
        assert self.endpoints is not None and self._server is not None
        while time.monotonic() < deadline:
            if not self._server.alive():
                raise PluginError("iperf3: the server exited before it listened (see iperf3-server.log)")
            out = run(["ss", "-Hltn", f"sport = :{port}"], netns=self.endpoints.names[1], check=False, timeout_s=5)
            if out.stdout.strip():
                return
            time.sleep(0.05)
        raise PluginError(f"iperf3: the server did not listen on port {port} within {self.cfg['start_timeout_s']} s")
