"""The ``ixnet`` traffic generator: Keysight/Ixia IxNetwork through its REST API (restpy).

Life cycle:

* :meth:`IxNet.start` checks the address, logs in (password or API key), creates a session
  named ``vsb-<run id>-ixnet`` (removal registered the moment it exists), creates one vport
  per configured chassis port, assigns them (release registered before the assignment) and
  waits for link up.
* :meth:`IxNet.configure` builds one raw traffic item for the profile (see ``traffic.py``).
* :meth:`IxNet.run_trial` sets the per-direction rate and the duration, switches latency
  measurement on or off, generates and applies, clears statistics, starts, waits until the
  chassis reports the traffic stopped (stopping it if it overruns), waits the drain time and
  reads "Flow Statistics" (per-direction frames), "Traffic Item Statistics" (totals and
  latency) and "Port Statistics" (kept in ``generator_stats``).
* :meth:`IxNet.stop` releases the ports and removes the session; idempotent.

Every failure is one :class:`PluginError` line naming the generator and the API server
address; passwords and API keys are scrubbed from everything the plugin logs or raises.
"""

from __future__ import annotations

import logging
import os
import time
from importlib import metadata
from typing import Any, ClassVar, Mapping, Sequence

from vsbench.interfaces.plugin import PluginContext, PluginError, Prerequisite, tcp_unreachable
from vsbench.interfaces.traffic import (
    GeneratorCapabilities,
    GeneratorPort,
    LatencyHistogram,
    TrafficProfile,
    TrialResult,
    line_rate_fps,
)
from vsbench.interfaces.trafficgen import TrafficGenerator
from vsbench.interfaces.host.link_speed import LinkSpeed

from vsbench_plugins.trafficgen.ixnet import session as ixsession
from vsbench_plugins.trafficgen.ixnet import stats as ixstats
from vsbench_plugins.trafficgen.ixnet import traffic as ixtraffic
from vsbench_plugins.trafficgen.ixnet.settings import (
    SETTINGS_SCHEMA,
    Redactor,
    credentials,
    effective,
    port_locations,
)

log = logging.getLogger(__name__)

DEFAULT_DRAIN_S = 0.5


class IxNet(TrafficGenerator):
    """Keysight IxNetwork (hardware or virtual chassis) through its REST API server."""

    description: ClassVar[str] = "Keysight/Ixia IxNetwork via its REST API (ixnetwork-restpy)"
    api_version: ClassVar[str] = "1.0"
    settings_schema: ClassVar[dict] = SETTINGS_SCHEMA

    def __init__(self, context: PluginContext) -> None:
        super().__init__(context)
        self._cfg = effective(context.settings)
        self._redact = Redactor()
        self._conn: ixsession.Connection | None = None
        self._sessions: Any = None  # restpy Sessions of our session, set as soon as it exists
        self._ports_assigned = False
        self._vports: list[Any] = []
        self._port_names: list[str] = []
        self._link_bps: list[float | None] = []
        self._configured_indices: list[int] = []
        self._item: ixtraffic.TrafficItem | None = None
        self._profile: TrafficProfile | None = None
        self._latency_on: bool | None = None
        self._server: dict[str, str] = {}  # build and platform, kept for version() after stop

    # ------------------------------------------------------------------ helpers

    @property
    def address(self) -> str:
        return f"{self._cfg['api_host']}:{self._cfg['api_port']}"

    def _call(self, what: str):
        return ixsession.api_call(what, self.address, self._redact)

    def _need_started(self) -> Any:
        if self._conn is None:
            raise PluginError("ixnet: not started (start() must run before configure/run_trial)")
        return self._conn.ixnetwork

    # ------------------------------------------------------------------ contract

    @classmethod
    def check_prerequisites(cls, settings: Mapping[str, Any]) -> list[Prerequisite]:
        missing = []
        cfg = effective(settings)
        try:
            metadata.version("ixnetwork-restpy")
        except metadata.PackageNotFoundError:
            missing.append(Prerequisite("Python package ixnetwork-restpy (the extra vsbench[ixia])",
                                        "pip install 'vsbench[ixia]'"))
        if not cfg["api_host"]:
            missing.append(Prerequisite("the IxNetwork API server address",
                                        "set trafficgen.ixnet.api_host (and api_port) in a --conf-file"))
        if len(cfg["ports"]) < 2:
            missing.append(Prerequisite("two chassis ports for the generator",
                                        "set trafficgen.ixnet.ports, e.g. ['10.0.0.5;1;1', '10.0.0.5;1;2']"))
        for key in ("password_env", "api_key_env"):
            var = cfg.get(key)
            if var and not os.environ.get(var):
                missing.append(Prerequisite(f"environment variable {var}",
                                            f"export {var}=... (named by trafficgen.ixnet.{key})"))
        return missing

    @classmethod
    def check_reachable(cls, settings: Mapping[str, Any]) -> list[Prerequisite]:
        """The IxNetwork API server must accept a TCP connection at ``api_host:api_port``;
        otherwise restpy's login would fail only once the run had started (after its
        http-then-https retries)."""
        cfg = effective(settings)
        if not cfg["api_host"]:
            return []  # check_prerequisites names the missing address
        reason = tcp_unreachable(str(cfg["api_host"]), int(cfg["api_port"]), float(cfg["connect_timeout_s"]))
        if reason is None:
            return []
        return [Prerequisite(f"IxNetwork API server {cfg['api_host']}:{cfg['api_port']}: {reason}",
                             "start the API server (or its connection manager) there, or set "
                             "trafficgen.ixnet.api_host and api_port")]

    def capabilities(self) -> GeneratorCapabilities:
        ports = max(len(self._cfg["ports"]), len(self._vports))
        speeds = self._link_speeds_bps()
        max_rate = sum(line_rate_fps(s, 64) for s in speeds) if speeds and all(speeds) else None
        return GeneratorCapabilities(ports=ports, max_rate_fps=max_rate, latency=True,
                                     per_packet_latency=False, max_flows=int(self._cfg["max_flows"]),
                                     bidirectional=True, needs_testbed=False, native_search=False)

    def port_speeds(self) -> list[LinkSpeed]:
        """Each configured port's speed: ``trafficgen.ixnet.port_speed_gbps`` when set
        (the lab says so), else the vport's ``ActualSpeed`` as IxNetwork reports it."""
        speeds = self._link_speeds_bps()
        source = "trafficgen.ixnet.port_speed_gbps" if self._cfg["port_speed_gbps"] else "IxNetwork ActualSpeed"
        out = []
        for i in self._configured_indices:
            bps = speeds[i] if i < len(speeds) else None
            out.append(LinkSpeed(bps, source if bps else f"IxNetwork reports no speed for port {i}"))
        return out

    def _link_speeds_bps(self) -> list[float | None]:
        if self._cfg["port_speed_gbps"]:
            return [float(self._cfg["port_speed_gbps"]) * 1e9] * len(self._cfg["ports"])
        return list(self._link_bps)

    def version(self) -> dict[str, str]:
        out = {}
        try:
            out["ixnetwork_restpy"] = metadata.version("ixnetwork-restpy")
        except metadata.PackageNotFoundError:
            pass
        out.update(self._server)
        return out

    def start(self) -> None:
        if self._conn is not None:
            return
        cfg = self._cfg
        if not cfg["api_host"]:
            raise PluginError("ixnet: trafficgen.ixnet.api_host is not set")
        locations = port_locations(cfg)
        if len(locations) < 2:
            raise PluginError("ixnet: trafficgen.ixnet.ports must name at least two chassis ports")
        creds = credentials(cfg)
        for secret in creds.secrets:
            self._redact.add(secret)
        run_id = self.context.run_id
        try:
            self._conn = ixsession.connect(
                cfg["api_host"], int(cfg["api_port"]), creds,
                session_name=f"vsb-{run_id}-ixnet",
                verify_certificate=bool(cfg["verify_certificate"]),
                ignore_env_proxy=bool(cfg["ignore_env_proxy"]),
                connect_timeout_s=float(cfg["connect_timeout_s"]),
                request_timeout_s=float(cfg["request_timeout_s"]),
                redact=self._redact, on_session_created=self._session_created)
            self._vports = ixsession.assign_ports(
                self._conn.ixnetwork, run_id, locations,
                force_ownership=bool(cfg["force_ownership"]),
                link_up_timeout_s=float(cfg["link_up_timeout_s"]),
                poll_interval_s=float(cfg["poll_interval_s"]), address=self.address,
                redact=self._redact, on_vports_created=self._vports_created)
            self._server = {"ixnetwork": self._conn.build_number or "debug build",
                            "ixnetwork_platform": self._conn.platform}
            with self._call("read port speeds"):
                self._port_names = [str(v.Name) for v in self._vports]
                self._link_bps = [float(v.ActualSpeed) * 1e6 if v.ActualSpeed else None
                                  for v in self._vports]
        except BaseException:
            self.stop()  # nothing half-made stays on the server, even if the caller forgets
            raise
        log.info("ixnet: ports %s up (%s)", ", ".join(str(loc) for loc in locations),
                 ", ".join(f"{b / 1e9:g} Gb/s" if b else "speed unknown" for b in self._link_bps))

    def _session_created(self, sessions: Any) -> None:
        self._sessions = sessions
        self.context.resources.register(f"IxNetwork session on {self.address}", self._remove_session)

    def _vports_created(self) -> None:
        self._ports_assigned = True
        self.context.resources.register(f"IxNetwork ports of run {self.context.run_id}",
                                        self._release_ports)

    def _release_ports(self) -> None:
        if not self._ports_assigned or self._conn is None:
            return
        self._ports_assigned = False
        ixsession.release_ports(self._conn.ixnetwork, self.context.run_id, self.address, self._redact)

    def _remove_session(self) -> None:
        sessions, self._sessions = self._sessions, None
        self._conn = None
        self._item = None
        self._profile = None
        self._latency_on = None
        self._vports = []
        ixsession.remove_session(sessions, self.address, self._redact)

    def stop(self) -> None:
        """Release the ports, then remove the session (which also releases them)."""
        try:
            self._release_ports()
        except PluginError as exc:
            log.warning("%s", exc)
        self._remove_session()

    def configure(self, profile: TrafficProfile, ports: Sequence[GeneratorPort]) -> None:
        ixnetwork = self._need_started()
        if profile.encapsulation is not None:
            raise PluginError(f"ixnet: encapsulation {profile.encapsulation!r} is not supported yet")
        if profile.flows > int(self._cfg["max_flows"]):
            raise PluginError(f"ixnet: {profile.flows} flows exceed trafficgen.ixnet.max_flows "
                              f"({self._cfg['max_flows']})")
        if len(ports) < 2:
            raise PluginError("ixnet: a trial needs two generator ports")
        indices = [p.index for p in ports[:2]]
        self._configured_indices = [p.index for p in ports]
        for i in indices:
            if not 0 <= i < len(self._vports):
                raise PluginError(f"ixnet: generator port {i} has no chassis port "
                                  f"(trafficgen.ixnet.ports lists {len(self._vports)})")
        directions = [(indices[0], indices[1])]
        if profile.bidirectional:
            directions.append((indices[1], indices[0]))
        name = f"vsb-{self.context.run_id}-{profile.frame_size_bytes}B-{profile.flows}f"
        self._remove_traffic_item()
        self._profile = None
        try:
            with self._call(f"configure traffic item {name}"):
                self._item = ixtraffic.build(ixnetwork, name, profile, directions,
                                             [v.href for v in self._vports])
                self._set_latency(False)
                self._item.item.Generate()
                self._check_item_errors()
        except PluginError:
            self._discard_traffic_items(name)  # a half-built item would be applied with the next
            raise
        self._profile = profile
        log.info("ixnet: traffic item %s: %d B, %d flow(s), %s", name, profile.frame_size_bytes,
                 profile.flows, "bidirectional" if profile.bidirectional else "unidirectional")

    def _remove_traffic_item(self) -> None:
        item, self._item = self._item, None
        if item is not None:
            with self._call("remove previous traffic item"):
                item.item.remove()

    def _discard_traffic_items(self, name: str) -> None:
        self._item = None
        try:
            with self._call("remove unusable traffic item"):
                leftovers = self._need_started().Traffic.TrafficItem.find(Name=f"^{name}$")
                if len(leftovers):
                    leftovers.remove()
        except PluginError as exc:
            log.warning("%s", exc)

    def _set_latency(self, enabled: bool) -> None:
        if self._latency_on is enabled:
            return
        ixnetwork = self._need_started()
        ixnetwork.Traffic.Statistics.Latency.update(Enabled=enabled, Mode=self._cfg["latency_mode"])
        self._latency_on = enabled

    def _check_item_errors(self) -> None:
        assert self._item is not None
        item = self._item.item.refresh()
        errors = [self._redact(e) for e in (item.Errors or [])]
        if errors:
            raise PluginError(f"ixnet: traffic item {item.Name} has errors on {self.address}: "
                              f"{'; '.join(errors)[:300]}")
        for warning in item.Warnings or []:
            log.warning("ixnet: traffic item %s: %s", item.Name, self._redact(warning))

    def run_trial(self, load_fps: float, duration_s: float, *, latency: bool = False) -> TrialResult:
        ixnetwork = self._need_started()
        if self._item is None or self._profile is None:
            raise PluginError("ixnet: run_trial before configure")
        if load_fps <= 0 or duration_s <= 0:
            raise PluginError(f"ixnet: load {load_fps} fps for {duration_s} s is not a trial")
        item, profile = self._item, self._profile
        per_direction = load_fps / len(item.directions)
        began = time.monotonic()
        with self._call("prepare trial"):
            ixtraffic.set_rate(item, per_direction, duration_s)
            self._set_latency(latency)
            item.item.Generate()
            self._check_item_errors()
            ixnetwork.Traffic.Apply()
            ixnetwork.ClearStats()
        try:
            with self._call("start traffic"):
                ixnetwork.Traffic.Start()
            overran = self._wait_stopped(ixnetwork.Traffic, duration_s)
        except BaseException:
            self._stop_traffic_quietly(ixnetwork)  # never leave the chassis sending
            raise
        time.sleep(self._drain_s())
        with self._call("read statistics"):
            timeout = float(self._cfg["stats_timeout_s"])
            flow_rows = ixstats.read_view(ixnetwork, ixstats.FLOW_VIEW, timeout)
            item_rows = ixstats.read_view(ixnetwork, ixstats.ITEM_VIEW, timeout)
            port_rows = ixstats.read_view(ixnetwork, ixstats.PORT_VIEW, timeout)
        directions = ixstats.direction_counters(flow_rows, self._port_names, item.directions)
        tx = sum(d.tx_frames for d in directions)
        rx = sum(d.rx_frames for d in directions)
        item_name = str(item.item.Name)
        summary = ixstats.item_row(item_rows, item_name)
        histogram = None
        if latency and summary is not None and rx > 0:
            lat = ixstats.latency(summary)
            if lat is None:
                log.warning("ixnet: latency was requested but %s has no latency columns", ixstats.ITEM_VIEW)
            else:
                histogram = LatencyHistogram(bucket_lower_ns=(), counts=(), min_ns=lat.min_ns,
                                             max_ns=lat.max_ns, mean_ns=lat.mean_ns)
        if summary is not None and (ixstats.count(summary.get("Tx Frames")) != tx
                                    or ixstats.count(summary.get("Rx Frames")) != rx):
            log.warning("ixnet: flow rows (tx %d, rx %d) disagree with the traffic item row "
                        "(tx %s, rx %s)", tx, rx, summary.get("Tx Frames"), summary.get("Rx Frames"))
        reason = None
        if overran:
            reason = f"the chassis did not end the {duration_s:g} s trial by itself; it was stopped"
        elif tx == 0:
            reason = "the chassis sent no frames"
        return TrialResult(
            intended_load_fps=float(load_fps), intended_duration_s=float(duration_s),
            frame_size_bytes=profile.frame_size_bytes, tx_frames=tx, rx_frames=rx,
            directions=tuple(directions), tx_duration_s=None,
            effective_duration_s=time.monotonic() - began, latency_histogram=histogram,
            valid=reason is None, invalid_reason=reason,
            generator_stats={
                "latency_mode": self._cfg["latency_mode"] if latency else None,
                "traffic_item": item_name,
                "ports": ixstats.port_summary(port_rows, self._port_names),
            })

    def _stop_traffic_quietly(self, ixnetwork: Any) -> None:
        try:
            with self._call("stop traffic"):
                ixnetwork.Traffic.Stop()
        except PluginError as exc:
            log.warning("%s", exc)

    def _drain_s(self) -> float:
        if self._cfg["drain_s"] is not None:
            return float(self._cfg["drain_s"])
        if self.context.run.drain_s is not None:
            return float(self.context.run.drain_s)
        return DEFAULT_DRAIN_S

    def _wait_stopped(self, traffic: Any, duration_s: float) -> bool:
        """Wait until the chassis reports the traffic stopped; True when it had to be
        stopped because it ran past ``duration_s + stop_timeout_s``."""
        poll = float(self._cfg["poll_interval_s"])
        grace = float(self._cfg["stop_timeout_s"])
        start = time.monotonic()
        time.sleep(max(0.0, duration_s - poll))
        while True:
            with self._call("read traffic state"):
                state = str(traffic.refresh().State)
            if state == "stopped":
                return False
            if state in ("error", "unapplied"):
                raise PluginError(f"ixnet: traffic went to state {state!r} on {self.address}")
            if time.monotonic() - start > duration_s + grace:
                break
            time.sleep(poll)
        log.warning("ixnet: traffic still %s %.1f s after a %g s trial; stopping it",
                    state, time.monotonic() - start, duration_s)
        with self._call("stop traffic"):
            traffic.Stop()
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            with self._call("read traffic state"):
                if str(traffic.refresh().State) == "stopped":
                    return True
            time.sleep(poll)
        raise PluginError(f"ixnet: traffic did not stop within {grace:g} s on {self.address}")
