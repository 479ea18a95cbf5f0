"""The trafgen plugin's latency floor: its probe stream on a veth pair of its own, no DUT.

The floor is what the probe stream measures when nothing but the generator is in the
path: the same helper, the same frame, the same sockets and timestamps
(:mod:`vsbench_plugins.trafficgen.trafgen_probe`: software TX stamp in the sending veth's
driver, receive stamp when the peer veth queues the frame) over one veth pair whose two
ends are both in the generator namespace. A probe through the testbed crosses one veth
pair into the DUT and another back; the floor crosses one, so it is the generator's own
share of every latency figure (the wire a hardware tester would loop back on), not the
testbed's.

The pair is created on the first floor measurement, next to the testbed ports in the
generator namespace (so its name must not collide with the testbed's or the shaper
pair's: role ``fl``), and its removal is registered at once; it also goes with the
namespace. Its receiving end drops at tc ingress whatever arrives, after packet sockets
saw it, exactly as the generator ports do.
"""

from __future__ import annotations

import hashlib

from vsbench.interfaces import ResourceStack
from vsbench.interfaces.host import naming
from vsbench.interfaces.host.netlink import NetlinkError, list_links
from vsbench.interfaces.plugin import PluginError
from vsbench.interfaces.host.testbed import TestbedError, add_internal_pair, sink_ingress

#: Interface-name role of the loop's two ends: ``vsb<run id>fl0`` sends, ``...fl1`` receives.
LOOP_ROLE = "fl"
#: Fifth octet of the loop ends' MACs (the shaper pair uses 0x03).
LOOP_MAC_TAG = 0x04


def loop_names(run_id: str) -> tuple[str, str]:
    """(sending end, receiving end) of the floor loop of run ``run_id``."""
    return naming.iface_name(run_id, LOOP_ROLE, 0), naming.iface_name(run_id, LOOP_ROLE, 1)


def loop_macs(run_id: str) -> tuple[str, str]:
    """Locally administered MACs for the loop ends, distinct per run."""
    digest = hashlib.blake2b(run_id.encode(), digest_size=3).hexdigest()
    return tuple(f"02:{digest[0:2]}:{digest[2:4]}:{digest[4:6]}:{LOOP_MAC_TAG:02x}:{i:02x}" for i in (0, 1))


def ensure_loop(netns: str, run_id: str, resources: ResourceStack) -> tuple[str, str]:
    """The floor loop in ``netns``, created (removal registered) if it is not there yet."""
    names = loop_names(run_id)
    try:
        existing = set(list_links(netns))
    except NetlinkError as exc:
        raise PluginError(f"trafgen: {exc}") from None
    if set(names) <= existing:
        return names
    try:
        add_internal_pair(netns, names, loop_macs(run_id), resources)
    except Exception as exc:  # TestbedError, NetlinkError
        raise PluginError(f"trafgen: cannot create the latency floor loop: {exc}") from None
    try:
        sink_ingress(netns, names[1])
    except TestbedError as exc:
        raise PluginError(f"trafgen: {exc}") from None
    return names


def describe(netns: str, names: tuple[str, str]) -> str:
    """The loop as results.json names it (``GeneratorFloor.loop``)."""
    return f"veth {names[0]} -> {names[1]} in {netns} (probe stream only, no DUT)"
