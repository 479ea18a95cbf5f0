"""The toygen control protocol: one JSON object per line, each request answered by one.

Requests carry ``"cmd"``; answers carry ``"ok": true`` and the results, or ``"ok": false``
and a one-line ``"error"``:

``{"cmd": "hello"}``
    -> ``{"ok": true, "server": "toygen", "version": "1.0", "mode": "testbed" | "model",
    "max_rate_fps": N}``
``{"cmd": "configure", "ports": [{"iface": "...", "mac": "..."}, ...], "frame_size_bytes": 64,
"bidirectional": true, "flows": 1, "fields": {...}}``
    -> ``{"ok": true}``; ports 0 and 1 send to each other (0 -> 1, and 1 -> 0 if bidirectional)
``{"cmd": "trial", "load_fps": F, "duration_s": D, "drain_s": S}``
    -> ``{"ok": true, "directions": [{"tx_port", "rx_port", "tx_frames", "rx_frames"}],
    "tx_duration_s": T}`` once the traffic stopped and ``drain_s`` passed
``{"cmd": "bye"}`` -> ``{"ok": true}`` and the server closes the connection.

Loads are aggregate frames/s over all directions, as in vsbench; the server splits them.
"""

from __future__ import annotations

import json
import socket
from typing import Any

PROTOCOL_VERSION = "1.0"


class ProtocolError(Exception):
    """The peer closed the connection or sent something that is not a message."""


def encode(message: dict[str, Any]) -> bytes:
    return (json.dumps(message, separators=(",", ":")) + "\n").encode()


class LineChannel:
    """Messages over a connected stream socket, one JSON line each."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._buffer = b""

    def send(self, message: dict[str, Any]) -> None:
        self.sock.sendall(encode(message))

    def receive(self) -> dict[str, Any]:
        while b"\n" not in self._buffer:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ProtocolError("connection closed")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            message = json.loads(line)
        except ValueError as exc:
            raise ProtocolError(f"not JSON: {line[:80]!r}") from exc
        if not isinstance(message, dict):
            raise ProtocolError(f"not an object: {line[:80]!r}")
        return message

    def close(self) -> None:
        self.sock.close()
