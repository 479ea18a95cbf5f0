"""Test modules have unique basenames across tests/.

The test folders are not packages, so pytest imports each module under its basename: two
``test_x.py`` in different folders make the whole collection fail ("import file mismatch")
as soon as both are collected in one run, as ``tools/test.sh`` does.
"""

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_test_module_basenames_are_unique():
    names = Counter(p.name for p in TESTS.rglob("test_*.py") if "fixtures" not in p.parts)
    assert [name for name, n in names.items() if n > 1] == []
