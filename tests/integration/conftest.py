"""Fixtures of the integration tests."""

from __future__ import annotations

from pathlib import Path

import pytest

import wheels


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory) -> Path:
    """vsbench's and the examples' wheels, built once a session (see wheels.py)."""
    return wheels.wheelhouse(tmp_path_factory.mktemp("wheelhouse"))
