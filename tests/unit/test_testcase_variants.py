"""A testcase's ``variants``: one plan per listed setting (a baseline and one knob changed
per variant, issue 27's "baseline, packed ring, 2 queues, userspace TSO"), every plan
recording every variant key so the feature-matrix table shows each row's full setting."""

from pathlib import Path

import pytest

from vsbench.runner import config as cfg
from vsbench.runner import testcases

ROOT = Path(__file__).resolve().parents[2]
FLAGS = {"vswitch": None, "trafficgen": None, "vnf": None}
GOOD = """
name: mycase
description: a test
deployment: p2p
traffic: {type: rfc2544_throughput, frame_sizes: [64]}
"""
VARIANTS = """variants:
  - {dut.rules: 10, traffic.flows: 1}
  - {dut.rules: 100}
  - {traffic.flows: 4}
"""


def _case(tmp_path, text):
    path = tmp_path / "mycase.yaml"
    path.write_text(text)
    return testcases.load_testcase(path)


def _base():
    return cfg.load_layers(ROOT / "conf", [])


def test_each_variant_is_one_plan_and_unnamed_keys_take_the_baselines_value(tmp_path):
    plans = testcases.build_plans(_case(tmp_path, GOOD + VARIANTS), _base(), {}, FLAGS)
    assert [p.variant for p in plans] == [{"dut.rules": 10, "traffic.flows": 1}, {"dut.rules": 100, "traffic.flows": 1},
                                          {"dut.rules": 10, "traffic.flows": 4}]
    assert [(p.config["dut"]["rules"], p.config["traffic"]["flows"]) for p in plans] == [(10, 1), (100, 1), (10, 4)]
    assert len({p.label for p in plans}) == 3


def test_a_key_the_baseline_does_not_name_keeps_the_configured_value(tmp_path):
    text = GOOD + "variants:\n  - {}\n  - {traffic.flows: 4}\n"
    plans = testcases.build_plans(_case(tmp_path, text), _base(), {}, FLAGS)
    configured = cfg.get_path(_base(), "traffic.flows")
    assert [p.variant for p in plans] == [{"traffic.flows": configured}, {"traffic.flows": 4}]


def test_a_sweep_runs_every_variant_at_every_value(tmp_path):
    plans = testcases.build_plans(_case(tmp_path, GOOD + VARIANTS), _base(), {"traffic.bidirectional": [True, False]},
                                  FLAGS)
    assert [(p.variant["traffic.bidirectional"], p.variant["dut.rules"], p.variant["traffic.flows"]) for p in plans] == [
        (True, 10, 1), (True, 100, 1), (True, 10, 4), (False, 10, 1), (False, 100, 1), (False, 10, 4)]


def test_test_params_may_not_set_what_the_variants_set(tmp_path):
    with pytest.raises(testcases.TestcaseError, match="--test-params sets dut.rules, which the testcase's variants"):
        testcases.build_plans(_case(tmp_path, GOOD + VARIANTS), _base(), {"dut.rules": 5}, FLAGS)


def test_two_variants_alike_are_refused(tmp_path):
    text = GOOD + "variants:\n  - {traffic.flows: 1}\n  - {dut.rules: 5}\n  - {traffic.flows: 1, dut.rules: 5}\n"
    with pytest.raises(testcases.TestcaseError, match="variants 2 and 3 have the same settings"):
        testcases.build_plans(_case(tmp_path, text), _base(), {}, FLAGS)


@pytest.mark.parametrize("text, where", [
    ("variants:\n  - {traffic.flows: 1}\n", "variants"),
    ("variants:\n  - {Traffic: 1}\n  - {traffic.flows: 2}\n", "variants.0"),
    ("variants: {traffic.flows: 1}\n", "variants"),
])
def test_malformed_variants_name_the_field(tmp_path, text, where):
    with pytest.raises(testcases.TestcaseError) as exc:
        _case(tmp_path, GOOD + text)
    assert where in str(exc.value) and "\n" not in str(exc.value)


def test_a_variant_of_another_switchs_setting_is_refused():
    case = testcases.find("pvp_virtio_features", ROOT / "testcases")
    with pytest.raises(testcases.TestcaseError, match="vswitch ovs_dpdk, but the test runs vswitch linux_bridge"):
        testcases.build_plans(case, _base(), {}, {**FLAGS, "vswitch": "linux_bridge"})


def test_pvp_virtio_features_is_baseline_packed_ring_two_queues_userspace_tso():
    case = testcases.find("pvp_virtio_features", ROOT / "testcases")
    plans = testcases.build_plans(case, _base(), {"frame_sizes": [64], "trial_duration": 1},
                                  {**FLAGS, "vswitch": "ovs_dpdk"})
    keys = ("vnf.testpmd.packed_ring", "vnf.testpmd.queues", "vswitch.ovs_dpdk.userspace_tso")
    assert [tuple(p.variant[k] for k in keys) for p in plans] == [
        (False, 1, False), (True, 1, False), (False, 2, False), (False, 1, True)]
    for plan in plans:
        assert plan.config["vnf"]["testpmd"]["queues"] == plan.variant["vnf.testpmd.queues"]
        assert plan.config["vswitch"]["ovs_dpdk"]["userspace_tso"] is plan.variant["vswitch.ovs_dpdk.userspace_tso"]
        assert plan.config["traffic"]["frame_sizes"] == [64]
