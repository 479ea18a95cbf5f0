"""A socket created inside a testbed network namespace (a generator's control port that
listens only there, netlink to a namespace's kernel), this process staying in its own."""

from vsbench.system.netns_socket import socket_in_netns

__all__ = ["socket_in_netns"]
