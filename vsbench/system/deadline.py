"""Deadlines on blocking calls into code vsbench does not control (plugins).

``with deadline(12.0, "trafficgen x: run_trial"):`` runs its body; if the body has not
finished 12 s later it is interrupted and :class:`DeadlineExceeded` comes out of the
``with``. Interrupting is what makes a deadline worth having: a plugin stuck in
``socket.recv`` on a wedged generator, in ``time.sleep`` or in a busy loop is unwound on
the spot, so the run can tear it down and end, instead of waiting for ever or leaving a
thread behind that still talks to the generator while the next plan starts.

How: a real-time interval timer (``SIGALRM``) whose handler raises an internal
``BaseException`` in the main thread -- a ``BaseException`` so that a plugin's
``except Exception`` cannot swallow it. Should a plugin swallow even that, the handler
fires again every :data:`REFIRE_S` until the body gives up. A body that returns after its
deadline (it swallowed the interruption, or ran in C code that never checks for signals)
still ends in :class:`DeadlineExceeded`: what a call returns late is never used.

Deadlines nest (the innermost and the outer ones each hold); the timer is armed for the
earliest. Signals can only be handled in the main thread: elsewhere (a program embedding
vsbench in a worker thread) the body runs without a deadline and a late return is still
reported as exceeded.
"""

from __future__ import annotations

import contextlib
import itertools
import signal
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Iterator

#: After a deadline fired and the body is still running, fire again this often.
REFIRE_S = 1.0


class DeadlineExceeded(Exception):
    """A call did not finish within its deadline; ``str()`` is one line."""

    def __init__(self, what: str, seconds: float, detail: str = "") -> None:
        self.what = what
        self.seconds = seconds
        self.detail = detail
        extra = f" ({detail})" if detail else ""
        super().__init__(f"{what} did not return within {seconds:g} s{extra}")


class _Expired(BaseException):
    """Raised by the timer inside the body; turned into DeadlineExceeded at the ``with``."""

    def __init__(self, entry: "_Entry") -> None:
        self.entry = entry
        super().__init__(entry.what)


_ids = itertools.count()


@dataclass(eq=False)
class _Entry:
    what: str
    seconds: float
    due: float
    fired: bool = False
    ident: int = field(default_factory=lambda: next(_ids))


_active: list[_Entry] = []
_previous_handler: Any = None


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _arm() -> None:
    """Set the timer for the earliest pending deadline (or a re-fire), or clear it."""
    if not _active:
        signal.setitimer(signal.ITIMER_REAL, 0)
        return
    now = time.monotonic()
    delays = [REFIRE_S if e.fired else e.due - now for e in _active]
    signal.setitimer(signal.ITIMER_REAL, max(min(delays), 0.001))


def _on_alarm(_signum: int, _frame: Any) -> None:
    now = time.monotonic()
    due = [e for e in _active if e.fired or e.due <= now]
    if not due:  # woken early (clock granularity): wait for the real deadline
        _arm()
        return
    target = due[0]  # the outermost due deadline: every body inside it must unwind too
    target.fired = True
    _arm()
    raise _Expired(target)


@contextlib.contextmanager
def deadline(seconds: float | None, what: str, detail: str = "") -> Iterator[None]:
    """Run the body with a deadline of ``seconds`` (None: no deadline). ``what`` names
    the call in the error ("vswitch x: start"), ``detail`` says how the deadline was
    derived ("trial 10 s + margin 60 s")."""
    if seconds is None:
        yield
        return
    seconds = float(seconds)
    start = time.monotonic()
    if not _in_main_thread():
        yield
        if time.monotonic() - start > seconds:
            raise DeadlineExceeded(what, seconds, detail)
        return
    global _previous_handler
    entry = _Entry(what, seconds, start + seconds)
    if not _active:
        _previous_handler = signal.signal(signal.SIGALRM, _on_alarm)
    _active.append(entry)
    _arm()
    late = False
    try:
        yield
        late = entry.fired or time.monotonic() > entry.due
    except _Expired as exc:
        if exc.entry is not entry and exc.entry in _active:
            raise  # an outer deadline: let its own ``with`` report it
        raise DeadlineExceeded(what, seconds, detail) from None
    finally:
        # no alarm may interrupt the bookkeeping; one that arrives meanwhile is delivered
        # on unblocking and finds nothing due (or the outer deadline it is for)
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
        try:
            _active.remove(entry)
            _arm()
            if not _active:
                signal.signal(signal.SIGALRM, _previous_handler if _previous_handler is not None else signal.SIG_DFL)
                _previous_handler = None
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGALRM})
    if late:
        raise DeadlineExceeded(what, seconds, detail)


def pending() -> int:
    """How many deadlines are active (for tests: 0 after every call)."""
    return len(_active)
