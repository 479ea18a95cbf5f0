"""SIGTERM and SIGHUP before a run's own handlers: one line and 128+signal, not a silent death.

Why: a run installs its teardown handlers (:class:`vsbench.runner.run.SignalGuard`) once
it starts; before that -- loading plugins, checking prerequisites, which can take seconds
-- SIGTERM or SIGHUP took their default action and vsbench died with no word and exit -15
(found by tools/bench/faults.py). Nothing exists yet to tear down, so the handler only ends
the process the way Ctrl-C (KeyboardInterrupt) already does: :class:`EarlySignal` unwinds
to ``main``, which prints ``vsbench: error: interrupted by SIGTERM`` and returns 143.
"""

from __future__ import annotations

import os
import signal
import threading
from typing import Any


class EarlySignal(BaseException):
    """SIGTERM/SIGHUP arrived outside a run; a BaseException like KeyboardInterrupt."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(f"interrupted by {signal.Signals(signum).name}")


#: The process that installed the handlers. A child forked from it (pyroute2 forks one to
#: open a socket in a netns, and ends it with SIGTERM) inherits them: raising there would
#: unwind a copy of vsbench that then tears down the run's namespaces under the parent.
_installed_by: int | None = None


def _raise(signum: int, _frame: Any) -> None:
    if os.getpid() != _installed_by:  # a forked child: die of the signal, as it would have
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return
    raise EarlySignal(signum)


def install() -> dict[int, Any]:
    """From now on SIGTERM (and SIGHUP, unless ignored: started with nohup) raise
    :class:`EarlySignal` in the main thread; returns the handlers replaced, for :func:`restore`
    (``main()`` called in-process, by a test or a wrapper, leaves its caller's handlers)."""
    global _installed_by
    if threading.current_thread() is not threading.main_thread():
        return {}
    _installed_by = os.getpid()
    previous = {signal.SIGTERM: signal.signal(signal.SIGTERM, _raise)}
    if signal.getsignal(signal.SIGHUP) is not signal.SIG_IGN:
        previous[signal.SIGHUP] = signal.signal(signal.SIGHUP, _raise)
    return previous


def restore(previous: dict[int, Any]) -> None:
    for signum, handler in previous.items():
        signal.signal(signum, handler)
