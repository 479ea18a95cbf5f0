"""One teardown stack per run: every resource registers its undo when it is acquired.

Wraps :class:`contextlib.ExitStack` so that a failing undo is logged and the remaining
undos still run (a half-torn-down testbed is worse than a logged warning), and so that the
stack can be closed from a signal handler exactly once.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from typing import Any, Callable

log = logging.getLogger(__name__)


class ResourceStack:
    """Last-acquired, first-released undo actions with a name each for the log."""

    def __init__(self) -> None:
        self._stack = contextlib.ExitStack()
        self._lock = threading.Lock()
        self._closed = False

    def register(self, what: str, undo: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        """Register ``undo(*args, **kwargs)`` to run at teardown; ``what`` names it."""

        def guarded() -> None:
            try:
                undo(*args, **kwargs)
            except Exception as exc:  # noqa: BLE001 - teardown must go on
                log.warning("teardown of %s failed: %s", what, exc)
            else:
                log.debug("released %s", what)

        with self._lock:
            if self._closed:
                raise RuntimeError(f"resource stack already closed; cannot register {what}")
            self._stack.callback(guarded)
        log.debug("acquired %s", what)

    def enter_context(self, cm: Any) -> Any:
        with self._lock:
            return self._stack.enter_context(cm)

    def close(self) -> None:
        """Run every undo, newest first. Safe to call more than once."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._stack.close()

    def __enter__(self) -> "ResourceStack":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
