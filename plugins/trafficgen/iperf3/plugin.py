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
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any, ClassVar, Mapping, Sequence

from vsbench.interfaces.commands import CommandError, ManagedProcess, run, spawn, which
from vsbench.interfaces.plugin import PluginContext, PluginError, Prerequisite
from vsbench.interfaces.settings import with_defaults
from vsbench.interfaces.tcp import TcpResult, TcpSpec
from vsbench.interfaces.traffic import GeneratorCapabilities, GeneratorPort, TrafficProfile, TrialResult
from vsbench.interfaces.trafficgen import TrafficGenerator

from vsbench_plugins.trafficgen.iperf3.endpoints import Endpoints
from vsbench_plugins.trafficgen.iperf3.parse import ReportError, parse_report, tcp_counters

log = logging.getLogger(__name__)

#: iperf3's --connect-timeout: the control connection across a local switch takes a
#: millisecond; 5 s leaves room for a SYN retransmitted once (after 1 s) on a loaded host.
CONNECT_TIMEOUT_S = 5.0
#: iperf3's --snd-timeout (TCP_USER_TIMEOUT): data unacknowledged this long ends the run
#: with an error instead of a client that waits for ever.
SEND_STALL_S = 5.0
#: What the client may take beyond its run: exchanging and printing the results.
REPORT_SLACK_S = 5.0

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
        self._client: ManagedProcess | None = None
        self._server_log_from = 0
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
        if self._client is not None:
            self._client.stop(grace_s=2.0)
            self._client = None
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
        server_log = log_dir / "iperf3-server.log"
        self._server_log_from = server_log.stat().st_size if server_log.exists() else 0
        self._server = spawn([binary, "-s", "-1", "-B", server_ip, "-p", port, "--forceflush", *server_cpu],
                             netns=self.endpoints.names[1], log_path=server_log)
        try:
            self._wait_listening(port)
            argv = [binary, "-c", server_ip, "-B", client_ip, "-p", port, "-t", f"{spec.duration_s:g}",
                    "-P", str(int(spec.streams)), "-J", *client_cpu]
            if spec.omit_s > 0:
                argv += ["-O", f"{spec.omit_s:g}"]
            if spec.bidirectional:
                argv.append("--bidir")
            argv += ["--connect-timeout", str(int(CONNECT_TIMEOUT_S * 1000)),
                     "--snd-timeout", str(int(SEND_STALL_S * 1000))]
            timeout = spec.duration_s + spec.omit_s + CONNECT_TIMEOUT_S + SEND_STALL_S + REPORT_SLACK_S
            report_path = log_dir / f"iperf3-client-{self._runs}.json"
            with open(report_path, "w", encoding="utf-8") as report:
                self._client = spawn(argv, netns=self.endpoints.names[0], stdout=report)
                try:
                    code = self._client.wait(timeout)
                except subprocess.TimeoutExpired:  # look at the sockets before they close
                    why = self._stall_diagnosis(server_ip, port)
                    raise PluginError(f"iperf3: the client did not finish a {spec.duration_s:g} s run "
                                      f"within {timeout:g} s: {why}") from None
                finally:
                    self._client.stop(grace_s=2.0)
                    self._client = None
            try:
                result = parse_report(report_path.read_text(encoding="utf-8", errors="replace"), spec.streams)
            except ReportError as exc:
                raise PluginError(f"{exc} (exit {code}); {self._stall_diagnosis(server_ip, port)}") from None
        except CommandError as exc:
            raise PluginError(f"iperf3: {exc}") from None
        finally:
            if self._server is not None:
                self._server.stop(grace_s=2.0)
                self._server = None
        return result

    def _stall_diagnosis(self, server_ip: str, port: str) -> str:
        """One clause on where a failed or hung run stopped, from what the endpoints show:
        whether the server accepted the control connection, the client's connections'
        TCP states (SYN-SENT: nothing came back across the switch), and the server
        endpoint's TCP segments in and checksum errors (a switch that mangles frames)."""
        assert self.endpoints is not None
        log_path = Path(self.context.log_dir) / "iperf3-server.log"
        try:
            with open(log_path, encoding="utf-8", errors="replace") as server_log:
                server_log.seek(self._server_log_from)  # this run's part
                accepted = "Accepted connection" in server_log.read()
        except OSError:
            accepted = False
        parts = ["the server accepted the control connection" if accepted
                 else "the server saw no connection"]
        try:
            ss = run(["ss", "-Htn", "state", "all", "dst", f"{server_ip}:{port}"],
                     netns=self.endpoints.names[0], check=False, timeout_s=5)
            snmp = run(["cat", "/proc/net/snmp"], netns=self.endpoints.names[1], check=False, timeout_s=5)
        except CommandError:
            return "; ".join(parts)
        states = [line.split()[0] for line in ss.stdout.splitlines() if line.split()]
        if states:
            parts.append("client sockets " + ", ".join(f"{n} {s}" for s, n in sorted(Counter(states).items())))
        tcp = tcp_counters(snmp.stdout)
        if tcp:
            parts.append(f"server endpoint: {tcp.get('InSegs', 0)} TCP segments in, "
                         f"{tcp.get('InCsumErrors', 0)} with bad checksums")
        return "; ".join(parts)

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
