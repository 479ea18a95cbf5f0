"""The example vendor packages work as a vendor's would (issue 11, "Done when").

vsbench's wheel and each package under examples/ are built and installed (``--no-deps``)
into a fresh venv whose dependencies come from the test venv (a ``.pth`` line, as in
test_wheel_install.py), and everything runs from ``/`` with that venv's ``vsbench``:
``--list-plugins`` shows the three plugins as third-party; ``vsbench conformance`` passes
for each; each package's own tests pass; ``phy2phy_tput`` runs with the example switch and
generator together on the embedded testbed (the switch shaped to a known capacity, which the
search must find), and with the generator against its own fake.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import yaml

from wheels import wheel_of

pytestmark = pytest.mark.integration
#: What times no real traffic (the plugin list, the kits of the switch and the VNF, which
#: forward in the kernel and count frames, each package's own tests) runs beside the unit
#: tests (tools/test.sh), on whichever workers; one venv serves them all (:func:`venv`). The
#: example generator paces real frames and stays one at a time.
parallel = [pytest.mark.integration_parallel]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = {  # kind: (package directory and distribution, plugin name)
    "vswitch": ("vsbench-example-vswitch", "tcswitch"),
    "vnf": ("vsbench-example-vnf", "pyfwd"),
    "trafficgen": ("vsbench-example-trafficgen", "toygen"),
}
#: tcswitch shapes each port to 20 kframes/s of 64 B frames (tbf counts 60 B per frame).
PER_PORT_FPS = 20_000
SHORT = "frame_sizes=[64];trial_duration=1;latency.enabled=false;warmup_s=0;search.max_trials_per_load=3"

if os.geteuid() != 0:
    pytest.skip("needs root (the testbed, the kit's testbed)", allow_module_level=True)


@pytest.fixture(scope="module")
def venv(tmp_path_factory, wheelhouse) -> dict:
    """A fresh venv with vsbench and the three examples installed as wheels (built once a
    session: wheels.py). Under tools/test.sh it is made once for both of its phases, in the
    wheelhouse the script made (and removes): the tests here that run beside the unit tests
    make it, the serial ones after them use it (making it took them 10-15 s again)."""
    given = os.environ.get("VSBENCH_TEST_WHEELHOUSE")
    if not (given and Path(given) == wheelhouse):
        return make_venv(tmp_path_factory.mktemp("examples"), wheelhouse)
    tmp = wheelhouse / "examples"
    # the xdist workers that get these tests wait here for the first to make it (pytest 9
    # ignores xdist's groups: its loadgroup scheduling spread them over workers, which each
    # made a venv of their own)
    with open(wheelhouse / "examples.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (tmp / "ready").exists():
            return {"bin": tmp / "venv" / "bin", "tmp": tmp,
                    "sources": {kind: tmp / package for kind, (package, _) in EXAMPLES.items()}}
        if tmp.exists():  # an earlier attempt that failed half-way
            shutil.rmtree(tmp)
        made = make_venv(tmp, wheelhouse)
        (tmp / "ready").write_text("")
        return made


def make_venv(tmp: Path, wheelhouse: Path) -> dict:
    """The venv of :func:`venv` in ``tmp``, and the copies of the examples' sources."""
    sources = {}
    for kind, (package, _) in EXAMPLES.items():
        # each package's own tests run from a copy: nothing (__pycache__) is written into the checkout
        sources[kind] = shutil.copytree(ROOT / "examples" / package, tmp / package,
                                        ignore=shutil.ignore_patterns("*.egg-info", "__pycache__", "build"))
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    purelib = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                  check=True, capture_output=True, text=True).stdout.strip())
    wheels = [wheel_of(wheelhouse, "vsbench")] + [wheel_of(wheelhouse, package) for package, _ in EXAMPLES.values()]
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
                    *map(str, wheels)], check=True, capture_output=True, timeout=300)
    (purelib / "zz_vsbench_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return {"bin": venv / "bin", "sources": sources, "tmp": tmp}


def run(venv: dict, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("VSBENCH_HOME", "PYTHONPATH")}
    return subprocess.run([str(venv["bin"] / args[0]), *args[1:]], cwd="/", capture_output=True, text=True,
                          timeout=timeout, env=env)


@pytest.mark.integration_parallel
def test_list_plugins_shows_the_examples_as_third_party(venv):
    done = run(venv, "vsbench", "--list-plugins")
    assert done.returncode == 0, done.stderr
    for kind, (package, name) in EXAMPLES.items():
        line = next(l for l in done.stdout.splitlines() if f" {name} " in l)
        for text in (kind, package, "0.1.0", "third-party", "1.0"):
            assert text in line, (text, line)
    assert "built-in" in next(l for l in done.stdout.splitlines() if " linux_bridge " in l)


#: The example generator's kit and own tests take ~30 s each (its fake paces real frames):
#: tools/test.sh --long runs them (CI does); its end-to-end run below stays in every run.
KINDS = [pytest.param(k, marks=pytest.mark.long if k == "trafficgen" else parallel) for k in EXAMPLES]


@pytest.mark.parametrize("kind", KINDS)
def test_the_examples_pass_the_conformance_kit(venv, kind):
    name = EXAMPLES[kind][1]
    done = run(venv, "vsbench", "conformance", f"--{kind}", name)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    report = done.stdout[done.stdout.index(f"vsbench conformance report: {kind} {name}"):]
    assert " 0 failed" in report and "FAIL " not in report, report


@pytest.mark.parametrize("kind", KINDS)
def test_each_example_passes_its_own_tests(venv, kind):
    tests = venv["sources"][kind] / "tests"
    done = run(venv, "python", "-m", "pytest", "-q", "--tb=line", "-p", "no:cacheprovider", "--rootdir",
               str(tests.parent), "--basetemp", str(venv["tmp"] / f"own-{kind}"), str(tests))
    assert done.returncode == 0, done.stdout[-6000:]
    assert " passed" in done.stdout and "failed" not in done.stdout


def results_of(results_dir: Path) -> dict:
    (run_dir,) = results_dir.iterdir()
    return json.loads((run_dir / "results.json").read_text())


def test_phy2phy_tput_with_the_example_switch_and_generator(venv, tmp_path):
    conf = tmp_path / "conf.yaml"
    conf.write_text(yaml.safe_dump({"vswitch": {"tcswitch": {"egress_limit_bps": PER_PORT_FPS * 60 * 8}}}))
    # 10 % width: the bounds below are 0.5-1.05x the capacity, and the default 0.5 % spent
    # 40-60 s of 1 s trials at neighbouring loads of a Python generator (5 %: 13-50 s)
    done = run(venv, "vsbench", "--test", "phy2phy_tput", "--vswitch", "tcswitch", "--trafficgen", "toygen",
               "--conf-file", str(conf), "--results-dir", str(tmp_path / "results"),
               "--test-params", SHORT + ";relative_width=0.1")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    (fs,) = results_of(tmp_path / "results")["tests"][0]["frame_sizes"]
    ndr = next(p for p in fs["points"] if p["name"] == "NDR")["throughput_fps"]
    capacity = 2 * PER_PORT_FPS
    print(f"example switch and generator: NDR {ndr:.0f} fps through a {capacity} fps switch")
    assert 0.5 * capacity <= ndr <= 1.05 * capacity, f"NDR {ndr} fps through a {capacity} fps switch"


def test_phy2phy_tput_against_the_generators_own_fake(venv, tmp_path):
    capacity = 200_000
    conf = tmp_path / "conf.yaml"
    conf.write_text(yaml.safe_dump({"trafficgen": {"toygen": {"model_capacity_fps": capacity}}}))
    done = run(venv, "vsbench", "--test", "phy2phy_tput", "--vswitch", "external", "--trafficgen", "toygen",
               "--conf-file", str(conf), "--results-dir", str(tmp_path / "results"),
               "--test-params", SHORT.replace("trial_duration=1", "trial_duration=0.5"))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    (fs,) = results_of(tmp_path / "results")["tests"][0]["frame_sizes"]
    ndr = next(p for p in fs["points"] if p["name"] == "NDR")["throughput_fps"]
    print(f"example generator against its own fake: NDR {ndr:.0f} fps, the fake models {capacity} fps")
    assert 0.99 * capacity <= ndr <= 1.001 * capacity, f"NDR {ndr} fps, the fake models {capacity} fps"
