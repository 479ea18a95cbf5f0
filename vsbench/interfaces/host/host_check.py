"""Kernel features the embedded testbed needs, probed in a throwaway namespace; each
finding says what is missing and how to get it (for ``check_prerequisites``)."""

from vsbench.system.host_check import Finding, check_link_types, check_testbed_kernel

__all__ = ["Finding", "check_link_types", "check_testbed_kernel"]
