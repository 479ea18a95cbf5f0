"""The async channel (TRex port 4500) as STL API 5 (TRex >= v2.88) uses it.

The PUB socket no longer carries events: the server publishes the bytes ``{}`` as a
trigger whenever it queued an event (and on ``publish_now``), next to periodic
``trex-global`` snapshots. The client then pulls its own session's queue over the sync
channel with ``get_async_events {"session_id"}``; every event carries a ``seq`` that must
be contiguous, or events were lost.
"""

from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass
from typing import Any

import zmq

from vsbench_plugins.trafficgen.trex import codec
from vsbench_plugins.trafficgen.trex.rpc import RpcClient, TrexConnectionError

log = logging.getLogger(__name__)

# Server event ids (trex_subscriber.py ServerEventsIDs, in sync with the server).
PORT_STARTED = 0
PORT_STOPPED = 1
PORT_JOB_DONE = 4
PORT_ACQUIRED = 5
PORT_RELEASED = 6
PORT_ERROR = 7
PROFILE_STARTED = 10
PROFILE_STOPPED = 11
PROFILE_FINISHED_TX = 14
PROFILE_ERROR = 17
SERVER_STOPPED = 100

#: How often the queue is pulled even without a trigger (the official client polls at 200 ms).
POLL_INTERVAL_S = 0.2


class EventSequenceError(Exception):
    """Events were lost: ``seq`` jumped."""


@dataclass(frozen=True)
class ServerEvent:
    type: int
    data: dict[str, Any]
    seq: int | None

    @property
    def port_id(self) -> int | None:
        value = self.data.get("port_id")
        return int(value) if value is not None else None


def check_sequence(last_seq: int | None, events: list[ServerEvent]) -> int | None:
    """Return the new last seq; raise EventSequenceError when a seq is missing.

    The first event seen in a session may start anywhere (the queue exists before we
    look); after that every event must be exactly one more than its predecessor. A seq of
    0 restarts the count (TRex's own client skips the check for it too).
    """
    for ev in events:
        if ev.seq is None:
            continue
        if last_seq is not None and ev.seq != 0 and ev.seq != last_seq + 1:
            raise EventSequenceError(f"event seq jumped from {last_seq} to {ev.seq}")
        last_seq = ev.seq
    return last_seq


def parse_events(result: Any) -> list[ServerEvent]:
    """``get_async_events`` result ``{"data": [{"name","type","data","seq"}, ...]}``."""
    if not isinstance(result, dict) or not isinstance(result.get("data", []), list):
        raise codec.ProtocolError(f"get_async_events returned {str(result)[:120]}")
    events = []
    for item in result.get("data", []):
        if not isinstance(item, dict) or item.get("name") != "trex-event":
            continue
        seq = item.get("seq")
        events.append(ServerEvent(int(item.get("type", -1)), dict(item.get("data") or {}),
                                  int(seq) if seq is not None else None))
    return events


class EventChannel:
    """SUB socket for triggers plus pulls of this session's event queue."""

    def __init__(self, rpc: RpcClient, host: str, port: int, session_id: int,
                 context: zmq.Context | None = None) -> None:
        self.rpc = rpc
        self.host = host
        self.port = port
        self.session_id = session_id
        self._context = context or zmq.Context.instance()
        self._socket: zmq.Socket | None = None
        self.last_seq: int | None = None
        self.triggers = 0  # '{}' messages seen, for diagnostics
        self.global_snapshots = 0

    @property
    def endpoint(self) -> str:
        return f"tcp://{self.host}:{self.port}"

    def connect(self, barrier_timeout_s: float) -> None:
        """Subscribe and prove the channel carries data (the client's barrier)."""
        sock = self._context.socket(zmq.SUB)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.SUBSCRIBE, b"")
        sock.connect(self.endpoint)
        self._socket = sock
        deadline = time.monotonic() + barrier_timeout_s
        while True:
            self.rpc.call("publish_now", {"key": random.getrandbits(32), "baseline": False})
            if self._wait_message(0.02):
                self._discard_pending()
                return
            if time.monotonic() >= deadline:
                self.close()
                raise TrexConnectionError(
                    f"{self.endpoint}: no data on the async channel within {barrier_timeout_s:g} s"
                )

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close(linger=0)
            self._socket = None

    def _wait_message(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` for any message; True when one (or more) arrived."""
        assert self._socket is not None
        if not self._socket.poll(int(max(timeout_s, 0) * 1000), zmq.POLLIN):
            return False
        self._discard_pending()
        return True

    def _discard_pending(self) -> None:
        """Read everything queued on SUB, counting triggers and global snapshots."""
        assert self._socket is not None
        while True:
            try:
                frame = self._socket.recv(zmq.NOBLOCK)
            except zmq.Again:
                return
            try:
                msg, _ = codec.decode(frame)
            except (codec.FramingError, codec.ProtocolError) as exc:
                log.debug("ignoring undecodable async message: %s", exc)
                continue
            if msg == {}:
                self.triggers += 1
            elif isinstance(msg, dict) and msg.get("name") == "trex-global":
                self.global_snapshots += 1

    def fetch(self) -> list[ServerEvent]:
        """Pull this session's queued events; raise EventSequenceError on a gap."""
        result = self.rpc.call("get_async_events", {"session_id": self.session_id})
        events = parse_events(result)
        self.last_seq = check_sequence(self.last_seq, events)
        for ev in events:
            log.debug("trex event %d %s (seq %s)", ev.type, ev.data, ev.seq)
        return events

    def wait(self, timeout_s: float) -> list[ServerEvent]:
        """Wait for a trigger (at most ``min(timeout_s, POLL_INTERVAL_S)``), then pull."""
        if self._socket is not None:
            self._wait_message(min(timeout_s, POLL_INTERVAL_S))
        else:
            time.sleep(min(timeout_s, POLL_INTERVAL_S))
        return self.fetch()

