"""v2v (VM-vSwitch-VM): TCP endpoints attached where guests attach, on one switch.

Report 5's test cases 1 and 3 measure TCP between VMs whose virtio NICs are vhost-user
ports of OvS-DPDK: several VMs sending to one server (TC1), and one VM to another on the
same compute node (TC3). Here the endpoints are kernel stacks in network namespaces of
their own (the TCP generator's, :mod:`vsbench_plugins.trafficgen.iperf3`), and each sits
on a switch port of its own where a guest would attach:

* a switch that declares ``supports_tap_ports`` (OvS-DPDK) creates a **tap** port per
  endpoint: a kernel tap device whose other side the switch serves itself, as it serves a
  guest's virtio ring; with OvS's userspace TSO a TSO segment of the endpoint crosses the
  switch whole, through the same virtio-net header a guest puts on vhost-user. What
  differs from a guest: OvS serves tap ports from its main thread, not a PMD, through one
  queue; a guest's vCPU and QEMU/vhost copies are not there (the endpoint's stack runs on
  the host's CPUs);
* any other switch (the Linux bridge, OvS with the kernel datapath) gets a **veth pair**
  per endpoint in the DUT namespace: one end on the bridge, as a VM's tap device would be,
  the other the endpoint's interface.

Ports 0..N-1 are the clients (``tcp.clients``, 1 by default), port N the server. One
client: the two ports are connected as in p2p; several: :meth:`VSwitch.connect_many`
(every client's frames to the server, the server's to the client whose MAC they carry).
Every segment crosses one bridge once: one switching operation. The endpoints' MACs are
fixed per run (``02:<run id>:01:<0x60 + i>``) so the switch can forward by them.
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar

from vsbench.deployment.base import Deployment, DeploymentError
from vsbench.interfaces.traffic import GeneratorPort
from vsbench.interfaces.vswitch import PortSpec, SwitchPort
from vsbench.system import naming
from vsbench.system.testbed import DUT_ROLE, TG_ROLE, TestbedError, add_internal_pair, add_namespace, port_mac, set_port_mac

log = logging.getLogger(__name__)

#: Interface-name roles: tap ports / endpoint ends of veth pairs, and the switch ends.
ENDPOINT_ROLE, SWITCH_END_ROLE = "e", "w"
#: MAC index bases: endpoints (generator role) and the switch ends of veth pairs (DUT role).
ENDPOINT_MAC_BASE, SWITCH_END_MAC_BASE = 0x60, 0x60
#: Clients one v2v topology takes (the server makes one more port).
MAX_CLIENTS = 64


def clients_of(config: dict[str, Any] | Any) -> int:
    """``tcp.clients`` of a plan (1 when unset)."""
    return int(((config or {}).get("tcp") or {}).get("clients") or 1)


class V2v(Deployment):
    name: ClassVar[str] = "v2v"
    description: ClassVar[str] = ("VM-vSwitch-VM: TCP endpoints on the ports guests attach to (OvS-DPDK: tap ports), "
                                  "N clients and one server on one bridge")
    switching_operations: ClassVar[int] = 1
    generator_port_count: ClassVar[int] = 2
    topology: ClassVar[str] = "VM-VM"
    #: Only TCP endpoints attach here (the preflight refuses frame trials).
    traffic_types: ClassVar[tuple[str, ...]] = ("tcp",)
    #: Every ``tcp.clients`` client gets a port of its own.
    endpoint_ports_per_client: ClassVar[bool] = True

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.clients = clients_of(self.config)
        #: ``tap`` or ``veth``: what the endpoints sit on (set by :meth:`build`).
        self.endpoint_ports: str | None = None
        self.switch_ports: list[SwitchPort] = []

    def stand_in(self) -> str:
        """The sentence results and console carry: what stands in for the report's VMs."""
        switch = getattr(self.vswitch, "name", None) or "the switch"
        if self.endpoint_ports == "tap":
            return (f"endpoints in network namespaces on {switch} tap ports stand in for the VMs on vhost-user ports "
                    "(served by the switch's main thread, one queue; no guest vCPU or virtio copy)")
        return (f"endpoints in network namespaces on veth pairs enslaved to {switch} stand in for the VMs' "
                "tap devices (no guest vCPU or virtio copy)")

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "clients": self.clients, "endpoint_ports": self.endpoint_ports,
                "stand_in": self.stand_in()}

    def notes(self) -> list[str]:
        return [self.stand_in()]

    def build(self) -> list[GeneratorPort]:
        n = self.clients
        if not 1 <= n <= MAX_CLIENTS:
            raise DeploymentError(f"tcp.clients {n}: v2v takes 1 to {MAX_CLIENTS} clients")
        caps = self.generator.capabilities()
        generator = self.generator.name or "the generator"
        if not caps.needs_testbed:
            raise DeploymentError(f"v2v attaches endpoints to this host's switch; {generator} brings ports of its own")
        if caps.ports < n + 1:
            raise DeploymentError(f"v2v with {n} client(s) needs {n + 1} endpoints; {generator} has {caps.ports}")
        dut_ns = naming.netns_name(self.run_id, DUT_ROLE)
        try:
            add_namespace(dut_ns, self.resources)
        except TestbedError as exc:
            raise DeploymentError(str(exc)) from None
        vswitch = self.make_vswitch(dut_ns)
        self.vswitch = vswitch
        # Registered before start(): stop() is idempotent and a half-started switch must go too.
        self.resources.register(f"vswitch {vswitch.name}", vswitch.stop)
        taps = bool(getattr(vswitch, "supports_tap_ports", False))
        self.endpoint_ports = "tap" if taps else "veth"
        if taps:
            vswitch.plan_ports(["tap"])
        vswitch.start()
        bridge = naming.iface_name(self.run_id, "br", 0)
        vswitch.add_bridge(bridge)
        ports: list[GeneratorPort] = []
        try:
            for i in range(n + 1):
                mac = port_mac(self.run_id, TG_ROLE, ENDPOINT_MAC_BASE + i)
                endpoint = naming.iface_name(self.run_id, ENDPOINT_ROLE, i)
                if taps:
                    port = vswitch.add_port(bridge, PortSpec(kind="tap", name=endpoint))
                    endpoint = port.spec.iface or endpoint
                    set_port_mac(dut_ns, endpoint, mac)
                else:
                    switch_end = naming.iface_name(self.run_id, SWITCH_END_ROLE, i)
                    add_internal_pair(dut_ns, (switch_end, endpoint),
                                      (port_mac(self.run_id, DUT_ROLE, SWITCH_END_MAC_BASE + i), mac), self.resources)
                    port = vswitch.add_port(bridge, PortSpec(kind="physical", name=switch_end, iface=switch_end))
                self.switch_ports.append(port)
                ports.append(GeneratorPort(index=i, iface=endpoint, netns=dut_ns, mac=mac))
        except TestbedError as exc:
            raise DeploymentError(str(exc)) from None
        server = self.switch_ports[n]
        if n == 1:
            vswitch.connect(bridge, self.switch_ports[0], server)
        else:
            vswitch.connect_many(bridge, server, [(p, ports[i].mac or "") for i, p in enumerate(self.switch_ports[:n])])
        log.info("v2v: %s bridge %s, %d client(s) -> server on %s ports %s", vswitch.name, bridge, n,
                 self.endpoint_ports, ", ".join(p.iface for p in ports))
        return ports
