"""TCP workloads with iperf3 (report 5). Entry point ``iperf3`` -> :class:`Iperf3`.
Modules: :mod:`.endpoints` (the endpoint namespaces), :mod:`.parse` (iperf3's JSON)."""

from vsbench_plugins.trafficgen.iperf3.plugin import Iperf3

__all__ = ["Iperf3"]
