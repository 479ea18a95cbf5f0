"""The wheels of vsbench and of the example packages, built once for the tests that install
them (test_wheel_install.py, test_examples.py) instead of once per module.

Building them is minutes of pip work on a loaded 2-core machine and needs no testbed, so
tools/test.sh starts it in the background beside the unit tests (``python
tests/integration/wheels.py DIR``) and hands DIR to the integration tests in
``VSBENCH_TEST_WHEELHOUSE``. Without that (or if it did not finish), the first test that
needs the wheels builds them itself.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_PACKAGES = ("vsbench-example-vswitch", "vsbench-example-vnf", "vsbench-example-trafficgen")
#: Written last: a wheelhouse without it is incomplete (the build failed or was interrupted).
COMPLETE = "complete"


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
    """The wheels tools/test.sh built, or new ones in ``tmp``."""
    given = os.environ.get("VSBENCH_TEST_WHEELHOUSE")
    if given and (Path(given) / COMPLETE).is_file():
        return Path(given)
    return build(tmp)


def wheel_of(house: Path, distribution: str) -> Path:
    """The one wheel of ``distribution`` (its name as in pyproject/setup.cfg) in ``house``."""
    (found,) = house.glob(distribution.replace("-", "_") + "-*.whl")
    return found


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: wheels.py DIR")
    build(Path(sys.argv[1]))
