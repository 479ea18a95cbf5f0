"""A socket created inside a named network namespace, without this process leaving its own.

Python 3.11 has no ``os.setns``, and setns changes only the calling thread: a short-lived
thread enters the namespace through libc, creates the socket and ends. A socket stays bound
to the namespace it was created in, so the caller then uses it from any thread. Used to
reach what listens only inside a testbed namespace (PROX's TCP port) and to talk netlink to
a namespace's kernel (the vRouter's route programming)."""

from __future__ import annotations

import ctypes
import os
import socket
import threading

CLONE_NEWNET = 0x40000000
NETNS_DIR = "/var/run/netns"


def socket_in_netns(netns: str, family: int, type: int = socket.SOCK_STREAM, proto: int = 0) -> socket.socket:
    """``socket.socket(family, type, proto)`` created inside network namespace ``netns``."""
    out: dict = {}

    def work() -> None:
        try:
            fd = os.open(os.path.join(NETNS_DIR, netns), os.O_RDONLY)
            try:
                libc = ctypes.CDLL(None, use_errno=True)
                if libc.setns(fd, CLONE_NEWNET) != 0:
                    err = ctypes.get_errno()
                    raise OSError(err, f"setns {netns}: {os.strerror(err)}")
            finally:
                os.close(fd)
            out["sock"] = socket.socket(family, type, proto)
        except BaseException as exc:  # handed to the caller's thread
            out["error"] = exc

    thread = threading.Thread(target=work, name=f"netns-{netns}")
    thread.start()
    thread.join()
    if "error" in out:
        raise out["error"]
    return out["sock"]
