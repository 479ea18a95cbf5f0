"""TRex's wire format: zlib framing of ZMQ messages and JSON-RPC 2.0 envelopes.

One ZMQ message carries one JSON-RPC request object, or a JSON array of them (a batch).
Since TRex v2.42 the official client compresses every request; the server answers a
compressed request with a compressed reply. A compressed message is an 8-byte header
(big-endian magic ``0xABE85CEA`` and the uncompressed length, both uint32) followed by a
zlib stream. The same framing may appear on the async (PUB) channel for large messages.

Pure functions, no sockets: the fake server in ``tests/fakes/trex`` is written
independently, so a mistake here cannot hide behind the same mistake over there.
"""

from __future__ import annotations

import json
import secrets
import struct
import zlib
from typing import Any

ZIP_MAGIC = 0xABE85CEA
_HEADER = struct.Struct(">II")

# JSON-RPC 2.0 error codes, plus TRex's own (server-side ``trex_rpc_jsonrpc_v2_parser``).
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
EXECUTE_ERROR = -32000
TRY_AGAIN = -32001
WORK_IN_PROGRESS = -32002
NO_RESULTS = -32003


class FramingError(Exception):
    """A message claimed to be compressed but could not be inflated as declared."""


class ProtocolError(Exception):
    """A reply does not follow JSON-RPC 2.0 as TRex speaks it."""


class RpcError(Exception):
    """The server answered a request with an error object."""

    def __init__(self, method: str, code: int, message: str, specific: str | None = None) -> None:
        self.method = method
        self.code = code
        self.message = message
        self.specific = specific
        super().__init__(self.detail)

    @property
    def detail(self) -> str:
        """The most useful text, flattened to one line (TRex puts newlines in some)."""
        text = self.specific or self.message or f"error {self.code}"
        return " ".join(str(text).split())

# --------------------------------------------------------------------------- framing


def is_compressed(frame: bytes) -> bool:
    return len(frame) >= _HEADER.size and _HEADER.unpack_from(frame)[0] == ZIP_MAGIC


def compress(payload: bytes) -> bytes:
    """Wrap ``payload`` in TRex's zlib framing."""
    return _HEADER.pack(ZIP_MAGIC, len(payload)) + zlib.compress(payload)


def decompress(frame: bytes) -> bytes:
    """Inflate a framed message; raise :class:`FramingError` if it is not one or is corrupt."""
    if not is_compressed(frame):
        raise FramingError("message does not start with the TRex zlib magic")
    _magic, length = _HEADER.unpack_from(frame)
    try:
        payload = zlib.decompress(frame[_HEADER.size :])
    except zlib.error as exc:
        raise FramingError(f"corrupt zlib stream: {exc}") from None
    if len(payload) != length:
        raise FramingError(f"header announces {length} B, zlib stream holds {len(payload)} B")
    return payload


def encode(obj: Any, *, compressed: bool) -> bytes:
    """JSON-encode ``obj`` (compactly) and frame it."""
    payload = json.dumps(obj, separators=(",", ":")).encode()
    return compress(payload) if compressed else payload


def decode(frame: bytes) -> tuple[Any, bool]:
    """Parse one message; return the JSON value and whether it was compressed."""
    was_compressed = is_compressed(frame)
    payload = decompress(frame) if was_compressed else frame
    try:
        return json.loads(payload.decode()), was_compressed
    except (UnicodeDecodeError, ValueError) as exc:
        raise ProtocolError(f"reply is not JSON: {exc}") from None


# --------------------------------------------------------------------------- JSON-RPC


def new_request_id() -> str:
    return secrets.token_hex(4)


def make_request(method: str, params: dict[str, Any] | None = None, *, api_h: str | None = None,
                 request_id: str | None = None) -> dict[str, Any]:
    """A JSON-RPC 2.0 request object; ``params`` is always an object, as TRex insists."""
    body = dict(params or {})
    if api_h is not None:
        body["api_h"] = api_h
    return {"jsonrpc": "2.0", "id": request_id or new_request_id(), "method": method, "params": body}


def result_of(request: dict[str, Any], response: Any) -> Any:
    """The ``result`` of ``response`` to ``request``; raise RpcError or ProtocolError."""
    method = request["method"]
    if not isinstance(response, dict) or response.get("jsonrpc") != "2.0":
        raise ProtocolError(f"malformed reply to {method}: {str(response)[:120]}")
    if "error" in response:
        err = response["error"] or {}
        if not isinstance(err, dict):
            raise ProtocolError(f"malformed error object in reply to {method}")
        raise RpcError(method, int(err.get("code", 0)), str(err.get("message", "")),
                       err.get("specific_err"))
    if response.get("id") != request["id"]:
        raise ProtocolError(
            f"reply id {response.get('id')!r} does not match request id {request['id']!r} ({method})"
        )
    if "result" not in response:
        raise ProtocolError(f"reply to {method} has neither result nor error")
    return response["result"]


def results_of_batch(requests: list[dict[str, Any]], response: Any) -> list[Any]:
    """Results of a batch, in request order; the first error raises.

    TRex answers a batch with an array; a batch of one may come back as a bare object.
    """
    if isinstance(response, dict) and len(requests) == 1:
        response = [response]
    if not isinstance(response, list) or len(response) != len(requests):
        got = len(response) if isinstance(response, list) else type(response).__name__
        raise ProtocolError(f"batch of {len(requests)} requests answered with {got} replies")
    by_id = {r.get("id"): r for r in response if isinstance(r, dict)}
    results = []
    for req, resp in zip(requests, response):
        # Match by id when the server reordered; fall back to position.
        results.append(result_of(req, by_id.get(req["id"], resp)))
    return results
