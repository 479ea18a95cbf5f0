"""vsbench's conformance kit against toygen: every check of the traffic generator contract
(and of the plugin class), once against toygen's own fake and once on real interfaces."""

import pytest

from vsbench.conformance.suite import TrafficGeneratorConformance


class TestToygenAgainstItsModel(TrafficGeneratorConformance):
    """toygen-server in model mode: a DUT of 200 kfps, no root needed."""

    @pytest.fixture
    def conformance_generator(self, model_target):
        return model_target


class TestToygenOnTheTestbed(TrafficGeneratorConformance):
    """toygen-server sending real frames on the kit's veth testbed through a Linux bridge
    shaped to 20 kfps per port (root only)."""

    @pytest.fixture
    def conformance_generator(self, testbed_target):
        return testbed_target
