"""vsbench's conformance kit against tcswitch, on the kit's own testbed (needs root):
every check of the vSwitch contract and of the plugin class."""

import pytest

from vsbench.conformance import VSwitchTarget
from vsbench.conformance.switch_suite import VSwitchConformance

from vsbench_example_vswitch.plugin import TcSwitch


class TestTcSwitch(VSwitchConformance):
    @pytest.fixture
    def conformance_vswitch(self):
        return VSwitchTarget(name="tcswitch", plugin=TcSwitch, settings={})


class TestTcSwitchShaped(VSwitchConformance):
    """The same switch shaping its egress: forwarding 5000 frames/s still gets through."""

    @pytest.fixture
    def conformance_vswitch(self):
        return VSwitchTarget(name="tcswitch", plugin=TcSwitch, settings={"egress_limit_bps": 100_000_000})
