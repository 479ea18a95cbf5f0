"""Deadlines interrupt what blocks, in whatever way it blocks, and nest."""

from __future__ import annotations

import socket
import time

import pytest

from vsbench.system.deadline import DeadlineExceeded, deadline, pending


def _elapsed(func) -> float:
    t0 = time.monotonic()
    with pytest.raises(DeadlineExceeded):
        func()
    return time.monotonic() - t0


def test_sleep_busy_loop_and_socket_are_interrupted():
    def sleeping():
        with deadline(0.2, "sleep"):
            time.sleep(30)

    def busy():
        with deadline(0.2, "busy"):
            while True:
                pass

    def receiving():
        a, b = socket.socketpair()
        with a, b, deadline(0.2, "recv"):
            a.recv(1)

    for func in (sleeping, busy, receiving):
        assert _elapsed(func) < 2.0
    assert pending() == 0


def test_code_swallowing_exceptions_is_interrupted_again():
    def swallowing():
        with deadline(0.2, "careless"):
            for _ in range(3):
                try:
                    time.sleep(30)
                except BaseException:  # noqa: BLE001 - what a careless plugin does
                    pass

    assert _elapsed(swallowing) < 6.0  # the first alarm and two re-fires (1 s apart)


def test_a_late_return_is_still_exceeded():
    with pytest.raises(DeadlineExceeded, match="slow did not return within 0.2 s"):
        with deadline(0.2, "slow"):
            try:
                time.sleep(0.5)
            except BaseException:  # noqa: BLE001
                pass  # swallowed the interruption and returned "normally"


def test_the_outer_deadline_holds_over_a_longer_inner_one():
    with pytest.raises(DeadlineExceeded) as exc:
        with deadline(0.2, "outer"):
            with deadline(30, "inner"):
                time.sleep(30)
    assert exc.value.what == "outer"
    assert pending() == 0


def test_the_inner_deadline_fires_first_and_the_outer_goes_on():
    with deadline(30, "outer"):
        with pytest.raises(DeadlineExceeded, match="inner"):
            with deadline(0.2, "inner", "trial 0.1 s + margin 0.1 s"):
                time.sleep(30)
        time.sleep(0.05)
    assert pending() == 0


def test_in_time_nothing_happens_and_the_message_says_how_it_was_derived():
    with deadline(5, "quick"):
        time.sleep(0.01)
    assert str(DeadlineExceeded("x: run_trial", 12, "trial 2 s + margin 10 s")) == \
        "x: run_trial did not return within 12 s (trial 2 s + margin 10 s)"
