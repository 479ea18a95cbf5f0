"""The CLI contract users and CI jobs script against: exit codes and one-line errors."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def vsbench(*args, cwd=None):
    proc = subprocess.run(
        [sys.executable, "-m", "vsbench.cli.main", *args],
        capture_output=True, text=True, cwd=cwd or ROOT, timeout=60,
    )
    return proc.returncode, proc.stdout, proc.stderr


def assert_one_line_error(rc, err, *fragments):
    assert rc == 2, err
    lines = [l for l in err.splitlines() if l.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("vsbench: error: ")
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in lines[0]


def test_list_prints_testcases():
    rc, out, _ = vsbench("--list")
    assert rc == 0 and "phy2phy_tput" in out and "phy2phy_cont" in out


def test_list_plugins_prints_every_kind():
    rc, out, _ = vsbench("--list-plugins")
    assert rc == 0
    for name in ("ovs_dpdk", "linux_bridge", "trafgen", "vswitch", "trafficgen"):
        assert name in out


@pytest.mark.parametrize(
    "args, fragments",
    [
        (["--test", "nope"], ["unknown test 'nope'", "phy2phy_tput"]),
        (["--test", "phy2phy_tput", "--vswitch", "warp"], ["unknown vswitch plugin 'warp'", "ovs_dpdk"]),
        (["--test", "phy2phy_tput", "--trafficgen", "warp"], ["unknown trafficgen plugin 'warp'", "trafgen"]),
        (["--test", "phy2phy_tput", "--test-params", "frame_sizes=[32]"], ["frame_sizes.0: 32 must be >= 64"]),
        (["--test", "phy2phy_tput", "--test-params", "trial_duration=-1"], ["trial_duration_s: -1 must be > 0"]),
        (["--test", "phy2phy_tput", "--test-params", "warp=9"], ["unknown key 'warp'"]),
        (["--bogus"], ["unrecognized arguments: --bogus"]),
        ([], ["nothing to do"]),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, fragments):
    rc, _, err = vsbench(*args)
    assert_one_line_error(rc, err, *fragments)


def test_malformed_yaml_conf_file(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("traffic: [1,\n")
    rc, _, err = vsbench("--test", "phy2phy_tput", "--conf-file", str(bad))
    assert_one_line_error(rc, err, str(bad), "malformed YAML")


def test_malformed_testcase_file(tmp_path):
    (tmp_path / "broken.yaml").write_text(
        "name: broken\ndescription: x\ndeployment: p2p\ntraffic: {frame_sizes: [64], flows: 0}\n")
    rc, _, err = vsbench("--test", "broken", "--testcase-dir", str(tmp_path))
    assert_one_line_error(rc, err, "broken.yaml", "traffic.flows")


def test_a_vnf_topology_without_a_vnf_is_refused_before_anything_exists(tmp_path):
    rc, _, err = vsbench("--test", "pvp_cont", "--vswitch", "ovs_dpdk", "--vnf", "none",
                         "--results-dir", str(tmp_path / "r"))
    assert_one_line_error(rc, err, "deployment pvp sends every frame through a VNF", "--vnf testpmd")
    assert not (tmp_path / "r").exists()


def test_a_bad_testpmd_setting_is_one_line_with_its_name(tmp_path):
    rc, _, err = vsbench("--test", "pvp_cont", "--vswitch", "ovs_dpdk", "--results-dir", str(tmp_path / "r"),
                         "--test-params", "vnf.testpmd.forward_mode=rxonly")
    assert_one_line_error(rc, err, "forward_mode")
    assert not (tmp_path / "r").exists()


#: Not text: a gzip header and bytes that no UTF-8 decoder accepts.
BINARY = b"\x1f\x8b\x08\x00\xff\xfe\x00\x80binary"


def test_a_binary_conf_file_is_a_user_error_naming_it(tmp_path):
    bad = tmp_path / "conf.yaml"
    bad.write_bytes(BINARY)
    rc, _, err = vsbench("--test", "phy2phy_tput", "--conf-file", str(bad), "--results-dir", str(tmp_path / "r"))
    assert_one_line_error(rc, err, str(bad), "not a YAML text file")
    assert not (tmp_path / "r").exists()


def test_binary_testcase_and_suite_files_are_user_errors_naming_them(tmp_path):
    (tmp_path / "broken.yaml").write_bytes(BINARY)
    rc, _, err = vsbench("--test", "broken", "--testcase-dir", str(tmp_path))
    assert_one_line_error(rc, err, str(tmp_path / "broken.yaml"), "not a YAML text file")
    rc, _, err = vsbench("--suite", str(tmp_path / "broken.yaml"), "--dry-run")
    assert_one_line_error(rc, err, "broken.yaml", "not a YAML text file")
    rc, _, err = vsbench("doctor", "--conf-file", str(tmp_path / "broken.yaml"))
    assert_one_line_error(rc, err, "broken.yaml", "not a YAML text file")
