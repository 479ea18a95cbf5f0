"""vsbench's conformance kit against pyfwd, on the kit's own testbed (needs root): every
check of the VNF contract and of the plugin class."""

import pytest

from vsbench.conformance import VnfTarget
from vsbench.conformance.vnf_suite import VnfConformance

from vsbench_example_vnf.plugin import PyFwd


class TestPyFwd(VnfConformance):
    @pytest.fixture
    def conformance_vnf(self):
        return VnfTarget(name="pyfwd", plugin=PyFwd, settings={}, to_port_mac=False)


class TestPyFwdMacswap(VnfConformance):
    """With macswap the frames come back addressed to their sender: still forwarded and
    counted (the kit counts by its own marker, not by address)."""

    @pytest.fixture
    def conformance_vnf(self):
        return VnfTarget(name="pyfwd", plugin=PyFwd, settings={"macswap": True}, to_port_mac=False)
