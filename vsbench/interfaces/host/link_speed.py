"""A port's own link speed (ethtool), for a generator's ``port_speeds``: a NIC's negotiated
speed, none for a software interface such as a veth."""

from vsbench.system.link_speed import LinkSpeed, probe

__all__ = ["LinkSpeed", "probe"]
