"""Whether this host's DPDK drivers work, probed for real (cached per process): a plugin
that starts a DPDK process names what is missing in its ``check_prerequisites``."""

from vsbench.system.dpdk_probe import cached_findings, links_shared_dpdk

__all__ = ["cached_findings", "links_shared_dpdk"]
