"""The wheels of vsbench and of the example packages, built once for the tests that install
them (test_wheel_install.py, test_examples.py) instead of once per module.

Building them is minutes of pip work on a loaded 2-core machine and needs no testbed, so
tools/test.sh starts it in the background before the tests (``python
tests/integration/wheels.py DIR``) and hands DIR to them in ``VSBENCH_TEST_WHEELHOUSE``; a
test that needs the wheels before the build is done waits for it. Without that (or if the
build failed), the first test that needs the wheels builds them itself.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_PACKAGES = ("vsbench-example-vswitch", "vsbench-example-vnf", "vsbench-example-trafficgen")
#: Written last: a wheelhouse without it is incomplete (the build failed or was interrupted).
COMPLETE = "complete"
#: Written when the build failed: nothing is coming, build them here.
FAILED = "failed"
#: How long a test waits for the background build (~30-60 s of pip on a loaded machine).
WAIT_S = 300


def build(dest: Path) -> Path:
    """Build every wheel into ``dest`` (``--no-deps``); returns ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    scratch = dest / "sources"
    sources = [ROOT]
    for package in EXAMPLE_PACKAGES:
        # built from a copy: the build writes egg-info next to the sources
        sources.append(shutil.copytree(ROOT / "examples" / package, scratch / package, dirs_exist_ok=True,
                                       ignore=shutil.ignore_patterns("*.egg-info", "__pycache__", "build")))
    for source in sources:
        subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dest), str(source)],
                       check=True, capture_output=True, timeout=600)
    shutil.rmtree(scratch)
    (dest / COMPLETE).write_text("")
    return dest


def wheelhouse(tmp: Path) -> Path:
    """The wheels tools/test.sh builds (waiting for them up to WAIT_S), or new ones in ``tmp``."""
    given = os.environ.get("VSBENCH_TEST_WHEELHOUSE")
    if given:
        house, deadline = Path(given), time.monotonic() + WAIT_S
        while not (house / FAILED).exists() and time.monotonic() < deadline:
            if (house / COMPLETE).is_file():
                return house
            time.sleep(1)
    return build(tmp)


def wheel_of(house: Path, distribution: str) -> Path:
    """The one wheel of ``distribution`` (its name as in pyproject/setup.cfg) in ``house``."""
    (found,) = house.glob(distribution.replace("-", "_") + "-*.whl")
    return found


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: wheels.py DIR")
    try:
        build(Path(sys.argv[1]))
    except BaseException:
        (Path(sys.argv[1]) / FAILED).write_text("")
        raise
