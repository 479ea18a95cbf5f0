#!/usr/bin/env python3
"""A fake IxNetwork REST API server (Linux API server flavour) for testing vsbench's plugin.

Run as a separate process on a loopback port::

    python tests/fakes/ixnet/fake_ixnetwork.py --port 0 --port-file /tmp/port \\
        --password s3cret --capacity-fps 200000

It answers what ``ixnetwork_restpy`` sends, on plain HTTP (restpy probes http before https
on the given port, so no certificate is needed):

* the platform probe and ``POST /api/v1/auth/session`` (user/password -> ``apiKey``;
  every other request needs header ``X-Api-Key``); ``--reject-auth`` refuses every login;
* sessions: list, create (201 + ``links``, which restpy follows with GET), start/stop as
  asynchronous operations (202, then the client polls the operation's ``url`` until
  ``SUCCESS``), rename through ``/ixnetworkweb/api/v1/sessions/<id>``;
* the session's configuration tree (GET/POST/PATCH/DELETE, ``operations/select``),
  operations (assignPorts, releasePort, generate, apply, start, stop, appendProtocol,
  takeCsvSnapshot, clearStats, newConfig), statistics views and ``/files`` downloads;
* a ``Server`` header naming the platform (restpy maps nginx/Jetty to "linux").

Between the chassis ports it models a DUT (see ``traffic_model.py``). ``GET /fake/state``
(no authentication) tells a test what exists: sessions, port owners, request counters.
The fake never logs request bodies or headers (they carry credentials).
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import os
import re
import secrets
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ixn_session import FakeSession, Inventory, OperationFailed  # noqa: E402
from rest_tree import RestError  # noqa: E402
from traffic_model import DutModel  # noqa: E402

SESSION_RE = re.compile(r"^/api/v1/sessions/(\d+)(/.*)?$")
OP_RE = re.compile(r"^(?P<target>.*)/operations/(?P<name>[A-Za-z]+)(?:/(?P<opid>\d+))?$")


class FakeServer:
    """All state of the fake: users, sessions, port inventory, pending operations."""

    def __init__(self, opts: argparse.Namespace) -> None:
        self.opts = opts
        self.lock = threading.RLock()
        self.api_key = opts.api_key or secrets.token_hex(16)
        self.sessions: dict[int, FakeSession] = {}
        self.session_ids = itertools.count(1)
        self.op_ids = itertools.count(1)
        self.operations: dict[str, dict[str, Any]] = {}  # poll url -> status record
        self.inventory = Inventory(chassis=tuple(opts.chassis or ()), cards=opts.cards,
                                   ports_per_card=opts.ports_per_card, speed_mbps=opts.port_speed_mbps)
        self.dut = DutModel(capacity_fps=opts.capacity_fps, base_latency_ns=opts.base_latency_ns,
                            buffer_latency_ns=opts.buffer_latency_ns, stats_lag_s=opts.stats_lag_s)
        self.counters = {"requests": 0, "logins": 0, "login_failures": 0, "unauthorized": 0,
                         "polls": 0, "sessions_created": 0, "sessions_deleted": 0, "trials": 0}

    # ------------------------------------------------------------------ operations

    def new_operation(self, path: str, result: Any, delay_s: float,
                      error: str | None = None, on_done: Any = None) -> dict[str, Any]:
        """Record an asynchronous operation; the 202 reply and every poll show its status."""
        opid = next(self.op_ids)
        url = f"{path}/{opid}"
        record = {"id": opid, "url": url, "result": result, "error": error,
                  "done_at": time.monotonic() + max(0.0, delay_s), "on_done": on_done}
        self.operations[url] = record
        return self.op_status(record)

    def op_status(self, record: dict[str, Any]) -> dict[str, Any]:
        done = time.monotonic() >= record["done_at"]
        if done and record["on_done"] is not None:
            record["on_done"]()
            record["on_done"] = None
        if not done:
            state, progress = "IN_PROGRESS", 50
        elif record["error"]:
            state, progress = "ERROR", 100
        else:
            state, progress = "SUCCESS", 100
        return {"id": record["id"], "url": record["url"], "state": state, "progress": progress,
                "message": record["error"] if done else None,
                "result": (record["result"] if record["result"] is not None else "kVoid")
                if state == "SUCCESS" else None}

    def state(self) -> dict[str, Any]:
        return {
            "sessions": [{"id": s.id, "name": s.name, "state": s.current_state(), "user": s.user,
                          "vports": [v.attrs["name"] for v in s.tree.root.lists["vport"]],
                          "traffic_items": [i.attrs["name"] for i in
                                            s.tree.root.singles["traffic"].lists["trafficItem"]],
                          "applied": [dataclasses.asdict(st) for st in s.applied or []],
                          "latency": {"enabled": s.applied_latency[0], "mode": s.applied_latency[1]},
                          "transmitting": s.run is not None and s.run.transmitting(time.monotonic())}
                         for s in self.sessions.values()],
            "owned_ports": [{"location": f"{c};{card};{p}", "session": sid}
                            for (c, card, p), (sid, _) in sorted(self.inventory.owners.items())],
            "counters": dict(self.counters),
        }


def make_handler(server: FakeServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # One segment per response: headers and body written apart would meet the client's
        # delayed ACK (tens of ms per request on keep-alive connections).
        wbufsize = 1 << 16
        disable_nagle_algorithm = True

        def version_string(self) -> str:  # the Server header restpy reads
            return server.opts.server_header

        def log_message(self, fmt: str, *args: Any) -> None:  # method, path, status only
            sys.stdout.write("%s %s\n" % (self.log_date_time_string(), fmt % args))
            sys.stdout.flush()

        # ---------------------------------------------------------- plumbing

        def _body(self) -> Any:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if not raw.strip():
                return None
            try:
                return json.loads(raw)
            except ValueError:
                raise RestError(400, "request body is not JSON") from None

        def _send(self, status: int, payload: Any = None, raw: bytes | None = None,
                  content_type: str = "application/json") -> None:
            data = raw if raw is not None else (b"" if payload is None and status == 204
                                                else json.dumps(payload).encode())
            self.send_response(status)
            if status != 204:
                self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if data:
                self.wfile.write(data)

        def _error(self, status: int, detail: str) -> None:
            self._send(status, {"errors": [{"detail": detail}]})

        def _dispatch(self, method: str) -> None:
            url = urlsplit(self.path)
            path = unquote(url.path).rstrip("/") or "/"
            query = parse_qs(url.query)
            if server.opts.stall and re.search(server.opts.stall, f"{method} {path}"):
                time.sleep(60)  # a hung server: the client must give up on its own
                return
            try:
                body = self._body() if method in ("POST", "PATCH", "DELETE") else None
                with server.lock:
                    if not path.startswith("/fake/"):
                        server.counters["requests"] += 1
                    self._route(method, path, query, body)
            except RestError as exc:
                self._error(exc.status, exc.detail)
            except Exception as exc:  # noqa: BLE001 - a fake bug must reach the client as 500
                self._error(500, f"fake server error: {type(exc).__name__}: {exc}")

        def do_GET(self) -> None:
            self._dispatch("GET")

        def do_POST(self) -> None:
            self._dispatch("POST")

        def do_PATCH(self) -> None:
            self._dispatch("PATCH")

        def do_DELETE(self) -> None:
            self._dispatch("DELETE")

        def do_OPTIONS(self) -> None:
            self._dispatch("OPTIONS")

        # ---------------------------------------------------------- routes

        def _route(self, method: str, path: str, query: dict[str, list[str]], body: Any) -> None:
            if path == "/fake/state" and method == "GET":
                return self._send(200, server.state())
            if path == "/api/v1/auth/session" and method == "POST":
                return self._login(body)
            if not self._authorised():
                server.counters["unauthorized"] += 1
                raise RestError(401, "Unauthorized: missing or invalid X-Api-Key")
            if path == "/api/v1/sessions":
                return self._sessions(method, body)
            web = re.match(r"^/ixnetworkweb/api/v1/sessions/(\d+)$", path)
            if web and method == "PATCH":
                session = self._session(int(web.group(1)))
                session.name = str((body or {}).get("sessionName", session.name))
                return self._send(200, {})
            if path in server.operations and method == "GET":
                server.counters["polls"] += 1
                return self._send(200, server.op_status(server.operations[path]))
            match = SESSION_RE.match(path)
            if not match:
                raise RestError(404, f"{path} not found")
            session = self._session(int(match.group(1)))
            rest = match.group(2) or ""
            if rest == "":
                return self._session_object(method, session)
            op = OP_RE.match(rest)
            if op and op.group("target") == "" and method == "POST":
                return self._session_operation(session, op.group("name"), path, query)
            if not rest.startswith("/ixnetwork"):
                raise RestError(404, f"{path} not found")
            if session.current_state() != "ACTIVE":
                raise RestError(400, f"session {session.id} is {session.current_state()}, not ACTIVE")
            return self._ixnetwork(method, session, path, query, body)

        def _authorised(self) -> bool:
            return self.headers.get("X-Api-Key") == server.api_key

        def _login(self, body: Any) -> None:
            body = body or {}
            user, password = body.get("username", ""), body.get("password", "")
            if not user and not password:  # restpy's platform probe
                return self._error(401, "Authentication failed: username and password required")
            if server.opts.reject_auth or user != server.opts.username or password != server.opts.password:
                server.counters["login_failures"] += 1
                return self._error(401, "Authentication failed: invalid username or password")
            server.counters["logins"] += 1
            self._send(200, {"id": 1, "username": user, "apiKey": server.api_key,
                             "userAccountUrl": "/api/v1/auth/users/1"})

        def _session(self, sid: int) -> FakeSession:
            session = server.sessions.get(sid)
            if session is None:
                raise RestError(404, f"session {sid} does not exist")
            return session

        def _sessions(self, method: str, body: Any) -> None:
            if method == "GET":
                return self._send(200, [s.to_json() for s in server.sessions.values()])
            if method != "POST":
                raise RestError(405, f"{method} not allowed on /api/v1/sessions")
            app = (body or {}).get("applicationType", "ixnrest")
            if app not in ("ixnrest", "ixnetwork"):
                raise RestError(400, f"applicationType {app!r} is not supported")
            sid = next(server.session_ids)
            session = FakeSession(sid, server.opts.username, server.dut, server.inventory,
                                  server.opts.build_number, server.opts.latency_unit)
            session.assign_delay_s = server.opts.assign_ports_s
            server.sessions[sid] = session
            server.counters["sessions_created"] += 1
            self._send(201, {"links": [{"rel": "self", "method": "GET", "href": session.href}]})

        def _session_object(self, method: str, session: FakeSession) -> None:
            if method == "GET":
                return self._send(200, session.to_json())
            if method == "DELETE":
                self._delete_session(session)
                return self._send(200, {})
            raise RestError(405, f"{method} not allowed on {session.href}")

        def _delete_session(self, session: FakeSession) -> None:
            session.stop()
            if server.sessions.pop(session.id, None) is not None:
                server.counters["sessions_deleted"] += 1

        def _session_operation(self, session: FakeSession, name: str, path: str,
                               query: dict[str, list[str]]) -> None:
            if name == "start":
                session.start(server.opts.session_start_s)
                status = server.new_operation(path, None, server.opts.session_start_s)
            elif name == "stop":
                delete = query.get("deleteAfterStop", ["false"])[0].lower() == "true"
                session.state = "STOPPING"

                def finish() -> None:
                    session.stop()
                    if delete:
                        self._delete_session(session)

                status = server.new_operation(path, None, server.opts.session_stop_s, on_done=finish)
            else:
                raise RestError(404, f"session operation {name!r} not supported")
            self._send(202, status)

        def _ixnetwork(self, method: str, session: FakeSession, path: str,
                       query: dict[str, list[str]], body: Any) -> None:
            root = session.tree.root.href
            if path == f"{root}/files":
                return self._files(method, session, query)
            op = OP_RE.match(path)
            if op and method == "POST":
                if op.group("name").lower() == "select":
                    xpath = query.get("xpath", ["false"])[0].lower() == "true"
                    return self._send(200, session.tree.select(body or {}, xpath=xpath))
                target = op.group("target")
                session.tree.resolve(target)  # 404 for a target that does not exist
                try:
                    result, delay = session.operation(target, op.group("name"), body)
                    error = None
                except OperationFailed as exc:
                    result, delay, error = None, 0.0, str(exc)
                if op.group("name").lower() in ("start", "startstatelesstrafficblocking") and not error:
                    server.counters["trials"] += 1
                return self._send(202, server.new_operation(path, result, delay, error=error))
            node, collection = session.tree.resolve(path)
            if method == "GET":
                if collection is not None:
                    return self._send(200, [n.to_json() for n in node.lists[collection]])
                return self._send(200, node.to_json())
            if method == "POST":
                if collection is None:
                    raise RestError(405, f"POST needs a collection, {path} is an object")
                items = body if isinstance(body, list) else [body or {}]
                created = []
                for attrs in items:
                    if not isinstance(attrs, dict):
                        raise RestError(400, "POST body must be an object or a list of objects")
                    child = node.add_child(collection)
                    try:
                        child.update(attrs, creating=True)
                        session.created(child)
                    except RestError:
                        if child in node.lists[collection]:
                            child.remove()
                        raise
                    created.append(child)
                return self._send(201, {"links": [{"rel": "self", "method": "GET", "href": c.href}
                                                  for c in created]})
            if method == "PATCH":
                if collection is not None:  # restpy patches a collection with the item ids
                    items = body if isinstance(body, list) else [body or {}]
                    for attrs in items:
                        wanted = str(attrs.get("id", ""))
                        target = next((n for n in node.lists[collection] if str(n.id) == wanted), None)
                        if target is None:
                            raise RestError(404, f"{path}: no {collection} with id {wanted!r}")
                        target.update(attrs)
                        session.changed(target)
                else:
                    if not isinstance(body, dict):
                        raise RestError(400, "PATCH body must be an object")
                    node.update(body)
                    session.changed(node)
                return self._send(200, {})
            if method == "DELETE":
                if collection is not None:
                    raise RestError(405, "DELETE needs an object href")
                session.changed(node)
                node.remove()
                session.generated.pop(node.href, None)
                return self._send(200, {})
            raise RestError(405, f"{method} not allowed on {path}")

        def _files(self, method: str, session: FakeSession, query: dict[str, list[str]]) -> None:
            name = query.get("filename", [None])[0]
            if name is None:
                if method == "GET":
                    return self._send(200, session.files_listing())
                raise RestError(400, "filename= is required")
            name = name.rsplit("/", 1)[-1]
            if method == "GET":
                if name not in session.files:
                    raise RestError(404, f"file {name} not found")
                return self._send(200, raw=session.files[name], content_type="application/octet-stream")
            if method == "DELETE":
                if session.files.pop(name, None) is None:
                    raise RestError(404, f"file {name} not found")
                return self._send(204)
            raise RestError(405, f"{method} not allowed on files")

    return Handler


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="0 picks a free port")
    p.add_argument("--port-file", type=Path, help="write the bound port here when listening")
    p.add_argument("--username", default="admin")
    p.add_argument("--password", default=None, help="default admin (see --password-env)")
    p.add_argument("--password-env", default=None,
                   help="read the password from this environment variable (keeps it off argv)")
    p.add_argument("--api-key", default=None, help="the key logins return (random by default)")
    p.add_argument("--api-key-env", default=None, help="read --api-key from this environment variable")
    p.add_argument("--reject-auth", action="store_true", help="refuse every login (401)")
    p.add_argument("--server-header", default="nginx")
    p.add_argument("--build-number", default="9.30.2212.7")
    p.add_argument("--chassis", action="append", help="accepted chassis address (repeat; default any)")
    p.add_argument("--cards", type=int, default=2)
    p.add_argument("--ports-per-card", type=int, default=8)
    p.add_argument("--port-speed-mbps", type=int, default=10_000)
    p.add_argument("--capacity-fps", type=float, default=1_000_000.0,
                   help="DUT forwarding capacity, aggregate over all directions")
    p.add_argument("--base-latency-ns", type=float, default=5_000.0)
    p.add_argument("--buffer-latency-ns", type=float, default=250_000.0)
    p.add_argument("--stats-lag-s", type=float, default=0.1,
                   help="how long Rx counters trail Tx (frames in flight)")
    p.add_argument("--latency-unit", choices=("ns", "us"), default="ns")
    p.add_argument("--session-start-s", type=float, default=1.2,
                   help="how long session start stays IN_PROGRESS")
    p.add_argument("--session-stop-s", type=float, default=0.0)
    p.add_argument("--stall", default=None, metavar="REGEX",
                   help="never answer requests whose 'METHOD /path' matches (a hung server)")
    p.add_argument("--assign-ports-s", type=float, default=1.2,
                   help="how long assignPorts stays IN_PROGRESS before links come up")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    opts = parse_args(argv)
    if opts.password is None:
        opts.password = os.environ.get(opts.password_env, "") if opts.password_env else "admin"
    if opts.api_key is None and opts.api_key_env:
        opts.api_key = os.environ.get(opts.api_key_env) or None
    state = FakeServer(opts)
    httpd = ThreadingHTTPServer((opts.host, opts.port), make_handler(state))
    httpd.daemon_threads = True
    port = httpd.server_address[1]
    if opts.port_file:
        tmp = opts.port_file.with_suffix(".tmp")
        tmp.write_text(str(port))
        tmp.replace(opts.port_file)
    print(f"fake IxNetwork API server listening on http://{opts.host}:{port}", flush=True)
    try:
        httpd.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        httpd.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
