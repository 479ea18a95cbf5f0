"""TRex (Cisco's stateless traffic generator) driven over its own control protocol.

The package is the ``trex`` entry point of ``vsbench.trafficgen``; see :mod:`.plugin`.
Modules: :mod:`.codec` (zlib framing, JSON-RPC), :mod:`.rpc` (sync channel),
:mod:`.events` (async channel), :mod:`.streams` (profile -> streams), :mod:`.stats`
(counters and latency, µs -> ns), :mod:`.settings`.
"""

from vsbench_plugins.trafficgen.trex.plugin import Trex

__all__ = ["Trex"]
