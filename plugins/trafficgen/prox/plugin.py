"""The ``prox`` traffic generator: drives Intel/OPNFV PROX over its control socket.

One trial: ``reset stats``; set each generator core's ``speed``; wait for PROX to publish a
stats sample taken after the reset (the baseline); ``start`` the generator cores; sleep the
duration (polling ``lat [all] stats`` when latency is wanted); ``stop``; wait the drain time
and for a sample taken after the stop; the counters are the ``port_stats`` deltas (TX of the
sending port, RX of its peer). PROX publishes statistics about once a second, so reading
counters right after ``stop`` would return stale figures -- the "fresh sample" barrier below
is what makes the counters belong to this trial.

PROX may be running already (``launch: none``, the default: ``host``/``port`` or
``unix_socket``), or be started by the plugin with the shipped generator configuration
(``launch: local``, or ``launch: ssh`` on the host in ``ssh``), or be started on the
embedded testbed (``launch: testbed``): in the generator's network namespace, on
``net_af_packet`` ports over the generator veth ends, with hugepages of its own and a
configuration rendered for those ports (``genconfig.render_testbed``), at the first
``configure`` (the ports are known only then). Every launch uses ``-o cli``: with ``-o
none`` PROX has no statistics consumer and never refreshes its counters after start-up
(``run.c``: ``stats_update(stats_cons_flags)`` with no flags), so every trial would read
zeros. See ``rates.py`` for the fps-to-percent conversion and ``replies.py`` for the reply
formats.
"""

from __future__ import annotations

import logging
import re
import time
from pathlib import Path
from typing import Any, ClassVar, Mapping, Sequence

from vsbench.interfaces.plugin import PluginContext, PluginError, Prerequisite, tcp_unreachable
from vsbench.interfaces.traffic import (
    DirectionCounters,
    GeneratorCapabilities,
    GeneratorPort,
    TrafficProfile,
    TrialResult,
    line_rate_fps,
)
from vsbench.interfaces.trafficgen import TrafficGenerator
from vsbench.interfaces import commands
from vsbench.interfaces.host import cpu
from vsbench.interfaces.host import dpdk_app as dpdk

from vsbench_plugins.trafficgen.prox import genconfig, packets, rates, replies
from vsbench_plugins.trafficgen.prox.latency import LatencyAccumulator
from vsbench_plugins.trafficgen.prox.protocol import ProxAddress, ProxConnection
from vsbench_plugins.trafficgen.remote_host import SSH_SETTINGS_SCHEMA, RemoteHost

log = logging.getLogger(__name__)
#: PROX's -l file name buffer (MAX_NAME_SIZE in prox_globals.h), terminating NUL included.
PROX_MAX_NAME = 64

_CORE_LISTS = {
    "type": "array",
    "minItems": 2,
    "maxItems": 2,
    "items": {"type": "array", "minItems": 1, "items": {"type": "integer", "minimum": 0}},
}

SETTINGS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "host": {"type": "string", "minLength": 1},
        "port": {"type": "integer", "minimum": 1, "maximum": 65535},
        "unix_socket": {"type": ["string", "null"]},
        "connect_timeout_s": {"type": "number", "exclusiveMinimum": 0},
        "reply_timeout_s": {"type": "number", "exclusiveMinimum": 0},
        "stats_timeout_s": {"type": "number", "exclusiveMinimum": 0},
        "stats_poll_s": {"type": "number", "exclusiveMinimum": 0},
        "drain_s": {"type": ["number", "null"], "minimum": 0},
        "ports": {"type": "array", "minItems": 2, "maxItems": 2,
                  "items": {"type": "integer", "minimum": 0}},
        "gen_cores": _CORE_LISTS,
        "lat_cores": _CORE_LISTS,
        "task": {"type": "integer", "minimum": 0},
        "latency_buckets": {"type": "boolean"},
        "latency_bucket_exp": {"type": "integer", "minimum": 0, "maximum": 40},
        "link_gbps": {"type": "number", "exclusiveMinimum": 0},
        "max_flows": {"type": "integer", "minimum": 1},
        "launch": {"enum": ["none", "local", "ssh", "testbed"]},
        "memory_mb": {"type": "integer", "minimum": 16},
        "binary": {"type": "string", "minLength": 1},
        "extra_args": {"type": "array", "items": {"type": "string"}},
        "config_template": {"type": ["string", "null"]},
        "remote_config_path": {"type": "string", "minLength": 1},
        "startup_timeout_s": {"type": "number", "exclusiveMinimum": 0},
        "master_core": {"type": "integer", "minimum": 0},
        "pci_devices": {"type": "array", "items": {"type": "string"}},
        "port_macs": {"type": "array", "items": {"type": "string"}},
        "ssh": SSH_SETTINGS_SCHEMA,
    },
}

DEFAULTS: dict[str, Any] = {
    "host": "127.0.0.1",
    "port": 8474,
    "unix_socket": None,
    "connect_timeout_s": 5.0,
    "reply_timeout_s": 2.0,
    "stats_timeout_s": 5.0,
    "stats_poll_s": 0.25,
    "drain_s": None,
    "ports": [0, 1],
    "gen_cores": [[1], [2]],
    "lat_cores": [[3], [4]],
    "task": 0,
    "latency_buckets": True,
    "latency_bucket_exp": 11,
    "link_gbps": 10.0,
    "max_flows": 2**24,
    "launch": "none",
    "memory_mb": 128,
    "binary": "prox",
    "extra_args": [],
    "config_template": None,
    "remote_config_path": "/tmp/vsbench-prox-gen.cfg",
    "startup_timeout_s": 30.0,
    "master_core": 0,
    "pci_devices": [],
    "port_macs": [],
    "ssh": None,
}


class Prox(TrafficGenerator):
    """PROX (DPDK packet generator) over its TCP/UNIX control socket."""

    description: ClassVar[str] = "PROX (samplevnf DPPD-PROX) driven over its control socket"
    api_version: ClassVar[str] = "1.0"
    settings_schema: ClassVar[dict] = SETTINGS_SCHEMA

    def __init__(self, context: PluginContext) -> None:
        super().__init__(context)
        self.cfg: dict[str, Any] = {**DEFAULTS, **dict(context.settings or {})}
        unix = self.cfg["unix_socket"]
        self.address = ProxAddress(
            host=None if unix else self.cfg["host"], port=int(self.cfg["port"]), unix_path=unix
        )
        self.remote = RemoteHost.from_settings(self.cfg.get("ssh"))
        self._conn: ProxConnection | None = None
        self._proc: commands.ManagedProcess | None = None
        self._profile: TrafficProfile | None = None
        self._lat_started = False
        self._stopped = False
        self._no_stats_command = False  # set when PROX left 'stats' unanswered (an old build)
        # (core, task) of each port's generator and latency tasks; the testbed launch
        # replaces them with the tasks of the configuration it rendered.
        task = int(self.cfg["task"])
        self._gen: list[list[tuple[int, int]]] = [[(c, task) for c in cores] for cores in self.cfg["gen_cores"]]
        self._lat: list[list[tuple[int, int]]] = [[(c, task) for c in cores] for cores in self.cfg["lat_cores"]]
        self._directions_launched = 2

    # ------------------------------------------------------------------ contract

    @classmethod
    def check_prerequisites(cls, settings: Mapping[str, Any]) -> list[Prerequisite]:
        cfg = {**DEFAULTS, **dict(settings or {})}
        missing = []
        if cfg["launch"] in ("local", "testbed") and not commands.which(cfg["binary"]):
            missing.append(Prerequisite(
                f"PROX executable {cfg['binary']!r}",
                "build PROX (tools/build_prox.sh SAMPLEVNF.tar.gz prints its path) and set "
                "trafficgen.prox.binary, or run PROX yourself and use launch: none"))
        if cfg["launch"] == "testbed":
            online = set(cpu.online_cpus())
            used = {int(cfg["master_core"]), *(c for cores in (*cfg["gen_cores"], *cfg["lat_cores"]) for c in cores)}
            offline = sorted(used - online)
            if offline:
                missing.append(Prerequisite(
                    f"CPU(s) {','.join(map(str, offline))} for PROX's lcores (online: "
                    f"{','.join(map(str, sorted(online)))})",
                    "set trafficgen.prox.master_core, gen_cores and lat_cores to online CPUs "
                    "(PROX's [core N] is DPDK lcore N, which is CPU N)"))
        if cfg["launch"] == "ssh":
            ssh = (cfg.get("ssh") or {})
            if not ssh.get("host"):
                missing.append(Prerequisite("trafficgen.prox.ssh.host", "name the PROX host"))
            tool = (ssh.get("ssh_command") or ["ssh"])[0]
            if not commands.which(tool):
                missing.append(Prerequisite(f"ssh client {tool!r}", "apt-get install openssh-client"))
        return missing

    @classmethod
    def check_reachable(cls, settings: Mapping[str, Any]) -> list[Prerequisite]:
        """``launch: none`` (PROX already runs): its TCP control port must answer.
        ``launch: ssh``: the PROX host's ssh port must answer (PROX itself is not up yet).
        A local launch or a UNIX socket reaches nothing remote."""
        cfg = {**DEFAULTS, **dict(settings or {})}
        if cfg["launch"] == "ssh":
            remote = RemoteHost.from_settings(cfg.get("ssh"))
            return [] if remote is None else remote.unreachable("trafficgen.prox.ssh")
        if cfg["launch"] != "none" or cfg["unix_socket"]:
            return []
        reason = tcp_unreachable(str(cfg["host"]), int(cfg["port"]), float(cfg["connect_timeout_s"]))
        if reason is None:
            return []
        return [Prerequisite(f"PROX control port {cfg['host']}:{cfg['port']}: {reason}",
                             "start PROX there with -t (launch: none expects it running), or set "
                             "trafficgen.prox.host and port, or let vsbench start it (launch: local or ssh)")]

    @classmethod
    def cleanup_dead_run(cls, run_id: str, work_dirs: list[Path]) -> list[str]:
        """A killed run's PROX is ended by the generic cleanup (its command line names the
        run's config); here: the hugepages its testbed launch reserved and recorded."""
        if not re.fullmatch(r"[0-9a-f]{6}", run_id):
            return []
        done = []
        for work_dir in work_dirs:
            for run_dir in sorted(Path(work_dir).glob(f"vsb-{run_id}-prox")):
                if run_dir.is_dir() and not run_dir.is_symlink():
                    done.append(f"prox: released {dpdk.release_recorded(run_dir)} hugepages of {run_dir}")
        return done

    def capabilities(self) -> GeneratorCapabilities:
        link_bps = float(self.cfg["link_gbps"]) * 1e9
        return GeneratorCapabilities(
            ports=2,
            max_rate_fps=2 * line_rate_fps(link_bps, 64),
            latency=True,
            per_packet_latency=False,
            max_flows=int(self.cfg["max_flows"]),
            bidirectional=True,
            needs_testbed=self.cfg["launch"] == "testbed",
            native_search=False,
        )

    def start(self) -> None:
        self._stopped = False
        self.context.resources.register(f"prox generator at {self.address}", self.stop)
        if self.cfg["launch"] == "testbed":
            return  # launched at the first configure(), when the testbed's ports are known
        try:
            if self.cfg["launch"] != "none":
                self._launch()
            self._open()
        except BaseException:
            self.stop()
            raise

    def _open(self) -> None:
        self._conn = self._connect()
        self._conn.query("tot stats")  # liveness: every PROX build answers it
        for cmd in _by_task("stop", [p for pairs in self._gen for p in pairs]):
            self._conn.send(cmd)
        for cmd in _by_task("start", [p for pairs in self._lat for p in pairs]):
            self._conn.send(cmd)
        self._lat_started = True

    def generator_cpus(self) -> set[int]:
        """The CPUs PROX's worker lcores busy-poll, when vsbench runs PROX on this host
        (for the run's CPU placement plan); none when PROX runs elsewhere."""
        if self.cfg["launch"] not in ("local", "testbed"):
            return set()
        return {core for pairs in (*self._gen, *self._lat) for core, _ in pairs}

    def configure(self, profile: TrafficProfile, ports: Sequence[GeneratorPort]) -> None:
        if self.cfg["launch"] == "testbed" and self._conn is None:
            if self._stopped:
                raise PluginError("prox: configure after stop")
            self._launch_testbed(profile, ports)
            self._open()
        if profile.directions > self._directions_launched:
            raise PluginError(f"prox: PROX was started for {self._directions_launched} direction(s); a "
                              f"profile sending {profile.directions} needs a new run")
        conn = self._require()
        if len(ports) < profile.directions + (0 if profile.bidirectional else 1):
            raise PluginError(f"prox at {self.address}: profile needs 2 ports, got {len(ports)}")
        if profile.flows > int(self.cfg["max_flows"]):
            raise PluginError(f"prox at {self.address}: {profile.flows} flows exceed max_flows "
                              f"{self.cfg['max_flows']}")
        conn.send("reset values all")
        conn.send("reset randoms all")
        directions = [profile.fields, packets.reversed_fields(profile.fields)]
        for port in range(profile.directions):
            for task, cores in _group(self._gen[port]).items():
                for cmd in packets.profile_commands(profile, directions[port], cores, task):
                    conn.send(cmd)
        self._profile = profile

    def run_trial(self, load_fps: float, duration_s: float, *, latency: bool = False) -> TrialResult:
        conn = self._require()
        profile = self._profile
        if profile is None:
            raise PluginError(f"prox at {self.address}: run_trial before configure")
        began = time.monotonic()
        sending = self._gen[: profile.directions]
        gen_pairs = [p for pairs in sending for p in pairs]
        speed_cmds, clamped = rates.speed_commands_for_tasks(load_fps, profile.frame_size_bytes, sending)

        conn.send("reset stats")
        conn.send("reset lat stats")
        for cmd in speed_cmds:
            conn.send(cmd)
        self._wait_fresh_sample()
        before = self._port_totals()
        acc = LatencyAccumulator(int(self.cfg["latency_bucket_exp"])) if latency else None
        if acc is not None:
            for core, stats, _ in self._lat_poll():
                acc.baseline(core, stats)

        for cmd in _by_task("start", gen_pairs):
            conn.send(cmd)
        t_start = time.monotonic()
        t_end = t_start + duration_s
        poll = float(self.cfg["stats_poll_s"])
        while (now := time.monotonic()) < t_end:
            time.sleep(min(poll, t_end - now) if acc is not None else t_end - now)
            if acc is not None and time.monotonic() < t_end:
                for core, stats, buckets in self._lat_poll():
                    acc.add(core, stats, buckets)
        for cmd in _by_task("stop", gen_pairs):
            conn.send(cmd)
        tx_duration = time.monotonic() - t_start

        time.sleep(self._drain_s())
        self._wait_fresh_sample()
        after = self._port_totals()
        if acc is not None:
            for core, stats, buckets in self._lat_poll():
                acc.add(core, stats, buckets)

        dirs = []
        for d in range(profile.directions):
            tx_port, rx_port = d, 1 - d
            dirs.append(DirectionCounters(
                tx_port=tx_port,
                rx_port=rx_port,
                tx_frames=after[tx_port].tx_total - before[tx_port].tx_total,
                rx_frames=after[rx_port].rx_total - before[rx_port].rx_total,
            ))
        stats: dict[str, Any] = {
            "speed_commands": speed_cmds,
            "rx_errors": sum(after[p].errors_total - before[p].errors_total for p in (0, 1)),
            "rx_no_mbufs": sum(after[p].no_mbufs_total - before[p].no_mbufs_total for p in (0, 1)),
        }
        histogram = acc.histogram() if acc is not None else None
        if acc is not None:
            stats.update(latency_intervals=acc.intervals, mis_ordered=acc.mis_ordered,
                         duplicate=acc.duplicate, extent=acc.extent)
            samples = self._latency_samples()
            if samples is not None:
                stats["latency_samples"] = {"received": samples.received, "measured": samples.measured}
        return TrialResult(
            intended_load_fps=load_fps,
            intended_duration_s=duration_s,
            frame_size_bytes=profile.frame_size_bytes,
            tx_frames=sum(d.tx_frames for d in dirs),
            rx_frames=sum(d.rx_frames for d in dirs),
            directions=tuple(dirs),
            tx_duration_s=tx_duration,
            effective_duration_s=time.monotonic() - began,
            latency_histogram=histogram,
            valid=not clamped,
            invalid_reason=("rate above PROX's 1000 % per core (100 Gb/s); add generator cores"
                            if clamped else None),
            generator_stats=stats,
        )

    def stop(self) -> None:
        """Stop the cores, close the socket, quit PROX if we launched it. Idempotent."""
        if self._stopped:
            return
        self._stopped = True
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                for cmd in _by_task("stop", [p for pairs in self._gen for p in pairs]):
                    conn.send(cmd)
                if self._lat_started:
                    for cmd in _by_task("stop", [p for pairs in self._lat for p in pairs]):
                        conn.send(cmd)
                if self._proc is not None:
                    conn.send("quit")
            except PluginError as exc:
                log.warning("%s", exc)
            finally:
                conn.close()
        self._lat_started = False
        proc, self._proc = self._proc, None
        if proc is not None:
            try:
                proc.wait(timeout_s=3.0)
            except Exception:  # noqa: BLE001 - it did not quit: end it by pid
                pass
            proc.stop()

    def version(self) -> dict[str, str]:
        if self._conn is None:
            return {}
        try:
            return replies.parse_version(self._conn.query("version")[0])
        except (PluginError, replies.ProxReplyError):
            return {}  # older builds have no 'version' command

    # ------------------------------------------------------------------ helpers

    def _require(self) -> ProxConnection:
        if self._conn is None:
            raise PluginError(f"prox at {self.address}: not started")
        return self._conn

    def _drain_s(self) -> float:
        if self.cfg.get("drain_s") is not None:
            return float(self.cfg["drain_s"])
        drain = self.context.run.drain_s
        return 0.5 if drain is None else float(drain)

    def _connect(self) -> ProxConnection:
        timeout = float(self.cfg["connect_timeout_s"])
        reply = float(self.cfg["reply_timeout_s"])
        if self._proc is None:
            return ProxConnection.open(self.address, connect_timeout_s=timeout, reply_timeout_s=reply)
        deadline = time.monotonic() + float(self.cfg["startup_timeout_s"])
        while True:  # a PROX we launched needs time to initialise DPDK
            try:
                return ProxConnection.open(self.address, connect_timeout_s=timeout,
                                           reply_timeout_s=reply)
            except PluginError as exc:
                if not self._proc.alive():
                    raise PluginError(f"prox: PROX exited (code {self._proc.popen.returncode}) "
                                      f"before its socket {self.address} opened; see "
                                      f"{self._proc.log_path}") from None
                if time.monotonic() > deadline:
                    raise exc
                time.sleep(0.1)

    def _launch(self) -> None:
        fields = self.context.run.flow_fields  # PROX is launched before configure()
        work = self.context.work_dir or self.context.log_dir
        cfg_path = genconfig.write_config(self.cfg, fields, Path(work) / "prox-gen.cfg")
        flag = ["-u"] if self.address.unix_path else ["-t"]
        log_path = Path(self.context.log_dir) / "prox.log"
        if self.cfg["launch"] == "local":
            argv = [self.cfg["binary"], "-e", *flag, "-o", "cli", "-f", str(cfg_path),
                    "-l", self._own_log(), *self.cfg["extra_args"]]
        else:
            if self.remote is None:
                raise PluginError("prox: launch: ssh needs trafficgen.prox.ssh.host")
            remote_cfg = self.cfg["remote_config_path"]
            try:
                commands.run(self.remote.scp_to_argv(str(cfg_path), remote_cfg), timeout_s=60)
            except commands.CommandError as exc:
                raise PluginError(f"prox: cannot copy the config to {self.remote.address}: {exc}") from None
            argv = self.remote.ssh_argv(
                [self.cfg["binary"], "-e", *flag, "-o", "cli", "-f", remote_cfg,
                 *self.cfg["extra_args"]], tty=True)
        try:
            self._proc = commands.spawn(argv, log_path=log_path)
        except OSError as exc:
            raise PluginError(f"prox: cannot start {argv[0]}: {exc.strerror}") from None
        log.info("started PROX pid %d, log %s", self._proc.pid, log_path)

    def _launch_testbed(self, profile: TrafficProfile, ports: Sequence[GeneratorPort]) -> None:
        """Start PROX in the testbed's generator namespace on its two veth ends.

        Hugepages of its own (reserved, mounted privately, files removed at teardown), a
        file prefix of its own (so it never meets OvS-DPDK's or a VNF's DPDK state), no PCI
        probing, ``net_af_packet`` ports, the configuration rendered for the profile's
        directions; the process is stopped by pid at teardown (``stop``)."""
        if len(ports) != 2:
            raise PluginError(f"prox: launch: testbed drives two generator ports, got {len(ports)}")
        namespaces = {p.netns for p in ports}
        if len(namespaces) != 1 or None in namespaces:
            raise PluginError("prox: launch: testbed needs both ports in one testbed network namespace")
        netns = ports[0].netns
        layout = genconfig.testbed_layout(self.cfg, profile.directions)
        tasks = genconfig.task_map(layout)
        self._gen = [[tasks[("gen", p)]] for p in range(profile.directions)] + \
            [[] for _ in range(2 - profile.directions)]
        self._lat = [[tasks[("lat", p)]] for p in range(2)]
        self._directions_launched = profile.directions
        run_id = self.context.run_id
        work = Path(self.context.work_dir or self.context.log_dir) / f"vsb-{run_id}-prox"
        try:
            memory = dpdk.prepare_memory(self.context.resources, work, f"vsb{run_id}prox",
                                         int(self.cfg["memory_mb"]))
            vdevs = [dpdk.af_packet_vdev(i, p.iface) for i, p in enumerate(ports)]
        except dpdk.DpdkAppError as exc:
            raise PluginError(f"prox: {exc}") from None
        text = genconfig.render_testbed(self.cfg, self.context.run.flow_fields, layout,
                                        [*memory.eal_args(), *vdevs])
        cfg_path = work / "prox-gen.cfg"
        cfg_path.write_text(text, encoding="utf-8")
        log_path = Path(self.context.log_dir) / "prox.log"
        argv = [self.cfg["binary"], "-e", "-t", "-o", "cli", "-f", str(cfg_path),
                "-l", self._own_log(work), *self.cfg["extra_args"]]
        self.address = ProxAddress(host="127.0.0.1", port=8474, netns=netns)
        self._loopback_up(netns)
        try:
            self._proc = commands.spawn(argv, netns=netns, log_path=log_path)
        except OSError as exc:
            raise PluginError(f"prox: cannot start {argv[0]}: {exc.strerror}") from None
        # Teardown runs last-registered first: PROX must end before its hugepages, files and
        # loopback (registered above) go, so its stop is registered again, after them.
        self.context.resources.register(f"PROX pid {self._proc.pid}", self.stop)
        log.info("started PROX pid %d in netns %s on %s, log %s", self._proc.pid, netns,
                 ", ".join(p.iface for p in ports), log_path)

    def _loopback_up(self, netns: str) -> None:
        """PROX's control port listens on 0.0.0.0:8474 inside the generator namespace, whose
        loopback the testbed leaves down ("Network is unreachable" from 127.0.0.1): bring it
        up for the run, and down again at teardown if it was down."""
        try:
            shown = commands.run(["ip", "-n", netns, "-o", "link", "show", "lo"], timeout_s=10).stdout
            if "UP" in shown.split(">")[0]:
                return
            commands.run(["ip", "-n", netns, "link", "set", "lo", "up"], timeout_s=10)
        except commands.CommandError as exc:
            raise PluginError(f"prox: cannot bring up the loopback of netns {netns}: {exc}") from None
        self.context.resources.register(
            f"loopback of {netns} down again",
            lambda: commands.run(["ip", "-n", netns, "link", "set", "lo", "down"], check=False, timeout_s=10))

    def _own_log(self, near: Path | None = None) -> str:
        """Where PROX writes its own log (``-l``; without it PROX writes ``./prox.log`` in
        whatever directory vsbench runs from). PROX copies the name into a 64-byte buffer and
        panics on a longer one (``prox_strncpy``), so a long log dir falls back to /tmp."""
        for candidate in (Path(self.context.log_dir) / "prox-own.log",
                          Path(near or self.context.work_dir or self.context.log_dir) / "prox-own.log",
                          Path("/tmp") / f"vsb-{self.context.run_id}-prox-own.log"):
            if len(str(candidate)) < PROX_MAX_NAME:
                return str(candidate)
        raise PluginError(f"prox: no log path shorter than {PROX_MAX_NAME} bytes for PROX's -l")

    def _wait_fresh_sample(self) -> None:
        """Return once PROX has published a stats sample newer than every command sent so far.

        The ``tot stats`` reply carries the timestamp of the latest sample; PROX handles
        commands in order, so any later sample was taken after our previous commands."""
        conn = self._require()
        seen = replies.parse_tot_stats(conn.query("tot stats")[0]).last_tsc
        deadline = time.monotonic() + float(self.cfg["stats_timeout_s"])
        step = min(0.05, float(self.cfg["stats_poll_s"]))
        while True:
            time.sleep(step)
            if replies.parse_tot_stats(conn.query("tot stats")[0]).last_tsc > seen:
                return
            if time.monotonic() > deadline:
                raise PluginError(f"prox: PROX at {self.address} published no new statistics "
                                  f"within {self.cfg['stats_timeout_s']:g} s (a PROX started with "
                                  f"-o none never refreshes them: start it with -o cli)")

    def _port_totals(self) -> dict[int, replies.PortStats]:
        conn = self._require()
        out = {}
        for index, prox_port in enumerate(self.cfg["ports"]):
            try:
                out[index] = replies.parse_port_stats(conn.query(f"port_stats {prox_port}")[0])
            except replies.ProxReplyError as exc:
                raise PluginError(f"prox at {self.address}: {exc}") from None
        return out

    def _latency_samples(self) -> replies.LatencySamples | None:
        """How many latency packets PROX received since ``reset lat stats`` and how many it
        measured, over all its latency tasks: a trial whose latency is thin or missing
        although its frames arrived says why in its generator statistics (PROX drops the
        sample of a packet whose transmit time it cannot vouch for, and a starved generator
        core loses them all)."""
        n_tasks = sum(len(pairs) for pairs in self._lat)
        if n_tasks == 0 or self._no_stats_command:
            return None
        try:
            reply = self._require().query("stats " + ",".join(replies.latency_samples_paths(n_tasks)))[0]
        except PluginError:
            # a build without the 'stats' command replies nothing: ask once per run, not per trial
            self._no_stats_command = True
            return None
        try:
            return replies.parse_latency_samples(reply, n_tasks)
        except replies.ProxReplyError as exc:
            raise PluginError(f"prox at {self.address}: {exc}") from None

    def _lat_poll(self) -> list[tuple[int, replies.LatStats, list[int] | None]]:
        """One ``lat [all] stats`` query over every latency core of a receiving port."""
        conn = self._require()
        profile = self._profile
        directions = profile.directions if profile else 2
        rx_ports = [1 - d for d in range(directions)]
        with_buckets = bool(self.cfg["latency_buckets"])
        out = []
        for task, cores in _group([p for port in rx_ports for p in self._lat[port]]).items():
            core_list = ",".join(str(c) for c in cores)
            command = f"lat {'all ' if with_buckets else ''}stats {core_list} {task}"
            conn.query(command, lines=0)
            try:
                for core in cores:
                    # Read core by core: a bad core/task gets one 'error: ...' line, no buckets.
                    stats = replies.parse_lat_stats(conn.read(command, 1)[0])
                    buckets = None
                    if with_buckets:
                        buckets = [0] * replies.LAT_BUCKETS
                        for line in conn.read(command, replies.LAT_BUCKETS):
                            idx, n = replies.parse_bucket(line)
                            if idx < replies.LAT_BUCKETS:
                                buckets[idx] = n
                    out.append((core * 1000 + task, stats, buckets))
            except replies.ProxReplyError as exc:
                raise PluginError(f"prox at {self.address}: {exc}") from None
        return out


def _group(pairs: Sequence[tuple[int, int]]) -> dict[int, list[int]]:
    """``(core, task)`` pairs -> task -> its cores, in first-seen order (PROX commands take a
    core list and one task id)."""
    out: dict[int, list[int]] = {}
    for core, task in pairs:
        if core not in out.setdefault(task, []):
            out[task].append(core)
    return out


def _by_task(verb: str, pairs: Sequence[tuple[int, int]]) -> list[str]:
    """``start``/``stop`` commands for exactly these tasks, one per task id."""
    return [f"{verb} {','.join(str(c) for c in cores)} {task}" for task, cores in _group(pairs).items()]
