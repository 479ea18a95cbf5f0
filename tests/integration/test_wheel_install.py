"""The built wheel works outside the checkout: installed into a fresh venv and run from
``/``, ``vsbench`` lists every testcase of testcases/ and runs a short phy2phy_tput.

The wheel is built from this checkout (``pip wheel --no-deps``) and installed with
``--no-deps`` into a new venv; its dependencies come from the test venv's site-packages,
added as a plain path (a ``.pth`` line), so no network is needed and the editable install
of the checkout stays invisible (its finder ``.pth`` is not processed from there).
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import yaml

from wheels import wheel_of

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]

if os.geteuid() != 0:
    pytest.skip("needs root (the run builds the netns testbed)", allow_module_level=True)


@pytest.fixture(scope="module")
def installed(tmp_path_factory, wheelhouse) -> Path:
    """``bin/`` of a fresh venv holding the wheel built from this checkout."""
    tmp = tmp_path_factory.mktemp("wheel")
    wheel = wheel_of(wheelhouse, "vsbench")
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    purelib = Path(subprocess.run([venv / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                  check=True, capture_output=True, text=True).stdout.strip())
    subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q",
                    "--no-deps", str(wheel)], check=True, capture_output=True, timeout=300)
    (purelib / "zz_vsbench_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv / "bin"


def vsbench(bin_dir: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("VSBENCH_HOME", "PYTHONPATH")}
    return subprocess.run([str(bin_dir / "vsbench"), *args], cwd="/", capture_output=True, text=True,
                          timeout=timeout, env=env)


def test_the_installed_vsbench_is_the_wheel_not_the_checkout(installed):
    out = subprocess.run([installed / "python", "-c", "import vsbench, vsbench.runner.config as c; "
                          "print(vsbench.__file__); print(c.project_root())"],
                         cwd="/", capture_output=True, text=True, check=True).stdout.split()
    assert not out[0].startswith(str(ROOT)), out
    assert out[1].endswith("vsbench/data"), out


def test_list_shows_every_testcase_from_slash(installed):
    done = vsbench(installed, "--list")
    assert done.returncode == 0, done.stderr
    names = {yaml.safe_load(p.read_text())["name"] for p in (ROOT / "testcases").glob("*.yaml")}
    assert names and all(name in done.stdout for name in names), done.stdout


def test_a_short_phy2phy_tput_runs_from_slash(installed, tmp_path):
    done = vsbench(installed, "--test", "phy2phy_tput", "--vswitch", "linux_bridge",
                   "--results-dir", str(tmp_path),
                   "--test-params", "frame_sizes=[64];trial_duration=1;search.relative_width=0.3;"
                                    "latency.enabled=false;warmup_s=0;search.max_trials_per_load=1")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (run_dir,) = tmp_path.iterdir()
    assert (run_dir / "results.json").is_file()
    assert "NDR" in done.stdout
