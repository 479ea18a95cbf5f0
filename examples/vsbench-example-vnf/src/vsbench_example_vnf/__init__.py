"""Example vsbench VNF plugin (``pyfwd``): a forwarding process between port pairs.
The plugin class is :class:`vsbench_example_vnf.plugin.PyFwd`."""

__version__ = "0.1.0"
