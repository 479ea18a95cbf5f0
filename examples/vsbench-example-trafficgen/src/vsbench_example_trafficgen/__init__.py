"""Example vsbench traffic generator plugin (``toygen``): a separate generator process
driven over a socket. The plugin class is :class:`vsbench_example_trafficgen.plugin.ToyGen`."""

__version__ = "0.1.0"
