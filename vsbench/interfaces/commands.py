"""The command runner plugins use: argv lists, never a shell string; ended by pid.

``run`` executes a command to completion (optionally inside a network namespace, always
with a timeout) and raises :class:`CommandError` -- one line naming the command and its
last error line -- when it fails. ``spawn`` starts a background process in its own session
and returns a :class:`ManagedProcess`, whose ``stop()`` ends that process group by pid
(TERM, then KILL): register it on ``context.resources`` in the same breath::

    proc = spawn([binary, "--port", "0"], netns=self.context.dut_netns,
                 log_path=self.context.log_dir / "mydaemon.log")
    self.context.resources.register("mydaemon", proc.stop)

Part of the plugin contract (:data:`vsbench.interfaces.API_VERSION`).
"""

from vsbench.system.commands import CommandError, ManagedProcess, in_netns, run, spawn, wait_for, which

__all__ = ["CommandError", "ManagedProcess", "in_netns", "run", "spawn", "wait_for", "which"]
