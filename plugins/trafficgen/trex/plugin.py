"""The trex traffic generator: a thin client of TRex's stateless (STL) control protocol.

Talks JSON-RPC 2.0 over ZMQ to a running ``t-rex-64 -i`` server (sync port 4501, async
port 4500), with STL API 5 (TRex v2.88 and newer): version sync with ``api_sync_v2``,
zlib-framed requests, batches, port ownership, streams with a field engine for flows, a
separate low-rate latency stream per direction with ``flow_stats`` rule ``latency``, and
the event channel to learn when a timed trial has finished. Everything the engine needs
from a trial is read after traffic has stopped and drained.

Streams are removed and re-added before every trial: that sets the trial's rate exactly
and starts each packet group's counters and latency histogram from zero (TRex keeps them
across restarts of the same stream).
"""

from __future__ import annotations

import logging
import random
import re
import time
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Mapping, Sequence

import zmq

from vsbench.interfaces.plugin import PluginContext, PluginError, Prerequisite, tcp_unreachable
from vsbench.interfaces.traffic import (
    DirectionCounters,
    FCS_BYTES,
    GeneratorCapabilities,
    GeneratorPort,
    L1_OVERHEAD_BYTES,
    TrafficProfile,
    TrialResult,
    line_rate_fps,
)
from vsbench.interfaces.trafficgen import TrafficGenerator
from vsbench.interfaces.host.link_speed import LinkSpeed
from vsbench_plugins.trafficgen.trex import codec, events, stats, streams
from vsbench_plugins.trafficgen.trex.rpc import RpcClient, TrexConnectionError
from vsbench_plugins.trafficgen.trex.settings import SETTINGS_SCHEMA, TrexSettings

log = logging.getLogger(__name__)

API_NAME = "STL"
API_MAJOR = 5
API_MINOR = 0  # the lowest 5.x this client needs: the server accepts any client minor <= its own
PROFILE_ID = "_"
BULK_STREAM_ID = 1
LATENCY_STREAM_ID = 2
LINE_RATE_SLACK = 1.0001  # TRex's own tolerance before it refuses a start without force
FINISHED_EVENTS = (events.PROFILE_FINISHED_TX, events.PORT_JOB_DONE, events.PORT_STOPPED)
ACTIVE_STATES = ("TX", "PAUSE", "PCAP_TX")
_VERSION_RE = re.compile(r"server: '(\d+)\.(\d+)', client: '(\d+)\.(\d+)'")

_EXPECTED = (TrexConnectionError, codec.RpcError, codec.ProtocolError, codec.FramingError)
UNLIMITED_S = -1.0  # start_traffic ``duration``: no time limit (a burst ends by itself)


@dataclass(frozen=True)
class Exchange:
    """What one start of traffic left behind, read after it finished and drained."""

    before: dict[int, stats.PortCounters]
    after: dict[int, stats.PortCounters]
    pgid_stats: dict[str, Any]
    tx_time_s: float  # wall clock from the start to the last 'finished' event


@dataclass(frozen=True)
class Direction:
    """One direction of the profile: what port ``tx`` sends towards port ``rx``."""

    index: int
    tx_gen_port: int  # generator port index (as the deployment numbers them)
    rx_gen_port: int
    tx_port: int  # TRex port ids
    rx_port: int
    bulk_packet: bytes
    bulk_vm: dict[str, Any]
    latency_packet: bytes
    bulk_pg_id: int
    latency_pg_id: int


class Trex(TrafficGenerator):
    """TRex stateless server over its JSON-RPC/ZMQ control protocol (TRex >= v2.88)."""

    description: ClassVar[str] = "TRex stateless server over its JSON-RPC/ZMQ protocol (v2.88+)"
    api_version: ClassVar[str] = "1.0"
    settings_schema: ClassVar[dict] = SETTINGS_SCHEMA

    def __init__(self, context: PluginContext) -> None:
        super().__init__(context)
        try:
            self.cfg = TrexSettings.from_mapping(context.settings)
        except (ValueError, TypeError) as exc:
            raise PluginError(f"trex: {exc}") from None
        self._zmq: zmq.Context | None = None
        self._rpc: RpcClient | None = None
        self._events: events.EventChannel | None = None
        self._handlers: dict[int, str] = {}
        self._session_id = random.getrandbits(31) | 1
        self._server_version: dict[str, Any] = {}
        self._port_speed_gbps: dict[int, float] = {}
        #: Ports whose speed TRex reported as the link's (else the fastest it supports).
        self._port_speed_reported: set[int] = set()
        self._configured_gen_ports: list[int] = []
        self._latency_capable = True
        self._profile: TrafficProfile | None = None
        self._directions: list[Direction] = []
        self._latency_frame_size: int | None = None

    # ------------------------------------------------------------------ naming

    @property
    def address(self) -> str:
        return f"tcp://{self.cfg.host}:{self.cfg.sync_port}"

    def _fail(self, what: str) -> PluginError:
        return PluginError(f"trex generator at {self.address}: {' '.join(what.split())}")

    def _wrap(self, exc: Exception, doing: str) -> PluginError:
        if isinstance(exc, TrexConnectionError):
            return self._fail(f"{doing}: {str(exc).replace(self.address + ': ', '')}")
        if isinstance(exc, codec.RpcError):
            return self._fail(f"{doing}: {exc.method} failed: {exc.detail}")
        return self._fail(f"{doing}: protocol error: {exc}")

    # ------------------------------------------------------------------ contract

    @classmethod
    def check_reachable(cls, settings: Mapping[str, Any]) -> list[Prerequisite]:
        """Both ports of the TRex server must accept a TCP connection: the sync (JSON-RPC)
        port and the async (event) port, which a server started without ``-i`` or behind a
        firewall opening one port only does not open. ZMQ's connect never fails, so without
        this a server that is down showed only as a reply timeout in the first trial."""
        try:
            cfg = TrexSettings.from_mapping(settings)
        except (ValueError, TypeError):
            return []  # the settings' own error is reported when the plugin is built
        missing = []
        for what, port, key in (("sync (JSON-RPC)", cfg.sync_port, "sync_port"),
                                ("async (event)", cfg.async_port, "async_port")):
            reason = tcp_unreachable(cfg.host, port, cfg.connect_timeout_s)
            if reason is not None:
                missing.append(Prerequisite(
                    f"trex generator at tcp://{cfg.host}:{port}: {what} port: {reason}",
                    f"start the TRex server there ('t-rex-64 -i'), or set trafficgen.trex.host and {key}"))
        return missing

    def capabilities(self) -> GeneratorCapabilities:
        ports = len(self.cfg.ports)
        max_rate = self.cfg.max_rate_fps
        if max_rate is None and self._port_speed_gbps:
            frame = self._profile.frame_size_bytes if self._profile else 64
            senders = self.cfg.ports[: (self._profile.directions if self._profile else ports)]
            rates = [line_rate_fps(self._port_speed_gbps.get(p, 0.0) * 1e9, frame) for p in senders]
            max_rate = sum(rates) or None
        return GeneratorCapabilities(
            ports=ports,
            max_rate_fps=max_rate,
            latency=self._latency_capable,
            per_packet_latency=False,
            max_flows=self._max_flows(),
            bidirectional=ports >= 2,
            needs_testbed=False,
            native_search=False,
        )

    def _max_flows(self) -> int:
        fields = self._profile.fields if self._profile else self.context.run.flow_fields
        vary = fields.vary
        return 1 << 16 if any(str(f).endswith("_port") for f in vary) else 1 << 32

    def version(self) -> dict[str, str]:
        out = {"trex_client_api": f"{API_NAME} {API_MAJOR}.{API_MINOR}"}
        if self._server_version:
            out["trex"] = str(self._server_version.get("version", "unknown"))
            out["trex_build_date"] = str(self._server_version.get("build_date", ""))
            out["trex_mode"] = str(self._server_version.get("mode", ""))
        return out

    def start(self) -> None:
        if self._rpc is not None:
            return
        probe = RpcClient(self.cfg.host, self.cfg.sync_port, timeout_s=self.cfg.timeout_s)
        try:
            probe.probe(self.cfg.connect_timeout_s)
        except TrexConnectionError as exc:
            hint = " (is 't-rex-64 -i' running there?)" if "refused" in str(exc) else ""
            raise self._fail(f"cannot connect: {str(exc).replace(self.address + ': ', '')}{hint}") from None
        # A context of our own: destroying it on stop() returns only once ZMQ's I/O thread
        # has really closed every connection (socket.close alone is asynchronous).
        self._zmq = zmq.Context()
        rpc = RpcClient(self.cfg.host, self.cfg.sync_port, timeout_s=self.cfg.timeout_s,
                        compress=self.cfg.compress, context=self._zmq)
        rpc.connect()
        self._rpc = rpc
        self.context.resources.register(f"trex connection {self.address}", self.stop)
        try:
            self._sync_api()
            self._server_version = dict(rpc.call("get_version") or {})
            self._events = events.EventChannel(rpc, self.cfg.host, self.cfg.async_port,
                                               self._session_id, context=self._zmq)
            self._events.connect(self.cfg.connect_timeout_s)
            self._read_ports()
            for port in self.cfg.ports:
                self._acquire(port)
            self._reset_ports()
        except PluginError:
            self.stop()
            raise
        except _EXPECTED as exc:
            self.stop()
            raise self._wrap(exc, "connecting") from None
        log.info("connected to TRex %s at %s (ports %s)",
                 self._server_version.get("version", "?"), self.address, list(self.cfg.ports))

    def stop(self) -> None:
        for port in list(self._handlers):
            self._release(port)
        if self._events is not None:
            self._events.close()
            self._events = None
        if self._rpc is not None:
            self._rpc.close()
            self._rpc = None
        if self._zmq is not None:
            self._zmq.destroy(linger=0)
            self._zmq = None

    def configure(self, profile: TrafficProfile, ports: Sequence[GeneratorPort]) -> None:
        self._require_started()
        if len(ports) < 2:
            raise self._fail(f"a profile needs 2 generator ports, got {len(ports)}")
        # Generator port i is TRex port ``ports[i]`` (the p2p deployment numbers them so).
        by_index = sorted(ports, key=lambda p: p.index)
        gen = [by_index[0].index, by_index[1].index]
        for g in gen:
            if g >= len(self.cfg.ports):
                raise self._fail(f"generator port {g} has no TRex port id (trafficgen.trex.ports "
                                 f"lists {len(self.cfg.ports)})")
        trex_ports = [self.cfg.ports[g] for g in gen]
        self._configured_gen_ports = [p.index for p in ports]
        try:
            latency_profile = self._latency_profile(profile)
            directions = []
            for d in range(profile.directions):
                tx, rx = (0, 1) if d == 0 else (1, 0)
                bulk = streams.build_template(profile, d)
                lat = streams.build_template(latency_profile, d,
                                             min_payload_bytes=streams.LATENCY_PAYLOAD_BYTES)
                directions.append(Direction(
                    index=d, tx_gen_port=gen[tx], rx_gen_port=gen[rx],
                    tx_port=trex_ports[tx], rx_port=trex_ports[rx],
                    bulk_packet=bulk.packet, bulk_vm=streams.flow_vm(profile, bulk, d),
                    latency_packet=lat.packet,
                    bulk_pg_id=self.cfg.latency_pg_id_base + 10 + d,
                    latency_pg_id=self.cfg.latency_pg_id_base + d,
                ))
        except streams.ProfileError as exc:
            raise self._fail(str(exc)) from None
        self._profile = profile
        self._directions = directions
        self._latency_frame_size = latency_profile.frame_size_bytes
        # Let the server validate the streams now, so a bad profile fails before a search.
        try:
            self._load_streams(pps=1.0, latency_pps=1.0 if self._latency_capable else None)
        except _EXPECTED as exc:
            raise self._wrap(exc, "loading streams") from None
        log.info("trex configured: %d B frames, %d flow(s), %d direction(s)",
                 profile.frame_size_bytes, profile.flows, profile.directions)

    def run_trial(self, load_fps: float, duration_s: float, *, latency: bool = False) -> TrialResult:
        self._require_configured("run_trial")
        if not load_fps > 0 or not duration_s > 0:
            raise self._fail(f"a trial needs a positive load and duration (got {load_fps} fps, {duration_s} s)")
        if latency and not self._latency_capable:
            raise self._fail("the TRex ports do not support latency streams (rx caps lack 'latency')")
        t0 = time.monotonic()
        per_dir_pps = load_fps / len(self._directions)
        latency_pps, forced, fit_notes = self._fit_rates(per_dir_pps, latency)
        sent = self._exchange(per_dir_pps, latency_pps, forced, duration_s=duration_s,
                              burst_pkts=None, doing=f"trial at {load_fps:.0f} fps")
        result = self._result(load_fps, duration_s, per_dir_pps, latency_pps, sent,
                              sent.tx_time_s, time.monotonic() - t0)
        if fit_notes:
            result.generator_stats["rate_notes"] = fit_notes
        return result

    #: Bursts are TRex ``single_burst`` streams: the server sends exactly the frames asked.
    supports_bursts: ClassVar[bool] = True

    def run_burst(self, frames: int, *, rate_fps: float | None = None, latency: bool = False) -> TrialResult:
        """One burst of ``frames`` frames, split evenly over the directions, as one
        ``single_burst`` stream per direction started with no time limit; the ports report
        'finished' once their frames are out, then the drain wait and counters are those of
        :meth:`run_trial`.

        Unpaced (``rate_fps`` None) means the generator's ceiling, as
        :meth:`capabilities` reports it: ``max_rate_fps`` when set, else the tx ports'
        line rate. ``tx_duration_s`` is the frames over the rate TRex paced them at (its
        data-plane cores send from their own clock; the link's rate if the start had to be
        forced): the wall clock between start and the 'finished' event adds RPC and event
        delays that would understate a short burst's rate a hundredfold. That wall time
        is kept in ``generator_stats["burst"]["wall_tx_s"]``.

        Latency during a burst is not supported: ``latency=True`` raises PluginError
        (the probe stream is continuous and would not fit beside a line-rate burst).
        """
        self._require_configured("run_burst")
        dirs = len(self._directions)
        frames = int(frames)
        if frames < dirs or frames % dirs:
            raise self._fail(f"a burst of {frames} frames cannot be split evenly over {dirs} direction(s)")
        if latency:
            raise self._fail("latency during a burst is not supported by the trex plugin "
                             "(run bursts without latency)")
        if rate_fps is not None and not rate_fps > 0:
            raise self._fail(f"cannot pace a burst at {rate_fps} fps")
        load_fps = float(rate_fps) if rate_fps is not None else self._burst_ceiling_fps()
        t0 = time.monotonic()
        per_dir_pps = load_fps / dirs
        _, forced, fit_notes = self._fit_rates(per_dir_pps, False)
        sent = self._exchange(per_dir_pps, None, forced, duration_s=frames / load_fps,
                              burst_pkts=frames // dirs, doing=f"burst of {frames} frames")
        tx_time_s = (frames // dirs) / self._paced_pps(per_dir_pps)
        result = self._result(load_fps, frames / load_fps, per_dir_pps, None, sent, tx_time_s,
                              time.monotonic() - t0)
        result.generator_stats["burst"] = {"frames": frames, "paced": rate_fps is not None,
                                           "per_direction_pps": per_dir_pps,
                                           "wall_tx_s": sent.tx_time_s}
        if fit_notes:
            result.generator_stats["rate_notes"] = fit_notes
        intended = load_fps if rate_fps is not None else (
            result.tx_frames / tx_time_s if result.tx_frames and tx_time_s > 0 else load_fps)
        return replace(result, burst_frames=frames, intended_load_fps=intended,
                       intended_duration_s=frames / intended)

    # ------------------------------------------------------------------ sending

    def _require_configured(self, what: str) -> None:
        self._require_started()
        if self._profile is None or not self._directions:
            raise self._fail(f"{what} called before configure")

    def _burst_ceiling_fps(self) -> float:
        """The aggregate rate of an unpaced burst: the same ceiling the engine is told."""
        ceiling = self.capabilities().max_rate_fps
        if not ceiling:
            raise self._fail("the TRex ports report no link speed, so an unpaced burst has no "
                             "rate: set trafficgen.trex.max_rate_fps")
        return float(ceiling)

    def _paced_pps(self, per_dir_pps: float) -> float:
        """The rate the slowest direction really sends at: the asked rate, or its link's
        line rate when the start had to be forced past it."""
        assert self._profile is not None
        rates = [per_dir_pps]
        for d in self._directions:
            speed = self._port_speed_gbps.get(d.tx_port, 0.0) * 1e9
            if speed > 0:
                rates.append(line_rate_fps(speed, len(d.bulk_packet) + FCS_BYTES))
        return min(rates)

    def _exchange(self, per_dir_pps: float, latency_pps: float | None, forced: set[int], *,
                  duration_s: float, burst_pkts: int | None, doing: str) -> Exchange:
        """Load this trial's streams, start every sending port, wait until all finished,
        wait for the drain, read counters. A timed trial (``burst_pkts`` None) runs for
        ``duration_s``; a burst ends by itself after ``burst_pkts`` frames per direction,
        expected after ``duration_s``."""
        assert self._rpc is not None and self._events is not None
        tx_ports = sorted({d.tx_port for d in self._directions})
        limit_s = UNLIMITED_S if burst_pkts is not None else float(duration_s)
        latency = latency_pps is not None
        try:
            self._load_streams(pps=per_dir_pps, latency_pps=latency_pps, burst_pkts=burst_pkts)
            self._events.fetch()  # forget what happened before this trial
            before = self._port_counters()
            # taken before the request: no frame leaves before TRex has it, so the wall time
            # to 'finished' is never shorter than the sending (after the reply, it was up to
            # the reply's delay shorter on a busy host)
            t_started = time.monotonic()
            self._rpc.batch([("start_traffic", {
                **self._owned(p), "mul": {"type": "raw", "op": "abs", "value": 1.0},
                "duration": limit_s, "force": p in forced, "start_at_ts": 0.0,
            }) for p in tx_ports])
            t_finished = self._wait_finished(tx_ports, duration_s, t_started)
            time.sleep(self._drain_s())
            after = self._port_counters()
            pg_ids = self._pg_ids(latency)
            pgid_stats = self._rpc.call("get_pgid_stats", {"pgids": pg_ids}) if pg_ids else {}
        except PluginError:
            self._stop_traffic_quietly(tx_ports)
            raise
        except _EXPECTED as exc:
            self._stop_traffic_quietly(tx_ports)
            raise self._wrap(exc, doing) from None
        return Exchange(before, after, pgid_stats or {}, t_finished - t_started)

    # ------------------------------------------------------------------ connect helpers

    def _require_started(self) -> None:
        if self._rpc is None or not self._rpc.connected:
            why = f" ({self._rpc.broken})" if self._rpc is not None and self._rpc.broken else ""
            raise self._fail(f"not connected{why}")

    def _sync_api(self) -> None:
        assert self._rpc is not None
        try:
            result = self._rpc.call("api_sync_v2", {"name": API_NAME, "major": API_MAJOR,
                                                    "minor": API_MINOR})
        except codec.RpcError as exc:
            raise self._version_error(exc) from None
        api_h = result.get("api_h") if isinstance(result, dict) else None
        if not isinstance(api_h, str) or not api_h:
            raise codec.ProtocolError(f"api_sync_v2 returned no api_h: {str(result)[:80]}")
        self._rpc.api_h = api_h

    def _version_error(self, exc: codec.RpcError) -> PluginError:
        ours = f"{API_NAME} {API_MAJOR}.{API_MINOR}"
        if exc.code == codec.METHOD_NOT_FOUND:
            return self._fail(f"the server has no api_sync_v2 (TRex older than v2.31); vsbench's "
                              f"client speaks {ours} and needs TRex v2.88 or newer")
        text = exc.detail
        mode = re.search(r"server RPC configuration: '(\w+)'", text)
        if mode:
            return self._fail(f"the server runs in {mode.group(1)} mode; vsbench drives {API_NAME} "
                              f"(start t-rex-64 -i without --astf)")
        m = _VERSION_RE.search(text)
        if m:
            server_major = int(m.group(1))
            server = f"{API_NAME} {m.group(1)}.{m.group(2)}"
            advice = ("use TRex v2.88 or newer" if server_major < API_MAJOR
                      else "this TRex is newer than vsbench's client supports")
            return self._fail(f"TRex API version mismatch: server speaks {server}, vsbench's "
                              f"client speaks {ours} ({advice})")
        return self._fail(f"api_sync_v2 refused: {text}")

    def _read_ports(self) -> None:
        assert self._rpc is not None
        info = self._rpc.call("get_system_info")
        listed = {int(p["index"]): p for p in (info or {}).get("ports", []) if "index" in p}
        missing = [p for p in self.cfg.ports if p not in listed]
        if missing:
            raise self._fail(f"TRex has no port(s) {missing} (it has {sorted(listed)}); "
                             f"check trafficgen.trex.ports")
        caps = [set((listed[p].get("rx") or {}).get("caps") or []) for p in self.cfg.ports]
        self._latency_capable = all("latency" in c for c in caps)
        statuses = self._rpc.batch([("get_port_status", {"port_id": p, "profile_id": "*",
                                                         "block": False}) for p in self.cfg.ports])
        for port, status in zip(self.cfg.ports, statuses):
            speed = ((status or {}).get("attr") or {}).get("speed")
            if isinstance(speed, (int, float)) and speed > 0:
                self._port_speed_gbps[port] = float(speed)
                self._port_speed_reported.add(port)
            else:
                supp = listed[port].get("supp_speeds") or []
                if supp:
                    self._port_speed_gbps[port] = max(supp) / 1000.0  # Mb/s

    def port_speeds(self) -> list[LinkSpeed]:
        """The speed TRex reports for each configured port's link (``get_port_status``
        ``attr.speed``); none where it reported only the speeds the port supports."""
        speeds = []
        for g in self._configured_gen_ports:
            port = self.cfg.ports[g] if g < len(self.cfg.ports) else None
            if port in self._port_speed_reported:
                speeds.append(LinkSpeed(self._port_speed_gbps[port] * 1e9, f"TRex port {port} link speed"))
            else:
                speeds.append(LinkSpeed(None, f"TRex reports no link speed for port {port}"))
        return speeds

    def _acquire(self, port: int) -> None:
        assert self._rpc is not None
        try:
            handler = self._rpc.call("acquire", {"port_id": port, "user": self.cfg.user,
                                                 "session_id": self._session_id,
                                                 "force": self.cfg.force_acquire})
        except codec.RpcError as exc:
            hint = ("" if self.cfg.force_acquire
                    else " (set trafficgen.trex.force_acquire: true to take it over)")
            raise self._fail(f"cannot acquire port {port}: {exc.detail}{hint}") from None
        if not isinstance(handler, str) or not handler:
            raise codec.ProtocolError(f"acquire returned no handler: {str(handler)[:80]}")
        self._handlers[port] = handler
        self.context.resources.register(f"trex port {port} at {self.address}", self._release, port)

    def _release(self, port: int) -> None:
        """Stop, clear and hand back one port. Teardown: log, never raise."""
        if port not in self._handlers:
            return
        rpc = self._rpc
        try:
            if rpc is None or not rpc.connected:
                log.warning("trex port %d at %s left acquired: %s", port, self.address,
                            rpc.broken if rpc is not None else "not connected")
                return
            params = self._owned(port)
            rpc.batch([("stop_traffic", params), ("remove_all_streams", params),
                       ("release", {"handler": params["handler"], "port_id": port})])
        except _EXPECTED as exc:
            log.warning("releasing trex port %d at %s failed: %s", port, self.address, exc)
        finally:
            self._handlers.pop(port, None)

    def _reset_ports(self) -> None:
        """Like the official client's reset(): nothing transmitting, no streams, no service mode."""
        assert self._rpc is not None
        calls: list[tuple[str, dict[str, Any]]] = []
        for port in self.cfg.ports:
            calls += [("stop_traffic", self._owned(port)),
                      ("remove_all_streams", self._owned(port)),
                      ("service", {**self._owned(port), "enabled": False})]
        self._rpc.batch(calls)

    def _owned(self, port: int) -> dict[str, Any]:
        return {"handler": self._handlers[port], "port_id": port, "profile_id": PROFILE_ID}

    # ------------------------------------------------------------------ trial helpers

    def _latency_profile(self, profile: TrafficProfile) -> TrafficProfile:
        """The latency stream is one flow, grown when the bulk frame leaves no room for
        TRex's latency signature (the size used is reported in generator_stats)."""
        needed = (streams.header_length(profile) + streams.LATENCY_PAYLOAD_BYTES + FCS_BYTES)
        return replace(profile, flows=1, frame_size_bytes=max(profile.frame_size_bytes, needed))

    def _fit_rates(self, per_dir_pps: float, latency: bool) -> tuple[float | None, set[int], list[str]]:
        """The probe rate and the ports to start with ``force`` for this trial.

        Without ``force`` TRex refuses a start whose L1 rate exceeds the link by more than
        0.01 %. Probes go into the headroom the bulk load leaves (fewer probes, bulk exactly
        as asked); when the bulk alone does not fit, or the headroom holds less than a tenth
        of the asked probes, the port is started with ``force`` and the link decides: the
        trial then comes back generator-limited with the frames really sent.
        """
        want = self._latency_pps() if latency else None
        forced: set[int] = set()
        notes: list[str] = []
        probe_pps = want
        for d in self._directions:
            speed = self._port_speed_gbps.get(d.tx_port, 0.0) * 1e9
            if speed <= 0:
                continue  # the server does not know its link speed: nothing to check
            bulk_l1 = per_dir_pps * (len(d.bulk_packet) + FCS_BYTES + L1_OVERHEAD_BYTES) * 8
            probe_bits = (len(d.latency_packet) + FCS_BYTES + L1_OVERHEAD_BYTES) * 8
            if bulk_l1 > speed * LINE_RATE_SLACK:
                forced.add(d.tx_port)
                notes.append(f"port {d.tx_port}: {bulk_l1 / 1e9:.4g} Gb/s asked of a "
                             f"{speed / 1e9:g} Gb/s link")
                continue
            if want and bulk_l1 + want * probe_bits > speed * LINE_RATE_SLACK:
                headroom = (speed - bulk_l1) / probe_bits
                if headroom >= 0.1 * want:
                    probe_pps = min(probe_pps or want, float(int(headroom)))
                    notes.append(f"port {d.tx_port}: probes lowered to {int(headroom)} pps to "
                                 f"fit the {speed / 1e9:g} Gb/s link")
                else:
                    forced.add(d.tx_port)
                    notes.append(f"port {d.tx_port}: bulk and {want:g} pps probes exceed the "
                                 f"{speed / 1e9:g} Gb/s link")
        return probe_pps, forced, notes

    def _latency_pps(self) -> float:
        if self.cfg.latency_pps:
            return float(self.cfg.latency_pps)
        probe = self.context.run.probe_rate_fps
        return float(probe) if probe else 1000.0

    def _drain_s(self) -> float:
        if self.cfg.drain_s is not None:
            return float(self.cfg.drain_s)
        drain = self.context.run.drain_s
        return float(drain) if drain is not None else 0.5

    def _pg_ids(self, latency: bool) -> list[int]:
        ids = []
        for d in self._directions:
            if latency:
                ids.append(d.latency_pg_id)
            if self.cfg.bulk_counters == "pgid":
                ids.append(d.bulk_pg_id)
        return ids

    def _load_streams(self, *, pps: float, latency_pps: float | None,
                      burst_pkts: int | None = None) -> None:
        """Replace every stream on our ports with this trial's set, in one batch; the
        bulk streams are single bursts of ``burst_pkts`` frames when that is given."""
        assert self._rpc is not None
        calls: list[tuple[str, dict[str, Any]]] = [
            ("remove_all_streams", self._owned(p)) for p in self.cfg.ports]
        for d in self._directions:
            bulk_fs = (streams.counting_flow_stats(d.bulk_pg_id)
                       if self.cfg.bulk_counters == "pgid" else None)
            calls.append(("add_stream", {**self._owned(d.tx_port), "stream_id": BULK_STREAM_ID,
                                         "stream": streams.stream_json(
                                             d.bulk_packet, pps=pps, vm=d.bulk_vm,
                                             flow_stats=bulk_fs, total_pkts=burst_pkts)}))
            if latency_pps:
                calls.append(("add_stream", {**self._owned(d.tx_port),
                                             "stream_id": LATENCY_STREAM_ID,
                                             "stream": streams.stream_json(
                                                 d.latency_packet, pps=latency_pps,
                                                 flow_stats=streams.latency_flow_stats(
                                                     d.latency_pg_id))}))
        self._rpc.batch(calls)

    def _port_counters(self) -> dict[int, stats.PortCounters]:
        assert self._rpc is not None
        ports = list(self.cfg.ports)
        replies = self._rpc.batch([("get_port_stats", {"port_id": p}) for p in ports])
        return {p: stats.PortCounters.from_json(r or {}) for p, r in zip(ports, replies)}

    def _wait_finished(self, tx_ports: list[int], duration_s: float, t_started: float) -> float:
        """Block until every sending port reported 'profile finished tx'; return when.

        Events come from the async channel; if it loses events (seq gap) the port state is
        polled instead. A port still sending long after the trial should have ended is
        stopped and reported.
        """
        assert self._rpc is not None and self._events is not None
        pending = set(tx_ports)
        deadline = t_started + duration_s + self.cfg.event_timeout_s
        use_events = True
        while pending and time.monotonic() < deadline:
            if use_events:
                try:
                    got = self._events.wait(deadline - time.monotonic())
                except events.EventSequenceError as exc:
                    log.warning("trex async events lost (%s); polling port state instead", exc)
                    use_events = False
                    continue
                for ev in got:
                    self._on_event(ev, pending)
            else:
                time.sleep(events.POLL_INTERVAL_S)
                states = self._rpc.batch([("get_port_status", {"port_id": p, "profile_id": "*",
                                                               "block": False}) for p in pending])
                for port, status in zip(sorted(pending), states):
                    if (status or {}).get("state") not in ACTIVE_STATES:
                        pending.discard(port)
        if pending:
            # Last word goes to the port state: an event may be late, the state is not.
            states = self._rpc.batch([("get_port_status", {"port_id": p, "profile_id": "*",
                                                           "block": False}) for p in sorted(pending)])
            still = [p for p, s in zip(sorted(pending), states)
                     if (s or {}).get("state") in ACTIVE_STATES]
            if still:
                raise self._fail(f"port(s) {still} still transmitting {self.cfg.event_timeout_s:g} s "
                                 f"after the {duration_s:g} s trial should have ended")
            log.warning("trex: no 'profile finished tx' event for port(s) %s; port state says done",
                        sorted(pending))
        return time.monotonic()

    def _on_event(self, ev: events.ServerEvent, pending: set[int]) -> None:
        port = ev.port_id
        if ev.type in FINISHED_EVENTS and port in pending:
            pending.discard(port)
        elif ev.type in (events.PORT_ERROR, events.PROFILE_ERROR) and port in self._handlers:
            raise self._fail(f"the server reported an error on port {port}: {ev.data}")
        elif ev.type == events.SERVER_STOPPED:
            raise self._fail(f"the server stopped: {ev.data.get('cause', 'no cause given')}")
        elif (ev.type == events.PORT_ACQUIRED and port in self._handlers
              and ev.data.get("session_id") != self._session_id):
            self._handlers.pop(port, None)
            raise self._fail(f"port {port} was taken over by {ev.data.get('who', 'another user')!r}")

    def _stop_traffic_quietly(self, ports: list[int]) -> None:
        rpc = self._rpc
        if rpc is None or not rpc.connected:
            return
        try:
            rpc.batch([("stop_traffic", self._owned(p)) for p in ports if p in self._handlers])
        except _EXPECTED as exc:
            log.warning("stopping trex traffic after a failed trial failed: %s", exc)

    # ------------------------------------------------------------------ results

    def _result(self, load_fps: float, duration_s: float, per_dir_pps: float, latency_pps: float | None,
                sent: Exchange, tx_time_s: float, wall_s: float) -> TrialResult:
        assert self._profile is not None
        latency = latency_pps is not None
        delta = {p: sent.after[p] - sent.before[p] for p in sent.after}
        flow = sent.pgid_stats.get("flow_stats") or {}
        lat_section = sent.pgid_stats.get("latency") or {}
        directions, records, lat_json = [], [], {}
        probes_sent = probes_received = 0
        shortfalls = []
        for d in self._directions:
            lat_pg = stats.PgIdCounters.from_json(flow.get(str(d.latency_pg_id)))
            probe_tx, probe_rx = lat_pg.tx(d.tx_port), lat_pg.rx(d.rx_port)
            if self.cfg.bulk_counters == "pgid":
                bulk = stats.PgIdCounters.from_json(flow.get(str(d.bulk_pg_id)))
                tx, rx = bulk.tx(d.tx_port), bulk.rx(d.rx_port)
            else:
                # Port counters include the latency probes: take them out again.
                tx = delta[d.tx_port].opackets - probe_tx
                rx = delta[d.rx_port].ipackets - probe_rx
            if tx < 0 or rx < 0:
                log.warning("trex counters inconsistent on direction %d (tx %d, rx %d)", d.index, tx, rx)
                tx, rx = max(tx, 0), max(rx, 0)
            directions.append(DirectionCounters(d.tx_gen_port, d.rx_gen_port, tx, rx))
            asked = per_dir_pps * duration_s
            if tx < asked * self.cfg.min_tx_ratio:
                shortfalls.append(f"port {d.tx_port} sent {tx} of {asked:.0f} frames "
                                  f"({100 * tx / asked:.1f}%)")
            if latency:
                probes_sent += probe_tx
                probes_received += probe_rx
                record = stats.latency_record(lat_section.get(str(d.latency_pg_id)))
                if record is not None:
                    records.append(record)
                    lat_json[f"{d.tx_port}->{d.rx_port}"] = {
                        "pg_id": d.latency_pg_id, "sent": probe_tx, "received": probe_rx,
                        "samples": record.samples, "min_ns": record.min_ns,
                        "max_ns": record.max_ns, "mean_ns": record.mean_ns,
                        "jitter_ns": record.jitter_ns, **record.errors_json(),
                    }
        gen_stats: dict[str, Any] = {
            "trex_ports": {str(d.index): [d.tx_port, d.rx_port] for d in self._directions},
            "port_counters": {str(p): {"opackets": c.opackets, "ipackets": c.ipackets,
                                       "oerrors": c.oerrors, "ierrors": c.ierrors}
                              for p, c in delta.items()},
            "bulk_counters": self.cfg.bulk_counters,
        }
        if latency:
            gen_stats["latency"] = lat_json
            gen_stats["probes"] = {"sent": probes_sent, "received": probes_received,
                                   "rate_pps": latency_pps,
                                   "frame_size_bytes": self._latency_frame_size}
            gen_stats["latency_errors"] = {
                key: sum(r.errors_json()[key] for r in records)
                for key in ("dropped", "out_of_order", "duplicates", "seq_too_high", "seq_too_low")}
        tx_total = sum(c.tx_frames for c in directions)
        rx_total = sum(c.rx_frames for c in directions)
        reason = None
        if shortfalls:
            reason = ("generator could not send the offered load: " + "; ".join(shortfalls))
        return TrialResult(
            intended_load_fps=load_fps,
            intended_duration_s=duration_s,
            frame_size_bytes=self._profile.frame_size_bytes,
            tx_frames=tx_total,
            rx_frames=rx_total,
            directions=tuple(directions),
            tx_duration_s=tx_time_s,
            effective_duration_s=wall_s,
            probes=None,
            latency_histogram=stats.merge_histograms(records) if latency else None,
            valid=not shortfalls,
            invalid_reason=reason,
            generator_stats=gen_stats,
        )

