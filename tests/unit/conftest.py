"""Fixtures shared by the unit tests that run whole plans against the runner test kit.

The kit (tests/fixtures/runner_dist) is a third-party-style distribution of model plugins
(a modelled generator, marker switches) found through entry points like any plugin.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from stevedore import ExtensionManager

from vsbench.runner import config as cfg
from vsbench.runner import testcases
from vsbench.system import runstate

TESTKIT = Path(__file__).resolve().parents[1] / "fixtures" / "runner_dist"


@pytest.fixture
def testkit(monkeypatch, tmp_path):
    """The kit on sys.path with a fresh entry-point cache and a private run-state dir.

    stevedore caches each namespace's entry points per process whatever sys.path says later:
    the kit must be seen during the test and forgotten after it, so the cache starts empty
    (the process-wide one cleared too) and is replaced for the test's duration."""
    monkeypatch.syspath_prepend(str(TESTKIT))
    ExtensionManager.ENTRY_POINT_CACHE.clear()
    monkeypatch.setattr(ExtensionManager, "ENTRY_POINT_CACHE", {})
    monkeypatch.setenv(runstate.STATE_DIR_ENV, str(tmp_path / "state"))
    markers = tmp_path / "markers"
    markers.mkdir()
    return {"markers": markers, "results": tmp_path / "results", "state": tmp_path / "state"}


@pytest.fixture
def testkit_plans(testkit, tmp_path):
    """``plans(test, params, switch)``: the plans of a testcase on the kit's model generator
    (1 Mfps) and ``switch``, without warm-up or latency trials."""

    def plans(test: str, params: str, switch: str = "rule_marker_switch"):
        layer = {
            "collectors": [],
            "trafficgen": {"name": "model_gen", "model_gen": {"capacity_fps": 1_000_000,
                                                               "marker_dir": str(testkit["markers"])}},
            "vswitch": {"name": switch, switch: {"marker_dir": str(testkit["markers"])}},
            "traffic": {"warmup_s": 0},
            "latency": {"enabled": False},
        }
        conf = tmp_path / "layer.yaml"
        conf.write_text(yaml.safe_dump(layer))
        base = cfg.load_layers(cfg.default_conf_dir(), [conf])
        case = testcases.find(test, testcases.default_testcase_dir())
        return testcases.build_plans(case, base, cfg.parse_test_params(params), {})

    return plans
