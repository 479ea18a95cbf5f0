"""The real PROX, built from source, as the generator of phy2phy_tput on the embedded testbed.

Upstream PROX (samplevnf, Apache 2.0) is not in any registry: the tarball lives in the
shared third-party directory, found through ``VSBENCH_THIRD_PARTY`` or the known relative
path ``../shared/third_party`` from the repository root (``../../shared/third_party`` for a
git worktree under ``wt/``). When it is absent the tests skip and say so. When present,
tools/build_prox.sh builds it (cached: the second session builds nothing) and PROX runs
through OvS-DPDK and the Linux bridge: ``launch: testbed`` (generator netns,
``net_af_packet`` ports, own hugepages, no PCI), one direction (a 2-CPU host gives PROX one
worker lcore, and PROX runs one generator task per core), 1 s trials.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from run_helpers import (
    a_search_trial_came_back_whole, assert_reproducible_and_clean, processes_mentioning, require, run_repeating_once,
)
from vsbench.runner import config as cfg
from vsbench.runner import testcases

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
TARBALL_GLOB = "samplevnf-prox-*.tar.gz"
BUILD_TOOLS = ("meson", "ninja", "pkg-config", "cc")

if os.geteuid() != 0:
    pytest.skip("needs root (network namespaces, hugepages)", allow_module_level=True)


def third_party_tarball() -> Path | None:
    candidates = [os.environ.get("VSBENCH_THIRD_PARTY"), ROOT.parent / "shared" / "third_party",
                  ROOT.parent.parent / "shared" / "third_party"]
    for where in candidates:
        if where and Path(where).is_dir():
            found = sorted(Path(where).glob(TARBALL_GLOB))
            if found:
                return found[-1]
    return None


@pytest.fixture(scope="session")
def prox_binary() -> str:
    tarball = third_party_tarball()
    if tarball is None:
        pytest.skip("no samplevnf-prox-*.tar.gz in $VSBENCH_THIRD_PARTY or ../shared/third_party: "
                    "the real PROX cannot be built here")
    missing = [t for t in BUILD_TOOLS if shutil.which(t) is None]
    if missing:
        pytest.skip(f"PROX build tools missing: {', '.join(missing)} (tools/packages/test.txt)")
    done = subprocess.run([str(ROOT / "tools" / "build_prox.sh"), str(tarball)],
                          capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stdout + done.stderr
    binary = done.stdout.strip().splitlines()[-1]
    assert os.access(binary, os.X_OK), binary
    return binary


PARAMS = ("frame_sizes=[64];trial_duration=1;warmup_s=1;bidirectional=false;relative_width=0.1;"
          "search.max_trials_per_load=3;latency.trial_duration_s=1;latency.load_fractions=[0.0]")


def prox_plans(binary: str, vswitch: str, tmp_path: Path) -> list:
    """The plans of ``vsbench --conf-file prox.yaml --trafficgen prox`` with PROX on the
    2-CPU testbed: master lcore on CPU 1 (it sleeps between commands), its generator and
    latency tasks on CPU 0, away from OvS-DPDK's PMD (CPU 1). A conf file, not
    --test-params: a list there is a sweep dimension."""
    conf = tmp_path.parent / f"{tmp_path.name}-prox.yaml"
    conf.write_text("trafficgen:\n  prox:\n    launch: testbed\n"
                    f"    binary: {binary}\n    master_core: 1\n"
                    "    gen_cores: [[0], [0]]\n    lat_cores: [[0], [0]]\n    reply_timeout_s: 5.0\n")
    base = cfg.load_layers(cfg.default_conf_dir(), [conf])
    case = testcases.find("phy2phy_tput", testcases.default_testcase_dir())
    return testcases.build_plans(case, base, cfg.parse_test_params(PARAMS),
                                 {"vswitch": vswitch, "trafficgen": "prox", "vnf": None})


def test_build_is_idempotent(prox_binary):
    """A second build of the same tarball builds nothing and names the same binary."""
    done = subprocess.run([str(ROOT / "tools" / "build_prox.sh"), str(third_party_tarball())],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "cached" in done.stdout and done.stdout.strip().splitlines()[-1] == prox_binary


def latency_lost_to_the_host(outcome) -> str | None:
    """Why the NDR may have no latency without PROX or the switch being at fault: PROX drops a
    sample whose transmit time it cannot vouch for (``accuracy limit nsec``, 1 ms), and on this
    shared 2-core host a starved generator core loses all of them. CI saw it twice while
    other jobs loaded the host, the second time with the run's own note that OvS-DPDK's
    busy-polling thread was starved of its CPU in 24 of 24 trials; the trial's own record
    now says so too (PROX's counts of latency packets received and measured). The repeat is
    held to every assertion."""
    if outcome.code != 0:
        return None
    [fs] = outcome.results()["tests"][0]["frame_sizes"]
    if not fs["points"] or fs["points"][0].get("latency") is not None:
        return None
    for trial in outcome.trials():
        samples = trial["generator_stats"].get("latency_samples") if trial["role"] == "final" else None
        if samples and samples["measured"] == 0 < samples["received"]:
            return f"PROX measured none of the {samples['received']} latency packets it received"
    return next((note for note in fs["notes"] if note.startswith("CPU oversubscribed")), None)


@pytest.mark.parametrize("vswitch", ["ovs_dpdk", "linux_bridge"])
def test_phy2phy_tput_with_real_prox(tmp_path, vswitch, prox_binary):
    require(("trafficgen", "prox"), ("vswitch", vswitch))
    plans = prox_plans(prox_binary, vswitch, tmp_path)
    outcome = run_repeating_once(tmp_path, plans, latency_lost_to_the_host)
    assert outcome.code == 0, outcome.console
    [test] = outcome.results()["tests"]
    assert test["trafficgen"] == "prox" and test["vswitch"] == vswitch
    [fs] = test["frame_sizes"]
    assert fs["status"] == "complete", fs
    ndr = fs["points"][0]
    assert ndr["name"].upper() == "NDR"
    assert ndr["throughput_fps"] is not None and ndr["throughput_fps"] > 0, fs
    # The NDR's figures are its load's exceed-ratio median trial (docs/search.rst), which on
    # this oversubscribed host may lose a few frames (once: 2 of 3 trials at the NDR load lost
    # 38 and 3,273 of 253k, and the neighbourhood passed it); PROX's counters must still have
    # seen whole trials come back.
    assert ndr["valid"] and ndr["loss_ratio"] is not None, ndr
    assert a_search_trial_came_back_whole(outcome)
    lat = ndr["latency"]
    assert lat is not None and 0 < lat["min_ns"] <= lat["avg_ns"] <= lat["max_ns"], ndr
    log = (outcome.run_dir / "logs").rglob("prox.log")
    assert any("-o cli" in p.read_text(errors="replace") for p in log)  # the real binary ran
    assert_reproducible_and_clean(outcome)
    assert processes_mentioning(prox_binary) == []
