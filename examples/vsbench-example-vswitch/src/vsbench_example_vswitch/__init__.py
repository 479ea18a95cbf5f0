"""Example vsbench vSwitch plugin (``tcswitch``): port-to-port forwarding with Linux tc.
The plugin class is :class:`vsbench_example_vswitch.plugin.TcSwitch`."""

__version__ = "0.1.0"
