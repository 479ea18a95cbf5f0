"""The PROX control socket: newline-terminated commands, CSV replies only to queries.

PROX (``prox -t`` on TCP 8474, ``prox -u`` on ``/tmp/prox.sock``) answers **only query
commands**, each with one or more ``\\n``-terminated lines. Action commands (``start``,
``speed``, ``pkt_size``, ``reset stats``...) get no reply, and neither does an unknown
command or a command with bad arguments: PROX only writes "Unknown command" to its own log.
A client that waits for a reply after a typo waits forever. So this reader:

* never waits after an action command (:meth:`ProxConnection.send`);
* waits for a query's lines with a bounded deadline (:meth:`ProxConnection.query`) and turns
  silence into a one-line :class:`PluginError` naming the command and the address;
* discards anything pending before a query (a late reply of an earlier, timed-out query
  would otherwise be read as the answer to the next one);
* skips ``pktdump,<port>,<len>`` blocks (header line + raw bytes) that ``dump*`` commands
  interleave with replies.
"""

from __future__ import annotations

import logging
import select
import socket
import time
from dataclasses import dataclass

from vsbench.interfaces.host.netns_socket import socket_in_netns
from vsbench.interfaces.plugin import PluginError

log = logging.getLogger(__name__)

PROX_TCP_PORT = 8474
PROX_UNIX_SOCKET = "/tmp/prox.sock"


@dataclass(frozen=True)
class ProxAddress:
    """Where PROX listens: a TCP ``host:port`` or a UNIX socket path."""

    host: str | None = "127.0.0.1"
    port: int = PROX_TCP_PORT
    unix_path: str | None = None
    netns: str | None = None  # the TCP address is inside this network namespace

    def __str__(self) -> str:
        where = f" (netns {self.netns})" if self.netns and not self.unix_path else ""
        return (f"unix:{self.unix_path}" if self.unix_path else f"{self.host}:{self.port}") + where


class ProxConnection:
    """One client connection to PROX. Not thread-safe; one per plugin instance."""

    def __init__(self, sock: socket.socket, address: ProxAddress, reply_timeout_s: float) -> None:
        self._sock = sock
        self.address = address
        self.reply_timeout_s = reply_timeout_s
        self._buf = b""
        self._skip = 0  # raw pktdump bytes still to discard

    # ------------------------------------------------------------------ life cycle

    @classmethod
    def open(
        cls, address: ProxAddress, *, connect_timeout_s: float = 5.0, reply_timeout_s: float = 2.0
    ) -> "ProxConnection":
        """Connect, or raise a one-line PluginError naming ``address``."""
        if address.unix_path:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            target: object = address.unix_path
        else:
            try:
                sock = (socket_in_netns(address.netns, socket.AF_INET) if address.netns
                        else socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            except OSError as exc:
                raise PluginError(f"prox: cannot open a socket in netns {address.netns}: "
                                  f"{exc.strerror or exc}") from None
            target = (address.host, address.port)
        sock.settimeout(connect_timeout_s)
        try:
            sock.connect(target)
        except (OSError, socket.timeout) as exc:
            sock.close()
            reason = exc.strerror or str(exc) or type(exc).__name__
            raise PluginError(f"prox: cannot connect to PROX at {address}: {reason}") from None
        sock.settimeout(None)
        sock.setblocking(False)
        return cls(sock, address, reply_timeout_s)

    def close(self) -> None:
        if self._sock is not None:
            try:
                self._sock.close()
            finally:
                self._sock = None  # type: ignore[assignment]

    @property
    def closed(self) -> bool:
        return self._sock is None

    # ------------------------------------------------------------------ commands

    def send(self, command: str) -> None:
        """Send a command that PROX does not answer."""
        if self._sock is None:
            raise PluginError(f"prox: connection to PROX at {self.address} is closed")
        log.debug("prox> %s", command)
        data = command.encode("ascii") + b"\n"
        deadline = time.monotonic() + self.reply_timeout_s
        while data:
            try:
                sent = self._sock.send(data)
                data = data[sent:]
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise PluginError(
                        f"prox: PROX at {self.address} is not reading commands (send of "
                        f"{command!r} blocked for {self.reply_timeout_s:g} s)"
                    ) from None
                select.select([], [self._sock], [], 0.05)
            except OSError as exc:
                raise PluginError(
                    f"prox: connection to PROX at {self.address} lost while sending {command!r}: "
                    f"{exc.strerror or exc}"
                ) from None

    def query(self, command: str, lines: int = 1, timeout_s: float | None = None) -> list[str]:
        """Send a query and return its ``lines`` reply lines (without ``\\n``)."""
        self._discard_pending()
        self.send(command)
        return self.read(command, lines, timeout_s)

    def read(self, command: str, lines: int, timeout_s: float | None = None) -> list[str]:
        """Read ``lines`` more reply lines of ``command`` (for replies read in parts)."""
        timeout = self.reply_timeout_s if timeout_s is None else timeout_s
        deadline = time.monotonic() + timeout
        out: list[str] = []
        while len(out) < lines:
            line = self._readline(deadline)
            if line is None:
                got = f" (got {len(out)} of {lines} lines)" if out else ""
                raise PluginError(
                    f"prox: PROX at {self.address} did not answer {command!r} within "
                    f"{timeout:g} s{got}; PROX answers nothing to an unknown command or bad "
                    f"arguments"
                )
            out.append(line)
        if out:
            log.debug("prox< %s", out if lines > 1 else out[0])
        return out

    # ------------------------------------------------------------------ reading

    def _recv_some(self, deadline: float) -> bool:
        """Read what is available before ``deadline``; False on timeout."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        ready, _, _ = select.select([self._sock], [], [], remaining)
        if not ready:
            return False
        try:
            chunk = self._sock.recv(65536)
        except BlockingIOError:
            return True
        except OSError as exc:
            raise PluginError(
                f"prox: connection to PROX at {self.address} lost: {exc.strerror or exc}"
            ) from None
        if not chunk:
            raise PluginError(f"prox: PROX at {self.address} closed the connection")
        self._buf += chunk
        return True

    def _readline(self, deadline: float) -> str | None:
        while True:
            if self._skip:
                n = min(self._skip, len(self._buf))
                self._buf = self._buf[n:]
                self._skip -= n
            if not self._skip:
                nl = self._buf.find(b"\n")
                if nl >= 0:
                    raw, self._buf = self._buf[:nl], self._buf[nl + 1 :]
                    line = raw.decode("ascii", "replace").rstrip("\r")
                    if line.startswith("pktdump,"):
                        self._skip = _pktdump_length(line)
                        continue
                    return line
            if not self._recv_some(deadline):
                return None

    def _discard_pending(self) -> None:
        while self._recv_some(time.monotonic() + 0.0001):
            pass
        if self._buf.strip():
            log.warning("prox: discarding unexpected data from PROX at %s: %r", self.address,
                        self._buf[:200])
        self._buf = b""
        self._skip = 0


def _pktdump_length(header: str) -> int:
    try:
        return int(header.split(",")[2])
    except (IndexError, ValueError):
        return 0
