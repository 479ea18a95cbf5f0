"""Shared fixtures."""

import signal
from pathlib import Path

import pytest


def pytest_configure(config):
    """Tests of the run's signal handling expect Python's own SIGINT handler. A shell that
    starts pytest in the background (``cmd &`` without job control) hands it SIGINT ignored,
    and Python then installs no handler: give the tests the process a terminal would."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def vendor_distribution(monkeypatch):
    """Put a separately 'installed' vendor plugin distribution on sys.path."""
    monkeypatch.syspath_prepend(str(FIXTURES / "vendor_dist"))
    yield FIXTURES / "vendor_dist"
