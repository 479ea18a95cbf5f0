"""``vsbench --test ... --dry-run`` (alias ``--show-config``, issue 26): the plans, their
variants and resolved configuration, and the most traffic time they take; nothing runs and
nothing is created."""

import yaml
import pytest

from tests.unit.runs_kit import layer, vsbench
from vsbench.runner import dry_run, run as runner_run


@pytest.fixture
def nothing_runs(monkeypatch):
    def refuse(*_a, **_k):
        raise AssertionError("a plan was run")

    monkeypatch.setattr(runner_run, "execute_plans", refuse)


@pytest.mark.parametrize("option", ["--dry-run", "--show-config"])
def test_dry_run_prints_every_variant_its_configuration_and_a_bound_and_creates_nothing(
        tmp_path, testkit, capsys, nothing_runs, option):
    params = "frame_sizes=[64,512];trial_duration=1;search.time_budget_s=30;dut.rules=[10,100]"
    code, out, err = vsbench("--test", "phy2phy_tput", "--conf-file", str(layer(tmp_path, testkit)),
                             "--test-params", params, "--results-dir", str(testkit["results"]), option,
                             capsys=capsys)
    assert code == 0, err
    assert not testkit["results"].exists()
    documents, summary = out.split("...\n")
    configs = [d for d in yaml.safe_load_all(documents) if d]
    assert [c["variant"] for c in configs] == [{"dut.rules": 10}, {"dut.rules": 100}]
    assert all(c["config"]["search"]["time_budget_s"] == 30 for c in configs)
    assert "plan 1 of 2: phy2phy_tput[dut.rules=10]" in summary
    # per frame size: 30 s of search + 1 s final trial + 2 latency points of 1 s; 2 sizes
    assert summary.count("traffic time: at most 66 s") == 2, summary
    assert "2 plan(s); traffic time at most 2.2 min" in summary


def _config(kind, **traffic):
    return {"traffic": {"type": kind, "frame_sizes": [64, 128, 256], "trial_duration_s": 10, "warmup_s": 2, **traffic},
            "search": {"time_budget_s": 100, "final_trial_duration_s": 10, "repetitions": 2},
            "latency": {"enabled": True, "load_fractions": [0.0, 0.5], "at_goals": ["NDR"]}}


def test_the_bound_follows_each_traffic_type():
    assert dry_run.estimate_traffic(_config("rfc2544_throughput")).traffic_s == 3 * (2 + 100 * 2 + 10 + 3 * 10)
    assert dry_run.estimate_traffic(_config("continuous")).traffic_s == 3 * 12
    steps = len(dry_run.load_sweep.sweep_percents(100.0, 50.0))
    assert dry_run.estimate_traffic(_config("load_sweep", sweep_min_percent=50)).traffic_s == \
        3 * (2 + 210 + steps * 10)
    no_latency = _config("rfc2544_throughput")
    no_latency["latency"]["enabled"] = False
    assert dry_run.estimate_traffic(no_latency).traffic_s == 3 * (2 + 210)
    burst = dry_run.estimate_traffic(_config("burst"))
    assert burst.traffic_s is None and "depends on what it measures" in burst.basis
