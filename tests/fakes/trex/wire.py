"""The fake server's own implementation of TRex's message framing.

Written separately from the plugin's codec on purpose: the fake must catch a framing
mistake in the plugin, not repeat it. Server behaviour (``trex_rpc_req_resp_server.cpp``,
``trex_rpc_zip.cpp``): a request starting with the magic is inflated and its reply is
deflated in the same framing; a request whose inflation fails is parsed as plain JSON.
"""

from __future__ import annotations

import zlib

MAGIC = bytes.fromhex("ABE85CEA")


def looks_zipped(data: bytes) -> bool:
    return len(data) >= 8 and data[:4] == MAGIC


def unzip(data: bytes) -> bytes | None:
    """The payload of a framed message, or None if the frame is bad."""
    if not looks_zipped(data):
        return None
    declared = int.from_bytes(data[4:8], "big")
    try:
        payload = zlib.decompress(data[8:])
    except zlib.error:
        return None
    return payload if len(payload) == declared else None


def zip_frame(payload: bytes) -> bytes:
    return MAGIC + len(payload).to_bytes(4, "big") + zlib.compress(payload, 6)
