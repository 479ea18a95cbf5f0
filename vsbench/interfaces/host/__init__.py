"""Linux host services for plugins that drive local software (switches, VNFs, generators
on the embedded testbed): CPU accounting, hugepages, DPDK driver probes, kernel checks,
resource names, link counters, testbed helpers, DPDK programs' memory and telemetry
(:mod:`.dpdk_app`) and VNFs in VMs (:mod:`.vm`).

Each module re-exports a chosen part of the core's ``vsbench.system`` under the plugin
contract, so the core can reorganise its own modules without breaking a plugin: what is
listed in a module's ``__all__`` here is the API (versioned by
:data:`vsbench.interfaces.API_VERSION`), the rest of ``vsbench.system`` is not. A plugin
that drives remote equipment (a hardware generator over its REST or RPC API) needs none of
this.
"""
