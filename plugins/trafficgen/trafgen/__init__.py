"""The embedded default traffic generator: netsniff-ng trafgen on the netns/veth testbed.

Entry point ``trafgen`` -> :class:`Trafgen`. Modules: :mod:`.flows` (flows as trafgen
counters, pure), :mod:`.frames` (scapy templates), :mod:`.config` (trafgen configuration),
:mod:`.process` (command line and exit summary), :mod:`.shaper` (tbf pacing),
:mod:`.probes` (the latency probe helper's plugin side), :mod:`.settings`.
"""

from vsbench_plugins.trafficgen.trafgen.plugin import Trafgen

__all__ = ["Trafgen"]
