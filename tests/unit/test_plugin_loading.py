"""Plugins are found through entry points only, built-in and third-party alike."""

import pytest

from vsbench.interfaces import VSwitch
from vsbench.runner import plugins


def test_builtin_names_come_from_entry_points():
    assert {"ovs_dpdk", "linux_bridge"} <= set(plugins.available("vswitch"))
    assert "trafgen" in plugins.available("trafficgen")


def test_vendor_plugin_from_another_distribution_loads(vendor_distribution):
    assert "vendor_switch" in plugins.available("vswitch")
    cls = plugins.load("vswitch", "vendor_switch")
    assert issubclass(cls, VSwitch)
    assert cls.name == "vendor_switch"


def test_vendor_plugin_is_listed_with_its_description(vendor_distribution):
    infos = {(i.kind, i.name): i for i in plugins.describe_all()}
    info = infos[("vswitch", "vendor_switch")]
    assert info.description.startswith("Example vendor switch")
    assert info.distribution == "vsbench-vendor-example"
    assert infos[("vswitch", "broken_switch")].load_error


def test_unknown_plugin_lists_available_names():
    with pytest.raises(plugins.UnknownPluginError) as exc:
        plugins.load("vswitch", "no_such_switch")
    message = str(exc.value)
    assert "no_such_switch" in message and "ovs_dpdk" in message and "\n" not in message


def test_entry_point_that_is_not_a_plugin_class_is_refused(vendor_distribution):
    with pytest.raises(plugins.UnknownPluginError, match="not a vsbench Plugin"):
        plugins.load("vswitch", "not_a_plugin")


def test_entry_point_whose_module_is_missing_is_one_line(vendor_distribution):
    with pytest.raises(plugins.UnknownPluginError, match="failed to load"):
        plugins.load("vswitch", "broken_switch")


# --------------------------------------------------------------------------- plugin API

def test_api_compatibility_rule():
    from vsbench.interfaces import api_incompatibility

    assert api_incompatibility("1.0", "1.0") is None
    assert api_incompatibility("1.0", "1.3") is None  # additions do not break a 1.0 plugin
    assert "newer" in api_incompatibility("1.4", "1.3")
    assert "major" in api_incompatibility("2.0", "1.3")
    assert "major" in api_incompatibility("0.9", "1.0")
    assert "declares no api_version" in api_incompatibility(None, "1.0")
    assert "MAJOR.MINOR" in api_incompatibility("1", "1.0")
    assert "MAJOR.MINOR" in api_incompatibility(1.0, "1.0")


def test_every_builtin_plugin_declares_the_current_api():
    from vsbench.interfaces import API_VERSION

    infos = [i for i in plugins.describe_all() if i.origin == "built-in"]
    assert len(infos) >= 10
    assert all(i.usable and i.api_version == API_VERSION for i in infos), [
        (i.name, i.api_version, i.problem) for i in infos if not i.usable]


def test_incompatible_plugin_is_refused_in_one_line_and_never_constructed(vendor_distribution):
    import vsbench_vendor_example

    with pytest.raises(plugins.IncompatiblePluginError) as exc:
        plugins.load("vswitch", "future_switch")
    message = str(exc.value)
    assert "\n" not in message
    assert "future_switch" in message and "vsbench-vendor-example 0.1" in message
    assert "2.0" in message and "1.0" in message
    assert vsbench_vendor_example.FutureSwitch.constructed is False
    assert "name" not in vars(vsbench_vendor_example.FutureSwitch)  # not even named: never handed out
    with pytest.raises(plugins.IncompatiblePluginError, match="declares no api_version"):
        plugins.load("vswitch", "undeclared_switch")


def test_listing_says_where_each_plugin_comes_from_and_which_are_refused(vendor_distribution):
    infos = {(i.kind, i.name): i for i in plugins.describe_all()}
    builtin, vendor = infos[("vswitch", "ovs_dpdk")], infos[("vswitch", "vendor_switch")]
    assert (builtin.distribution, builtin.origin, builtin.api_version) == ("vsbench", "built-in", "1.0")
    assert (vendor.distribution, vendor.version, vendor.origin) == ("vsbench-vendor-example", "0.1", "third-party")
    assert vendor.usable and vendor.module == "vsbench_vendor_example:VendorSwitch"
    future = infos[("vswitch", "future_switch")]
    assert not future.usable and future.api_version == "2.0" and "refused" in future.problem


def test_cli_refuses_an_incompatible_plugin_with_exit_2(vendor_distribution, capsys, tmp_path):
    from vsbench.cli.main import main

    code = main(["--test", "phy2phy_tput", "--vswitch", "future_switch", "--results-dir", str(tmp_path)])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err.startswith("vsbench: error: vswitch plugin 'future_switch'") and "\n" not in err
    assert "Traceback" not in err
    assert not any(tmp_path.iterdir()), "nothing may be created for a refused plugin"


def test_cli_lists_plugins_with_package_version_and_distribution(vendor_distribution, capsys):
    from vsbench.cli.main import main

    assert main(["--list-plugins"]) == 0
    out = capsys.readouterr().out
    line = next(l for l in out.splitlines() if "vendor_switch" in l)
    assert "vsbench-vendor-example" in line and "0.1" in line and "third-party" in line
    line = next(l for l in out.splitlines() if "future_switch" in l)
    assert "refused" in line and "2.0" in line
    assert "built-in" in next(l for l in out.splitlines() if " ovs_dpdk " in l)
