"""Reach a generator host over ssh with argv lists (used by the PROX and MoonGen plugins).

Hardware generators usually run on their own server. vsbench never builds a shell string of
its own: the remote command is an argv list, each element quoted with :func:`shlex.quote`
and joined only because ssh hands the remote side one command line. ``ssh_command`` and
``scp_command`` are argv prefixes from the settings, so a site can add its own options (a
jump host, a control socket) without vsbench parsing them.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from vsbench.interfaces import commands
from vsbench.interfaces.plugin import Prerequisite, tcp_unreachable

DEFAULT_SSH_COMMAND = ("ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10")
DEFAULT_SCP_COMMAND = ("scp", "-q", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10")
#: What ssh exits with when the connection itself failed or broke (ssh(1): "exits with the
#: exit status of the remote command or with 255 if an error occurred").
SSH_ERROR_EXIT = 255

#: JSON schema of the ``ssh`` settings block shared by the plugins that use it.
SSH_SETTINGS_SCHEMA: dict[str, Any] = {
    "type": ["object", "null"],
    "additionalProperties": False,
    "properties": {
        "host": {"type": ["string", "null"]},
        "user": {"type": ["string", "null"]},
        "port": {"type": "integer", "minimum": 1, "maximum": 65535},
        "identity_file": {"type": ["string", "null"]},
        "ssh_command": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "scp_command": {"type": "array", "items": {"type": "string"}, "minItems": 1},
    },
}


@dataclass(frozen=True)
class RemoteHost:
    """A host reached with ssh/scp; ``address`` is what error messages name."""

    host: str
    user: str | None = None
    port: int = 22
    identity_file: str | None = None
    ssh_command: tuple[str, ...] = DEFAULT_SSH_COMMAND
    scp_command: tuple[str, ...] = DEFAULT_SCP_COMMAND
    extra_ssh_options: tuple[str, ...] = field(default=())

    @classmethod
    def from_settings(cls, ssh: Mapping[str, Any] | None) -> "RemoteHost | None":
        """``None`` when no ssh host is configured (the generator runs locally)."""
        if not ssh or not ssh.get("host"):
            return None
        return cls(
            host=str(ssh["host"]),
            user=ssh.get("user"),
            port=int(ssh.get("port", 22)),
            identity_file=ssh.get("identity_file"),
            ssh_command=tuple(ssh.get("ssh_command") or DEFAULT_SSH_COMMAND),
            scp_command=tuple(ssh.get("scp_command") or DEFAULT_SCP_COMMAND),
        )

    @property
    def destination(self) -> str:
        return f"{self.user}@{self.host}" if self.user else self.host

    @property
    def address(self) -> str:
        return f"{self.destination}:{self.port}"

    def effective_endpoint(self) -> tuple[str, int] | None:
        """``(hostname, port)`` ssh itself would connect to, as ``ssh -G`` evaluates the
        command and the user's ssh configuration (a ``Host`` alias, its ``HostName`` and
        ``Port``); None when ssh goes through a jump host or a proxy command (nothing here
        can connect directly), when the command is not ssh itself (a wrapper, a test
        double) or when ``ssh -G`` cannot tell. ``-G`` connects nowhere."""
        if Path(self.ssh_command[0]).name != "ssh":
            return None
        argv = [*self.ssh_command, *self.extra_ssh_options, "-G", "-p", str(self.port)]
        if self.identity_file:
            argv += ["-i", self.identity_file]
        try:
            done = commands.run([*argv, "--", self.destination], check=False, timeout_s=5)
        except commands.CommandError:
            return None
        if done.returncode != 0:
            return None
        options: dict[str, str] = {}
        for line in done.stdout.splitlines():
            key, _, value = line.partition(" ")
            options.setdefault(key.lower(), value.strip())
        if options.get("proxyjump", "none") != "none" or options.get("proxycommand", "none") != "none":
            return None
        try:
            return options.get("hostname") or self.host, int(options.get("port") or self.port)
        except ValueError:
            return None

    def unreachable(self, setting: str) -> list[Prerequisite]:
        """One :class:`Prerequisite` when nothing accepts a TCP connection at the ssh server
        of the host (``setting`` names the settings block, ``trafficgen.prox.ssh``); none
        when it answers or cannot be probed directly (:meth:`effective_endpoint`). Only the
        port is probed, not a login: that would need the user's keys and take seconds."""
        endpoint = self.effective_endpoint()
        if endpoint is None:
            return []
        host, port = endpoint
        reason = tcp_unreachable(host, port)
        if reason is None:
            return []
        return [Prerequisite(f"ssh server of generator host {self.host} ({host}:{port}): {reason}",
                             f"start sshd there, or correct {setting}.host and port")]

    def ssh_argv(self, argv: Sequence[str], *, tty: bool = False) -> list[str]:
        """``argv`` run on the host. ``tty=True`` (``-tt``) ties the remote process to the
        session, so ending the local ssh client also ends the remote command."""
        out = [*self.ssh_command, *self.extra_ssh_options, "-p", str(self.port)]
        if tty:
            out.append("-tt")
        if self.identity_file:
            out += ["-i", self.identity_file]
        out += ["--", self.destination, shlex.join(list(argv))]
        return out

    def own_dir_check_argv(self, path: str) -> list[str]:
        """A remote command that fails unless ``path`` is a directory (not a symlink) owned
        by the ssh user: ``mkdir -p`` succeeds on a directory another user made first under
        a predictable name (``/tmp/vsbench-moongen``), who could then swap what is copied
        into it before the generator runs it."""
        return self.ssh_argv(["test", "-d", path, "-a", "!", "-h", path, "-a", "-O", path])

    def _scp_prefix(self) -> list[str]:
        out = [*self.scp_command, "-P", str(self.port)]
        if self.identity_file:
            out += ["-i", self.identity_file]
        return out

    def scp_to_argv(self, local_path: str, remote_path: str) -> list[str]:
        return [*self._scp_prefix(), "--", local_path, f"{self.destination}:{remote_path}"]

    def scp_from_argv(self, remote_path: str, local_path: str) -> list[str]:
        return [*self._scp_prefix(), "--", f"{self.destination}:{remote_path}", local_path]
