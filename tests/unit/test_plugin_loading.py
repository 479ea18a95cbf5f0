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
