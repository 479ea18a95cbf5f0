"""Settings of the trex plugin (``trafficgen.trex`` in the configuration).

Defaults live in ``conf/30_trafficgen_trex.yaml``; :data:`DEFAULTS` repeats them so a
plugin built with a partial section (tests, a vendor's runner) behaves the same, and a unit
test keeps the two equal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

DEFAULTS: dict[str, Any] = {
    "host": "127.0.0.1",
    "sync_port": 4501,
    "async_port": 4500,
    "ports": [0, 1],
    "user": "vsbench",
    "force_acquire": False,
    "timeout_s": 3.0,
    "connect_timeout_s": 5.0,
    "event_timeout_s": 5.0,
    "drain_s": None,
    "latency_pps": None,
    "latency_pg_id_base": 100,
    "bulk_counters": "port",
    "compress": True,
    "max_rate_fps": None,
    "min_tx_ratio": 0.999,
}

_PORT = {"type": "integer", "minimum": 1, "maximum": 65535}
_POSITIVE = {"type": "number", "exclusiveMinimum": 0}

SETTINGS_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "trafficgen.trex settings",
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "host": {"type": "string", "minLength": 1,
                 "description": "address of the TRex server (t-rex-64 -i)"},
        "sync_port": {**_PORT, "description": "JSON-RPC (ZMQ REQ/REP) port"},
        "async_port": {**_PORT, "description": "event (ZMQ PUB/SUB) port"},
        "ports": {"type": "array", "minItems": 1, "uniqueItems": True,
                     "items": {"type": "integer", "minimum": 0, "maximum": 255},
                     "description": "TRex port id for generator port 0, 1, ..."},
        "user": {"type": "string", "minLength": 1, "description": "owner name when acquiring ports"},
        "force_acquire": {"type": "boolean",
                          "description": "take ports over even when another user owns them"},
        "timeout_s": {**_POSITIVE, "description": "wait for one RPC reply"},
        "connect_timeout_s": {**_POSITIVE, "description": "TCP probe and async-channel barrier"},
        "event_timeout_s": {**_POSITIVE,
                            "description": "extra wait for 'profile finished tx' after a trial"},
        "drain_s": {"type": ["number", "null"], "minimum": 0,
                    "description": "wait after TX ends before reading counters; null: traffic.drain_s"},
        "latency_pps": {"type": ["number", "null"], "exclusiveMinimum": 0,
                        "description": "latency stream rate per direction; null: latency.probe_rate_fps"},
        "latency_pg_id_base": {"type": "integer", "minimum": 0, "maximum": 4294967000,
                               "description": "first packet-group id used by vsbench"},
        "bulk_counters": {"enum": ["port", "pgid"],
                          "description": "port: port opackets/ipackets minus probes; "
                                         "pgid: per-stream flow_stats counters"},
        "compress": {"type": "boolean", "description": "zlib-frame every request (TRex >= v2.42)"},
        "max_rate_fps": {"type": ["number", "null"], "exclusiveMinimum": 0,
                         "description": "aggregate cap when the TRex host cannot reach line rate"},
        "min_tx_ratio": {"type": "number", "exclusiveMinimum": 0, "maximum": 1,
                         "description": "a trial that sent less than this share of the asked "
                                        "frames is invalid (generator-limited)"},
    },
}


@dataclass(frozen=True)
class TrexSettings:
    host: str
    sync_port: int
    async_port: int
    ports: tuple[int, ...]
    user: str
    force_acquire: bool
    timeout_s: float
    connect_timeout_s: float
    event_timeout_s: float
    drain_s: float | None
    latency_pps: float | None
    latency_pg_id_base: int
    bulk_counters: str
    compress: bool
    max_rate_fps: float | None
    min_tx_ratio: float

    @classmethod
    def from_mapping(cls, settings: Mapping[str, Any] | None) -> "TrexSettings":
        merged = {**DEFAULTS, **{k: v for k, v in (settings or {}).items() if k != "name"}}
        unknown = sorted(set(merged) - set(DEFAULTS))
        if unknown:
            raise ValueError(f"unknown trafficgen.trex setting(s): {', '.join(unknown)}")
        merged["ports"] = tuple(int(p) for p in merged["ports"])
        return cls(**merged)
