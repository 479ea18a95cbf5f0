"""Names of what a run creates: every interface, namespace and file carries the run id, so
``vsbench cleanup`` can tell a dead run's leftovers from anything else on the host."""

from vsbench.system.naming import RUN_ID_RE, iface_name, netns_name

__all__ = ["RUN_ID_RE", "iface_name", "netns_name"]
