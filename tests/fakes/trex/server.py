"""A fake TRex stateless server: TRex's control protocol on loopback, a modelled DUT behind it.

Speaks what ``t-rex-64 -i`` speaks to a client (facts from trex-core, code our own):
JSON-RPC 2.0 over ZMQ REP (sync port) with zlib framing (magic header) answered in kind,
batches (JSON arrays), ``api_sync_v2`` version checks with TRex's own error texts,
``api_h`` on every method but api_sync/api_sync_v2/get_version/ping, port ownership
(``acquire`` -> handler, required with ``port_id`` by port-mutating methods), streams with
the field engine validated, ``continuous`` and ``single_burst`` streams (``total_pkts``
frames, then the stream stops), timed ``start_traffic`` and bursts that end with the
"profile finished tx" event, and the STL API 5 event channel: ``{}`` triggers on ZMQ PUB
and per-session queues pulled with ``get_async_events`` (``seq`` contiguous). Ports are cabled in pairs
through :class:`~.dut.DutModel`.

Simulations for tests: another API major (``--api-major 4``), ASTF mode, a generator that
cannot reach the offered rate (``--max-tx-pps``), a server that stops answering a method
(``--hang-on``); a refused connection is simply a fake that is not started.
"""

from __future__ import annotations

import argparse
import base64
import json
import logging
import os
import secrets
import signal
import socket
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import zmq

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from tests.fakes.trex import vm as fe
from tests.fakes.trex import wire
from tests.fakes.trex.dut import DutModel, LatencyState, Ledger, StreamRun

log = logging.getLogger("fake-trex")

# Error codes (trex_rpc_jsonrpc_v2_parser.cpp)
E_PARSE, E_INVALID_REQ, E_NOT_FOUND, E_PARAMS, E_INTERNAL, E_EXECUTE = (
    -32700, -32600, -32601, -32602, -32603, -32000)
E_TRY_AGAIN, E_WIP, E_NO_RESULTS = -32001, -32002, -32003

EV_PORT_STARTED, EV_PORT_STOPPED, EV_PORT_JOB_DONE = 0, 1, 4
EV_PORT_ACQUIRED, EV_PORT_RELEASED = 5, 6
EV_PROFILE_STARTED, EV_PROFILE_STOPPED, EV_PROFILE_FINISHED_TX = 10, 11, 14
EVENT_QUEUE_LIMIT = 1000
MIN_PKT_SIZE, MAX_PKT_SIZE = 14, 9 * 1024 + 22
L1_EXTRA = 4 + 20  # FCS + preamble/SFD/IFG, per frame on the wire


class ParamError(Exception):
    """-32602 'Bad paramters for method' (TRex's spelling)."""


class ExecError(Exception):
    """-32000 'Failed To Execute Method'."""


class CodedError(Exception):
    """Any other server error: -32001 try again, -32002 work in progress, -32003 no results."""

    def __init__(self, code: int, message: str, specific: str | None = None) -> None:
        super().__init__(message)
        self.code, self.message, self.specific = code, message, specific


# --------------------------------------------------------------------------- params


def need(params: dict, key: str, kind: str, default: Any = ...) -> Any:
    """Parse a field the way TrexRpcCommand::parse_* does."""
    if key not in params or params[key] is None:
        if default is not ...:
            return default
        raise ParamError(f"field '{key}' is missing")
    value = params[key]
    ok = {
        "byte": lambda v: _is_uint(v) and v <= 0xFF,
        "uint16": lambda v: _is_uint(v) and v <= 0xFFFF,
        "uint32": lambda v: _is_uint(v) and v <= 0xFFFFFFFF,
        "uint64": lambda v: _is_uint(v) and v < 1 << 64,
        "int": lambda v: isinstance(v, int) and not isinstance(v, bool) and -(1 << 31) <= v < 1 << 31,
        "double": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
        "udouble": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0,
        "bool": lambda v: isinstance(v, bool),
        "string": lambda v: isinstance(v, str),
        "object": lambda v: isinstance(v, dict),
        "array": lambda v: isinstance(v, list),
    }[kind](value)
    if not ok:
        raise ParamError(f"error at offset: 0 - '{key}' is '{_json_type(value)}', expecting '{kind}'")
    return value


def _is_uint(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _json_type(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "int" if v < 0 else "uint"
    return {float: "real", str: "string", list: "array", dict: "object"}.get(type(v), "UNKNOWN")


def choice(params: dict, key: str, choices: tuple[str, ...]) -> str:
    if key not in params or params[key] is None:
        raise ParamError(f"field '{key}' is missing")
    if params[key] not in choices:
        raise ParamError(f"field '{key}' can only be one of [{' ,'.join(repr(c) for c in choices)}]")
    return params[key]


def payload_offset(packet: bytes) -> int:
    """Where the L4 payload starts in an Ethernet/[VLAN]/IPv4/UDP|TCP frame (else the end
    of the L3 header); latency streams need 16 bytes there for TRex's signature."""
    off = 12
    while packet[off : off + 2] in (b"\x81\x00", b"\x88\xa8"):
        off += 4
    off += 2
    if packet[off - 2 : off] != b"\x08\x00" or len(packet) < off + 20:
        return off
    proto = packet[off + 9]
    off += (packet[off] & 0x0F) * 4
    if proto == 17:
        return off + 8
    if proto == 6 and len(packet) > off + 12:
        return off + (packet[off + 12] >> 4) * 4
    return off


# --------------------------------------------------------------------------- state


@dataclass
class Stream:
    stream_id: int
    json: dict
    packet: bytes
    pps: float  # base rate in pps (rate types other than pps converted at add time)
    enabled: bool
    pg_id: int | None
    rule_type: str | None
    program: fe.Program
    total_pkts: int | None = None  # a single_burst stream: frames it sends, then stops


@dataclass
class Port:
    index: int
    speed_gbps: float
    owner: str = ""
    owner_session: int | None = None
    handler: str | None = None
    state: str = "IDLE"
    service: bool = False
    streams: dict[int, Stream] = field(default_factory=dict)
    runs: list[StreamRun] = field(default_factory=list)
    multiplier: float = 1.0
    ends_at: float | None = None
    attr: dict = field(default_factory=dict)

    def line_rate_pps(self, pkt_len: int) -> float:
        return self.speed_gbps * 1e9 / ((pkt_len + L1_EXTRA) * 8)


@dataclass
class PgId:
    pg_id: int
    rule_type: str  # 'stats' or 'latency'
    refs: int
    ver: int
    runs: list[StreamRun] = field(default_factory=list)
    latency: LatencyState | None = None


class FakeTrexServer:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.api_name = args.mode
        self.api_major = args.api_major
        self.api_minor = args.api_minor
        self.api_h = secrets.token_hex(4)
        self.started = time.time()
        self.dut = DutModel(
            capacity_fps=args.capacity_fps, delay_s=args.dut_delay_ms / 1000.0,
            latency_us=args.latency_us, latency_spread_us=args.latency_spread_us,
            overload_latency_us=args.overload_latency_us, ooo_ratio=args.ooo_ratio,
            dup_ratio=args.dup_ratio, buffer_frames=args.buffer_frames)
        self.ledger = Ledger(self.dut)
        self.ports = [Port(i, args.speed_gbps, attr=self._default_attr(args.speed_gbps))
                      for i in range(args.ports)]
        self.pgids: dict[int, PgId] = {}
        self.pg_ver = 0
        self.sessions: dict[int, list[dict]] = {}
        self.session_seq: dict[int, int] = {}
        self.pending_triggers = 0
        self.stopping = False
        self.requests = 0
        self.busy_served: set[str] = set()
        self.tickets: dict[int, dict] = {}
        self.next_ticket = 1
        self.events_queued = 0
        self.batch_at: float | None = None  # the instant of the batch being handled
        self.methods: dict[str, tuple[Callable[[dict], Any], bool, bool]] = {}
        self._register()

    # ------------------------------------------------------------------ registry

    def _register(self) -> None:
        noapi = {"api_sync", "api_sync_v2", "get_version", "ping"}
        owned = {"release", "add_stream", "remove_stream", "remove_all_streams", "start_traffic",
                 "stop_traffic", "pause_traffic", "resume_traffic", "update_traffic", "service",
                 "set_port_attr", "set_rx_feature", "remove_rx_filters", "stop_capture_port"}
        for name in dir(self):
            if name.startswith("rpc_"):
                method = name[4:]
                self.methods[method] = (getattr(self, name), method not in noapi, method in owned)

    # ------------------------------------------------------------------ wire

    def handle_frame(self, frame: bytes) -> bytes:
        """One ZMQ request in, one reply out, compressed iff the request was."""
        zipped = wire.looks_zipped(frame)
        if zipped:
            payload = wire.unzip(frame)
            if payload is None:  # TRex: failed inflation -> try the bytes as plain JSON
                zipped, payload = False, frame
        else:
            payload = frame
        reply = self.handle_json(payload)
        data = json.dumps(reply, separators=(",", ":")).encode() + b"\n"
        return wire.zip_frame(data) if zipped else data

    def handle_json(self, payload: bytes) -> Any:
        try:
            request = json.loads(payload.decode())
        except (UnicodeDecodeError, ValueError):
            return {"jsonrpc": "2.0", "id": None, "error": {"code": E_PARSE, "message": "Bad JSON Format"}}
        if isinstance(request, list):
            # One batch is one instant: ports started together start together (the real
            # server's stagger is microseconds; the fake's Python would make it ~0.1 ms).
            self.batch_at = time.monotonic()
            try:
                replies = [self.handle_one(r) for r in request]
            finally:
                self.batch_at = None
            return [r for r in replies if r is not None]
        return self.handle_one(request)

    def handle_one(self, request: Any) -> dict | None:
        self.requests += 1
        msg_id = request.get("id") if isinstance(request, dict) else None

        def error(code: int, message: str, specific: str | None = None) -> dict:
            err: dict[str, Any] = {"code": code, "message": message}
            if specific is not None:
                err["specific_err"] = specific
            return {"jsonrpc": "2.0", "id": msg_id, "error": err}

        if not isinstance(request, dict) or request.get("jsonrpc") != "2.0":
            return error(E_INVALID_REQ, "Invalid JSONRPC Version")
        method = request.get("method")
        if not isinstance(method, str) or not method:
            return error(E_INVALID_REQ, "Missing Method Name")
        entry = self.methods.get(method)
        if entry is None:
            return error(E_NOT_FOUND, f"Method {method} not registered")
        handler, needs_api, owned = entry
        params = request.get("params", {})
        if params is None:
            params = {}
        if method in self.args.hang_on:
            log.warning("hanging on %s as asked", method)
            while not self.stopping:
                time.sleep(0.05)
            return None
        try:
            if method in self.args.busy_on and method not in self.busy_served:
                self.busy_served.add(method)
                raise CodedError(E_TRY_AGAIN, "Try again later")
            if not isinstance(params, dict):
                raise ParamError("params must be an object")
            if needs_api:
                api_h = need(params, "api_h", "string")
                if api_h != self.api_h:
                    raise ExecError(f"API verification failed - API handler provided mismatch "
                                    f"for class: '{self.api_name}'")
            if owned:
                self._verify_ownership(params)
            result = handler(params)
            if method in self.args.wip_on:
                ticket, self.next_ticket = self.next_ticket, self.next_ticket + 1
                self.tickets[ticket] = {"polls_left": 1, "result": result}
                raise CodedError(E_WIP, "Work in progress", str(ticket))
        except CodedError as exc:
            return error(exc.code, exc.message, exc.specific)
        except ParamError as exc:
            return error(E_PARAMS, "Bad paramters for method", str(exc))
        except ExecError as exc:
            return error(E_EXECUTE, "Failed To Execute Method", str(exc))
        except Exception as exc:  # noqa: BLE001 - a fake bug must show up as an RPC error
            log.exception("internal error in %s", method)
            return error(E_INTERNAL, "Internal Server Error", f"{type(exc).__name__}: {exc}")
        if msg_id is None:
            return None
        return {"jsonrpc": "2.0", "id": msg_id, "result": result}

    # ------------------------------------------------------------------ helpers

    def _port(self, params: dict) -> Port:
        port_id = need(params, "port_id", "byte")
        if port_id >= len(self.ports):
            raise ExecError(f"invalid port id - should be between 0 and {len(self.ports) - 1}")
        return self.ports[port_id]

    def _verify_ownership(self, params: dict) -> None:
        handler = need(params, "handler", "string")
        port = self._port(params)
        if not port.owner:
            raise ExecError("please acquire the port before modifying port state")
        if handler != port.handler:
            raise ExecError("port is not owned by you or your current executing session")

    def _profile(self, params: dict) -> None:
        profile = params.get("profile_id", "_")
        if profile not in ("_", "*"):
            raise ExecError(f"profile '{profile}' does not exist (the fake models the default profile)")

    def _verify_state(self, port: Port, allowed: tuple[str, ...], cmd: str) -> None:
        if port.state not in allowed:
            raise ExecError(f"command '{cmd}' cannot be executed on current state: '{port.state}'")

    @staticmethod
    def _default_attr(speed: float) -> dict:
        return {"speed": speed, "link": {"up": True}, "promiscuous": {"enabled": False},
                "multicast": {"enabled": False}, "fc": {"mode": 0}, "rx_filter_mode": "hw",
                "vxlan_fs": [], "layer_cfg": {"ether": {"src": "00:00:00:00:00:00", "dst": "00:00:00:00:00:00",
                                                        "state": "configured"},
                                              "ipv4": {"state": "none"}}}

    def queue_event(self, ev_type: int, data: dict) -> None:
        self.events_queued += 1
        lose_one = self.events_queued in self.args.lose_event
        for session, queue in self.sessions.items():
            seq = self.session_seq[session] = self.session_seq.get(session, 0) + 1
            if lose_one:
                continue  # simulates a lost event: this seq never reaches the client
            queue.append({"name": "trex-event", "type": ev_type, "data": data, "seq": seq})
            if len(queue) > EVENT_QUEUE_LIMIT:
                del queue[0]
        self.pending_triggers += 1

    def _session(self, session_id: int) -> list[dict]:
        return self.sessions.setdefault(session_id, [])

    def now(self) -> float:
        return time.monotonic() if self.batch_at is None else self.batch_at

    # ------------------------------------------------------------------ time

    def next_deadline(self) -> float | None:
        ends = [p.ends_at for p in self.ports if p.ends_at is not None and p.state == "TX"]
        return min(ends) if ends else None

    def fire_timers(self) -> None:
        """End every port whose traffic ran out, earliest first (the DUT's buffer level
        at each end depends on the ends before it)."""
        now = self.now()
        due = [p for p in self.ports if p.state == "TX" and p.ends_at is not None and p.ends_at <= now]
        for port in sorted(due, key=lambda p: p.ends_at):
            self._finish(port, port.ends_at, finished=True)

    def _finish(self, port: Port, at: float, *, finished: bool) -> None:
        self.ledger.close(port.runs, at)
        port.runs = []
        port.ends_at = None
        port.state = "STREAMS" if port.streams else "IDLE"
        data = {"port_id": port.index, "profile_id": "_"}
        if finished:
            self.queue_event(EV_PROFILE_FINISHED_TX, data)
            self.queue_event(EV_PORT_JOB_DONE, {"port_id": port.index})
        else:
            self.queue_event(EV_PROFILE_STOPPED, data)
            self.queue_event(EV_PORT_STOPPED, {"port_id": port.index})

    # ------------------------------------------------------------------ general

    def rpc_api_sync_v2(self, params: dict) -> dict:
        name = need(params, "name", "string")
        major = need(params, "major", "int")
        minor = need(params, "minor", "int")
        if name != self.api_name:
            raise ExecError(f"RPC configuration mismatch - server RPC configuration: '{self.api_name}', "
                            f"client RPC configuration: '{name}'")
        if major < self.api_major:
            text = "RPC version mismatch: a newer client version is required"
        elif major > self.api_major or minor > self.api_minor:
            text = "Version mismatch: your client version is too new to be supported by the server"
        else:
            return {"api_h": self.api_h}
        raise ExecError(f"{text}\n(API type '{self.api_name}':  - server: '{self.api_major}."
                        f"{self.api_minor}', client: '{major}.{minor}')")

    def rpc_api_sync(self, params: dict) -> dict:
        vers = need(params, "api_vers", "array")
        if len(vers) != 1:
            raise ParamError("'api_vers' should be a list of size 1")
        return {"api_vers": [{"type": "core", "api_h": self.rpc_api_sync_v2(
            {"name": self.api_name, "major": vers[0].get("major"), "minor": vers[0].get("minor")})["api_h"]}]}

    def rpc_get_version(self, params: dict) -> dict:
        return {"version": self.args.version, "build_date": "Jan  1 2024", "build_time": "00:00:00",
                "built_by": "fake", "mode": self.api_name}

    def rpc_ping(self, params: dict) -> dict:
        return {"ts": time.time()}

    def rpc_get_supported_cmds(self, params: dict) -> list[str]:
        return sorted(self.methods)

    def rpc_get_profile_list(self, params: dict) -> list[str]:
        self._port(params)
        return ["_"]

    def rpc_get_system_info(self, params: dict) -> dict:
        ports = []
        for p in self.ports:
            ports.append({
                "index": p.index, "driver": "net_fake", "description": "fake TRex port",
                "pci_addr": f"0000:00:0{p.index}.0", "numa": 0,
                "hw_mac": f"02:00:00:00:ff:{p.index:02x}", "stack": "legacy",
                "supp_speeds": [int(p.speed_gbps * 1000)], "is_virtual": False,
                "is_fc_supported": False, "is_led_supported": False, "is_link_supported": False,
                "is_prom_supported": True, "is_vxlan_supported": False, "is_multiqueue_mode": False,
                "rx": {"caps": ["flow_stats", "latency", "rx_bytes"], "counters": 127},
            })
        return {"hostname": socket.gethostname(), "uptime": time.strftime("%d-%m-%Y : %H:%M:%S"),
                "dp_core_count": 1, "dp_core_count_per_port": 1, "core_type": "fake CPU",
                "port_count": len(self.ports), "ports": ports}

    def rpc_get_port_status(self, params: dict) -> dict:
        port = self._port(params)
        return {"owner": port.owner, "state": port.state, "service": port.service,
                "service_filtered": False, "max_stream_id": max(port.streams, default=0),
                "profile_count": 1, "state_profile": {"_": port.state},
                "attr": port.attr, "rx_info": {}}

    def rpc_get_tpg_status(self, params: dict) -> dict:
        """Tagged packet groups (TRex >= v2.97); the official client asks before a forced
        acquire. The fake models none."""
        if "port_id" in params:
            self._port(params)
        else:
            need(params, "username", "string")
        return {"enabled": False}

    def rpc_get_owner(self, params: dict) -> dict:
        return {"owner": self._port(params).owner}

    def rpc_acquire(self, params: dict) -> str:
        port = self._port(params)
        user = need(params, "user", "string")
        force = need(params, "force", "bool")
        session_id = need(params, "session_id", "uint32")
        if port.owner and port.owner != user and not force:
            raise ExecError(f"port is already owned by '{port.owner}'")
        port.owner, port.owner_session = user, session_id
        port.handler = secrets.token_hex(4)
        self._session(session_id)
        self.queue_event(EV_PORT_ACQUIRED, {"port_id": port.index, "who": user,
                                            "session_id": session_id, "force": force})
        return port.handler

    def rpc_release(self, params: dict) -> dict:
        port = self._port(params)
        who, session = port.owner, port.owner_session
        port.owner, port.owner_session, port.handler = "", None, None
        self.queue_event(EV_PORT_RELEASED, {"port_id": port.index, "who": who, "session_id": session})
        return {}

    def rpc_service(self, params: dict) -> dict:
        port = self._port(params)
        port.service = need(params, "enabled", "bool")
        return {}

    def rpc_set_port_attr(self, params: dict) -> dict:
        port = self._port(params)
        attr = need(params, "attr", "object")
        for key, value in attr.items():
            port.attr[key] = value
        return {}

    def rpc_get_async_results(self, params: dict) -> Any:
        ticket = need(params, "ticket_id", "uint64")
        task = self.tickets.get(ticket)
        if task is None:
            raise CodedError(E_NO_RESULTS, "No results for request")
        if task["polls_left"] > 0:
            task["polls_left"] -= 1
            raise CodedError(E_WIP, "Work in progress", str(ticket))
        del self.tickets[ticket]
        return task["result"]

    def rpc_cancel_async_task(self, params: dict) -> dict:
        self.tickets.pop(need(params, "ticket_id", "uint64"), None)
        return {}

    def rpc_set_rx_feature(self, params: dict) -> dict:
        self._port(params)
        choice(params, "type", ("queue", "server", "capwap_proxy", "latency"))
        need(params, "enabled", "bool")
        return {}

    def rpc_remove_rx_filters(self, params: dict) -> dict:
        self._port(params)
        self._profile(params)
        return {}

    def rpc_stop_capture_port(self, params: dict) -> dict:
        port = self._port(params)
        if not port.service:
            raise ExecError("port service mode must be enabled for stop capture port")
        return {}

    def rpc_capture(self, params: dict) -> Any:
        """Packet capture: the fake keeps none ('status' lists nothing)."""
        command = choice(params, "command", ("start", "stop", "status", "fetch", "remove"))
        if command == "status":
            return []
        if command == "start":
            raise ExecError("packet capture is not modelled by the fake TRex")
        capture_id = need(params, "capture_id", "uint32")
        raise ExecError(f"capture ID {capture_id} does not exist")

    def rpc_publish_now(self, params: dict) -> dict:
        need(params, "key", "uint32")
        need(params, "baseline", "bool")
        self.pending_triggers += 1
        return {}

    def rpc_get_async_events(self, params: dict) -> dict:
        session_id = need(params, "session_id", "uint32")
        queue = self._session(session_id)
        data, queue[:] = list(queue), []
        return {"data": data}

    def rpc_get_utilization(self, params: dict) -> dict:
        return {"cpu": [{"history": [self._cpu_util()] * 20, "ports": [0, 1]}],
                "mbuf_stats": {"cpu-socket-0": {}}}

    def _cpu_util(self) -> float:
        now = self.now()
        pps = sum(self.ledger.current_pps(p.index, now, rx=False) for p in self.ports)
        return min(100.0, pps / 1e5)

    # ------------------------------------------------------------------ stats

    def _port_stats_json(self, port: Port) -> dict:
        now = self.now()
        opk, oby = self.ledger.port_tx(port.index, now)
        ipk, iby = self.ledger.port_rx(port.index, now)
        tx_pps = self.ledger.current_pps(port.index, now, rx=False)
        rx_pps = self.ledger.current_pps(port.index, now, rx=True)
        avg_len = (oby / opk) if opk else 60
        return {"opackets": opk, "obytes": oby, "ipackets": ipk, "ibytes": iby,
                "oerrors": 0, "ierrors": 0, "m_total_tx_pps": tx_pps, "m_total_rx_pps": rx_pps,
                "m_total_tx_bps": tx_pps * avg_len * 8, "m_total_rx_bps": rx_pps * avg_len * 8,
                "m_cpu_util": self._cpu_util()}

    def rpc_get_port_stats(self, params: dict) -> dict:
        return self._port_stats_json(self._port(params))

    def rpc_get_port_xstats_names(self, params: dict) -> dict:
        self._port(params)
        return {"xstats_names": ["rx_good_packets", "tx_good_packets", "rx_good_bytes",
                                 "tx_good_bytes", "rx_missed_errors"]}

    def rpc_get_port_xstats_values(self, params: dict) -> dict:
        s = self._port_stats_json(self._port(params))
        return {"xstats_values": [s["ipackets"], s["opackets"], s["ibytes"], s["obytes"], 0]}

    def rpc_get_global_stats(self, params: dict) -> dict:
        totals = [self._port_stats_json(p) for p in self.ports]
        tx_pps = sum(t["m_total_tx_pps"] for t in totals)
        rx_pps = sum(t["m_total_rx_pps"] for t in totals)
        return {"m_cpu_util": self._cpu_util(), "m_cpu_util_raw": self._cpu_util(),
                "m_platform_factor": 1.0, "m_tx_bps": sum(t["m_total_tx_bps"] for t in totals),
                "m_rx_bps": sum(t["m_total_rx_bps"] for t in totals), "m_tx_pps": tx_pps,
                "m_rx_pps": rx_pps, "m_rx_drop_bps": 0.0, "m_rx_cpu_util": 0.0,
                "m_total_tx_pkts": sum(t["opackets"] for t in totals),
                "m_total_rx_pkts": sum(t["ipackets"] for t in totals),
                "m_total_tx_bytes": sum(t["obytes"] for t in totals),
                "m_total_rx_bytes": sum(t["ibytes"] for t in totals),
                "m_tx_expected_pps": tx_pps, "m_active_flows": 0, "m_open_flows": 0}

    def rpc_get_active_pgids(self, params: dict) -> dict:
        return {"ids": {"flow_stats": sorted(p for p, g in self.pgids.items() if g.rule_type == "stats"),
                        "latency": sorted(p for p, g in self.pgids.items() if g.rule_type == "latency")}}

    def rpc_get_pgid_stats(self, params: dict) -> dict:
        wanted = need(params, "pgids", "array")
        if len(wanted) > 1024 + 128:
            raise ExecError("Asking information for too many packet group IDs. Max allowed is 1152")
        now = self.now()
        flow: dict[str, Any] = {}
        latency: dict[str, Any] = {}
        ver: dict[str, int] = {}
        ports = [str(p.index) for p in self.ports]
        for pg_id in wanted:
            group = self.pgids.get(int(pg_id))
            if group is None:
                continue
            key = str(group.pg_id)
            ver[key] = group.ver
            tp = {p: 0 for p in ports}
            rp = {p: 0 for p in ports}
            tb = {p: 0 for p in ports}
            rb = {p: 0 for p in ports}
            for run in group.runs:
                n_tx, n_rx = run.tx(now), run.rx(now, self.dut.delay_s)
                tp[str(run.port)] += n_tx
                tb[str(run.port)] += n_tx * (run.pkt_len + 4)
                rp[str(run.rx_port)] += n_rx
                rb[str(run.rx_port)] += n_rx * (run.pkt_len + 4)
            zero = {p: 0.0 for p in ports}
            flow[key] = {"tp": tp, "tb": tb, "rp": rp, "rb": rb, "tps": dict(zero),
                         "tbs": dict(zero), "rps": dict(zero), "rbs": dict(zero)}
            if group.rule_type == "latency":
                assert group.latency is not None
                group.latency.update(self.dut, group.runs, now)
                entry: dict[str, Any] = {"lat": group.latency.to_json()}
                # Lost probes only once they are overdue (in flight is not lost).
                sent_due = sum(r.tx(now - self.dut.delay_s) for r in group.runs)
                got = sum(r.rx(now, self.dut.delay_s) for r in group.runs)
                errors = {"drp": max(0, sent_due - got),
                          "ooo": int(got * self.dut.ooo_ratio),
                          "dup": int(got * self.dut.dup_ratio)}
                errors = {k: v for k, v in errors.items() if v}
                if errors:
                    entry["er"] = errors
                latency[key] = entry
        flow["g"] = {"rx_err": {}, "tx_err": {}}
        latency["g"] = {"old_flow": 0, "bad_hdr": 0}
        return {"flow_stats": flow, "latency": latency, "ver_id": ver}

    # ------------------------------------------------------------------ streams

    def rpc_add_stream(self, params: dict) -> dict:
        port = self._port(params)
        self._profile(params)
        self._verify_state(port, ("IDLE", "STREAMS"), "add_stream")
        stream_id = need(params, "stream_id", "uint32")
        section = need(params, "stream", "object")
        mode = need(section, "mode", "object")
        mtype = need(mode, "type", "string")
        if mtype not in ("continuous", "single_burst", "multi_burst"):
            raise ParamError(f"bad stream type provided: '{mtype}'")
        if mtype == "multi_burst":
            raise ExecError(f"stream type '{mtype}' is not modelled by the fake TRex")
        total_pkts = need(mode, "total_pkts", "uint32") if mtype == "single_burst" else None
        if total_pkts == 0:
            raise ParamError("field 'total_pkts' must be at least 1")
        rate = need(mode, "rate", "object")
        value = need(rate, "value", "udouble")
        rtype = choice(rate, "type", ("pps", "bps_L1", "bps_L2", "percentage"))
        enabled = need(section, "enabled", "bool")
        need(section, "self_start", "bool")
        need(section, "flags", "int")
        need(section, "action_count", "uint32")
        need(section, "isg", "udouble")
        need(section, "next_stream_id", "int")
        pkt = need(section, "packet", "object")
        try:
            binary = base64.b64decode(need(pkt, "binary", "string"), validate=True)
        except ValueError:
            raise ParamError("packet 'binary' is not base64") from None
        need(pkt, "meta", "string")
        if not MIN_PKT_SIZE <= len(binary) <= MAX_PKT_SIZE:
            raise ExecError(f"Bad packet size provided: {len(binary)}. Should be between "
                            f"{MIN_PKT_SIZE} and {MAX_PKT_SIZE}")
        packet = binary.ljust(60, b"\0")
        try:
            program = fe.compile_vm(need(section, "vm", "object"), len(packet))
        except fe.VmError as exc:
            raise (ParamError if exc.parse else ExecError)(str(exc)) from None
        rx = need(section, "flow_stats", "object")
        pg_id = rule = None
        if need(rx, "enabled", "bool"):
            pg_id = need(rx, "stream_id", "uint32")
            rule = need(rx, "rule_type", "string")
            rule = "latency" if rule == "latency" else "stats"
            if rule == "latency" and len(binary) < payload_offset(binary) + 16:
                raise ExecError("latency stream packet is too small for the 16-byte latency signature")
        if stream_id in port.streams:
            raise ExecError(f"stream {stream_id} already exists")
        if pg_id is not None:
            group = self.pgids.get(pg_id)
            if group is not None and (rule == "latency" or group.rule_type == "latency"):
                raise ExecError("For payload rules: Can't have two streams with same pg_id, or "
                                "same stream on more than one port")
            if group is None:
                self.pg_ver += 1
                self.pgids[pg_id] = PgId(pg_id, rule, 0, self.pg_ver,
                                         latency=LatencyState(seed=pg_id * 7919 + self.pg_ver)
                                         if rule == "latency" else None)
            self.pgids[pg_id].refs += 1
        pps = self._base_pps(rtype, value, len(packet), port)
        port.streams[stream_id] = Stream(stream_id, section, packet, pps, enabled, pg_id, rule, program,
                                         total_pkts)
        port.state = "STREAMS"
        return {}

    def _base_pps(self, rtype: str, value: float, pkt_len: int, port: Port) -> float:
        if rtype == "pps":
            return value
        if rtype == "bps_L2":
            return value / ((pkt_len + 4) * 8)
        if rtype == "bps_L1":
            return value / ((pkt_len + L1_EXTRA) * 8)
        return port.line_rate_pps(pkt_len) * value / 100.0

    def _drop_stream(self, port: Port, stream: Stream) -> None:
        if stream.pg_id is not None and stream.pg_id in self.pgids:
            group = self.pgids[stream.pg_id]
            group.refs -= 1
            if group.refs <= 0:
                del self.pgids[stream.pg_id]
        del port.streams[stream.stream_id]

    def rpc_remove_stream(self, params: dict) -> dict:
        port = self._port(params)
        self._profile(params)
        self._verify_state(port, ("IDLE", "STREAMS"), "remove_stream")
        stream_id = need(params, "stream_id", "uint32")
        if stream_id not in port.streams:
            raise ExecError(f"stream {stream_id} does not exists")
        self._drop_stream(port, port.streams[stream_id])
        port.state = "STREAMS" if port.streams else "IDLE"
        return {}

    def rpc_remove_all_streams(self, params: dict) -> dict:
        port = self._port(params)
        self._profile(params)
        self._verify_state(port, ("IDLE", "STREAMS"), "remove_all_streams")
        for stream in list(port.streams.values()):
            self._drop_stream(port, stream)
        port.state = "IDLE"
        return {}

    def rpc_get_stream_list(self, params: dict) -> list[int]:
        return sorted(self._port(params).streams)

    def rpc_get_all_streams(self, params: dict) -> dict:
        port = self._port(params)
        return {"streams": {str(sid): s.json for sid, s in sorted(port.streams.items())}}

    def rpc_get_stream(self, params: dict) -> dict:
        port = self._port(params)
        get_pkt = need(params, "get_pkt", "bool")
        stream_id = need(params, "stream_id", "uint32")
        if stream_id not in port.streams:
            raise ExecError(f"stream id {stream_id} on port {port.index} does not exists")
        out = dict(port.streams[stream_id].json)
        if not get_pkt:
            out.pop("packet", None)
        return {"stream": out}

    # ------------------------------------------------------------------ traffic

    def _multiplier(self, port: Port, mul: dict, streams: list[Stream]) -> float:
        mtype = choice(mul, "type", ("raw", "bps", "bpsl1", "pps", "percentage"))
        value = need(mul, "value", "udouble")
        if value == 0:
            raise ParamError("multiplier can't be zero")
        base_pps = sum(s.pps for s in streams)
        if mtype == "raw":
            return value
        if base_pps <= 0:
            raise ExecError("streams have no rate")
        if mtype == "pps":
            return value / base_pps
        if mtype == "bps":
            return value / sum(s.pps * (len(s.packet) + 4) * 8 for s in streams)
        if mtype == "bpsl1":
            return value / sum(s.pps * (len(s.packet) + L1_EXTRA) * 8 for s in streams)
        line_bps = port.speed_gbps * 1e9
        return value / 100.0 * line_bps / sum(s.pps * (len(s.packet) + L1_EXTRA) * 8 for s in streams)

    def _launch(self, port: Port, factor: float, t0: float, length: float | None) -> None:
        """Open runs for every enabled stream at ``factor``; the link carries at most its
        line rate (reachable with ``force``) and the generator's cores at most
        ``--max-tx-pps``, both shared in proportion by the streams. A burst stream runs
        until its ``total_pkts`` are out (or ``length``, whichever is first); the port's
        traffic ends when its last stream does."""
        streams = [s for s in port.streams.values() if s.enabled]
        rates = [s.pps * factor for s in streams]
        wire_bps = sum(r * (len(s.packet) + L1_EXTRA) * 8 for r, s in zip(rates, streams))
        scale = 1.0
        if wire_bps > port.speed_gbps * 1e9:
            scale = min(scale, port.speed_gbps * 1e9 / wire_bps)
        if self.args.max_tx_pps and sum(rates) > self.args.max_tx_pps:
            scale = min(scale, self.args.max_tx_pps / sum(rates))
        runs = []
        for rate, s in zip(rates, streams):
            run = StreamRun(port=port.index, stream_id=s.stream_id, rx_port=self.dut.peer(port.index),
                            pps=rate * scale, pkt_len=len(s.packet), t0=t0,
                            length=_stream_length(s, rate * scale, length), pg_id=s.pg_id,
                            latency=s.rule_type == "latency")
            runs.append(run)
            if s.pg_id is not None:
                self.pgids[s.pg_id].runs.append(run)
        port.runs = runs
        self.ledger.add(runs)
        ends = [r.t1 for r in runs]
        port.ends_at = None if None in ends or not ends else max(ends)

    def rpc_start_traffic(self, params: dict) -> dict:
        port = self._port(params)
        self._profile(params)
        duration = need(params, "duration", "double")
        force = need(params, "force", "bool")
        need(params, "core_mask", "uint64", default=(1 << 64) - 1)
        need(params, "start_at_ts", "double", default=0.0)
        mul = need(params, "mul", "object")
        op = need(mul, "op", "string")
        if op != "abs":
            raise ParamError("start message can only specify absolute speed rate")
        if port.state in ("TX", "PAUSE"):
            if not force:
                raise ExecError("Port is active - please stop the port or use force")
            self._finish(port, self.now(), finished=False)
        if port.state == "IDLE" or not any(s.enabled for s in port.streams.values()):
            raise ExecError("no streams attached to port")
        if port.service:
            raise ExecError("port is in service mode - turn service mode off to start traffic")
        streams = [s for s in port.streams.values() if s.enabled]
        factor = self._multiplier(port, mul, streams)
        if not force:
            # trex_stl_port.cpp calculate_effective_factor: 0.01 % slack for float rounding
            expected_l1 = factor * sum(s.pps * (len(s.packet) + L1_EXTRA) * 8 for s in streams)
            line_bps = port.speed_gbps * 1e9
            if expected_l1 / line_bps > 1.0001:
                raise ExecError(f"Expected L1 B/W: '{expected_l1 / 1e9:g} Gbps' exceeds port line "
                                f"rate: '{line_bps / 1e9:g} Gbps'")
        now = self.now()
        length = float(duration) if duration > 0 else None
        self._launch(port, factor, now, length)
        port.multiplier, port.state = factor, "TX"
        self.queue_event(EV_PORT_STARTED, {"port_id": port.index})
        self.queue_event(EV_PROFILE_STARTED, {"port_id": port.index, "profile_id": "_"})
        return {"multiplier": factor, "ts": time.time()}

    def rpc_stop_traffic(self, params: dict) -> dict:
        port = self._port(params)
        self._profile(params)
        if port.state in ("TX", "PAUSE"):
            self._finish(port, self.now(), finished=False)
        return {}

    def rpc_pause_traffic(self, params: dict) -> dict:
        port = self._port(params)
        self._verify_state(port, ("TX",), "pause_traffic")
        self._refuse_bursts(port, "pause_traffic")
        now = self.now()
        self.ledger.close(port.runs, now)
        port.attr["_remaining"] = None if port.ends_at is None else port.ends_at - now
        port.runs, port.ends_at, port.state = [], None, "PAUSE"
        return {}

    def rpc_resume_traffic(self, params: dict) -> dict:
        port = self._port(params)
        self._verify_state(port, ("PAUSE",), "resume_traffic")
        now = self.now()
        remaining = port.attr.pop("_remaining", None)
        self._launch(port, port.multiplier, now, remaining)
        port.state = "TX"
        return {}

    def rpc_update_traffic(self, params: dict) -> dict:
        port = self._port(params)
        self._verify_state(port, ("TX", "PAUSE"), "update_traffic")
        self._refuse_bursts(port, "update_traffic")
        need(params, "force", "bool")
        mul = need(params, "mul", "object")
        op = choice(mul, "op", ("abs", "add", "sub"))
        value = self._multiplier(port, mul, [s for s in port.streams.values() if s.enabled])
        factor = {"abs": value, "add": port.multiplier + value, "sub": port.multiplier - value}[op]
        if factor <= 0:
            raise ExecError("multiplier must stay positive")
        if port.state == "TX":
            now = self.now()
            self.ledger.close(port.runs, now)
            self._launch(port, factor, now, None if port.ends_at is None else port.ends_at - now)
        port.multiplier = factor
        return {"multiplier": factor}

    def _refuse_bursts(self, port: Port, cmd: str) -> None:
        """Pausing or re-rating a burst would need the frames already sent carried over;
        the fake does not model that (vsbench never asks), so it says so."""
        if any(s.total_pkts is not None for s in port.streams.values() if s.enabled):
            raise ExecError(f"command '{cmd}' on single_burst streams is not modelled by the fake TRex")

    # ------------------------------------------------------------------ loop

    def serve(self, rep: zmq.Socket, pub: zmq.Socket) -> None:
        poller = zmq.Poller()
        poller.register(rep, zmq.POLLIN)
        next_global = time.monotonic()
        while not self.stopping:
            deadline = self.next_deadline()
            wait = 0.1 if deadline is None else max(0.0, min(0.1, deadline - self.now()))
            ready = dict(poller.poll(int(wait * 1000)))
            self.fire_timers()
            if rep in ready:
                frame = rep.recv()
                reply = self.handle_frame(frame)
                if self.stopping:
                    break
                rep.send(reply)
            self.fire_timers()
            while self.pending_triggers:
                pub.send(b"{}")
                self.pending_triggers -= 1
            if time.monotonic() >= next_global:
                snapshot = {"name": "trex-global", "type": 0, "baseline": False,
                            "data": self.rpc_get_global_stats({})}
                pub.send(wire.zip_frame(json.dumps(snapshot).encode()))
                next_global = time.monotonic() + 0.5


def _stream_length(stream: Stream, pps: float, limit: float | None) -> float | None:
    """Seconds a stream sends for at ``pps``: a burst until its frames are out, cut short
    by the start's ``duration`` (``limit``); a continuous stream for ``limit``."""
    if stream.total_pkts is None or pps <= 0:
        return limit
    burst = stream.total_pkts / pps
    return burst if limit is None else min(burst, limit)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m tests.fakes.trex", description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--sync-port", type=int, default=0, help="0: any free port (see --ready-file)")
    ap.add_argument("--async-port", type=int, default=0)
    ap.add_argument("--ready-file", type=Path, help="written (JSON with the ports) once listening")
    ap.add_argument("--mode", default="STL", choices=["STL", "ASTF"])
    ap.add_argument("--api-major", type=int, default=5)
    ap.add_argument("--api-minor", type=int, default=1)
    ap.add_argument("--version", default=None, help="TRex version string (default from the API)")
    ap.add_argument("--ports", type=int, default=2)
    ap.add_argument("--speed-gbps", type=float, default=10.0)
    ap.add_argument("--capacity-fps", type=float, default=None, help="DUT aggregate capacity")
    ap.add_argument("--max-tx-pps", type=float, default=None, help="generator limit per port")
    ap.add_argument("--dut-delay-ms", type=float, default=2.0)
    ap.add_argument("--latency-us", type=float, default=15.0)
    ap.add_argument("--latency-spread-us", type=float, default=3.0)
    ap.add_argument("--overload-latency-us", type=float, default=400.0)
    ap.add_argument("--ooo-ratio", type=float, default=0.0)
    ap.add_argument("--dup-ratio", type=float, default=0.0)
    ap.add_argument("--buffer-frames", type=float, default=0.0,
                    help="DUT buffer: excess over capacity queued before it is dropped")
    ap.add_argument("--hang-on", action="append", default=[], metavar="METHOD",
                    help="never answer this method (simulates a stuck server)")
    ap.add_argument("--busy-on", action="append", default=[], metavar="METHOD",
                    help="answer the first call of METHOD with -32001 'Try again later'")
    ap.add_argument("--wip-on", action="append", default=[], metavar="METHOD",
                    help="answer METHOD with -32002 'Work in progress' and a ticket for get_async_results")
    ap.add_argument("--lose-event", action="append", type=int, default=[], metavar="N",
                    help="drop the N-th queued event (a seq gap on every session)")
    args = ap.parse_args(argv)
    if args.version is None:
        args.version = {4: "v2.86", 5: "v3.08"}.get(args.api_major, f"v{args.api_major}.00")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s fake-trex %(levelname)s %(message)s")
    server = FakeTrexServer(args)
    ctx = zmq.Context()
    rep = ctx.socket(zmq.REP)
    pub = ctx.socket(zmq.PUB)
    for sock in (rep, pub):
        sock.setsockopt(zmq.LINGER, 0)
    sync_port = _bind(rep, args.host, args.sync_port)
    async_port = _bind(pub, args.host, args.async_port)

    def on_signal(signum: int, _frame: Any) -> None:
        server.stopping = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    log.info("listening: sync tcp://%s:%d async tcp://%s:%d (API %s %d.%d, capacity %s fps)",
             args.host, sync_port, args.host, async_port, args.mode, args.api_major,
             args.api_minor, args.capacity_fps)
    if args.ready_file:
        tmp = args.ready_file.with_suffix(".tmp")
        tmp.write_text(json.dumps({"pid": os.getpid(), "sync_port": sync_port,
                                   "async_port": async_port}))
        tmp.replace(args.ready_file)
    try:
        server.serve(rep, pub)
    finally:
        rep.close(linger=0)
        pub.close(linger=0)
        ctx.term()
        log.info("stopped after %d requests", server.requests)
    return 0


def _bind(sock: zmq.Socket, host: str, port: int) -> int:
    if port:
        sock.bind(f"tcp://{host}:{port}")
        return port
    return sock.bind_to_random_port(f"tcp://{host}", min_port=20000, max_port=60000)


if __name__ == "__main__":
    raise SystemExit(main())
