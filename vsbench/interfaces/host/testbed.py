"""Helpers on the embedded testbed: an extra veth pair inside a namespace (with its
removal registered), an ingress filter that drops everything (a sink), receive steering
(which CPUs process the frames arriving at an interface: RPS), a veth's peer and its
GRO/NAPI mode (what XDP frames sent into a veth need), and the error they raise."""

from vsbench.system.testbed import (
    DROP_ALL_BYTECODE,
    TestbedError,
    VethPeer,
    add_internal_pair,
    set_gro,
    sink_ingress,
    steer_receive,
    veth_peer,
)

__all__ = ["DROP_ALL_BYTECODE", "TestbedError", "VethPeer", "add_internal_pair", "set_gro", "sink_ingress",
           "steer_receive", "veth_peer"]
