"""Configuration layering: conf dir < --conf-file < testcase < --test-params < flags."""

from pathlib import Path

import pytest

from vsbench.runner import config as cfg
from vsbench.runner import testcases

ROOT = Path(__file__).resolve().parents[2]


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.fixture
def base():
    return cfg.load_layers(ROOT / "conf", [])


def plan_for(base, params="", flags=None, name="phy2phy_tput"):
    case = testcases.find(name, ROOT / "testcases")
    test_params = cfg.parse_test_params(params) if params else {}
    flags = flags or {"vswitch": None, "trafficgen": None, "vnf": None}
    return testcases.build_plans(case, base, test_params, flags)


def test_conf_files_merge_in_name_order_and_deep(tmp_path):
    write(tmp_path / "00_a.yaml", "traffic: {flows: 1, bidirectional: true}\nx: [1, 2]\n")
    write(tmp_path / "10_b.yaml", "traffic: {flows: 7}\nx: [3]\n")
    merged = cfg.load_layers(tmp_path, [])
    assert merged["traffic"] == {"flows": 7, "bidirectional": True}
    assert merged["x"] == [3]  # lists are replaced, not appended


def test_conf_file_overrides_defaults_then_next_conf_file(tmp_path, base):
    one = write(tmp_path / "one.yaml", "traffic: {flows: 10}\nsearch: {relative_width: 0.01}\n")
    two = write(tmp_path / "two.yaml", "traffic: {flows: 20}\n")
    merged = cfg.load_layers(ROOT / "conf", [one, two])
    assert merged["traffic"]["flows"] == 20
    assert merged["search"]["relative_width"] == 0.01
    assert merged["traffic"]["frame_sizes"] == base["traffic"]["frame_sizes"]


def test_testcase_overrides_conf_and_test_params_override_testcase(tmp_path):
    conf = write(tmp_path / "c.yaml", "traffic: {trial_duration_s: 5, flows: 3}\n")
    merged = cfg.load_layers(ROOT / "conf", [conf])
    (plan,) = plan_for(merged)
    assert plan.config["traffic"]["trial_duration_s"] == 60  # the testcase says 60
    assert plan.config["traffic"]["flows"] == 1  # the testcase says 1
    (plan,) = plan_for(merged, "trial_duration=2;flows=4")
    assert plan.config["traffic"]["trial_duration_s"] == 2
    assert plan.config["traffic"]["flows"] == 4


def test_plain_flags_win_over_everything(tmp_path):
    conf = write(tmp_path / "c.yaml", "vswitch: {name: ovs_dpdk}\n")
    merged = cfg.load_layers(ROOT / "conf", [conf])
    (plan,) = plan_for(merged, "vswitch.name=ovs_dpdk", {"vswitch": "linux_bridge", "trafficgen": None, "vnf": None})
    assert plan.config["vswitch"]["name"] == "linux_bridge"


def test_test_params_are_yaml_values_never_evaluated(base):
    params = cfg.parse_test_params("frame_sizes=[64, 128];trial_duration=2.5;bidirectional=false;"
                                   "x=__import__('os').system('false')")
    assert params["frame_sizes"] == [64, 128]
    assert params["trial_duration"] == 2.5
    assert params["bidirectional"] is False
    assert params["x"] == "__import__('os').system('false')"


def test_test_params_split_only_on_top_level_semicolons():
    assert cfg.split_params("a=[1;2];b='x;y';c=3") == ["a=[1;2]", "b='x;y'", "c=3"]


@pytest.mark.parametrize("text", ["novalue", "=3", "a=[1,"])
def test_malformed_test_params_are_one_line_errors(text):
    with pytest.raises(cfg.ConfigError) as exc:
        cfg.parse_test_params(text)
    assert "\n" not in str(exc.value)


def test_short_names_resolve_to_unique_paths_with_unit_suffix(base):
    assert cfg.resolve_key("frame_sizes", base) == "traffic.frame_sizes"
    assert cfg.resolve_key("trial_duration", base) == "traffic.trial_duration_s"
    assert cfg.resolve_key("meter_pps", base) == "dut.meter_pps"
    assert cfg.resolve_key("vswitch.ovs_dpdk.pmd_cpu_mask", base) == "vswitch.ovs_dpdk.pmd_cpu_mask"


def test_unknown_short_name_suggests_close_matches(base):
    with pytest.raises(cfg.ConfigError, match="did you mean frame_sizes"):
        cfg.resolve_key("frame_size", base)


@pytest.mark.parametrize(
    "params, message",
    [
        ("frame_sizes=[32]", "traffic.frame_sizes.0: 32 must be >= 64"),
        ("trial_duration=-1", "traffic.trial_duration_s: -1 must be > 0"),
        ("trial_duration=0", "traffic.trial_duration_s: 0 must be > 0"),
        ("flows=abc", "traffic.flows: 'abc' is not of type integer"),
        ("traffic.framesizes=[64]", "traffic: unknown key 'framesizes' (did you mean 'frame_sizes'?)"),
    ],
)
def test_invalid_values_name_the_field_path(base, params, message):
    with pytest.raises(cfg.ConfigError) as exc:
        plan_for(base, params)
    assert message in str(exc.value)
    assert "\n" not in str(exc.value)


def test_malformed_yaml_names_file_and_line(tmp_path):
    bad = write(tmp_path / "bad.yaml", "traffic:\n  flows: [1,\n")
    with pytest.raises(cfg.ConfigError) as exc:
        cfg.load_layers(ROOT / "conf", [bad])
    assert str(bad) in str(exc.value) and "line" in str(exc.value)


def test_conf_file_that_is_not_a_mapping(tmp_path):
    bad = write(tmp_path / "list.yaml", "- 1\n- 2\n")
    with pytest.raises(cfg.ConfigError, match="expected a mapping"):
        cfg.load_layers(ROOT / "conf", [bad])


def test_missing_conf_file(tmp_path):
    with pytest.raises(cfg.ConfigError, match="no such file"):
        cfg.load_layers(ROOT / "conf", [tmp_path / "nope.yaml"])


def test_plugin_settings_schema_catches_typos(vendor_distribution, base):
    from vsbench.runner import plugins

    cls = plugins.load("vswitch", "vendor_switch")
    config = dict(base, vswitch={"name": "vendor_switch", "vendor_switch": {"queus": 2}})
    with pytest.raises(cfg.ConfigError, match=r"vswitch.vendor_switch: \(top level\): unknown key 'queus'"):
        cfg.validate_plugin_settings("vswitch", "vendor_switch", cls, config)


def test_secrets_are_redacted_by_schema_and_by_name():
    class Gen:
        name = "mygen"
        settings_schema = {"type": "object", "properties": {
            "auth": {"type": "object", "properties": {"pin": {"type": "string", "writeOnly": True}}},
            "host": {"type": "string"},
        }}

    config = {
        "trafficgen": {"name": "mygen", "mygen": {"auth": {"pin": "1234"}, "host": "10.0.0.1",
                                                  "password": "hunter2", "password_env": "GEN_PW",
                                                  "api_key": None}},
        "traffic": {"flows": 1},
    }
    safe = cfg.redact_secrets(config, {"trafficgen": Gen})
    section = safe["trafficgen"]["mygen"]
    assert section["auth"]["pin"] == cfg.REDACTED
    assert section["password"] == cfg.REDACTED
    assert section["password_env"] == "GEN_PW"  # the variable's name is not the secret
    assert section["api_key"] is None
    assert section["host"] == "10.0.0.1" and safe["traffic"] == {"flows": 1}
    assert config["trafficgen"]["mygen"]["password"] == "hunter2"  # the input is untouched


def test_a_conf_file_that_is_not_text_is_a_config_error_naming_it(tmp_path):
    bad = tmp_path / "blob.yaml"
    bad.write_bytes(b"traffic:\n  flows: \xff\xfe\n")
    with pytest.raises(cfg.ConfigError) as exc:
        cfg.load_layers(ROOT / "conf", [bad])
    assert str(exc.value) == f"{bad}: not a YAML text file (byte 0xff at offset 18 is not UTF-8)"
