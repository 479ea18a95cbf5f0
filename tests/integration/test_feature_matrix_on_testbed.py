"""A 2 x 2 feature matrix on the real OvS-DPDK: EMC insertion and SMC swept with
--test-params lists, each combination its own switch instance, and the cache figures of
each variant showing what the setting did (1000 IP-matching rules and flows per direction,
1-s fixed-rate trials)."""

from __future__ import annotations

import os

import pytest

from run_helpers import assert_nothing_left, build_plans, require, run

pytestmark = pytest.mark.integration

if os.geteuid() != 0:
    pytest.skip("needs root (network namespaces, hugepages)", allow_module_level=True)


@pytest.mark.long  # tools/test.sh --long (CI runs it after the test command): see setup.cfg
def test_emc_and_smc_matrix_shows_in_the_cache_figures(tmp_path):
    require(("trafficgen", "trafgen"), ("vswitch", "ovs_dpdk"))
    from vsbench.cli.compare_cmd import load_matrices

    plans = build_plans("rule_complexity", "ovs_dpdk",
                        "dut.rules=[1000];frame_sizes=[64];type=continuous;rate_fps=10000;trial_duration=1;"
                        "warmup_s=1;latency.enabled=false;vswitch.ovs_dpdk.dpcls_lookup=generic;"
                        "vswitch.ovs_dpdk.emc_insert_inv_prob=[1,0];vswitch.ovs_dpdk.smc_enable=[false,true]")
    assert len(plans) == 4
    outcome = run(tmp_path, plans)
    assert outcome.code == 0, outcome.console
    [fm] = load_matrices(outcome.run_dir, "emc_insert_inv_prob=1,smc_enable=false")
    assert fm.metric == "continuous_fps" and len(fm.variants) == 4
    shares = {(v.settings["vswitch.ovs_dpdk.emc_insert_inv_prob"], v.settings["vswitch.ovs_dpdk.smc_enable"]):
              fm.cells[(i, 64)].cache_percent for i, v in enumerate(fm.variants)}
    assert shares[(1, False)]["EMC"] > 50, shares          # every miss inserted: the EMC answers
    for smc in (False, True):
        assert shares[(0, smc)]["EMC"] == 0, shares        # EMC off
    assert shares[(0, True)]["SMC"] > 50, shares           # the SMC takes over ...
    assert shares[(0, False)]["megaflow"] > 50, shares     # ... or, without it, the dpcls
    assert fm.baseline_of(64) == fm.baseline and not fm.notes[:1] == ["no gains"], fm.notes
    for i in range(4):
        cell = fm.cells[(i, 64)]
        assert cell.value.value == pytest.approx(10000, rel=0.01) and cell.gap is None, cell
        assert cell.switch_cores is not None and (i == fm.baseline or cell.change is not None)
    assert_nothing_left(outcome.run_id)
