"""``iperf3``: TCP workloads between endpoints across the switch (report 5).

Real TCP connections (Debian's ``iperf3``) from generator port 0 (client) to port 1
(server), each port in a network namespace of its own (:mod:`.endpoints`); the switch
forwards every segment and acknowledgement. With ``clients`` N > 1 (``tcp.clients``)
ports 0..N-1 are clients sending to the server endpoint on port N at once: one iperf3
server process per client there (an iperf3 server serves one test at a time), on ports
``port`` .. ``port + N - 1`` of the one server address, so each client's bytes are counted
on their own. The workload is closed-loop, so this
generator runs no frame trials (``tcp_only``): it implements
:meth:`~vsbench.interfaces.trafficgen.TrafficGenerator.run_tcp` for ``traffic.type: tcp``,
which gives the endpoints' goodput, retransmits, CPU and TCP round-trip times
(:mod:`.parse`). Both iperf3 processes are pinned to ``cpus`` (default CPU 0, beside the
switch's PMD on CPU 1 of a 2-core machine), which the runner's CPU plan shows.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any, ClassVar, Mapping, Sequence

from vsbench.interfaces.commands import CommandError, ManagedProcess, run, spawn, which
from vsbench.interfaces.plugin import PluginContext, PluginError, Prerequisite
from vsbench.interfaces.settings import with_defaults
from vsbench.interfaces.tcp import TcpResult, TcpSpec, combine
from vsbench.interfaces.traffic import GeneratorCapabilities, GeneratorPort, TrafficProfile, TrialResult
from vsbench.interfaces.trafficgen import TrafficGenerator

from vsbench_plugins.trafficgen.iperf3.endpoints import MAX_ENDPOINTS, Endpoints
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
        "port": {"type": "integer", "minimum": 1, "maximum": 65535, "default": 5201,
                 "description": "the server's TCP port (client i of several: port + i)"},
        "start_timeout_s": {"type": "number", "exclusiveMinimum": 0, "default": 10,
                            "description": "how long the server may take to listen"},
    },
}


def interface_deltas(before: list[dict[str, int]], after: list[dict[str, int]]) -> list[dict[str, int]]:
    """Each endpoint interface's counters over a run (after - before; empty where either
    sample is missing). Pure."""
    return [{k: a[k] - b[k] for k in a if k in b} if a and b else {} for b, a in zip(before, after)]


def total_drops(interfaces: list[dict[str, int]]) -> int | None:
    """Packets the endpoints' interfaces dropped over a run, both directions (None when a
    port's counters are missing): on a tap port a client's ``tx_dropped`` is its tap
    queue overflowing while the switch drains it, the retransmits' usual cause there."""
    if not interfaces or any(not i for i in interfaces):
        return None
    return sum(i.get("tx_dropped", 0) + i.get("rx_dropped", 0) for i in interfaces)


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
        self._servers: list[ManagedProcess] = []
        self._clients: list[ManagedProcess] = []
        #: Where this run's part of each server's log starts (servers' logs grow run by run).
        self._server_log_from: list[int] = []
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
        return GeneratorCapabilities(ports=MAX_ENDPOINTS, latency=False, max_flows=1, bidirectional=True,
                                     needs_testbed=True)

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
        self._stop(self._clients)
        self._stop(self._servers)

    @staticmethod
    def _stop(processes: list[ManagedProcess]) -> None:
        while processes:
            processes.pop().stop(grace_s=2.0)

    def configure(self, profile: TrafficProfile, ports: Sequence[GeneratorPort]) -> None:
        """Puts every port into an endpoint namespace of its own (once); the profile's
        frames mean nothing to a TCP workload."""
        if self.endpoints is None:
            self.endpoints = Endpoints(self.context.run_id, ports, self.context.resources, self.cfg["ethtool"])
        self.endpoints.setup()

    def run_trial(self, load_fps: float, duration_s: float, *, latency: bool = False) -> TrialResult:
        raise PluginError("iperf3 runs TCP workloads only (traffic.type: tcp), not frame trials")

    def _cpu_args(self) -> tuple[list[str], list[str]]:
        cpus = [int(c) for c in self.cfg["cpus"]]
        client, server = cpus[0], cpus[-1]
        return ["-A", str(client)], ["-A", str(server)]

    def _log_names(self, clients: int, index: int) -> tuple[str, str]:
        """(server log, client report) file names of client ``index`` in this run: one
        client keeps the plain names."""
        if clients == 1:
            return "iperf3-server.log", f"iperf3-client-{self._runs}.json"
        return f"iperf3-server-{index}.log", f"iperf3-client-{self._runs}-{index}.json"

    def run_tcp(self, spec: TcpSpec) -> TcpResult:
        if self.endpoints is None or not self.endpoints.ready:
            raise PluginError("iperf3: run_tcp before configure")
        if spec.duration_s <= 0 or spec.streams < 1 or spec.clients < 1:
            raise PluginError(f"iperf3: cannot run {spec.clients} client(s) of {spec.streams} stream(s) "
                              f"for {spec.duration_s} s")
        n = int(spec.clients)
        if len(self.endpoints.ports) < n + 1:
            raise PluginError(f"iperf3: {n} client(s) and a server need {n + 1} ports; "
                              f"the deployment gave {len(self.endpoints.ports)}")
        self.endpoints.apply(spec)
        self._runs += 1
        binary = which(self.cfg["binary"]) or self.cfg["binary"]
        base_port = int(self.cfg["port"])
        if base_port + n - 1 > 65535:
            raise PluginError(f"iperf3: ports {base_port}..{base_port + n - 1} do not fit (trafficgen.iperf3.port)")
        client_cpu, server_cpu = self._cpu_args()
        log_dir = Path(self.context.log_dir)
        log_dir.mkdir(parents=True, exist_ok=True)
        server_ip = self.endpoints.ip(n)
        timeout = spec.duration_s + spec.omit_s + CONNECT_TIMEOUT_S + SEND_STALL_S + REPORT_SLACK_S
        self._server_log_from = []
        reports: list[Path] = []
        before = self.endpoints.counters()
        try:
            for i in range(n):
                server_log = log_dir / self._log_names(n, i)[0]
                self._server_log_from.append(server_log.stat().st_size if server_log.exists() else 0)
                self._servers.append(spawn([binary, "-s", "-1", "-B", server_ip, "-p", str(base_port + i),
                                            "--forceflush", *server_cpu],
                                           netns=self.endpoints.names[n], log_path=server_log))
            self._wait_listening([base_port + i for i in range(n)], self.endpoints.names[n])
            for i in range(n):  # every client starts before any is waited for: they run together
                argv = [binary, "-c", server_ip, "-B", self.endpoints.ip(i), "-p", str(base_port + i),
                        "-t", f"{spec.duration_s:g}", "-P", str(int(spec.streams)), "-J", *client_cpu]
                if spec.omit_s > 0:
                    argv += ["-O", f"{spec.omit_s:g}"]
                if spec.bidirectional:
                    argv.append("--bidir")
                argv += ["--connect-timeout", str(int(CONNECT_TIMEOUT_S * 1000)),
                         "--snd-timeout", str(int(SEND_STALL_S * 1000))]
                reports.append(log_dir / self._log_names(n, i)[1])
                with open(reports[-1], "w", encoding="utf-8") as report:
                    self._clients.append(spawn(argv, netns=self.endpoints.names[i], stdout=report))
            deadline = time.monotonic() + timeout
            codes = []
            for i, client in enumerate(list(self._clients)):
                try:
                    codes.append(client.wait(max(0.1, deadline - time.monotonic())))
                except subprocess.TimeoutExpired:  # look at the sockets before they close
                    why = self._stall_diagnosis(i, n, server_ip, base_port + i)
                    who = "the client" if n == 1 else f"client {i}"
                    raise PluginError(f"iperf3: {who} did not finish a {spec.duration_s:g} s run "
                                      f"within {timeout:g} s: {why}") from None
            self._stop(self._clients)
            results = []
            for i, (path, code) in enumerate(zip(reports, codes)):
                try:
                    results.append(parse_report(path.read_text(encoding="utf-8", errors="replace"), spec.streams))
                except ReportError as exc:
                    who = "" if n == 1 else f"client {i}: "
                    raise PluginError(f"{who}{exc} (exit {code}); "
                                      f"{self._stall_diagnosis(i, n, server_ip, base_port + i)}") from None
        except CommandError as exc:
            raise PluginError(f"iperf3: {exc}") from None
        finally:
            self._stop(self._clients)
            self._stop(self._servers)
        result = combine(results)
        interfaces = interface_deltas(before, self.endpoints.counters())
        return dataclasses.replace(result, stats={**result.stats, "interfaces": interfaces,
                                                  "interface_drops": total_drops(interfaces)})

    def _stall_diagnosis(self, client: int, clients: int, server_ip: str, port: int) -> str:
        """One clause on where a failed or hung run of ``client`` stopped, from what the
        endpoints show: whether its server accepted the control connection, the client's
        connections' TCP states (SYN-SENT: nothing came back across the switch), and the
        server endpoint's TCP segments in and checksum errors (a switch that mangles
        frames)."""
        assert self.endpoints is not None
        log_path = Path(self.context.log_dir) / self._log_names(clients, client)[0]
        try:
            with open(log_path, encoding="utf-8", errors="replace") as server_log:
                server_log.seek(self._server_log_from[client] if client < len(self._server_log_from) else 0)
                accepted = "Accepted connection" in server_log.read()
        except OSError:
            accepted = False
        parts = ["the server accepted the control connection" if accepted
                 else "the server saw no connection"]
        try:
            ss = run(["ss", "-Htn", "state", "all", "dst", f"{server_ip}:{port}"],
                     netns=self.endpoints.names[client], check=False, timeout_s=5)
            snmp = run(["cat", "/proc/net/snmp"], netns=self.endpoints.names[clients], check=False, timeout_s=5)
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

    def _wait_listening(self, ports: list[int], netns: str) -> None:
        """Until every server listens on its port (``ss`` in the server's namespace)."""
        deadline = time.monotonic() + float(self.cfg["start_timeout_s"])
        waiting = set(ports)
        while time.monotonic() < deadline:
            for server, port in zip(self._servers, ports):
                if not server.alive():
                    raise PluginError(f"iperf3: the server of port {port} exited before it listened "
                                      f"(see {self._log_names(len(ports), ports.index(port))[0]})")
            out = run(["ss", "-Hltn"], netns=netns, check=False, timeout_s=5)
            listening = {int(m.group(1)) for m in re.finditer(r":(\d+)\s", out.stdout + " ")}
            waiting -= listening
            if not waiting:
                return
            time.sleep(0.05)
        raise PluginError(f"iperf3: no server listened on port(s) {', '.join(map(str, sorted(waiting)))} "
                          f"within {self.cfg['start_timeout_s']} s")
