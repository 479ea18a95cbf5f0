"""PCI NICs handed to a DPDK driver (``vfio-pci``, ``uio_pci_generic``) for a run and
back to their own driver when the run's resources close; refuses a device in use."""

from vsbench.system.pci_bind import DPDK_DRIVERS, PciBindError, PciBinding, bind, driver_of, netdevs_of

__all__ = ["DPDK_DRIVERS", "PciBindError", "PciBinding", "bind", "driver_of", "netdevs_of"]
