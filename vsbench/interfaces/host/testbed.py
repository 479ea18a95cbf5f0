"""Helpers on the embedded testbed: an extra veth pair inside a namespace (with its
removal registered), an ingress filter that drops everything (a sink), receive steering
(which CPUs process the frames arriving at an interface: RPS), and the error they raise."""

from vsbench.system.testbed import (
    DROP_ALL_BYTECODE,
    TestbedError,
    add_internal_pair,
    sink_ingress,
    steer_receive,
)

__all__ = ["DROP_ALL_BYTECODE", "TestbedError", "add_internal_pair", "sink_ingress", "steer_receive"]
