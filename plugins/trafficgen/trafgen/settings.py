"""Settings of the trafgen plugin (``trafficgen.trafgen`` in the configuration).

Defaults live in ``conf/30_trafficgen_trafgen.yaml``; :data:`DEFAULTS` repeats them so a
plugin built with a partial section (tests, a vendor's runner) behaves the same, and a unit
test keeps the two equal.
"""

from __future__ import annotations

from typing import Any, Mapping

ENGINES = ("pacer", "trafgen", "xdp")

DEFAULTS: dict[str, Any] = {
    "engine": "trafgen",
    "pacer_tx": "ring",
    "pacer_batch": 32,
    "pacer_ring_slots": 1024,
    "pacer_binary": None,
    "pacer_fifo_priority": 1,
    "pacer_yield_period_us": 500,
    "pacer_yield_us": 30,
    "pacer_catchup_share": 1.0,
    "xdp_batch": 16,
    "xdp_nice": -20,
    "xdp_catchup_share": 1.0,
    "xdp_binary": None,
    "binary": "trafgen",
    "cpus": [0],
    "tx_path": "sendto",
    "bidirectional_shaper": "shared",
    "shaper_burst_s": 0.005,
    "max_rate_fps": 1000000,
    "max_flows": 16777216,
    "probe_rate_fps": None,
    "drain_s": None,
    "startup_allowance_s": 3.0,
    "rate_tolerance": 0.01,
    "nice": -10,
    "python": None,
}

_POSITIVE = {"type": "number", "exclusiveMinimum": 0}

SETTINGS_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "trafficgen.trafgen settings",
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "engine": {"enum": list(ENGINES),
                   "description": "xdp: vsbench's in-kernel sender (csrc/vsbench_xdpgen.c, built on first use): "
                                  "one live-frames run of an XDP program that sends each frame when it is "
                                  "due, both directions from cpus[0] (Linux >= 5.18; switches GRO on at the "
                                  "ports' veth peers for the trial); pacer: vsbench's user-space sender "
                                  "(csrc/vsbench_pacer.c), paced by its clock, PACKET_QDISC_BYPASS; trafgen: "
                                  "netsniff-ng trafgen paced by a tbf shaper (tx_path, bidirectional_shaper, "
                                  "shaper_burst_s)"},
        "xdp_batch": {"type": "integer", "minimum": 1, "maximum": 256,
                      "description": "xdp: program runs between two transmit flushes (the kernel sends a "
                                     "batch's frames together at its end)"},
        "xdp_nice": {"type": "integer", "minimum": -20, "maximum": 19,
                     "description": "xdp: niceness of the sender (its kernel loop yields only when another "
                                    "task is due: at -20 other tasks on its CPU wait longer and take less)"},
        "xdp_catchup_share": {"type": "number", "minimum": 0, "maximum": 100,
                              "description": "xdp: behind schedule (a stall), catch up at most this share above "
                                             "the nominal rate after a burst of 100 us of frames; 0: as fast as "
                                             "it can"},
        "xdp_binary": {"type": ["string", "null"],
                       "description": "xdp: a prebuilt sender; null: build csrc/vsbench_xdpgen.c once into "
                                      "VSBENCH_CACHE_DIR (default /var/cache/vsbench)"},
        "pacer_tx": {"enum": ["ring", "mmsg"],
                     "description": "pacer: hand frames over through a PACKET_TX_RING or sendmmsg()"},
        "pacer_batch": {"type": "integer", "minimum": 1, "maximum": 256,
                        "description": "pacer: most frames handed over at once (when behind schedule)"},
        "pacer_ring_slots": {"type": "integer", "minimum": 16, "maximum": 1048576,
                             "description": "pacer: TX ring slots per port"},
        "pacer_binary": {"type": ["string", "null"],
                         "description": "pacer: a prebuilt sender; null: build csrc/vsbench_pacer.c "
                                        "once into VSBENCH_CACHE_DIR (default /var/cache/vsbench)"},
        "pacer_fifo_priority": {"type": "integer", "minimum": 0, "maximum": 99,
                                "description": "pacer: SCHED_FIFO priority while it sends (0: a normal task); "
                                               "a normal task on a shared CPU is descheduled for milliseconds"},
        "pacer_yield_period_us": {"type": "integer", "minimum": 0, "maximum": 1000000,
                                  "description": "pacer with SCHED_FIFO: give the CPU away every this many us "
                                                 "(0: never), so the kernel's fair server never takes it for 50 ms"},
        "pacer_catchup_share": {"type": "number", "minimum": 0, "maximum": 100,
                                "description": "pacer: behind schedule (a stall), catch up at most this share above "
                                               "the nominal rate (1.0: twice the rate), so no 1 ms carries much more "
                                               "than its share; 0: as fast as it can"},
        "pacer_yield_us": {"type": "integer", "minimum": 0, "maximum": 1000,
                           "description": "pacer with SCHED_FIFO: for this many us each time"},
        "binary": {"type": "string", "minLength": 1,
                   "description": "the trafgen executable (name on PATH or full path)"},
        "cpus": {"type": "array", "minItems": 1, "uniqueItems": True,
                 "items": {"type": "integer", "minimum": 0, "maximum": 1023},
                 "description": "tx_path ring: CPUs trafgen's workers are pinned to, split "
                                "between the directions of a bidirectional trial (shared when "
                                "only one is given); tx_path sendto: must be [0] (trafgen pins "
                                "its single sendto worker to CPU 0)"},
        "tx_path": {"enum": ["ring", "sendto"],
                    "description": "sendto: one blocking sendto() per frame; ring: trafgen's TX_RING (busy loop)"},
        "bidirectional_shaper": {"enum": ["shared", "per_port"],
                                 "description": "shared: one trafgen and one shaper for both directions, "
                                                "frames redirected to their port; per_port: a trafgen and "
                                                "a shaper per port (needs a CPU per direction)"},
        "shaper_burst_s": {**_POSITIVE, "maximum": 1.0,
                           "description": "depth of the tbf bucket, in seconds of traffic at the trial rate"},
        "max_rate_fps": {"type": ["number", "null"], "exclusiveMinimum": 0,
                         "description": "aggregate rate the search may ask for; measured with "
                                        "tools/bench/trafgen_capacity.py; null: unknown"},
        "max_flows": {"type": "integer", "minimum": 1, "maximum": 4294967296,
                      "description": "largest flow count accepted"},
        "probe_rate_fps": {"type": ["number", "null"], "exclusiveMinimum": 0, "maximum": 100000,
                           "description": "latency probes per second; null: latency.probe_rate_fps"},
        "drain_s": {"type": ["number", "null"], "minimum": 0,
                    "description": "longest wait after TX ends before reading counters (it ends once "
                                   "every frame sent has arrived); null: traffic.drain_s"},
        "startup_allowance_s": {**_POSITIVE,
                                "description": "time trafgen may take to start before a trial is cut"},
        "rate_tolerance": {"type": "number", "minimum": 0, "maximum": 0.5,
                           "description": "a trial that took longer than duration x (1 + this) "
                                          "to send is marked invalid (generator too slow)"},
        "nice": {"type": "integer", "minimum": -20, "maximum": 19,
                 "description": "engine trafgen: the scheduling niceness trafgen runs at (nice -n); "
                                "below 0 it keeps its share of a CPU that other tasks want (0: as started)"},
        "python": {"type": ["string", "null"],
                   "description": "interpreter for the probe helper; null: the one running vsbench"},
    },
}


def resolve(settings: Mapping[str, Any] | None) -> dict[str, Any]:
    """``settings`` over :data:`DEFAULTS`."""
    merged = dict(DEFAULTS)
    merged.update({k: v for k, v in (settings or {}).items()})
    return merged
