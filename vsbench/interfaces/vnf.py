"""The VNF contract: a forwarding function between given ports (process or VM).

A deployment (pvp, pvvp, pvpv, phy_router_phy) creates the switch's ports for the VNF,
then calls :meth:`Vnf.start` with them. What a port carries depends on its kind:

* ``vhostuser``: ``spec.socket_path`` is the vhost-user socket; ``spec.options``
  ``vhost_server`` says who created it -- ``"switch"`` (the VNF connects as client) or
  ``"vnf"`` (the VNF creates it and the switch connects; see :meth:`Vnf.vhost_user_server`);
* ``physical``: ``spec.iface`` is a kernel interface in the DUT namespace (the VNF's end
  of a veth pair, for a switch without vhost-user).

``spec.options`` may also carry ``peer_mac`` (the MAC frames leaving that port should be
addressed to, for MAC-rewriting forwarding modes) and ``vnf_mac`` (the MAC the VNF's port
should take).

A VNF that forwards by IPv4 routes (a router) sets :attr:`Vnf.routing`: a deployment then
gives it a network namespace of its own on the embedded testbed (``context.dut_netns`` is
that namespace, its ports are in it: a router's kernel is its own, as in a VM), configures
it with :meth:`Vnf.configure_router` after :meth:`Vnf.start` -- the vendor-neutral model of
:mod:`vsbench.interfaces.router` -- and addresses the generator's frames to its ports' MACs.
"""

from __future__ import annotations

import abc
from typing import Any, ClassVar, Mapping, Sequence

from vsbench.interfaces.plugin import Plugin, PluginError
from vsbench.interfaces.traffic import TrafficProfile
from vsbench.interfaces.vswitch import SwitchPort


class Vnf(Plugin):
    """A VNF plugin.

    ``port_kinds`` declares the port kinds :meth:`start` accepts (``"vhostuser"``,
    ``"physical"``); a deployment picks vhost-user when both the switch and the VNF
    support it, else a veth pair per VNF port when the VNF accepts ``"physical"``.
    """

    kind: ClassVar[str] = "vnf"
    port_kinds: ClassVar[tuple[str, ...]] = ("physical",)
    #: The VNF routes: it is configured with :meth:`configure_router` and frames are
    #: addressed to its ports (see the module doc).
    routing: ClassVar[bool] = False
    #: Port pairs one instance forwards (``start`` gets twice as many ports); None: any
    #: number. A deployment needing more pairs than that starts one instance per pair
    #: (``phy_vnf_phy``) or refuses (``pvp_multiport``).
    max_port_pairs: ClassVar[int | None] = None

    @abc.abstractmethod
    def start(self, ports: Sequence[SwitchPort]) -> None:
        """Start forwarding between ``ports`` (pairs: 0<->1, 2<->3, ...)."""

    def vhost_user_server(self) -> bool:
        """True when the VNF creates its vhost-user sockets (virtio-user server mode) and
        the switch must connect to them as a client; asked before the switch's ports are
        added. Default: the switch is the server."""
        return False

    def configure(self, profile: TrafficProfile) -> None:
        """Get ready to forward ``profile``'s flows, before that profile's trials.

        The deployment calls it with the profile as it will be sent (after its own
        shaping), once per frame size; a VNF whose forwarding depends on the flows (l3fwd
        builds its routes from them) sets it up here and keeps what it has when nothing it
        depends on changed. A frame entering port ``2k`` is the profile's forward direction
        and must leave on port ``2k+1``. Optional; the default does nothing.
        """

    def configure_router(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """Install the router configuration ``config`` (the JSON form of
        :data:`vsbench.interfaces.router.MODEL_SCHEMA`) after :meth:`start`, replacing the
        one installed before (a reload, between the plans of a route-scaling matrix).
        Returns figures of the install, JSON-able; the keys the core reports (all
        optional): ``routes``, ``nexthops``, ``nexthop_groups``, ``ecmp_groups``,
        ``install_s``, ``route_install_s``, ``sendmsg_calls``, ``fib_slab_delta_bytes``.
        Only for a VNF that sets :attr:`routing`."""
        raise PluginError(f"vnf {self.name or type(self).__name__} does not route")

    def stats(self) -> dict[str, Any]:
        return {}

    def busy_poll_cpus(self) -> dict[str, set[int]]:
        """``{owner: CPUs}`` of the VNF's busy-polling threads (DPDK lcores), for the run's
        CPU plan; empty for a VNF that does not busy-poll."""
        return {}

    def trial_begin(self) -> None:
        """Take the 'before' sample of one trial (port counters, CPU time). Optional."""

    def trial_end(self) -> dict[str, Any]:
        """What happened in the VNF since :meth:`trial_begin`, JSON-able; ``{}`` when it
        does not say. Recorded in trials.jsonl under the trial's ``vnf``. Keys the core
        reads (all optional):

        - ``ports``: ``[{"port", "rx_frames", "tx_frames", "rx_missed", "rx_errors",
          "tx_errors", "rx_nombuf", ...}]``, per-port counter deltas, ``port`` indexing the
          ports given to :meth:`start`: the core cross-checks them with the generator's
          counters to say at which stage frames were lost;
        - ``cpu_s``, ``elapsed_s``: CPU seconds its threads consumed, over wall seconds;
        - ``threads``: ``[{"tid", "name", "busy_s", "utilization", "last_cpu"}]``;
        - ``warnings``: ``[{"code", "message", "cpus", "oversubscribed"}]``, e.g. a
          busy-polling lcore that did not get its CPU.
        """
        return {}

    @abc.abstractmethod
    def stop(self) -> None: ...
