"""The two traffic profiles of an RFC 2889 address iteration, as pure functions.

On :mod:`vsbench.deployment.learning`'s three ports (0 test, 1 learning, 2 monitor):

* the **learning** profile: one stream from the learning port to the test port whose
  frames count their *source* MAC up from
  :data:`~vsbench.measurement.rfc2889.ADDRESS_BASE_MAC`, one address per flow, so a burst
  of N frames carries each of N addresses once (RFC 2889 section 5.7.2: "learning frames");
* the **test** profile: one stream from the test port to the learning port whose frames
  count their *destination* MAC over the same N addresses; a switch that learned them all
  delivers every frame to the learning port only, one that did not floods the rest, and
  the monitor port counts those.

Both count the monitor port (``TrafficProfile.monitor_ports``).
"""

from __future__ import annotations

import dataclasses

from vsbench.interfaces.traffic import PortStream, TrafficProfile
from vsbench.measurement.rfc2889 import ADDRESS_BASE_MAC

TEST_PORT, LEARNING_PORT, MONITOR_PORT = 0, 1, 2
#: The test port's source MAC when the generator port has none of its own.
TEST_PORT_MAC = "02:28:89:ff:00:01"


def learning_profile(base: TrafficProfile, addresses: int, test_mac: str | None) -> TrafficProfile:
    """Learning frames: sources ``ADDRESS_BASE_MAC`` + 0..addresses-1, to the test port."""
    fields = dataclasses.replace(base.fields, src_mac=ADDRESS_BASE_MAC, dst_mac=test_mac or TEST_PORT_MAC,
                                 vary=("src_mac",), pattern="scatter")
    return dataclasses.replace(base, flows=int(addresses), bidirectional=False, reverse_fields=None,
                               streams=(PortStream(LEARNING_PORT, TEST_PORT, fields),),
                               monitor_ports=(MONITOR_PORT,))


def test_profile(base: TrafficProfile, addresses: int, test_mac: str | None) -> TrafficProfile:
    """Test frames: from the test port, destinations the same addresses, to the learning port."""
    fields = dataclasses.replace(base.fields, src_mac=test_mac or TEST_PORT_MAC, dst_mac=ADDRESS_BASE_MAC,
                                 vary=("dst_mac",), pattern="scatter")
    return dataclasses.replace(base, flows=int(addresses), bidirectional=False, reverse_fields=None,
                               streams=(PortStream(TEST_PORT, LEARNING_PORT, fields),),
                               monitor_ports=(MONITOR_PORT,))
