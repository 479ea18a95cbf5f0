"""Gates that name nothing the run will measure are refused before it runs (issue 26): a
typo in a metric or frame size of --fail-below/--fail-above, --regression-metric,
--baseline-variant or compare --metric is one line naming the option and the closest
name, exit 2, and nothing is created."""

import json
import time

import pytest

from tests.unit.runs_kit import layer, make_run, vsbench
from vsbench.results import run_metrics
from vsbench.runner import gate_check, run as runner_run, testcases
from vsbench.runner import config as cfg
from vsbench.results.thresholds import BELOW, parse


@pytest.fixture
def nothing_runs(monkeypatch):
    """Any attempt to run a plan fails the test: the refusal must come first."""

    def refuse(*_a, **_k):
        raise AssertionError("a plan was run")

    monkeypatch.setattr(runner_run, "execute_plans", refuse)


def _refused(tmp_path, testkit, capsys, *extra, params="frame_sizes=[64,512];trial_duration=1",
             test="phy2phy_tput"):
    started = time.monotonic()
    code, out, err = vsbench("--test", test, "--conf-file", str(layer(tmp_path, testkit)), "--test-params", params,
                             "--results-dir", str(testkit["results"]), *extra, "--json", capsys=capsys)
    elapsed = time.monotonic() - started
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("vsbench: error: "), err
    assert json.loads(out)["exit_code"] == 2
    assert not testkit["results"].exists()  # no run directory, nothing created
    assert elapsed < 10, elapsed  # the bound is 2 s; generous for a loaded test machine
    return lines[0].removeprefix("vsbench: error: ")


@pytest.mark.parametrize("extra, fragments", [
    (["--fail-below", "ndr_fsp=1M"], ["--fail-below ndr_fsp=1M", "'ndr_fsp'", "did you mean 'ndr_fps'?"]),
    (["--fail-below", "ndr_fps@63=1M"], ["--fail-below ndr_fps@63=1M", "no test of this run has 63 B frames",
                                         "did you mean @64?", "frame sizes: 64, 512"]),
    (["--fail-below", "ndr_fps@64=abc"], ["--fail-below ndr_fps@64=abc", "not a number: 'abc'"]),
    (["--fail-above", "latency_p99_nss=5e4"], ["--fail-above latency_p99_nss=5e4", "did you mean 'latency_p99_ns'?"]),
    (["--fail-below", "ndr_fps=fast"], ["--fail-below ndr_fps=fast", "not a number"]),
    (["--fail-below", "ndr_fps"], ["--fail-below", "expected METRIC"]),
    (["--baseline", "x", "--max-regression", "five"], ["--max-regression five", "not a number"]),
    (["--regression-metric", "ndr_fp"], ["--regression-metric ndr_fp", "did you mean 'ndr_fps'?"]),
])
def test_a_gate_on_nothing_the_run_measures_is_refused_before_it_runs(tmp_path, testkit, capsys, nothing_runs,
                                                                       extra, fragments):
    line = _refused(tmp_path, testkit, capsys, *extra)
    for fragment in fragments:
        assert fragment in line, line


def test_latency_gates_need_latency_and_mixed_tests_need_the_figure_in_each(tmp_path, testkit, capsys,
                                                                            nothing_runs):
    line = _refused(tmp_path, testkit, capsys, "--fail-above", "latency_p99_ns=5e4",
                    params="frame_sizes=[64];trial_duration=1;latency.enabled=false")
    assert "latency is not measured in this run (latency.enabled is false)" in line
    line = _refused(tmp_path, testkit, capsys, "--test", "phy2phy_cont", "--fail-below", "ndr_fps=1",
                    params="frame_sizes=[64];trial_duration=1")
    assert "phy2phy_cont does not measure ndr_fps" in line and "continuous_fps" in line


def test_a_baseline_variant_that_names_no_variant_is_refused_before_the_run(tmp_path, testkit, capsys,
                                                                          nothing_runs):
    params = "frame_sizes=[64];trial_duration=1;traffic.flows=[1,8]"
    line = _refused(tmp_path, testkit, capsys, "--baseline-variant", "flow=8", params=params)
    assert line.startswith("--baseline-variant flow=8: 'flow' is not a dimension") and "did you mean 'flows'?" in line
    line = _refused(tmp_path, testkit, capsys, "--baseline-variant", "flows=3", params=params)
    assert "--baseline-variant flows=3: matches 0 of the 2 variants of phy2phy_tput" in line
    assert "traffic.flows: 1, 8" in line
    line = _refused(tmp_path, testkit, capsys, "--baseline-variant", "flows=8",
                    params="frame_sizes=[64];trial_duration=1")
    assert "no test of this run has variants" in line


def test_gates_that_name_what_the_run_measures_still_run(tmp_path, testkit, capsys):
    run = make_run(tmp_path, testkit, testkit["results"], "--fail-below", "ndr_fps@64=9e5",
                   "--fail-below", "pdr_fps=0", "--fail-above", "latency_max_ns@512=1e9",
                   "--regression-metric", "pdr_fps", "--no-store")
    assert run.is_dir()


def test_every_figure_a_run_produces_is_named_before_it(tmp_path, testkit, testkit_plans):
    """plan_figures agrees with the figures real runs give (search, continuous and
    load_sweep on the test kit's modelled generator, which sends no bursts)."""
    from io import StringIO

    from rich.console import Console

    from vsbench.results import report_data
    from vsbench.runner.run import run_plans

    cases = [("phy2phy_tput", "frame_sizes=[64];search.goals=[{name: NDR},{name: NDR-lat, loss_ratio: 0.01}]"),
             ("phy2phy_cont", "frame_sizes=[64];rate_fps=10000;trial_duration=0.2"),
             ("phy2phy_load_sweep", "frame_sizes=[64];trial_duration=0.05;sweep_min_percent=90")]
    for test, params in cases:
        plans = testkit_plans(test, params, "marker_switch")
        for plan in plans:
            plan.config["latency"]["enabled"] = True
            plan.config["latency"]["trial_duration_s"] = 0.2
        shown = StringIO()
        code = run_plans(plans, testkit["results"] / test, Console(file=shown, width=200))
        assert code == 0, (test, shown.getvalue()[-800:])
        [run_dir] = list((testkit["results"] / test).iterdir())
        files = report_data.load_run(run_dir)
        produced = {m.key.metric for m in run_metrics.extract(files.results, files.sysinfo, files.plans,
                                                              files.trials).metrics}
        named = gate_check.plan_figures(plans[0]).metrics
        assert produced and produced <= named, (test, produced - named)


def test_bursts_back2back_and_tcp_plans_name_their_figures(testkit_plans):
    base = cfg.load_layers(cfg.default_conf_dir(), [])

    def figures(test, params=""):
        case = testcases.find(test, testcases.default_testcase_dir())
        [plan, *_] = testcases.build_plans(case, base, cfg.parse_test_params(params), {"vswitch": "ovs_dpdk"})
        return gate_check.plan_figures(plan)

    assert {"burst_fps", "latency_p99_ns"} <= figures("phy2phy_burst").metrics
    assert figures("phy2phy_back2back").metrics == {"b2b_frames_avg"}
    tcp = figures("tcp_tput", "tcp.mtu_bytes=9000")
    assert tcp.metrics == set(run_metrics.TCP_METRICS) and tcp.frame_sizes_bytes == (9018,)


def test_compare_metric_names_a_typo(tmp_path, testkit, capsys):
    one = make_run(tmp_path, testkit, testkit["results"], "--no-store")
    two = make_run(tmp_path, testkit, testkit["results"], "--no-store")
    capsys.readouterr()
    code, _, err = vsbench("compare", str(one), str(two), "--metric", "ndr_fps", "--metric", "pdr_fsp",
                           capsys=capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "--metric pdr_fsp: no compared run has this figure; did you mean 'pdr_fps'?" in err


def test_a_testcases_thresholds_on_figures_it_does_not_measure_are_refused_before_it_runs(
        tmp_path, testkit, capsys, nothing_runs):
    import yaml

    cases = tmp_path / "testcases"
    cases.mkdir()
    doc = yaml.safe_load((testcases.default_testcase_dir() / "phy2phy_tput.yaml").read_text())
    doc["thresholds"] = {"fail_below": {"ndr_fps@1518": 1e6, "ndr_fsp@512": 5e6}}
    (cases / "phy2phy_tput.yaml").write_text(yaml.safe_dump(doc))
    line = _refused(tmp_path, testkit, capsys, "--testcase-dir", str(cases))
    assert line.startswith(f"{cases / 'phy2phy_tput.yaml'}: thresholds.fail_below ndr_fsp@512: ")
    assert "did you mean 'ndr_fps'?" in line


def test_a_threshold_without_plans_to_check_is_not_refused():
    gate_check.check_threshold("--fail-below", "x=1", parse("x=1", BELOW), [])
