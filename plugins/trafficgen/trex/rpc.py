"""The synchronous channel: JSON-RPC 2.0 over a ZMQ REQ socket (TRex port 4501).

A REQ socket allows one request in flight and is wedged after a lost reply, so a timeout
closes the socket and marks the client broken: the caller gets one clear error instead of
a later "operation cannot be accomplished in current state".
"""

from __future__ import annotations

import contextlib
import errno
import logging
import socket
import time
from typing import Any, Iterable

import zmq

from vsbench_plugins.trafficgen.trex import codec

log = logging.getLogger(__name__)

# Methods the server answers without an api_h (src/rpc-server: TREX_RPC_CMD_NOAPI).
NO_API_METHODS = frozenset({"api_sync", "api_sync_v2", "get_version", "ping"})
ASYNC_POLL_S = 0.3


class TrexConnectionError(Exception):
    """The server cannot be reached or stopped answering; one line, names the address."""


class RpcClient:
    """One REQ socket to ``tcp://host:port``; ``call`` and ``batch`` add ``api_h`` once set."""

    def __init__(self, host: str, port: int, *, timeout_s: float, compress: bool = True,
                 context: zmq.Context | None = None) -> None:
        self.host = host
        self.port = port
        self.timeout_s = timeout_s
        self.compress = compress
        self.api_h: str | None = None
        self._context = context or zmq.Context.instance()
        self._socket: zmq.Socket | None = None
        self.broken: str | None = None  # why the channel is unusable, once it is

    @property
    def endpoint(self) -> str:
        return f"tcp://{self.host}:{self.port}"

    @property
    def connected(self) -> bool:
        return self._socket is not None and self.broken is None

    def probe(self, timeout_s: float) -> None:
        """Open and close a TCP connection, because ZMQ's connect never fails: a refused
        or unroutable address would otherwise only show up as a reply timeout."""
        try:
            with socket.create_connection((self.host, self.port), timeout=timeout_s):
                pass
        except ConnectionRefusedError:
            raise TrexConnectionError(f"{self.endpoint}: connection refused") from None
        except socket.timeout:
            raise TrexConnectionError(
                f"{self.endpoint}: no TCP answer within {timeout_s:g} s"
            ) from None
        except OSError as exc:
            reason = exc.strerror or errno.errorcode.get(exc.errno or 0, str(exc))
            raise TrexConnectionError(f"{self.endpoint}: {reason}") from None

    def connect(self) -> None:
        self.close()
        sock = self._context.socket(zmq.REQ)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.SNDTIMEO, int(self.timeout_s * 1000))
        sock.setsockopt(zmq.RCVTIMEO, int(self.timeout_s * 1000))
        sock.connect(self.endpoint)
        self._socket = sock
        self.broken = None

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close(linger=0)
            self._socket = None

    # ------------------------------------------------------------------ calls

    def _request(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        api_h = None if method in NO_API_METHODS else self.api_h
        return codec.make_request(method, params, api_h=api_h)

    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """Invoke one method; raise codec.RpcError on a server error.

        A busy server answers -32001 (try again): the request is repeated. A long command
        answers -32002 (work in progress) with a ticket in ``specific_err``: the result is
        polled with ``get_async_results``. Both for at most ``max(timeout_s, 3)`` seconds
        with 0.3 s pauses, as TRex's own client does.
        """
        deadline = time.monotonic() + max(self.timeout_s, 3.0)
        while True:
            try:
                return self._call_once(method, params)
            except codec.RpcError as exc:
                if exc.code == codec.TRY_AGAIN and time.monotonic() < deadline:
                    time.sleep(ASYNC_POLL_S)
                    continue
                if exc.code == codec.WORK_IN_PROGRESS:
                    return self._await_ticket(method, exc, deadline)
                raise

    def _call_once(self, method: str, params: dict[str, Any] | None) -> Any:
        request = self._request(method, params)
        reply = self._exchange(request, method)
        return codec.result_of(request, reply)

    def _await_ticket(self, method: str, wip: codec.RpcError, deadline: float) -> Any:
        try:
            ticket = int(str(wip.specific))
        except ValueError:
            raise codec.ProtocolError(f"{method}: work in progress without a ticket id") from None
        while True:
            if time.monotonic() >= deadline:
                with contextlib.suppress(codec.RpcError, codec.ProtocolError, TrexConnectionError):
                    self._call_once("cancel_async_task", {"ticket_id": ticket})
                raise TrexConnectionError(f"{self.endpoint}: {method} still in progress after "
                                          f"{max(self.timeout_s, 3.0):g} s (ticket {ticket} cancelled)")
            time.sleep(ASYNC_POLL_S)
            try:
                return self._call_once("get_async_results", {"ticket_id": ticket})
            except codec.RpcError as exc:
                if exc.code != codec.WORK_IN_PROGRESS:
                    raise codec.RpcError(method, exc.code, exc.message, exc.specific) from None

    def batch(self, calls: Iterable[tuple[str, dict[str, Any] | None]]) -> list[Any]:
        """Invoke several methods in one message; results in order, first error raises."""
        requests = [self._request(m, p) for m, p in calls]
        if not requests:
            return []
        label = f"batch of {len(requests)} ({requests[0]['method']}...)"
        reply = self._exchange(requests, label)
        return codec.results_of_batch(requests, reply)

    def _exchange(self, message: Any, label: str) -> Any:
        if self.broken is not None:
            raise TrexConnectionError(f"{self.endpoint}: channel unusable ({self.broken})")
        if self._socket is None:
            raise TrexConnectionError(f"{self.endpoint}: not connected")
        frame = codec.encode(message, compressed=self.compress)
        try:
            self._socket.send(frame)
            reply_frame = self._socket.recv()
        except zmq.Again:
            self._break(f"no reply to {label} within {self.timeout_s:g} s")
            raise TrexConnectionError(f"{self.endpoint}: {self.broken}") from None
        except zmq.ZMQError as exc:
            self._break(f"{label}: {exc}")
            raise TrexConnectionError(f"{self.endpoint}: {self.broken}") from None
        try:
            reply, was_compressed = codec.decode(reply_frame)
        except (codec.FramingError, codec.ProtocolError) as exc:
            self._break(f"undecodable reply to {label}: {exc}")
            raise codec.ProtocolError(self.broken) from None
        if self.compress and not was_compressed:
            log.debug("%s answered a compressed request uncompressed", self.endpoint)
        return reply

    def _break(self, why: str) -> None:
        self.broken = why
        self.close()
