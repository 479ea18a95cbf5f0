"""Shared fixtures."""

from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def vendor_distribution(monkeypatch):
    """Put a separately 'installed' vendor plugin distribution on sys.path."""
    monkeypatch.syspath_prepend(str(FIXTURES / "vendor_dist"))
    yield FIXTURES / "vendor_dist"
