"""Open vSwitch building blocks shared by the OvS plugins (ovs_dpdk, ovs_kernel, ovs_tc).

- :mod:`.instance`  a private ovsdb-server + ovs-vswitchd (own DB, run dir, sockets, logs)
- :mod:`.ctl`       ovs-vsctl / ovs-ofctl / ovs-appctl bound to that instance
- :mod:`.flows`     flow files and meters (bulk install in one bundle)
- :mod:`.parse`     parsers for pmd-stats-show, dump-ports, meter-stats, --version
- :mod:`.settings`  the settings every OvS plugin shares, with defaults from the schema
- :mod:`.switch`    :class:`OvsSwitchBase`, the VSwitch implementation a plugin subclasses

A plugin for another datapath subclasses :class:`OvsSwitchBase`, sets ``datapath_type``
and overrides the hooks it needs (see the class docstring).
"""

from vsbench_plugins.vswitch.ovs.ctl import OvsCtl
from vsbench_plugins.vswitch.ovs.instance import OvsInstance, OvsPaths
from vsbench_plugins.vswitch.ovs.switch import OvsSwitchBase

__all__ = ["OvsCtl", "OvsInstance", "OvsPaths", "OvsSwitchBase"]
