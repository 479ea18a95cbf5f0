"""Testcases: every shipped one is valid; malformed ones are one-line errors; matrices expand."""

from pathlib import Path

import pytest

from vsbench.runner import config as cfg
from vsbench.runner import testcases

ROOT = Path(__file__).resolve().parents[2]
FLAGS = {"vswitch": None, "trafficgen": None, "vnf": None}


def test_every_shipped_testcase_is_valid_and_resolves():
    base = cfg.load_layers(ROOT / "conf", [])
    cases = testcases.load_all(ROOT / "testcases")
    assert {"phy2phy_tput", "phy2phy_cont"} <= {c.name for c in cases}
    for case in cases:
        assert testcases.build_plans(case, base, {}, FLAGS)


def write_case(tmp_path, text, name="mycase"):
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return path


GOOD = """
name: mycase
description: a test
deployment: p2p
traffic: {type: rfc2544_throughput, frame_sizes: [64]}
"""


@pytest.mark.parametrize(
    "text, where",
    [
        (GOOD.replace("frame_sizes: [64]", "frame_sizes: [63]"), "traffic.frame_sizes.0"),
        (GOOD.replace("deployment: p2p", "deployment: p3p"), "deployment"),
        (GOOD.replace("type: rfc2544_throughput", "type: warp"), "traffic.type"),
        (GOOD + "bogus: 1\n", "unknown key 'bogus'"),
        (GOOD.replace("description: a test\n", ""), "'description' is a required property"),
        (GOOD + "matrix: {dut.rules: []}\n", "matrix.dut.rules"),
        (GOOD.replace("traffic: {", "traffic: {trial_duration_s: -2, "), "traffic.trial_duration_s: -2 must be > 0"),
    ],
)
def test_malformed_testcase_names_file_and_field(tmp_path, text, where):
    path = write_case(tmp_path, text)
    with pytest.raises(testcases.TestcaseError) as exc:
        testcases.load_testcase(path)
    message = str(exc.value)
    assert str(path) in message and where in message and "\n" not in message


def test_testcase_name_must_match_file(tmp_path):
    path = write_case(tmp_path, GOOD, name="other")
    with pytest.raises(testcases.TestcaseError, match="must match the file name"):
        testcases.load_testcase(path)


def test_matrix_expands_and_links_copy_values(tmp_path):
    path = write_case(tmp_path, GOOD + "matrix: {dut.rules: [64, 1000], traffic.bidirectional: [true, false]}\n"
                      "links: {traffic.flows: dut.rules}\n")
    case = testcases.load_testcase(path)
    base = cfg.load_layers(ROOT / "conf", [])
    plans = testcases.build_plans(case, base, {}, FLAGS)
    got = [(p.config["dut"]["rules"], p.config["traffic"]["bidirectional"], p.config["traffic"]["flows"]) for p in plans]
    assert got == [(64, True, 64), (64, False, 64), (1000, True, 1000), (1000, False, 1000)]
    assert plans[0].label == "mycase[dut.rules=64,traffic.bidirectional=True]"


def test_test_params_replace_a_matrix_dimension(tmp_path):
    path = write_case(tmp_path, GOOD + "matrix: {dut.rules: [64, 1000, 8000]}\nlinks: {traffic.flows: dut.rules}\n")
    case = testcases.load_testcase(path)
    base = cfg.load_layers(ROOT / "conf", [])
    plans = testcases.build_plans(case, base, {"rules": [10, 20]}, FLAGS)
    assert [p.config["dut"]["rules"] for p in plans] == [10, 20]
    plans = testcases.build_plans(case, base, {"dut.rules": 5}, FLAGS)
    assert [p.config["traffic"]["flows"] for p in plans] == [5]


def test_unknown_test_lists_available():
    with pytest.raises(testcases.TestcaseError) as exc:
        testcases.find("nope", ROOT / "testcases")
    assert "phy2phy_tput" in str(exc.value)
